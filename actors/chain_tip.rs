//! The leader's slots, recorded for the followers (docs/design.md §15): the
//! chain-sync actor hands over each slot report; at most one write is in
//! flight, and the newest slots wait for the next, so a fast-moving tip
//! costs one small write at a time and never queues behind itself.

use lendex_store::chain_tip::ChainTip;

#[derive(Default)]
pub(crate) struct TipRecorder {
    writing: bool,
    /// Reported while a write was in flight: the next to write.
    pending: Option<ChainTip>,
    /// What the database holds (or is being given).
    recorded: Option<ChainTip>,
}

impl TipRecorder {
    /// The slots moved: the tip to write now, if none is in flight and the
    /// database does not hold it already.
    pub(crate) fn report(&mut self, tip: ChainTip) -> Option<ChainTip> {
        if self.writing {
            self.pending = Some(tip);
            return None;
        }
        self.start(tip)
    }

    /// The write ended (kept or failed): the next tip to write, if one waits.
    pub(crate) fn written(&mut self, kept: bool) -> Option<ChainTip> {
        self.writing = false;
        if !kept {
            self.recorded = None;
        }
        self.pending.take().and_then(|tip| self.start(tip))
    }

    /// A new leader records anew: what an earlier leader left is not ours.
    pub(crate) fn forget(&mut self) {
        self.recorded = None;
        self.pending = None;
    }

    fn start(&mut self, tip: ChainTip) -> Option<ChainTip> {
        if self.recorded == Some(tip) || (tip.processed.is_none() && tip.confirmed.is_none()) {
            return None;
        }
        self.writing = true;
        self.recorded = Some(tip);
        Some(tip)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tip(p: u64, c: u64) -> ChainTip {
        ChainTip {
            processed: Some(p),
            confirmed: Some(c),
        }
    }

    #[test]
    fn one_write_in_flight_the_newest_next_and_no_repeat() {
        let mut r = TipRecorder::default();
        assert_eq!(r.report(tip(10, 8)), Some(tip(10, 8)));
        assert_eq!(r.report(tip(11, 8)), None);
        assert_eq!(r.report(tip(12, 9)), None);
        assert_eq!(r.written(true), Some(tip(12, 9)));
        assert_eq!(r.written(true), None);
        assert_eq!(r.report(tip(12, 9)), None, "the database holds it");
        // A failed write is tried again with the next report, even if equal.
        assert_eq!(r.report(tip(13, 9)), Some(tip(13, 9)));
        assert_eq!(r.written(false), None);
        assert_eq!(r.report(tip(13, 9)), Some(tip(13, 9)));
        let none = ChainTip {
            processed: None,
            confirmed: None,
        };
        r.written(true);
        assert_eq!(r.report(none), None, "nothing known, nothing written");
    }
}
