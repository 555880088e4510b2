//! The resources of spec §2 as the API returns them, and how each is read from a
//! row of its named query. u64/u128 values are decimal strings (spec §1.3).

use crate::http::openapi::schemas::{
    I64Text, PubkeyText, RoleName, TxActionName, TxSignature, TxStatusName, U64Text, WadText,
};
use chrono::{DateTime, Utc};
use serde::Serialize;
use tokio_postgres::Row;
use utoipa::ToSchema;

use crate::actors::health_cache::OwnerRow;
use crate::domain::pubkey::Pubkey;

/// Spec 2.1, as GET /api/pools returns it (the `decimals` column is internal).
#[derive(Debug, Clone, Serialize, ToSchema)]
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

impl Pool {
    pub fn from_row(row: &Row) -> Pool {
        Pool {
            pool_address: row.get("pool_address"),
            token_mint: row.get("token_mint"),
            symbol: row.get("symbol"),
            authority: row.get("authority"),
            vault: row.get("vault"),
            pool_bump: row.get("pool_bump"),
            authority_bump: row.get("authority_bump"),
            vault_bump: row.get("vault_bump"),
            paused: row.get("paused"),
            total_deposits: row.get("total_deposits"),
            total_borrows: row.get("total_borrows"),
            accumulated_fees: row.get("accumulated_fees"),
            ltv_wad: row.get("ltv_wad"),
            liquidation_threshold_wad: row.get("liquidation_threshold_wad"),
            liquidation_bonus_wad: row.get("liquidation_bonus_wad"),
            protocol_liq_fee_wad: row.get("protocol_liq_fee_wad"),
            reserve_factor_wad: row.get("reserve_factor_wad"),
            close_factor_wad: row.get("close_factor_wad"),
            base_rate_wad: row.get("base_rate_wad"),
            optimal_util_wad: row.get("optimal_util_wad"),
            slope1_wad: row.get("slope1_wad"),
            slope2_wad: row.get("slope2_wad"),
            flash_fee_bps: row.get("flash_fee_bps"),
            oracle_price: row
                .get::<_, Option<i64>>("oracle_price")
                .map(|p| p.to_string()),
            oracle_conf: row.get("oracle_conf"),
            oracle_expo: row.get("oracle_expo"),
            pyth_price_feed: row.get("pyth_price_feed"),
            created_by: row.get("created_by"),
            init_signature: row.get("init_signature"),
            last_synced_at: row.get("last_synced_at"),
            created_at: row.get("created_at"),
        }
    }
}

/// Spec 2.5.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Transaction {
    pub id: i64,
    #[schema(value_type = TxSignature)]
    pub signature: String,
    #[schema(value_type = Option<PubkeyText>)]
    pub pool_address: Option<String>,
    #[schema(value_type = PubkeyText)]
    pub wallet: String,
    #[schema(value_type = TxActionName)]
    pub action: String,
    /// u64 as a decimal string; null when the caller gave none.
    #[schema(value_type = Option<U64Text>)]
    pub amount: Option<String>,
    #[schema(value_type = TxStatusName)]
    pub status: String,
    pub error_msg: Option<String>,
    pub created_at: DateTime<Utc>,
}

impl Transaction {
    pub fn from_row(row: &Row) -> Transaction {
        Transaction {
            id: row.get("id"),
            signature: row.get("signature"),
            pool_address: row.get("pool_address"),
            wallet: row.get("wallet"),
            action: row.get("action"),
            amount: row.get("amount"),
            status: row.get("status"),
            error_msg: row.get("error_msg"),
            created_at: row.get("created_at"),
        }
    }
}

/// Spec 2.6.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Admin {
    #[schema(value_type = PubkeyText)]
    pub pubkey: String,
    #[schema(value_type = RoleName)]
    pub role: String,
    pub label: Option<String>,
    pub added_by: String,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
}

impl Admin {
    pub fn from_row(row: &Row) -> Admin {
        Admin {
            pubkey: row.get("pubkey"),
            role: row.get("role"),
            label: row.get("label"),
            added_by: row.get("added_by"),
            created_at: row.get("created_at"),
            revoked_at: row.get("revoked_at"),
        }
    }
}

/// Spec 2.7.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AuditEntry {
    pub id: i64,
    pub actor: String,
    pub action: String,
    pub target: String,
    #[schema(value_type = Object)]
    pub details: serde_json::Value,
    pub created_at: DateTime<Utc>,
}

impl AuditEntry {
    pub fn from_row(row: &Row) -> AuditEntry {
        AuditEntry {
            id: row.get("id"),
            actor: row.get("actor"),
            action: row.get("action"),
            target: row.get("target"),
            details: row.get("details"),
            created_at: row.get("created_at"),
        }
    }
}

/// One of `borrow_txs` in position detail (spec 2.3): a borrow of the wallet in
/// the pool, from the transaction log.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BorrowTx {
    #[schema(value_type = TxSignature)]
    pub signature: String,
    #[schema(value_type = Option<U64Text>)]
    pub amount: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// Spec 2.2.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Position {
    #[schema(value_type = PubkeyText)]
    pub position_address: String,
    #[schema(value_type = PubkeyText)]
    pub pool_address: String,
    #[schema(value_type = PubkeyText)]
    pub owner: String,
    #[schema(value_type = U64Text)]
    pub deposit_shares: String,
    #[schema(value_type = U64Text)]
    pub borrow_principal: String,
    #[schema(value_type = WadText)]
    pub deposit_idx_snap: String,
    #[schema(value_type = WadText)]
    pub borrow_idx_snap: String,
    /// The owner's account-level health factor (u128 max with no debt).
    #[schema(value_type = WadText)]
    pub health_factor_wad: String,
    pub last_synced_at: DateTime<Utc>,
}

impl Position {
    /// A position as the health cache holds it, with the owner's account health factor.
    pub fn new(owner: &Pubkey, health_factor: u128, row: &OwnerRow) -> Position {
        let p = &row.position;
        Position {
            position_address: p.address.to_string(),
            pool_address: p.pool.to_string(),
            owner: owner.to_string(),
            deposit_shares: p.amounts.deposit_shares.to_string(),
            borrow_principal: p.amounts.borrow_principal.to_string(),
            deposit_idx_snap: p.deposit_idx_snap.to_string(),
            borrow_idx_snap: p.amounts.borrow_idx_snap.to_string(),
            health_factor_wad: health_factor.to_string(),
            last_synced_at: DateTime::from_timestamp_micros(p.synced_us).unwrap_or_default(),
        }
    }
}
