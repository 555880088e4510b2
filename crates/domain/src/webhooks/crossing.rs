//! Which crossings a webhook announces: an owner matching its filter going
//! from at or above its line (`below_wad`) to below it is `health.below`,
//! the way back `health.recovered`. A webhook judges owners from its
//! creation on: an owner already below then is not announced, and its later
//! recovery is.

use super::EventType;

/// The event an owner's move from `before` to `after` makes for a webhook
/// whose line is `below` (health factors in WAD; `None` before: the owner
/// had no value, as when it opens its first position, judged as at or above
/// the line).
pub fn crossing(before: Option<u128>, after: u128, below: u128) -> Option<EventType> {
    let was_below = before.is_some_and(|hf| hf < below);
    match (was_below, after < below) {
        (false, true) => Some(EventType::Below),
        (true, false) => Some(EventType::Recovered),
        _ => None,
    }
}

/// The highest line a webhook may draw: an owner at or above it is above
/// every webhook's line.
pub const MAX_LINE: u128 = 10 * crate::wad::WAD;

/// The lines a webhook may draw: above 0, at most `MAX_LINE`.
pub fn line_allowed(below: u128) -> bool {
    below > 0 && below <= MAX_LINE
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wad::WAD;

    #[test]
    fn only_a_crossing_of_the_line_is_an_event() {
        let line = 105 * WAD / 100;
        assert_eq!(crossing(Some(2 * WAD), WAD, line), Some(EventType::Below));
        assert_eq!(crossing(Some(line), line - 1, line), Some(EventType::Below));
        assert_eq!(
            crossing(Some(line - 1), line, line),
            Some(EventType::Recovered)
        );
        assert_eq!(crossing(Some(WAD), WAD / 2, line), None);
        assert_eq!(crossing(Some(2 * WAD), 3 * WAD, line), None);
        // A new owner under the line is announced; above it, nothing.
        assert_eq!(crossing(None, WAD, line), Some(EventType::Below));
        assert_eq!(crossing(None, 2 * WAD, line), None);
        // No debt (u128::MAX) is above every line.
        assert_eq!(
            crossing(Some(WAD), u128::MAX, line),
            Some(EventType::Recovered)
        );
    }

    #[test]
    fn a_line_is_above_zero_and_at_most_ten() {
        assert!(!line_allowed(0));
        assert!(line_allowed(1));
        assert!(line_allowed(10 * WAD));
        assert!(!line_allowed(10 * WAD + 1));
    }
}
