//! Which view a read asks for (docs/design.md §15, §17): a commitment (what
//! of the chain it holds) and an oracle (which price it values pools at).
//! One index, up to four views.

use crate::forks::Commitment;

/// The price a view values each pool at.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Oracle {
    /// The pool's own copy (`oracle_price`): what the program uses now.
    #[default]
    Pool,
    /// The pool's Pyth feed where it is usable and differs from the copy:
    /// what the program will use once the pool is cranked.
    Feed,
}

impl Oracle {
    pub fn name(self) -> &'static str {
        match self {
            Oracle::Pool => "pool",
            Oracle::Feed => "feed",
        }
    }

    /// Parses the `oracle` parameter; anything else is not a view.
    pub fn parse(s: &str) -> Option<Oracle> {
        match s {
            "pool" => Some(Oracle::Pool),
            "feed" => Some(Oracle::Feed),
            _ => None,
        }
    }
}

/// One view of the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ViewKey {
    pub commitment: Commitment,
    pub oracle: Oracle,
}

impl ViewKey {
    /// The confirmed view at the pools' own prices: every route's default,
    /// and the one the write-back, history, the risk lens and pools status
    /// read.
    pub const CONFIRMED: ViewKey = ViewKey {
        commitment: Commitment::Confirmed,
        oracle: Oracle::Pool,
    };

    pub fn new(commitment: Commitment, oracle: Oracle) -> ViewKey {
        ViewKey { commitment, oracle }
    }
}

/// A commitment alone names its view at the pools' own prices.
impl From<Commitment> for ViewKey {
    fn from(commitment: Commitment) -> ViewKey {
        ViewKey::new(commitment, Oracle::Pool)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oracles_are_named_and_parsed_back_and_pool_is_the_default() {
        for oracle in [Oracle::Pool, Oracle::Feed] {
            assert_eq!(Oracle::parse(oracle.name()), Some(oracle));
        }
        for bad in ["", "Pool", "FEED", "copy", "pyth"] {
            assert_eq!(Oracle::parse(bad), None, "{bad}");
        }
        assert_eq!(ViewKey::default(), ViewKey::CONFIRMED);
    }
}
