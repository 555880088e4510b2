//! The cache's LISTEN connection as the cache sees it: up or not (health
//! says so: a cache that may miss announcements), who waits for it to be up
//! (the start), and whether it has ever been up.

use tokio::sync::oneshot;

#[derive(Default)]
pub(super) struct Listening {
    up: bool,
    /// Callers of `AwaitListening` until it is up.
    waiters: Vec<oneshot::Sender<()>>,
    /// It has been up at least once.
    ever: bool,
}

impl Listening {
    pub(super) fn is_up(&self) -> bool {
        self.up
    }

    /// Tells it up or down; true when it came up for the first time.
    pub(super) fn set(&mut self, up: bool) -> bool {
        self.up = up;
        if !up {
            return false;
        }
        for waiter in self.waiters.drain(..) {
            let _ = waiter.send(());
        }
        !std::mem::replace(&mut self.ever, true)
    }

    /// A receiver told once it is up (at once if it is).
    pub(super) fn wait(&mut self) -> Option<oneshot::Receiver<()>> {
        if self.up {
            return None;
        }
        let (tx, rx) = oneshot::channel();
        self.waiters.push(tx);
        Some(rx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiters_are_told_and_only_the_first_up_is_first() {
        let mut listening = Listening::default();
        let mut rx = listening.wait().unwrap();
        assert!(!listening.set(false));
        assert!(rx.try_recv().is_err());
        assert!(listening.set(true), "first time up");
        assert!(rx.try_recv().is_ok());
        assert!(listening.wait().is_none());
        listening.set(false);
        assert!(!listening.set(true), "not the first time");
    }
}
