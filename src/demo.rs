//! `lendex demo`: a demo market on the local chain (localnet only).
//!
//! Writes eight pools (decimals 5 to 9, oracle exponents -5 to -8) and a few
//! thousand positions across a few hundred owners, some under water, straight
//! into surfpool with `surfnet_setAccount`; makes a demo wallet an admin (the
//! operator path); then registers every pool through the running service's real
//! signed handshake. The background refresh discovers the positions.
//! Everything is derived from fixed seeds, so two runs build the same market.

use std::time::{Duration, Instant};

use ed25519_dalek::{Signer, SigningKey};
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use solana_rpc_client::nonblocking::rpc_client::RpcClient;

use crate::chain::rpc::surfnet_set_account;
use crate::config::{Cluster, Config};
use crate::db::{self, writes};
use crate::domain::accounts::*;
use crate::domain::pubkey::{Pubkey, parse_pubkey};
use crate::domain::wad::WAD;
use crate::error::CliResult;

struct Token {
    symbol: &'static str,
    decimals: u8,
    /// Oracle price and exponent: USD price = price x 10^expo.
    price: i64,
    expo: i32,
    /// Liquidation threshold in percent.
    threshold: u128,
}

const TOKENS: &[Token] = &[
    Token {
        symbol: "USDC",
        decimals: 6,
        price: 100_000_000,
        expo: -8,
        threshold: 90,
    },
    Token {
        symbol: "USDT",
        decimals: 6,
        price: 99_980_000,
        expo: -8,
        threshold: 88,
    },
    Token {
        symbol: "WBTC",
        decimals: 8,
        price: 6_000_000_000_000,
        expo: -8,
        threshold: 80,
    },
    Token {
        symbol: "SOL",
        decimals: 9,
        price: 150_000_000,
        expo: -6,
        threshold: 80,
    },
    Token {
        symbol: "ETH",
        decimals: 8,
        price: 320_000,
        expo: -2,
        threshold: 82,
    },
    Token {
        symbol: "JUP",
        decimals: 6,
        price: 85_000,
        expo: -5,
        threshold: 65,
    },
    Token {
        symbol: "BONK",
        decimals: 5,
        price: 2_500,
        expo: -8,
        threshold: 50,
    },
    Token {
        symbol: "mSOL",
        decimals: 9,
        price: 180_000_000,
        expo: -6,
        threshold: 75,
    },
];

fn derived_key(label: &str) -> Pubkey {
    Pubkey::new_from_array(Sha256::digest(format!("lendex demo {label}").as_bytes()).into())
}

/// The demo authority: a fixed, public key. Never use it outside localnet.
fn demo_authority() -> SigningKey {
    SigningKey::from_bytes(&Sha256::digest(b"lendex demo authority").into())
}

/// Token amount (in base units) worth `usd` dollars.
fn amount_for_usd(token: &Token, usd: f64) -> u64 {
    let price = token.price as f64 * 10f64.powi(token.expo);
    (usd / price * 10f64.powi(token.decimals as i32)) as u64
}

pub async fn run(config: &Config, api: &str, owners: usize) -> CliResult {
    if config.chain.cluster != Cluster::Localnet {
        return Err("lendex demo only runs against localnet (its authority key is public)".into());
    }
    let started = Instant::now();
    let program = parse_pubkey(&config.chain.program_id)?;
    let authority = demo_authority();
    let authority_key = Pubkey::new_from_array(authority.verifying_key().to_bytes());
    let chain = RpcClient::new(config.rpc.url.clone());
    // A local chain starts empty at slot 0 on every run: rows indexed from an earlier
    // run carry later slots and would refuse the new reads, so localnet's
    // chain-derived rows start over (admins, audit and transactions stay).
    let db = db::connect_pool(&config.database)?;
    db::migrate::run(&db, &config.auth.super_admin_pubkey).await?;
    let client = db
        .get()
        .await
        .map_err(|e| format!("database unavailable: {e}"))?;
    let reset = client
        .execute(
            crate::db::queries::RESET_CLUSTER_POOLS,
            &[&Cluster::Localnet.as_str()],
        )
        .await
        .map_err(|e| e.to_string())?;
    if reset > 0 {
        println!("reset {reset} localnet pools indexed from an earlier chain");
    }
    drop(client);
    let token_program: Pubkey = SPL_TOKEN_PROGRAM
        .parse()
        .map_err(|_| "bad token program id")?;
    let now = chrono::Utc::now().timestamp();

    // Positions first, so pool totals match them.
    let mut rng = StdRng::seed_from_u64(0x1e4de);
    let deposit_index = 102 * WAD / 100;
    let borrow_index = 105 * WAD / 100;
    let pools: Vec<(Pubkey, Pubkey)> = TOKENS
        .iter()
        .map(|t| {
            let mint = derived_key(&format!("mint {}", t.symbol));
            (pool_address(&program, &mint).0, mint)
        })
        .collect();
    let mut totals = vec![(0u64, 0u64, 0u64); TOKENS.len()]; // (deposits, borrows, shares)
    let mut positions = Vec::new();
    let mut underwater = 0;
    for i in 0..owners {
        let owner = derived_key(&format!("owner {i}"));
        let mut order: Vec<usize> = (0..TOKENS.len()).collect();
        for j in (1..order.len()).rev() {
            order.swap(j, rng.gen_range(0..=j));
        }
        let n_collateral = rng.gen_range(1..=4);
        let n_debt = rng.gen_range(0..=3).min(TOKENS.len() - n_collateral);
        // 4% of owners borrow past their liquidation limit.
        let sinks = rng.gen_bool(0.04);
        let mut limit_usd = 0.0;
        let mut entries: Vec<(usize, u64, u64)> = Vec::new();
        for &p in &order[..n_collateral] {
            let usd = rng.gen_range(100.0..50_000.0);
            limit_usd += usd * TOKENS[p].threshold as f64 / 100.0;
            let tokens = amount_for_usd(&TOKENS[p], usd);
            let shares = (tokens as u128 * WAD / deposit_index) as u64;
            entries.push((p, shares, 0));
        }
        if n_debt > 0 {
            let used = if sinks {
                rng.gen_range(1.05..1.4)
            } else {
                rng.gen_range(0.1..0.85)
            };
            let per_debt = limit_usd * used / n_debt as f64;
            for &p in &order[n_collateral..n_collateral + n_debt] {
                // Debt grows by borrow_index / snapshot (1.05): borrow the principal that becomes per_debt.
                let principal = (amount_for_usd(&TOKENS[p], per_debt) as f64 / 1.05) as u64;
                entries.push((p, 0, principal.max(1)));
            }
            if sinks {
                underwater += 1;
            }
        }
        for (p, shares, principal) in entries {
            let (address, bump) = position_address(&program, &pools[p].0, &owner);
            let deposit_tokens = (shares as u128 * deposit_index / WAD) as u64;
            totals[p].0 += deposit_tokens;
            totals[p].1 += principal;
            totals[p].2 += shares;
            positions.push((
                address,
                UserPosition {
                    owner,
                    pool: pools[p].0,
                    deposit_shares: shares,
                    borrow_principal: principal,
                    deposit_idx_snap: WAD,
                    borrow_idx_snap: WAD,
                    original_deposit: deposit_tokens,
                    bump,
                },
            ));
        }
    }

    // Mints and pools on chain.
    for (i, token) in TOKENS.iter().enumerate() {
        let (pool_key, mint) = pools[i];
        let set = |key: Pubkey, owner: Pubkey, data: Vec<u8>| {
            let chain = &chain;
            async move {
                surfnet_set_account(chain, &key, &owner, 10_000_000, &data)
                    .await
                    .map_err(|e| format!("surfnet_setAccount: {e}"))
            }
        };
        set(
            mint,
            token_program,
            encode_mint(token.decimals, u64::MAX / 4),
        )
        .await?;
        let (vault, vault_bump) = vault_address(&program, &pool_key);
        let (_, authority_bump) = authority_address(&program, &pool_key);
        let pool = LendingPool {
            authority: authority_key,
            token_mint: mint,
            vault,
            pool_bump: pool_address(&program, &mint).1,
            authority_bump,
            vault_bump,
            paused: false,
            total_deposits: totals[i].0.max(totals[i].1),
            total_borrows: totals[i].1,
            accumulated_fees: totals[i].1 / 200,
            total_deposit_shares: totals[i].2,
            deposit_index_wad: deposit_index,
            borrow_index_wad: borrow_index,
            last_update_ts: now,
            ltv_wad: (token.threshold - 5) * WAD / 100,
            liquidation_threshold_wad: token.threshold * WAD / 100,
            liquidation_bonus_wad: 5 * WAD / 100,
            protocol_liq_fee_wad: WAD / 100,
            reserve_factor_wad: 10 * WAD / 100,
            close_factor_wad: 50 * WAD / 100,
            base_rate_wad: WAD / 100,
            optimal_util_wad: 80 * WAD / 100,
            slope1_wad: 4 * WAD / 100,
            slope2_wad: 60 * WAD / 100,
            flash_fee_bps: 9,
            pyth_price_feed: Some(derived_key(&format!("feed {}", token.symbol))),
            oracle_price: Some(token.price),
            oracle_conf: Some(token.price.unsigned_abs() / 1000),
            oracle_expo: Some(token.expo),
        };
        set(pool_key, program, encode_pool(&pool)).await?;
    }
    for (address, position) in &positions {
        surfnet_set_account(
            &chain,
            address,
            &program,
            2_000_000,
            &encode_position(position),
        )
        .await
        .map_err(|e| format!("surfnet_setAccount: {e}"))?;
    }
    println!(
        "chain: {} pools, {} positions of {owners} owners ({underwater} borrowed past their limit) in {:.1}s",
        TOKENS.len(),
        positions.len(),
        started.elapsed().as_secs_f64()
    );

    // The demo authority becomes a pool admin (operator path), then registers the
    // pools through the service's signed handshake.
    let add = writes::AddAdmin {
        pubkey: authority_key.to_string(),
        role: crate::domain::enums::Role::PoolAdmin,
        label: Some("demo authority".into()),
        actor: crate::ops::SYSTEM_ACTOR.into(),
    };
    writes::apply_now(&db, &add)
        .await
        .map_err(|e| e.to_string())?;
    let http = reqwest::Client::new();
    for (i, token) in TOKENS.iter().enumerate() {
        let (pool_key, mint) = pools[i];
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
        let (vault, vault_bump) = vault_address(&program, &pool_key);
        let body = json!({
            "actor": authority_key.to_string(), "nonce": issued["nonce"], "signature": signature,
            "pool_address": pool_key.to_string(), "token_mint": mint.to_string(), "symbol": token.symbol,
            "authority": authority_key.to_string(), "vault": vault.to_string(),
            "pool_bump": pool_address(&program, &mint).1, "authority_bump": authority_address(&program, &pool_key).1,
            "vault_bump": vault_bump, "init_signature": format!("demo-init-{}", token.symbol),
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
        if seen >= positions.len() as u64 {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the refresh indexed {seen} of {} positions in 120 s",
                positions.len()
            )
            .into());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let unhealthy = get(&http, api, "/api/positions/unhealthy?limit=200").await?;
    let rows = unhealthy["positions"].as_array().map(Vec::len).unwrap_or(0);
    println!("indexed; {rows} rows in /api/positions/unhealthy?limit=200. Try:");
    println!("  curl -s {api}/api/pools");
    println!("  curl -s '{api}/api/positions/unhealthy?limit=5'");
    println!("  curl -sN {api}/api/positions/unhealthy/stream");
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
