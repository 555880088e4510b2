//! The cache's link to history's writer: under which writer epoch this
//! replica records (it records while it holds the lease), and the clock its
//! records are stamped with. Held by
//! the cache (`actor.rs`); driven by `history.rs`.

use std::time::Duration;

use actix::prelude::*;

use crate::actors::history::HistoryWriter;
use crate::feed::rendered::now_micros;

/// The cache's side of history.
pub struct HistoryLink {
    pub(super) writer: Addr<HistoryWriter>,
    /// The writer epoch records are stored under, while recording.
    pub(super) epoch: Option<i64>,
    pub(super) taking_over: bool,
    /// The last time stamped: every take is stamped after it.
    pub(super) last_us: i64,
    pub(super) market_every: Duration,
}

impl HistoryLink {
    pub fn new(writer: Addr<HistoryWriter>, market_every: Duration) -> HistoryLink {
        HistoryLink {
            writer,
            epoch: None,
            taking_over: false,
            last_us: i64::MIN,
            market_every,
        }
    }

    /// A time after every one stamped before, and after the clock's now.
    pub(super) fn tick(&mut self) -> i64 {
        self.last_us = now_micros().max(self.last_us.saturating_add(1));
        self.last_us
    }
}
