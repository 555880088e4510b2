//! GET /api/addresses/{address}: what an address is to the index, so that one
//! search box can take a wallet, a pool or a position account
//! (docs/design.md §9).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::formats::PubkeyText;

/// What the index knows the address as, the first that holds of: a listed
/// pool, a position account, a wallet holding positions or with recorded
/// history; else unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum AddressKind {
    Pool,
    Position,
    Wallet,
    Unknown,
}

impl AddressKind {
    /// The kind as the lookup query names it (`db::queries::LOOKUP_ADDRESS`).
    pub fn named(name: &str) -> Option<AddressKind> {
        match name {
            "pool" => Some(AddressKind::Pool),
            "position" => Some(AddressKind::Position),
            "wallet" => Some(AddressKind::Wallet),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AddressResponse {
    #[schema(value_type = PubkeyText)]
    pub address: String,
    pub kind: AddressKind,
    /// A pool: itself; a position: its pool; else null.
    #[schema(value_type = Option<PubkeyText>)]
    pub pool_address: Option<String>,
    /// A position: its owner; a wallet: itself; else null.
    #[schema(value_type = Option<PubkeyText>)]
    pub owner: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::AddressKind;

    #[test]
    fn each_kind_the_query_names_is_the_kind_served() {
        for kind in [
            AddressKind::Pool,
            AddressKind::Position,
            AddressKind::Wallet,
        ] {
            let name = serde_json::to_value(kind).unwrap();
            assert_eq!(AddressKind::named(name.as_str().unwrap()), Some(kind));
        }
        assert_eq!(AddressKind::named("unknown"), None);
        assert_eq!(AddressKind::named("Pool"), None);
    }
}
