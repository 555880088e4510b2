//! The database writer: every write of the index, the transaction log, the
//! allowlist and the audit log goes through it. (Handshake nonces are the nonce
//! registry's own: spending one is an authentication step, see there.)
//!
//! Writes go to one of four lanes by concern (`lendex_store::writes::Lane`): each lane
//! is an actor with its own queue and connection (`lane.rs`), so a stall on one
//! table never holds up the others. A lane batches what queues up while it
//! commits (group commit) and applies a batch in one transaction, runs of a
//! multi-row command as one statement (`batch.rs`). A reply goes out only after
//! COMMIT, so a 2xx means durable.

mod batch;
mod lane;

use std::time::Duration;

use actix::prelude::*;

pub use lane::{Drain, LaneStats, LaneWriter, Write};

use crate::error::{ActorError, ActorResult};
use lendex_store::WriteBudget;
use lendex_store::error::SetupError;
use lendex_store::settings::DatabaseConfig;
use lendex_store::writes::{Lane, WriteCommand};

/// The four lanes, for handlers and actors to write through.
#[derive(Clone)]
pub struct Writers {
    index: Addr<LaneWriter>,
    admin: Addr<LaneWriter>,
    tx_log: Addr<LaneWriter>,
    auth: Addr<LaneWriter>,
}

impl Writers {
    /// Starts every lane, each with its own connection; `origin` names this
    /// replica in the NOTIFY of its writes.
    pub fn start(cfg: &DatabaseConfig, origin: &str) -> Result<Writers, SetupError> {
        let budget = WriteBudget::of(Duration::from_millis(cfg.write_timeout_ms));
        let lane = |lane: Lane| -> Result<Addr<LaneWriter>, SetupError> {
            let pool = lendex_store::writer_pool(cfg, budget, origin)?;
            Ok(LaneWriter::new(lane, pool, budget).start())
        };
        Ok(Writers {
            index: lane(Lane::Index)?,
            admin: lane(Lane::Admin)?,
            tx_log: lane(Lane::TxLog)?,
            auth: lane(Lane::Auth)?,
        })
    }

    fn lane(&self, lane: Lane) -> &Addr<LaneWriter> {
        match lane {
            Lane::Index => &self.index,
            Lane::Admin => &self.admin,
            Lane::TxLog => &self.tx_log,
            Lane::Auth => &self.auth,
        }
    }

    /// Resolves once every write queued in any lane has been committed (or failed).
    pub async fn drain(&self) {
        for lane in Lane::ALL {
            let _ = self.lane(lane).send(Drain).await;
        }
    }

    /// Each lane's counters.
    pub async fn stats(&self) -> Vec<LaneStats> {
        let mut out = Vec::new();
        for lane in Lane::ALL {
            if let Ok(stats) = self.lane(lane).send(lane::GetLaneStats).await {
                out.push(stats);
            }
        }
        out
    }
}

/// Sends a write to its lane and waits for its committed result.
pub async fn write<C: WriteCommand>(writers: &Writers, cmd: C) -> ActorResult<C::Output> {
    match writers.lane(C::LANE).send(Write(cmd)).await {
        Ok(result) => result,
        Err(err) => Err(ActorError::database(format!(
            "database writer unreachable: {err}"
        ))),
    }
}
