//! `lendex demo`: a demo market on the local chain (localnet only).
//!
//! Writes eight pools (decimals 5 to 9, oracle exponents -5 to -8) and a few
//! thousand positions across a few hundred owners, some under water, straight
//! into surfpool with `surfnet_setAccount`; makes a demo wallet an admin (the
//! operator path); then registers every pool through the running service's real
//! signed handshake. The background refresh discovers the positions. A ninth
//! pool is left on chain unregistered, for a newcomer to register with the
//! demo authority's keypair (`--keypair-out`). IndexSnapshot is derived from fixed
//! seeds, so two runs build the same market. With `--walk` the oracles then
//! stay alive (`walk`).

mod market;
mod walk;

use std::path::Path;
use std::time::{Duration, Instant};

use ed25519_dalek::Signer;
use serde_json::{Value, json};
use solana_rpc_client::nonblocking::rpc_client::RpcClient;

use crate::chain::rpc::surfnet_set_account;
use crate::config::{Cluster, Config};
use crate::domain::accounts::*;
use crate::domain::pubkey::{Pubkey, parse_pubkey};
use crate::error::CliResult;
use crate::store::reads::pools;
use crate::store::{Store, writes};
use market::{TOKENS, Token, UNREGISTERED, demo_authority, mint_and_pool, pool_account};

/// What `lendex demo` does.
pub struct DemoOptions<'a> {
    /// The running service's base URL.
    pub api: &'a str,
    pub owners: usize,
    /// Where to write the demo authority's keypair (a Solana CLI file).
    pub keypair_out: Option<&'a Path>,
    /// Seed the market (else only walk).
    pub seed: bool,
    /// Keep the oracles alive afterwards, until stopped.
    pub walk: bool,
}

pub async fn run(config: &Config, options: DemoOptions<'_>) -> CliResult {
    if config.chain.cluster != Cluster::Localnet {
        return Err("lendex demo only runs against localnet (its authority key is public)".into());
    }
    let program = parse_pubkey(&config.chain.program_id)?;
    if let Some(path) = options.keypair_out {
        write_keypair(path)?;
    }
    if options.seed {
        seed(config, &program, &options).await?;
    }
    if options.walk {
        walk::walk(config, &program).await?;
    }
    Ok(())
}

/// The demo authority's keypair file (its key is public anyway: localnet only).
fn write_keypair(path: &Path) -> CliResult {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    std::fs::write(path, lendex_client::keypair::encode(&demo_authority()))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(())
}

async fn seed(config: &Config, program: &Pubkey, options: &DemoOptions<'_>) -> CliResult {
    let (api, owners) = (options.api, options.owners);
    let started = Instant::now();
    let authority = demo_authority();
    let authority_key = Pubkey::new_from_array(authority.verifying_key().to_bytes());
    let chain = RpcClient::new(config.rpc.url.clone());
    // A local chain starts empty at slot 0 on every run: rows indexed from an earlier
    // run carry later slots and would refuse the new reads, so localnet's
    // chain-derived rows start over (admins, audit and transactions stay).
    let store = Store::connect(&config.database)?;
    store.migrate(&config.auth.super_admin_pubkey).await?;
    let reset = pools::forget_cluster(&store, Cluster::Localnet.as_str())
        .await
        .map_err(|e| e.to_string())?;
    if reset > 0 {
        println!("reset {reset} localnet pools indexed from an earlier chain");
    }
    let now = chrono::Utc::now().timestamp();

    // Positions first, so pool totals match them; then mints and pools.
    let book = market::book(program, owners);
    for (i, token) in TOKENS.iter().enumerate() {
        put_pool(&chain, program, &authority_key, token, book.totals[i], now).await?;
    }
    put_pool(
        &chain,
        program,
        &authority_key,
        &UNREGISTERED,
        (0, 0, 0),
        now,
    )
    .await?;
    for (address, position) in &book.positions {
        surfnet_set_account(
            &chain,
            address,
            program,
            2_000_000,
            &encode_position(position),
        )
        .await
        .map_err(|e| format!("surfnet_setAccount: {e}"))?;
    }
    println!(
        "chain: {} pools, {} positions of {owners} owners ({} borrowed past their limit) in {:.1}s",
        TOKENS.len(),
        book.positions.len(),
        book.underwater,
        started.elapsed().as_secs_f64()
    );

    // The demo authority becomes a pool admin (operator path), then registers the
    // pools through the service's signed handshake.
    let add = writes::AddAdmin {
        pubkey: authority_key.to_string(),
        role: crate::domain::enums::Role::PoolAdmin,
        label: Some("demo authority".into()),
        actor: crate::operator::SYSTEM_ACTOR.into(),
    };
    writes::apply_now(store.pool(), &add)
        .await
        .map_err(|e| e.to_string())?;
    let http = reqwest::Client::new();
    for token in TOKENS {
        let (mint, pool_key) = mint_and_pool(program, token);
        let action = format!("init_pool:{mint}");
        let issued = post(
            &http,
            api,
            "/api/auth/nonce",
            &json!({ "pubkey": authority_key.to_string(), "action": action }),
        )
        .await?;
        let message = issued["message"]
            .as_str()
            .ok_or("nonce answer has no message")?;
        let signature = bs58::encode(authority.sign(message.as_bytes()).to_bytes()).into_string();
        let pool = pool_account(program, &authority_key, token, (0, 0, 0), now);
        let body = json!({
            "actor": authority_key.to_string(), "nonce": issued["nonce"], "signature": signature,
            "pool_address": pool_key.to_string(), "token_mint": mint.to_string(), "symbol": token.symbol,
            "authority": authority_key.to_string(), "vault": pool.vault.to_string(),
            "pool_bump": pool.pool_bump, "authority_bump": pool.authority_bump,
            "vault_bump": pool.vault_bump, "init_signature": format!("demo-init-{}", token.symbol),
        });
        let registered = post(&http, api, "/api/pools/init", &body).await?;
        println!(
            "registered {:<5} {pool_key} (created: {})",
            token.symbol, registered["created"]
        );
    }

    // Wait for the background refresh to index the positions.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let health = get(&http, api, "/api/health").await?;
        let seen = health["checks"]["sync"]["positions"].as_u64().unwrap_or(0);
        if seen >= book.positions.len() as u64 {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the refresh indexed {seen} of {} positions in 120 s",
                book.positions.len()
            )
            .into());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let unhealthy = get(&http, api, "/api/positions/unhealthy?limit=200").await?;
    let rows = unhealthy["positions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut owners_under: Vec<&str> = rows.iter().filter_map(|r| r["owner"].as_str()).collect();
    owners_under.sort_unstable();
    owners_under.dedup();
    println!(
        "indexed; {} accounts under water ({} of their positions listed). Try:",
        owners_under.len(),
        rows.len()
    );
    println!("  curl -s {api}/api/pools");
    println!("  curl -s '{api}/api/positions/unhealthy?limit=5'");
    println!("  curl -sN {api}/api/positions/unhealthy/stream");
    println!("  {api}/console in a browser");
    let (_, unregistered) = mint_and_pool(program, &UNREGISTERED);
    let keypair = options
        .keypair_out
        .map_or("<the demo authority's keypair>".into(), |p| {
            p.display().to_string()
        });
    println!(
        "The {} pool is on chain and not registered; register it as its authority:",
        UNREGISTERED.symbol
    );
    println!(
        "  lendex remote --keypair {keypair} register-pool {unregistered} --init-signature demo-init-{0} --symbol {0}",
        UNREGISTERED.symbol
    );
    Ok(())
}

/// A token's mint and its pool, written on chain.
async fn put_pool(
    chain: &RpcClient,
    program: &Pubkey,
    authority: &Pubkey,
    token: &Token,
    totals: (u64, u64, u64),
    now: i64,
) -> CliResult {
    let token_program: Pubkey = SPL_TOKEN_PROGRAM
        .parse()
        .map_err(|_| "bad token program id")?;
    let (mint, pool_key) = mint_and_pool(program, token);
    let set = |key: Pubkey, owner: Pubkey, data: Vec<u8>| async move {
        surfnet_set_account(chain, &key, &owner, 10_000_000, &data)
            .await
            .map_err(|e| format!("surfnet_setAccount: {e}"))
    };
    set(
        mint,
        token_program,
        encode_mint(token.decimals, u64::MAX / 4),
    )
    .await?;
    let pool = pool_account(program, authority, token, totals, now);
    set(pool_key, *program, encode_pool(&pool)).await?;
    Ok(())
}

async fn post(http: &reqwest::Client, api: &str, path: &str, body: &Value) -> CliResult<Value> {
    let res = http
        .post(format!("{api}{path}"))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| format!("POST {path}: {e}"))?;
    answer(res, path).await
}

async fn get(http: &reqwest::Client, api: &str, path: &str) -> CliResult<Value> {
    let res = http
        .get(format!("{api}{path}"))
        .send()
        .await
        .map_err(|e| format!("GET {path}: {e}"))?;
    answer(res, path).await
}

async fn answer(res: reqwest::Response, path: &str) -> CliResult<Value> {
    let status = res.status();
    let bytes = res.bytes().await.map_err(|e| format!("{path}: {e}"))?;
    let value: Value = serde_json::from_slice(&bytes)
        .map_err(|_| format!("{path}: non-JSON answer ({status})"))?;
    if !status.is_success() {
        return Err(format!("{path}: {status} {value}").into());
    }
    Ok(value)
}
