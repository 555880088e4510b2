//! The cap on held long polls (docs/design.md §11, `server.max_held_polls`): a
//! count each held poll takes a place in, and gives back when it is answered.

use std::sync::atomic::{AtomicUsize, Ordering};

/// The count of held polls, capped.
pub struct HeldPolls {
    held: AtomicUsize,
    max: usize,
}

/// One held poll; dropped when it is answered.
pub struct Held<'a>(&'a AtomicUsize);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl HeldPolls {
    pub fn new(max: usize) -> HeldPolls {
        HeldPolls {
            held: AtomicUsize::new(0),
            max,
        }
    }

    /// A place among the held polls, if one is free.
    pub fn hold(&self) -> Option<Held<'_>> {
        self.held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            })
            .ok()
            .map(|_| Held(&self.held))
    }

    pub fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_polls_are_capped() {
        let polls = HeldPolls::new(2);
        let a = polls.hold().unwrap();
        let _b = polls.hold().unwrap();
        assert!(polls.hold().is_none(), "past the cap");
        drop(a);
        assert!(polls.hold().is_some());
    }
}
