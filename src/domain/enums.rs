//! The closed vocabularies of the spec: admin roles, transaction actions and statuses.
//! The schema enforces the same sets with CHECK constraints.

pub const ROLES: &[&str] = &["super_admin", "pool_admin"];

pub const TX_ACTIONS: &[&str] = &[
    "deposit",
    "withdraw",
    "borrow",
    "repay",
    "liquidate",
    "flash",
    "init",
    "update_pool",
    "pause",
    "resume",
    "collect_fees",
    "update_oracle",
];

pub const TX_STATUSES: &[&str] = &["pending", "confirmed", "failed"];

pub fn is_role(s: &str) -> bool {
    ROLES.contains(&s)
}

pub fn is_tx_action(s: &str) -> bool {
    TX_ACTIONS.contains(&s)
}

pub fn is_tx_status(s: &str) -> bool {
    TX_STATUSES.contains(&s)
}

/// An amount is a u64 written in decimal (decisions §4).
pub fn is_u64_decimal(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 20
        && s.bytes().all(|b| b.is_ascii_digit())
        && s.parse::<u64>().is_ok()
}

/// A u128 written in decimal digits only (WAD query parameters).
pub fn parse_u128_decimal(s: &str) -> Option<u128> {
    if s.is_empty() || s.len() > 39 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u128_decimals() {
        assert_eq!(parse_u128_decimal("0"), Some(0));
        assert_eq!(parse_u128_decimal(&u128::MAX.to_string()), Some(u128::MAX));
        assert_eq!(
            parse_u128_decimal("340282366920938463463374607431768211456"),
            None
        );
        for bad in ["", "-1", "+1", "1e18", " 1", "1.0", "0x10"] {
            assert_eq!(parse_u128_decimal(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn amounts() {
        assert!(is_u64_decimal("0"));
        assert!(is_u64_decimal("18446744073709551615"));
        assert!(!is_u64_decimal("18446744073709551616"));
        assert!(!is_u64_decimal("-1"));
        assert!(!is_u64_decimal("+1"));
        assert!(!is_u64_decimal("1.5"));
        assert!(!is_u64_decimal(""));
    }
}
