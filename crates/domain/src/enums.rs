//! The closed vocabularies (docs/design.md §16): admin roles, transaction actions and statuses.
//! The schema enforces the same sets with CHECK constraints.

/// An admin role (docs/design.md §16.6): the one definition of the vocabulary, parsed at
/// the edges (a request body, a row, a CLI argument) and used as is within.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    SuperAdmin,
    PoolAdmin,
}

impl Role {
    pub const fn as_str(self) -> &'static str {
        match self {
            Role::SuperAdmin => "super_admin",
            Role::PoolAdmin => "pool_admin",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        [Role::SuperAdmin, Role::PoolAdmin]
            .into_iter()
            .find(|r| r.as_str() == s)
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Every role's name, as the schema's enum lists them.
pub const ROLES: [&str; 2] = [Role::SuperAdmin.as_str(), Role::PoolAdmin.as_str()];

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

pub fn is_tx_action(s: &str) -> bool {
    TX_ACTIONS.contains(&s)
}

pub fn is_tx_status(s: &str) -> bool {
    TX_STATUSES.contains(&s)
}

/// An amount is a u64 written in decimal (docs/design.md §4).
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
    fn roles_read_back_as_written() {
        for name in ROLES {
            assert_eq!(Role::parse(name).map(Role::as_str), Some(name));
            let json = serde_json::to_string(&Role::parse(name)).unwrap();
            assert_eq!(json, format!("\"{name}\""));
        }
        assert_eq!(Role::parse("root"), None);
        assert_eq!(Role::parse("Pool_Admin"), None);
    }

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
