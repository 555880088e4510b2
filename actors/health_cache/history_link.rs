//! The cache's link to history's writer: under which writer epoch this
//! replica records (it records while it holds the lease), and the clock its
//! records are stamped with. Held by
//! the cache (`actor.rs`); driven by `history.rs`.

use std::time::{Duration, Instant};

use actix::prelude::*;

use crate::feed::poll_answers::now_micros;
use crate::history::HistoryWriter;

/// The cache's side of history.
pub struct HistoryLink {
    pub(super) writer: Addr<HistoryWriter>,
    /// The writer epoch records are stored under, while recording.
    pub(super) epoch: Option<i64>,
    pub(super) taking_over: bool,
    /// The last time stamped: every take is stamped after it.
    pub(super) last_us: i64,
    pub(super) market_every: Duration,
    /// Until then no change is applied: this replica may be about to record
    /// (the lease's first answer, or a takeover, is awaited), and every
    /// state the engine holds must be judged by the rule, none skipped
    /// because recording started late. Bounded, so a database fault that
    /// stalls the takeover cannot stall the cache (the takeover's `load`
    /// points then cover what went by).
    pub(super) hold_until: Option<Instant>,
}

/// How long changes wait for recording to start, at most.
pub const HOLD_AT_MOST: Duration = Duration::from_secs(2);

impl HistoryLink {
    pub fn new(writer: Addr<HistoryWriter>, market_every: Duration) -> HistoryLink {
        HistoryLink {
            writer,
            epoch: None,
            taking_over: false,
            last_us: i64::MIN,
            market_every,
            // Until the lease has answered once.
            hold_until: Some(Instant::now() + HOLD_AT_MOST),
        }
    }

    /// Whether changes wait for recording to start now.
    pub(super) fn holds_changes(&self) -> bool {
        self.hold_until.is_some_and(|until| Instant::now() < until)
    }

    /// A time after every one stamped before, and after the clock's now.
    pub(super) fn tick(&mut self) -> i64 {
        self.last_us = now_micros().max(self.last_us.saturating_add(1));
        self.last_us
    }
}
