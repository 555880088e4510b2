//! History's bounded queue: records wait here, oldest first, until they are
//! stored. At most `cap` rows wait; past it the oldest are dropped (and
//! counted), so a long database outage costs the oldest history, never the
//! service's memory. A batch taken for storing stays whole until it is
//! stored or dropped: retried as it was, with the same number, so a commit
//! that went unanswered is recognised and never stored twice.

use std::collections::VecDeque;

use crate::engine::history::Stamped;
use lendex_store::history::write::Batch;

pub(super) struct Queue {
    /// (epoch, record), oldest first.
    waiting: VecDeque<(i64, Stamped)>,
    /// The batch being stored, or to be retried.
    in_flight: Option<Batch>,
    cap: usize,
    /// The next batch number of each epoch (an epoch's numbers only grow).
    next_seq: Vec<(i64, i64)>,
    dropped: u64,
}

impl Queue {
    pub(super) fn new(cap: usize) -> Queue {
        Queue {
            waiting: VecDeque::new(),
            in_flight: None,
            cap: cap.max(1),
            next_seq: Vec::new(),
            dropped: 0,
        }
    }

    /// Rows waiting, the batch in flight included.
    pub(super) fn len(&self) -> usize {
        self.waiting.len() + self.in_flight.as_ref().map_or(0, |b| b.rows.len())
    }

    /// Rows dropped so far past the cap.
    pub(super) fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Adds records of leader `epoch`; returns how many old rows were dropped
    /// to stay within the cap.
    pub(super) fn push(&mut self, epoch: i64, rows: Vec<Stamped>) -> u64 {
        self.waiting.extend(rows.into_iter().map(|r| (epoch, r)));
        let mut over = self.len().saturating_sub(self.cap);
        let before = self.dropped;
        // The oldest are those in flight, then the front of the queue.
        if over > 0
            && let Some(batch) = self.in_flight.as_mut()
        {
            let n = over.min(batch.rows.len());
            std::sync::Arc::make_mut(&mut batch.rows).drain(..n);
            over -= n;
            self.dropped += n as u64;
            if batch.rows.is_empty() {
                self.in_flight = None;
            }
        }
        let n = over.min(self.waiting.len());
        self.waiting.drain(..n);
        self.dropped += n as u64;
        self.dropped - before
    }

    /// The batch to store now: the one in flight again, else the oldest
    /// waiting rows of one epoch, at most `max`.
    pub(super) fn batch(&mut self, max: usize) -> Option<&Batch> {
        if self.in_flight.is_none() {
            let (epoch, _) = self.waiting.front()?;
            let epoch = *epoch;
            let n = self
                .waiting
                .iter()
                .take(max.max(1))
                .take_while(|(e, _)| *e == epoch)
                .count();
            let rows = std::sync::Arc::new(self.waiting.drain(..n).map(|(_, r)| r).collect());
            let seq = self.take_seq(epoch);
            self.in_flight = Some(Batch { epoch, seq, rows });
        }
        self.in_flight.as_ref()
    }

    fn take_seq(&mut self, epoch: i64) -> i64 {
        match self.next_seq.iter_mut().find(|(e, _)| *e == epoch) {
            Some((_, seq)) => {
                *seq += 1;
                *seq - 1
            }
            None => {
                // Only the last few epochs matter; the list stays short.
                self.next_seq.retain(|(e, _)| *e > epoch - 8);
                self.next_seq.push((epoch, 2));
                1
            }
        }
    }

    /// The batch in flight is stored (or was before): it leaves the queue.
    pub(super) fn stored(&mut self) -> Option<Batch> {
        self.in_flight.take()
    }

    /// Another leader writes now: every row of `epoch` is dropped; returns how many.
    pub(super) fn fenced(&mut self, epoch: i64) -> usize {
        let mut n = 0;
        if self.in_flight.as_ref().is_some_and(|b| b.epoch == epoch) {
            n += self.in_flight.take().map_or(0, |b| b.rows.len());
        }
        let before = self.waiting.len();
        self.waiting.retain(|(e, _)| *e != epoch);
        n + before - self.waiting.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::history::{MarketSample, Record};
    use ruint::aliases::U256;

    fn rows(from: i64, n: i64) -> Vec<Stamped> {
        (from..from + n)
            .map(|at_us| Stamped {
                at_us,
                record: Record::Market(MarketSample {
                    owners: 0,
                    under_water: 0,
                    at_risk: 0,
                    debt_under_water: U256::ZERO,
                    bad_debt: U256::ZERO,
                    deposits: U256::ZERO,
                    borrows: U256::ZERO,
                }),
            })
            .collect()
    }

    fn ats(batch: &Batch) -> Vec<i64> {
        batch.rows.iter().map(|r| r.at_us).collect()
    }

    #[test]
    fn batches_are_oldest_first_one_epoch_each_and_numbered() {
        let mut q = Queue::new(100);
        q.push(1, rows(0, 3));
        q.push(2, rows(3, 2));
        let b = q.batch(10).unwrap().clone();
        assert_eq!((b.epoch, b.seq, ats(&b)), (1, 1, vec![0, 1, 2]));
        // Not stored yet: the same batch again, with the same number.
        assert_eq!(q.batch(10).unwrap().seq, 1);
        q.stored();
        let b = q.batch(1).unwrap().clone();
        assert_eq!((b.epoch, b.seq, ats(&b)), (2, 1, vec![3]));
        q.stored();
        assert_eq!(q.batch(1).unwrap().seq, 2);
        q.stored();
        assert!(q.batch(1).is_none());
        assert_eq!(q.len(), 0);
    }

    #[test]
    fn past_the_cap_the_oldest_go_first_in_flight_included() {
        let mut q = Queue::new(5);
        q.push(1, rows(0, 3));
        q.batch(2); // 0, 1 in flight; 2 waiting
        assert_eq!(q.push(1, rows(3, 4)), 2, "7 rows for 5 places");
        assert_eq!(q.len(), 5);
        assert_eq!(q.dropped(), 2);
        // The batch in flight lost its rows: gone; then 2..=6 in order.
        let b = q.batch(10).unwrap().clone();
        assert_eq!(ats(&b), vec![2, 3, 4, 5, 6]);
    }

    #[test]
    fn a_fenced_epoch_is_dropped_whole() {
        let mut q = Queue::new(100);
        q.push(1, rows(0, 3));
        q.batch(2);
        q.push(2, rows(3, 1));
        q.push(1, rows(4, 1));
        assert_eq!(q.fenced(1), 4);
        assert_eq!(ats(q.batch(10).unwrap()), vec![3]);
    }
}
