//! The `limit` query parameter shared by audit, transactions and unhealthy positions.

pub const DEFAULT_LIMIT: i64 = 50;
pub const MAX_LIMIT: i64 = 200;

/// Missing, non-numeric or < 1 gives the default; above 200 gives 200 (docs/design.md §4).
pub fn clamp_limit(raw: Option<&str>) -> i64 {
    match raw.and_then(|s| s.trim().parse::<i64>().ok()) {
        Some(n) if n >= 1 => n.min(MAX_LIMIT),
        _ => DEFAULT_LIMIT,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clamps() {
        assert_eq!(clamp_limit(None), 50);
        assert_eq!(clamp_limit(Some("abc")), 50);
        assert_eq!(clamp_limit(Some("0")), 50);
        assert_eq!(clamp_limit(Some("-5")), 50);
        assert_eq!(clamp_limit(Some("7")), 7);
        assert_eq!(clamp_limit(Some("200")), 200);
        assert_eq!(clamp_limit(Some("201")), 200);
        assert_eq!(clamp_limit(Some("99999999999999999999999")), 50);
    }
}
