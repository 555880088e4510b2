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

#[cfg(test)]
mod tests {
    use super::*;

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
