//! The polled answers (unhealthy, liquidations, at-risk), rendered from the
//! engine. They are rendered once per feed change and kept, with their ETags,
//! in `feed::poll_answers`, shared with every HTTP worker.

use bytes::Bytes;

use super::Engine;
use super::quotes::{QuoteFilter, at_risk_body, liquidations_body};
use super::unhealthy::unhealthy_body;
use lendex_domain::pubkey::Pubkey;

/// Which rendered answer: a feed and its query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Answer {
    /// GET /api/positions/unhealthy
    Unhealthy { pool: Option<Pubkey>, limit: usize },
    /// GET /api/liquidations
    Liquidations(QuoteFilter),
    /// GET /api/positions/at-risk
    AtRisk { below: u128, limit: usize },
}

/// Renders an answer from the engine.
pub fn render(engine: &Engine, answer: &Answer, now: i64, max_oracle_age: i64) -> Bytes {
    match answer {
        Answer::Unhealthy { pool, limit } => {
            unhealthy_body(engine, pool.as_ref(), *limit, now, max_oracle_age)
        }
        Answer::Liquidations(filter) => liquidations_body(engine, filter, now, max_oracle_age),
        Answer::AtRisk { below, limit } => at_risk_body(engine, *below, *limit),
    }
}
