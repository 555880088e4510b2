//! The SSE frame written straight into one buffer: a price move that sinks 25k
//! owners is 25k frames, and building each through `UnhealthyRow` and
//! `LiquidationQuote` strings costs a dozen allocations and an escaping pass per
//! frame. Every value here is base58 or decimal (nothing to escape).
//!
//! The wire types stay the definition: `sse_frame` serializes them with serde,
//! and the tests below require this writer to produce the same bytes.

use std::io::Write as _;

use bytes::Bytes;

use lendex_domain::liquidation::Quote;
use lendex_domain::pubkey::Pubkey;
use lendex_domain::view_key::{Oracle, ViewKey};
use lendex_domain::wad::Big;
use lendex_engine::Engine;
use lendex_engine::events::FeedEvent;
use lendex_engine::state::PoolEntry;
use lendex_engine::view::{OwnerView, crank_list};
use lendex_wire::liquidations::LiquidationQuote;
use lendex_wire::positions::{Candidate, UnhealthyRow};

/// A candidate event's SSE id (docs/design.md §11), defined with the wire
/// types: clients read it too.
pub use lendex_wire::events::EventId;

/// What a frame carries besides the owner: its id and when it was published.
#[derive(Debug, Clone, Copy)]
pub struct Stamp {
    pub id: EventId,
    pub published_at_ms: i64,
    /// The event brings a processed stream back from writes that left the
    /// best chain (docs/design.md §15).
    pub rolled_back: bool,
}

/// Where a candidate's state comes from: the §11 provenance slot, in the
/// view of the engine that computed it, and in the feed view the pools to
/// crank (docs/design.md §17).
#[derive(Debug, Clone, Copy)]
pub struct Provenance<'a> {
    pub slot: u64,
    pub view: ViewKey,
    pub crank: Option<&'a [String]>,
}

/// One SSE frame: its `id:`, `event: <name>` and the candidate as JSON.
pub fn sse_frame(
    event: &str,
    owner: &Pubkey,
    hf: u128,
    rows: &[UnhealthyRow],
    liquidation: Option<&LiquidationQuote>,
    Provenance { slot, view, crank }: Provenance<'_>,
    stamp: Stamp,
) -> Bytes {
    let data = serde_json::to_string(&Candidate {
        owner: owner.to_string(),
        account_health_factor_wad: hf.to_string(),
        positions: rows,
        liquidation,
        crank,
        slot,
        commitment: view.commitment,
        oracle: view.oracle,
        published_at_ms: stamp.published_at_ms,
        rolled_back: stamp.rolled_back,
    })
    .expect("plain strings serialize");
    Bytes::from(format!(
        "id: {}\nevent: {event}\ndata: {data}\n\n",
        stamp.id
    ))
}

/// Appends the frame of one feed event; false when there is nothing to say
/// (a start or update of an owner no longer resident).
pub fn write_event(
    out: &mut Vec<u8>,
    engine: &Engine,
    event: &FeedEvent,
    stamp: Stamp,
    now: i64,
    max_oracle_age: i64,
) -> bool {
    match *event {
        FeedEvent::Start(owner, _) | FeedEvent::Update(owner, _) => write_candidate(
            out,
            engine,
            event.name(),
            &owner,
            stamp,
            now,
            max_oracle_age,
        ),
        FeedEvent::Stop(owner, hf) => {
            let held = engine.peek(&owner);
            let slot = held.as_ref().map_or(0, |view| view.slot());
            let crank = match &held {
                Some(view) => crank_list(engine, view),
                None => (engine.oracle() == Oracle::Feed).then(Vec::new),
            };
            let from = Provenance {
                slot,
                view: engine.view_key(),
                crank: crank.as_deref(),
            };
            out.extend_from_slice(&sse_frame(event.name(), &owner, hf, &[], None, from, stamp));
            true
        }
        FeedEvent::Gone(owner, slot) => {
            let crank = (engine.oracle() == Oracle::Feed).then(Vec::new);
            out.extend_from_slice(&sse_frame(
                event.name(),
                &owner,
                u128::MAX,
                &[],
                None,
                Provenance {
                    slot,
                    view: engine.view_key(),
                    crank: crank.as_deref(),
                },
                stamp,
            ));
            true
        }
    }
}

/// Appends the frame of a candidate_start or candidate_update (the owner's rows
/// and quote); false when the owner is not resident.
pub fn write_candidate(
    out: &mut Vec<u8>,
    engine: &Engine,
    event: &str,
    owner: &Pubkey,
    stamp: Stamp,
    now: i64,
    max_oracle_age: i64,
) -> bool {
    let Some(view) = engine.peek(owner) else {
        return false;
    };
    let slot = view.slot();
    let owner_text = owner.to_string();
    // Written 2 + 2 x rows times: formatted once.
    let hf = view.health_factor.to_string();
    let stale_entry = |p: &PoolEntry| p.oracle_stale(now, max_oracle_age);
    let stale = view.positions.iter().any(|(_, pool)| stale_entry(pool));
    // Debt rows first, then by address (as `feed::rows_of`).
    let mut rows: Vec<(bool, String, usize)> = view
        .positions
        .iter()
        .enumerate()
        .map(|(i, (p, _))| (p.amounts.borrow_principal == 0, p.address.to_string(), i))
        .collect();
    rows.sort();
    let crank = crank_list(engine, &view);
    let crank = crank.as_deref();

    let _ = write!(
        out,
        "id: {}\nevent: {event}\ndata: {{\"owner\":\"{owner_text}\",\"account_health_factor_wad\":\"{hf}\",\"positions\":[",
        stamp.id
    );
    for (n, (_, address, i)) in rows.iter().enumerate() {
        let (p, pool) = view.positions[*i];
        if n > 0 {
            out.push(b',');
        }
        let _ = write!(
            out,
            "{{\"position_address\":\"{address}\",\"pool_address\":\"{}\",\"owner\":\"{owner_text}\",\"deposit_shares\":\"{}\",\"borrow_principal\":\"{}\",\"health_factor_wad\":\"{hf}\",\"account_health_factor_wad\":\"{hf}\",\"oracle_stale\":{stale}}}",
            pool.address_text, p.amounts.deposit_shares, p.amounts.borrow_principal
        );
        if let Some(crank) = crank {
            out.pop();
            write_crank(out, crank);
            out.push(b'}');
        }
    }
    out.extend_from_slice(b"],\"liquidation\":");
    match view.quote {
        Some(q) => {
            // The quote names two of the rows' pools and positions: their texts
            // are already made.
            let held = |position: &Pubkey| {
                rows.iter()
                    .find(|(_, _, i)| view.positions[*i].0.address == *position)
                    .map(|(_, text, i)| (text.as_str(), view.positions[*i].1))
            };
            let (Some((debt_position, debt_pool)), Some((collateral_position, collateral_pool))) =
                (held(&q.debt_position), held(&q.collateral_position))
            else {
                out.extend_from_slice(b"null");
                write_tail(out, slot, engine.view_key(), crank, stamp);
                return true;
            };
            let texts = QuoteTexts {
                owner: &owner_text,
                health_factor: &hf,
                debt_pool: &debt_pool.address_text,
                collateral_pool: &collateral_pool.address_text,
                debt_position,
                collateral_position,
                stale: stale_entry(debt_pool) || stale_entry(collateral_pool),
                slot,
                view: engine.view_key(),
                crank,
            };
            write_quote(out, &view, q, &texts);
        }
        None => out.extend_from_slice(b"null"),
    }
    write_tail(out, slot, engine.view_key(), crank, stamp);
    true
}

/// `,"crank":[...]`: the pools to crank (docs/design.md §17).
fn write_crank(out: &mut Vec<u8>, crank: &[String]) {
    out.extend_from_slice(b",\"crank\":[");
    for (n, pool) in crank.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        out.push(b'"');
        out.extend_from_slice(pool.as_bytes());
        out.push(b'"');
    }
    out.push(b']');
}

/// The provenance that ends every candidate's data, and the frame's end.
fn write_tail(out: &mut Vec<u8>, slot: u64, view: ViewKey, crank: Option<&[String]>, stamp: Stamp) {
    if let Some(crank) = crank {
        write_crank(out, crank);
    }
    let _ = write!(
        out,
        ",\"slot\":{slot},\"commitment\":\"{}\",\"oracle\":\"{}\",\"published_at_ms\":{}",
        view.commitment.name(),
        view.oracle.name(),
        stamp.published_at_ms
    );
    if stamp.rolled_back {
        out.extend_from_slice(b",\"rolled_back\":true");
    }
    out.extend_from_slice(b"}\n\n");
}

/// The base58 texts a quote repeats from the frame's rows.
struct QuoteTexts<'a> {
    owner: &'a str,
    health_factor: &'a str,
    debt_pool: &'a str,
    collateral_pool: &'a str,
    debt_position: &'a str,
    collateral_position: &'a str,
    stale: bool,
    slot: u64,
    view: ViewKey,
    crank: Option<&'a [String]>,
}

fn write_quote(out: &mut Vec<u8>, view: &OwnerView<'_>, q: &Quote, t: &QuoteTexts<'_>) {
    let _ = write!(
        out,
        "{{\"owner\":\"{}\",\"account_health_factor_wad\":\"{}\",\"account_health_factor_conf_wad\":\"{}\",\"debt_pool\":\"{}\",\"collateral_pool\":\"{}\",\"debt_position\":\"{}\",\"collateral_position\":\"{}\",\"repay_amount\":\"{}\",\"seize_amount\":\"{}\",\"repay_value_wad\":\"{}\",\"seize_value_wad\":\"{}\",\"protocol_fee_value_wad\":\"{}\",\"profit_value_wad\":\"{}\",\"oracle_stale\":{},\"slot\":{},\"commitment\":\"{}\",\"oracle\":\"{}\"",
        t.owner,
        t.health_factor,
        view.health_factor_with_confidence(),
        t.debt_pool,
        t.collateral_pool,
        t.debt_position,
        t.collateral_position,
        Decimal(&q.repay_amount),
        Decimal(&q.seize_amount),
        Decimal(&q.repay_value_wad),
        Decimal(&q.seize_value_wad),
        Decimal(&q.protocol_fee_value_wad),
        Decimal(&q.profit_value_wad),
        t.stale,
        t.slot,
        t.view.commitment.name(),
        t.view.oracle.name(),
    );
    if let Some(crank) = t.crank {
        write_crank(out, crank);
    }
    out.push(b'}');
}

/// A 512-bit value in decimal, through u128 when it fits (ruint's 512-bit
/// division per digit group is the slow part of rendering a quote).
pub struct Decimal<'a>(pub &'a Big);

impl std::fmt::Display for Decimal<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match u128::try_from(*self.0) {
            Ok(small) => write!(f, "{small}"),
            Err(_) => write!(f, "{}", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::candidate_frame;

    #[test]
    fn decimal_matches_ruint_at_every_size() {
        for v in [
            Big::ZERO,
            Big::from(7u8),
            Big::from(u128::MAX),
            Big::from(u128::MAX) + Big::from(1u8),
            Big::MAX,
        ] {
            assert_eq!(Decimal(&v).to_string(), v.to_string());
        }
    }

    #[test]
    fn event_ids_are_two_u64s() {
        let id = EventId {
            epoch: 17,
            seq: u64::MAX,
        };
        assert_eq!(EventId::parse(&id.to_string()), Some(id));
        assert_eq!(EventId::parse(" 1.2 "), Some(EventId { epoch: 1, seq: 2 }));
        for bad in [
            "",
            ".",
            "1.",
            ".2",
            "1.2.3",
            "a.1",
            "1.-2",
            "+1.2",
            "1.18446744073709551616",
            "1,2",
        ] {
            assert_eq!(EventId::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn frames_equal_the_serde_wire_types() {
        let (engine, owners) = lendex_engine::sample::sample_market(250);
        let (mut checked, mut quoted, mut stale) = (0, 0, 0);
        for (owner, rolled_back) in owners.iter().flat_map(|o| [(o, false), (o, true)]) {
            let stamp = Stamp {
                id: EventId { epoch: 99, seq: 7 },
                published_at_ms: 1_700_000_000_123,
                rolled_back,
            };
            for (now, age) in [(1_700_000_000, 120), (i64::MAX / 2, 120)] {
                let Some(expected) =
                    candidate_frame(&engine, "candidate_update", owner, stamp, now, age)
                else {
                    continue;
                };
                let mut out = Vec::new();
                assert!(write_candidate(
                    &mut out,
                    &engine,
                    "candidate_update",
                    owner,
                    stamp,
                    now,
                    age
                ));
                let text = String::from_utf8(out).unwrap();
                assert_eq!(text, String::from_utf8(expected.to_vec()).unwrap());
                checked += 1;
                quoted += usize::from(text.contains("\"liquidation\":{"));
                stale += usize::from(text.contains("\"oracle_stale\":true"));
            }
        }
        assert!(
            checked > 100 && quoted > 20 && stale > 20,
            "{checked} frames, {quoted} quoted, {stale} stale"
        );
    }

    #[test]
    fn feed_view_frames_equal_the_serde_wire_types() {
        let (sample, owners) = lendex_engine::sample::sample_market(250);
        let mut engine = Engine::at_feeds(usize::MAX);
        // Every other pool valued ahead of its copy.
        for (i, pool) in sample.pools().enumerate() {
            let mut state = pool.state.clone();
            state.crank = i % 2 == 0;
            engine.upsert_pool(state);
        }
        for owner in &owners {
            let Some(view) = sample.peek(owner) else {
                continue;
            };
            let positions = (view.positions.iter())
                .map(|(held, pool)| held.state(pool.state.address))
                .collect();
            engine.set_owner(*owner, positions);
        }
        let stamp = Stamp {
            id: EventId { epoch: 99, seq: 7 },
            published_at_ms: 1_700_000_000_123,
            rolled_back: false,
        };
        let (mut checked, mut cranked, mut quoted) = (0, 0, 0);
        for owner in &owners {
            let now = 1_700_000_000;
            let Some(expected) =
                candidate_frame(&engine, "candidate_start", owner, stamp, now, 120)
            else {
                continue;
            };
            let mut out = Vec::new();
            assert!(write_candidate(
                &mut out,
                &engine,
                "candidate_start",
                owner,
                stamp,
                now,
                120
            ));
            let text = String::from_utf8(out).unwrap();
            assert_eq!(text, String::from_utf8(expected.to_vec()).unwrap());
            assert!(text.contains("\"oracle\":\"feed\""));
            checked += 1;
            cranked += usize::from(text.contains("\"crank\":[\""));
            quoted += usize::from(text.contains("\"liquidation\":{"));
        }
        assert!(
            checked > 50 && cranked > 20 && quoted > 10,
            "{checked} frames, {cranked} with pools to crank, {quoted} quoted"
        );
    }
}
