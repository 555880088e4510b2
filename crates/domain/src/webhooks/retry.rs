//! When a failed delivery is tried again: full jitter (a uniform wait
//! between zero and the cap) with a cap from 1 s doubling each attempt to at
//! most 10 minutes, until `webhooks.retry_seconds` have passed since the
//! first attempt; then the delivery has failed. The random draw is the
//! caller's, so the schedule is a plain function.

use std::time::Duration;

/// The first cap, and the largest.
pub const FIRST_CAP: Duration = Duration::from_secs(1);
pub const MAX_CAP: Duration = Duration::from_secs(600);

/// The cap of the wait after failed attempt `attempt` (1 for the first).
pub fn cap(attempt: u32) -> Duration {
    let doublings = attempt.saturating_sub(1).min(20);
    (FIRST_CAP * 2u32.pow(doublings)).min(MAX_CAP)
}

/// The wait after failed attempt `attempt`, with `draw` uniform in [0, 1).
pub fn wait(attempt: u32, draw: f64) -> Duration {
    cap(attempt).mul_f64(draw.clamp(0.0, 1.0))
}

/// What follows a failed attempt made `since_first` after the first one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Try again after this long.
    RetryIn(Duration),
    /// The retry window is over: the delivery has failed.
    GiveUp,
}

/// The next step after failed attempt `attempt`. A retry that would start
/// past the window is not made.
pub fn next(attempt: u32, since_first: Duration, retry_for: Duration, draw: f64) -> Next {
    let wait = wait(attempt, draw);
    match since_first.checked_add(wait) {
        Some(at) if at <= retry_for => Next::RetryIn(wait),
        _ => Next::GiveUp,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_cap_doubles_from_a_second_to_ten_minutes() {
        let caps: Vec<u64> = (1..=12).map(|a| cap(a).as_secs()).collect();
        assert_eq!(caps, [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 600, 600]);
        assert_eq!(cap(0), FIRST_CAP);
        assert_eq!(cap(u32::MAX), MAX_CAP);
    }

    #[test]
    fn a_day_of_retries_then_failure() {
        let day = Duration::from_secs(86_400);
        assert_eq!(
            next(3, Duration::from_secs(10), day, 0.5),
            Next::RetryIn(Duration::from_secs(2))
        );
        assert_eq!(
            next(200, day - Duration::from_secs(1), day, 0.5),
            Next::GiveUp
        );
        assert_eq!(next(1, day, day, 0.0), Next::RetryIn(Duration::ZERO));
        assert_eq!(
            next(1, day + Duration::from_secs(1), day, 0.0),
            Next::GiveUp
        );
        // At the largest cap, a day holds at least 144 attempts.
        let mut since = Duration::ZERO;
        let mut attempts = 0;
        while let Next::RetryIn(w) = next(attempts + 1, since, day, 1.0) {
            since += w;
            attempts += 1;
        }
        assert!(attempts >= 144, "{attempts}");
    }

    proptest! {
        #[test]
        fn a_wait_lies_between_zero_and_its_cap(attempt in 0u32..100, draw in 0.0f64..1.0) {
            let w = wait(attempt, draw);
            prop_assert!(w <= cap(attempt));
            prop_assert!(cap(attempt) <= MAX_CAP);
        }
    }
}
