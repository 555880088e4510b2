//! Pools: the index (docs/design.md §16.1, 4.7), registration (4.8) and refresh (4.9).

use std::borrow::Cow;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::formats::{
    DecimalText, I64Text, NonceText, PubkeyText, TxSignature, U64Text, WadText, WalletSignature,
};

/// docs/design.md §16.1, as GET /api/pools returns it (the `decimals` column is internal).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Pool {
    #[schema(value_type = PubkeyText)]
    pub pool_address: String,
    #[schema(value_type = PubkeyText)]
    pub token_mint: String,
    pub symbol: Option<String>,
    #[schema(value_type = PubkeyText)]
    pub authority: String,
    #[schema(value_type = PubkeyText)]
    pub vault: String,
    pub pool_bump: i16,
    pub authority_bump: i16,
    pub vault_bump: i16,
    pub paused: bool,
    #[schema(value_type = U64Text)]
    pub total_deposits: String,
    #[schema(value_type = U64Text)]
    pub total_borrows: String,
    #[schema(value_type = U64Text)]
    pub accumulated_fees: String,
    #[schema(value_type = WadText)]
    pub ltv_wad: String,
    #[schema(value_type = WadText)]
    pub liquidation_threshold_wad: String,
    #[schema(value_type = WadText)]
    pub liquidation_bonus_wad: String,
    #[schema(value_type = WadText)]
    pub protocol_liq_fee_wad: String,
    #[schema(value_type = WadText)]
    pub reserve_factor_wad: String,
    #[schema(value_type = WadText)]
    pub close_factor_wad: String,
    #[schema(value_type = WadText)]
    pub base_rate_wad: String,
    #[schema(value_type = WadText)]
    pub optimal_util_wad: String,
    #[schema(value_type = WadText)]
    pub slope1_wad: String,
    #[schema(value_type = WadText)]
    pub slope2_wad: String,
    pub flash_fee_bps: i32,
    /// i64 as a decimal string; null until the oracle is set.
    #[schema(value_type = Option<I64Text>)]
    pub oracle_price: Option<String>,
    /// u64 as a decimal string; null until the oracle is set.
    #[schema(value_type = Option<U64Text>)]
    pub oracle_conf: Option<String>,
    pub oracle_expo: Option<i32>,
    #[schema(value_type = Option<PubkeyText>)]
    pub pyth_price_feed: Option<String>,
    #[schema(value_type = PubkeyText)]
    pub created_by: String,
    #[schema(value_type = TxSignature)]
    pub init_signature: String,
    pub last_synced_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PoolsResponse {
    pub pools: Vec<Pool>,
}

/// The body of POST /api/pools/init; its `parse` (http::handlers::pools) reads it
/// into a typed call.
#[derive(ToSchema)]
pub struct InitPoolRequest {
    #[schema(value_type = PubkeyText)]
    pub actor: String,
    #[schema(value_type = NonceText)]
    pub nonce: String,
    /// Base58 ed25519 signature of the message for `init_pool:<token_mint>`.
    #[schema(value_type = WalletSignature)]
    pub signature: String,
    /// PDA(["pool", token_mint]).
    #[schema(value_type = PubkeyText)]
    pub pool_address: String,
    #[schema(value_type = PubkeyText)]
    pub token_mint: String,
    #[schema(max_length = 32, pattern = r"^[^\u0000-\u001F\u007F-\u009F]*$")]
    pub symbol: Option<String>,
    /// Equals the actor and the on-chain authority.
    #[schema(value_type = PubkeyText)]
    pub authority: String,
    #[schema(value_type = PubkeyText)]
    pub vault: String,
    #[schema(maximum = 255)]
    pub pool_bump: u8,
    #[schema(maximum = 255)]
    pub authority_bump: u8,
    #[schema(maximum = 255)]
    pub vault_bump: u8,
    /// Signature of the on-chain initialisation transaction.
    #[schema(value_type = TxSignature)]
    pub init_signature: String,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct InitPoolResponse {
    pub ok: bool,
    #[schema(value_type = PubkeyText)]
    pub pool_address: String,
    /// False when the pool was already registered (nothing changed).
    pub created: bool,
    /// The pool's symbol as stored: on a re-registration, the first one (a
    /// symbol sent again is not applied).
    pub symbol: Option<String>,
}

/// A pool account as read from chain, checked: what a registration of it
/// sends (GET /api/pools/{address}/chain).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PoolOnChain {
    #[schema(value_type = PubkeyText)]
    pub pool_address: String,
    #[schema(value_type = PubkeyText)]
    pub token_mint: String,
    /// The pool's on-chain authority: the one wallet that may register it.
    #[schema(value_type = PubkeyText)]
    pub authority: String,
    #[schema(value_type = PubkeyText)]
    pub vault: String,
    #[schema(maximum = 255)]
    pub pool_bump: u8,
    #[schema(maximum = 255)]
    pub authority_bump: u8,
    #[schema(maximum = 255)]
    pub vault_bump: u8,
    /// Already in the index of this cluster.
    pub registered: bool,
    /// The transaction that created the account, when the chain tells it in
    /// one page of its signatures (null otherwise: the operator gives it).
    #[schema(value_type = Option<TxSignature>)]
    pub init_signature: Option<String>,
}

/// A pool on chain that is not in the index (GET /api/pools/unregistered).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct UnregisteredPool {
    #[schema(value_type = PubkeyText)]
    pub pool_address: String,
    #[schema(value_type = PubkeyText)]
    pub token_mint: String,
    /// The one wallet that may register it.
    #[schema(value_type = PubkeyText)]
    pub authority: String,
    #[schema(value_type = Option<I64Text>)]
    pub oracle_price: Option<String>,
    pub oracle_expo: Option<i32>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct UnregisteredPoolsResponse {
    /// By address; at most 200 (a program anyone can initialise pools of may
    /// hold many more).
    pub pools: Vec<UnregisteredPool>,
    /// The chain held more than were listed.
    pub truncated: bool,
}

/// The body of POST /api/pools/sync; its `parse` (http::handlers::pools) reads it
/// into a typed call.
#[derive(ToSchema)]
pub struct SyncPoolRequest {
    #[schema(value_type = PubkeyText)]
    pub pool_address: String,
    /// Fills the symbol only while the stored one is null. No control characters.
    #[schema(max_length = 32, pattern = r"^[^\u0000-\u001F\u007F-\u009F]*$")]
    pub symbol: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct SyncPoolResponse {
    pub ok: bool,
    #[schema(value_type = PubkeyText)]
    pub pool_address: String,
}

/// One pool's token and oracle, as the health engine holds them (GET
/// /api/pools/status): what a front end needs to show amounts and to trust a
/// price.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PoolStatus {
    #[schema(value_type = PubkeyText)]
    pub pool_address: String,
    pub symbol: Option<String>,
    /// Token decimals: base units / 10^decimals is the token amount.
    pub decimals: u8,
    /// i64 as a decimal string; null until the oracle is set.
    #[schema(value_type = Option<I64Text>)]
    pub oracle_price: Option<String>,
    pub oracle_expo: Option<i32>,
    /// The pool's on-chain last update (Unix seconds).
    pub oracle_updated_at: i64,
    /// Seconds since then, at this answer.
    pub oracle_age_seconds: i64,
    /// Older than `health.max_oracle_age_seconds` (quotes are flagged).
    pub oracle_stale: bool,
    /// The context slot of the chain read the pool's row holds.
    pub slot: u64,
    /// The oracle's confidence, in the price's units (null until set).
    #[schema(value_type = Option<U64Text>)]
    pub oracle_conf: Option<String>,
    /// Token base units deposited and borrowed.
    #[schema(value_type = U64Text)]
    pub total_deposits: String,
    #[schema(value_type = U64Text)]
    pub total_borrows: String,
    /// Their value in WAD USD at the oracle price, as §3 values tokens (0 unpriced).
    #[schema(value_type = DecimalText)]
    pub deposits_value_wad: String,
    #[schema(value_type = DecimalText)]
    pub borrows_value_wad: String,
    /// total_borrows / total_deposits, as a WAD (docs/design.md §3).
    #[schema(value_type = WadText)]
    pub utilization_wad: String,
    /// Fractions (0.05 is 5%), as GET /api/positions/{user}/detail gives them.
    pub supply_apy: f64,
    pub borrow_apy: f64,
    #[schema(value_type = WadText)]
    pub liquidation_threshold_wad: String,
    /// The pool's Pyth feed as last read (docs/design.md §17); null where
    /// feeds are not read (`[oracle] feeds = false`).
    pub feed: Option<PoolFeed>,
}

/// A pool's Pyth feed account as Lendex last read it (docs/design.md §17).
/// Each field is null when the account does not give it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct PoolFeed {
    /// The account the pool names (`pyth_price_feed`); null when `unset`.
    #[schema(value_type = Option<PubkeyText>)]
    pub address: Option<String>,
    /// `ok` (usable), or what is wrong with it: `unset`, `missing`,
    /// `not_a_price_update`, `partially_verified`, `nonpositive`.
    #[schema(example = "ok")]
    pub status: String,
    /// i64 as a decimal string.
    #[schema(value_type = Option<I64Text>)]
    pub price: Option<String>,
    #[schema(value_type = Option<U64Text>)]
    pub conf: Option<String>,
    pub exponent: Option<i32>,
    /// When Pyth published the price (Unix seconds).
    pub publish_time: Option<i64>,
    /// Seconds since then, at this answer (reported, never used to exclude
    /// the feed).
    pub age_seconds: Option<i64>,
    pub posted_slot: Option<u64>,
    /// The context slot of Lendex's read of the account.
    pub slot: Option<u64>,
    /// Usable and different from the pool's copy (price, conf or exponent):
    /// the pool values ahead in the feed view and must be cranked.
    pub differs: bool,
    /// (feed − copy) / copy × 10,000, each at its own exponent, rounded
    /// toward zero; null unless both prices are above zero.
    pub deviation_bps: Option<i64>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PoolStatusResponse {
    pub max_oracle_age_seconds: i64,
    /// The cluster this service indexes: mainnet, devnet or localnet.
    pub cluster: Cow<'static, str>,
    /// What a Solana explorer address link needs appended to open this cluster
    /// ("" on mainnet; on localnet a customUrl of the RPC's origin).
    pub explorer_query: String,
    pub pools: Vec<PoolStatus>,
}

/// What a Solana explorer address link needs to open `cluster`: nothing on
/// mainnet, `?cluster=devnet`, or for a local chain `?cluster=custom` with a
/// `customUrl` of the RPC's origin only (scheme, host and port: a path or
/// query string, where providers put their keys, is never shown).
pub fn explorer_query(cluster: &str, rpc_url: &str) -> String {
    match cluster {
        "mainnet" => String::new(),
        "devnet" => "?cluster=devnet".to_string(),
        _ => {
            let (scheme, rest) = rpc_url.split_once("://").unwrap_or(("http", rpc_url));
            let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
            let host = authority.rsplit('@').next().unwrap_or_default();
            let origin = format!("{scheme}://{host}");
            let encoded: String =
                percent_encoding::utf8_percent_encode(&origin, percent_encoding::NON_ALPHANUMERIC)
                    .to_string();
            format!("?cluster=custom&customUrl={encoded}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::explorer_query;

    #[test]
    fn explorer_links_open_the_right_chain_and_never_a_key() {
        assert_eq!(
            explorer_query("mainnet", "https://x.example/?api-key=s"),
            ""
        );
        assert_eq!(
            explorer_query("devnet", "https://api.devnet.solana.com"),
            "?cluster=devnet"
        );
        assert_eq!(
            explorer_query("localnet", "http://127.0.0.1:8899"),
            "?cluster=custom&customUrl=http%3A%2F%2F127%2E0%2E0%2E1%3A8899"
        );
        assert_eq!(
            explorer_query(
                "localnet",
                "https://user:pw@rpc.example:443/v1/SECRET?key=SECRET"
            ),
            "?cluster=custom&customUrl=https%3A%2F%2Frpc%2Eexample%3A443"
        );
    }
}
