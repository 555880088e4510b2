//! Operator commands (docs/design.md §1): direct database writes with no nonce, the
//! recovery path of docs/design.md §5.6. Each admin change writes an audit entry with actor
//! `system`, through the same write commands the server uses.

use crate::config::Config;
use crate::domain::accounts::mint_decimals;
use crate::domain::enums::Role;
use crate::domain::pubkey::parse_pubkey;
use crate::error::CliResult;
use crate::store::reads::{admins, pools};
use crate::store::{Store, chain_writes, writes};

/// The actor recorded for operator changes.
pub const SYSTEM_ACTOR: &str = "system";

pub async fn migrate(config: &Config) -> CliResult {
    let store = Store::connect(&config.database)?;
    let applied = store.migrate(&config.auth.super_admin_pubkey).await?;
    if applied.is_empty() {
        println!("schema up to date");
    } else {
        println!("applied: {}", applied.join(", "));
    }
    Ok(())
}

/// Prints the merged settings, the database password masked.
pub fn print_config(config: &Config) -> CliResult {
    let mut shown = config.clone();
    // postgres://user:secret@host -> postgres://user:***@host
    let url = &mut shown.database.url;
    if let (Some(scheme_end), Some(at)) = (url.find("://"), url.rfind('@'))
        && let Some(colon) = url[scheme_end + 3..at].find(':')
    {
        url.replace_range(scheme_end + 3 + colon + 1..at, "***");
    }
    print!("{}", toml::to_string(&shown).map_err(|e| e.to_string())?);
    Ok(())
}

pub async fn admin_add(
    config: &Config,
    pubkey: &str,
    role: &str,
    label: Option<String>,
) -> CliResult {
    parse_pubkey(pubkey).map_err(|e| format!("bad pubkey: {e}"))?;
    let role = Role::parse(role).ok_or("role must be pool_admin or super_admin")?;
    let store = migrated_store(config).await?;
    let cmd = writes::AddAdmin {
        pubkey: pubkey.to_string(),
        role,
        label,
        actor: SYSTEM_ACTOR.to_string(),
    };
    writes::apply_now(store.pool(), &cmd)
        .await
        .map_err(|e| e.to_string())?;
    println!("{pubkey} is an active {role}");
    Ok(())
}

pub async fn admin_revoke(config: &Config, pubkey: &str) -> CliResult {
    let store = migrated_store(config).await?;
    let cmd = writes::RevokeAdmin {
        pubkey: pubkey.to_string(),
        actor: SYSTEM_ACTOR.to_string(),
    };
    if writes::apply_now(store.pool(), &cmd)
        .await
        .map_err(|e| e.to_string())?
    {
        println!("{pubkey} revoked");
        Ok(())
    } else {
        Err(format!("{pubkey} has no active allowlist entry").into())
    }
}

pub async fn admin_list(config: &Config) -> CliResult {
    let store = migrated_store(config).await?;
    let all = admins::all(&store).await.map_err(|e| e.to_string())?;
    println!(
        "{:<44}  {:<11}  {:<8}  {:<20}  label",
        "pubkey", "role", "state", "added_by"
    );
    for admin in all {
        let state = if admin.revoked_at.is_some() {
            "revoked"
        } else {
            "active"
        };
        let added_by: String = admin.added_by.chars().take(20).collect();
        println!(
            "{:<44}  {:<11}  {:<8}  {:<20}  {}",
            admin.pubkey,
            admin.role,
            state,
            added_by,
            admin.label.unwrap_or_default()
        );
    }
    Ok(())
}

/// `lendex admin repair-decimals`: re-reads every pool's mint from chain and fixes
/// stored decimals that differ (the recovery for legacy rows defaulted to 9).
/// Prints each change; fails if some mint could not be read.
pub async fn repair_decimals(config: &Config) -> CliResult {
    let store = migrated_store(config).await?;
    let cluster = config.chain.cluster.as_str();
    let rows = pools::decimals(&store, cluster)
        .await
        .map_err(|e| e.to_string())?;
    let rpc = crate::chain::rpc::gated_client(&config.rpc);
    let mut mints = Vec::with_capacity(rows.len());
    for row in &rows {
        mints.push(
            parse_pubkey(&row.token_mint)
                .map_err(|e| format!("stored mint is not a pubkey: {e}"))?,
        );
    }
    let reads = crate::chain::rpc::get_accounts(&rpc, &mints)
        .await
        .map_err(|e| format!("rpc unavailable: {e}"))?;
    let (mut fixed, mut unreadable) = (0, 0);
    for (row, read) in rows.iter().zip(reads) {
        let (address, stored) = (row.pool_address.clone(), row.decimals);
        let Some(decimals) = read
            .account
            .as_ref()
            .and_then(|a| mint_decimals(&a.owner, &a.data))
        else {
            println!(
                "{address}: mint {} is not a readable SPL mint; left at {stored}",
                row.token_mint
            );
            unreadable += 1;
            continue;
        };
        if i16::from(decimals) != stored {
            let cmd = chain_writes::SetPoolDecimals {
                cluster,
                pool_address: address.clone(),
                decimals,
            };
            writes::apply_now(store.pool(), &cmd)
                .await
                .map_err(|e| e.to_string())?;
            println!("{address}: decimals {stored} -> {decimals}");
            fixed += 1;
        }
    }
    println!(
        "{} pools checked, {fixed} fixed, {unreadable} unreadable",
        rows.len()
    );
    if unreadable > 0 {
        return Err(format!("{unreadable} mints could not be read").into());
    }
    Ok(())
}

async fn migrated_store(config: &Config) -> CliResult<Store> {
    let store = Store::connect(&config.database)?;
    store.migrate(&config.auth.super_admin_pubkey).await?;
    Ok(store)
}
