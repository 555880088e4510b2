//! Reading typed values out of rows: NUMERIC columns selected as text and parsed
//! exactly (the cold load reads its million positions' in binary
//! instead: numeric.rs), the pricing columns of a pool, and the resources the
//! API returns straight from a named query (wire types).

use tokio_postgres::Row;

use lendex_wire::admin::{Admin, AuditEntry};
use lendex_wire::pools::Pool;
use lendex_wire::transactions::Transaction;

use crate::error::{DbError, DbResult};
use lendex_domain::enums::Role;
use lendex_domain::wad::PoolPricing;

/// A NUMERIC column read as text, parsed exactly (the schema's domains keep it in range).
pub(crate) fn num<T: std::str::FromStr>(row: &Row, column: &str) -> DbResult<T> {
    let text = row.get::<_, &str>(column);
    text.parse()
        .map_err(|_| DbError::failed(format!("stored {column} {text:?} out of range")))
}

/// The pricing columns of a pool row.
pub(crate) fn pool_pricing(row: &Row) -> DbResult<PoolPricing> {
    Ok(PoolPricing {
        oracle_price: row.get("oracle_price"),
        oracle_expo: row.get("oracle_expo"),
        decimals: u8::try_from(row.get::<_, i16>("decimals")).map_err(DbError::failed)?,
        liquidation_threshold_wad: num(row, "liquidation_threshold_wad")?,
        deposit_index_wad: num(row, "deposit_index_wad")?,
        borrow_index_wad: num(row, "borrow_index_wad")?,
    })
}

/// A pool row as GET /api/pools serves it.
pub(crate) fn pool(row: &Row) -> Pool {
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

/// A transaction log row.
pub(crate) fn transaction(row: &Row) -> Transaction {
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

/// An allowlist row; a role the schema does not know is an internal error.
pub(crate) fn admin(row: &Row) -> DbResult<Admin> {
    let role: &str = row.get("role");
    Ok(Admin {
        pubkey: row.get("pubkey"),
        role: Role::parse(role).ok_or_else(|| DbError::failed(format!("stored role {role:?}")))?,
        label: row.get("label"),
        added_by: row.get("added_by"),
        created_at: row.get("created_at"),
        revoked_at: row.get("revoked_at"),
    })
}

/// An audit log row.
pub(crate) fn audit_entry(row: &Row) -> AuditEntry {
    AuditEntry {
        id: row.get("id"),
        actor: row.get("actor"),
        action: row.get("action"),
        target: row.get("target"),
        details: row.get("details"),
        created_at: row.get("created_at"),
    }
}
