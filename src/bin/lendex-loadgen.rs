//! Load-test companion of `scripts/load-test` (built with `--features loadgen`,
//! never part of the service):
//! - `seed`: writes a synthetic market straight into PostgreSQL (COPY);
//! - `sql-baseline`: serves the unhealthy feed computed by one SQL query per
//!   request, on the same HTTP stack, as the fair baseline for the cache;
//! - `price-latency`: times a pool price change until the SSE feed shows it;
//! - `admin-calls`: complete signed admin calls (nonce, sign, add_admin) per second.

use std::io::Write as _;
use std::time::{Duration, Instant};

use actix_web::{App, HttpResponse, HttpServer, web};
use clap::{Parser, Subcommand};
use futures_util::{SinkExt, StreamExt};
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde_json::Value;
use sha2::{Digest, Sha256};

use lendex::domain::pubkey::Pubkey;
use lendex::domain::wad::WAD;

#[derive(Parser)]
#[command(name = "lendex-loadgen", about = "Load-test tools for Lendex")]
struct Cli {
    #[arg(
        long,
        env = "DATABASE_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/lendex_load"
    )]
    database_url: String,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Replace the localnet market with a synthetic one: every owner deposits in
    /// pool 0 (so a pool-0 price change re-scores every position) and has
    /// positions in other pools; `underwater` of the owners borrow past their limit.
    Seed {
        #[arg(long, default_value_t = 10)]
        pools: usize,
        #[arg(long, default_value_t = 25_000)]
        owners: usize,
        #[arg(long, default_value_t = 4)]
        positions_per_owner: usize,
        #[arg(long, default_value_t = 0.01)]
        underwater: f64,
    },
    /// Serve GET /api/positions/unhealthy computed by SQL (from positions and pools,
    /// or with --stored from the indexed health_factor_wad column).
    SqlBaseline {
        #[arg(long, default_value = "127.0.0.1:18081")]
        bind: String,
        #[arg(long)]
        stored: bool,
    },
    /// The hello-world baseline: actix-web answering every GET with the bytes of
    /// `body` (a captured Lendex answer), so a ratio compares equal work on the wire.
    Hello {
        #[arg(long, default_value = "127.0.0.1:18083")]
        bind: String,
        #[arg(long)]
        body: std::path::PathBuf,
    },
    /// Complete signed admin calls as fast as `concurrency` clients can: issue a
    /// nonce, sign its message, add an admin (a fresh wallet each time). The
    /// signer is made a super-admin first, by SQL.
    AdminCalls {
        #[arg(long, default_value = "http://127.0.0.1:18080")]
        api: String,
        #[arg(long, default_value_t = 64)]
        concurrency: usize,
        #[arg(long, default_value_t = 10)]
        seconds: u64,
    },
    /// Flip pool 0's price `rounds` times by SQL and time until the feed shows it.
    PriceLatency {
        #[arg(long, default_value = "http://127.0.0.1:18080")]
        api: String,
        #[arg(long, default_value_t = 20)]
        rounds: usize,
    },
}

fn key(label: &str) -> String {
    Pubkey::new_from_array(Sha256::digest(label.as_bytes()).into()).to_string()
}

async fn connect(url: &str) -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("connect to PostgreSQL");
    actix_rt::spawn(conn);
    client
}

#[actix_rt::main]
async fn main() {
    let cli = Cli::parse();
    match cli.command {
        Command::Seed {
            pools,
            owners,
            positions_per_owner,
            underwater,
        } => {
            seed(
                &cli.database_url,
                pools,
                owners,
                positions_per_owner,
                underwater,
            )
            .await
        }
        Command::SqlBaseline { bind, stored } => {
            sql_baseline(&cli.database_url, &bind, stored).await
        }
        Command::Hello { bind, body } => hello(&bind, &body).await,
        Command::AdminCalls {
            api,
            concurrency,
            seconds,
        } => admin_calls(&cli.database_url, &api, concurrency, seconds).await,
        Command::PriceLatency { api, rounds } => {
            price_latency(&cli.database_url, &api, rounds).await
        }
    }
}

/// Pool i: decimals cycle 6, 8, 9; $1 at expo -8 scaled per pool; threshold 0.8.
fn pool_price(i: usize) -> i64 {
    100_000_000 * (1 + i as i64)
}

async fn seed(url: &str, pools: usize, owners: usize, per_owner: usize, underwater: f64) {
    let started = Instant::now();
    let db = connect(url).await;
    db.batch_execute("DELETE FROM pools WHERE cluster = 'localnet'")
        .await
        .unwrap();
    let decimals = |i: usize| [6i16, 8, 9][i % 3];
    let pool_keys: Vec<String> = (0..pools).map(|i| key(&format!("load pool {i}"))).collect();
    let now = chrono::Utc::now().timestamp();
    for (i, address) in pool_keys.iter().enumerate() {
        db.execute(
            "INSERT INTO pools (cluster, pool_address, token_mint, symbol, authority, vault, pool_bump, authority_bump,
                vault_bump, decimals, paused, total_deposits, total_borrows, accumulated_fees, total_deposit_shares,
                deposit_index_wad, borrow_index_wad, last_update_ts, ltv_wad, liquidation_threshold_wad,
                liquidation_bonus_wad, protocol_liq_fee_wad, reserve_factor_wad, close_factor_wad, base_rate_wad,
                optimal_util_wad, slope1_wad, slope2_wad, flash_fee_bps, oracle_price, oracle_conf, oracle_expo,
                created_by, init_signature, slot)
             VALUES ('localnet', $1, $2, $3, $4, $5, 255, 254, 253, $6, false, 1000000000000, 500000000000, 0,
                1000000000000, 1000000000000000000, 1000000000000000000, $7, 750000000000000000, 800000000000000000,
                50000000000000000, 10000000000000000, 100000000000000000, 500000000000000000, 20000000000000000,
                800000000000000000, 40000000000000000, 750000000000000000, 9, $8, 1000, -8, 'loadgen', 'loadgen', 1)",
            &[address, &key(&format!("load mint {i}")), &format!("P{i}"), &key("load authority"), &key(&format!("load vault {i}")), &decimals(i), &now, &pool_price(i)],
        )
        .await
        .unwrap();
    }
    // Positions by COPY: owner o deposits in pool 0 and in per_owner-2 other pools,
    // and borrows in one more.
    let mut rng = StdRng::seed_from_u64(7);
    let sink = db
        .copy_in("COPY positions (cluster, position_address, pool_address, owner, deposit_shares, borrow_principal,
                   deposit_idx_snap, borrow_idx_snap, original_deposit, slot) FROM STDIN")
        .await
        .unwrap();
    futures_util::pin_mut!(sink);
    let mut buf = Vec::with_capacity(1 << 20);
    let mut rows = 0usize;
    let mut sunk = 0usize;
    for o in 0..owners {
        let owner = key(&format!("load owner {o}"));
        let sinks = rng.gen_bool(underwater);
        sunk += usize::from(sinks);
        // Collateral worth $1000 in pool 0 plus small deposits elsewhere; debt of
        // $300 (healthy) or $1000 (under water: 800 x threshold < 1000).
        let debt_pool = 1 + o % (pools - 1);
        let mut entries = vec![(0usize, 1000.0, 0.0)];
        for k in 0..per_owner.saturating_sub(2) {
            let p = 1 + (o + 1 + k) % (pools - 1);
            if p != debt_pool {
                entries.push((p, 10.0, 0.0));
            }
        }
        entries.push((debt_pool, 0.0, if sinks { 1000.0 } else { 300.0 }));
        while entries.len() < per_owner {
            // Fill with a pool not used yet (keeps one position per pool per owner).
            let used: Vec<usize> = entries.iter().map(|e| e.0).collect();
            match (1..pools).find(|p| !used.contains(p)) {
                Some(p) => entries.push((p, 5.0, 0.0)),
                None => break,
            }
        }
        for (p, deposit_usd, debt_usd) in entries {
            let unit = 10f64.powi(decimals(p) as i32) / (1.0 + p as f64); // base units per $1
            let shares = (deposit_usd * unit) as u64;
            let principal = (debt_usd * unit) as u64;
            writeln!(
                buf,
                "localnet\t{}\t{}\t{}\t{}\t{}\t{WAD}\t{WAD}\t{}\t1",
                key(&format!("load position {o} {p}")),
                pool_keys[p],
                owner,
                shares,
                principal,
                shares
            )
            .unwrap();
            rows += 1;
        }
        if buf.len() > (1 << 20) {
            sink.send(bytes::Bytes::from(std::mem::take(&mut buf)))
                .await
                .unwrap();
        }
    }
    sink.send(bytes::Bytes::from(buf)).await.unwrap();
    sink.as_mut().finish().await.unwrap();
    db.batch_execute("ANALYZE positions; ANALYZE pools")
        .await
        .unwrap();
    println!(
        "seeded {pools} pools, {rows} positions of {owners} owners ({sunk} under water) in {:.1}s",
        started.elapsed().as_secs_f64()
    );
}

/// The unhealthy feed in one SQL statement, from the raw inputs, with the exact
/// math of decisions §3 in NUMERIC (div() is integer division).
const UNHEALTHY_SQL: &str = "
WITH terms AS (
  SELECT p.owner,
    CASE WHEN l.oracle_price > 0 AND l.oracle_expo IS NOT NULL THEN
      div(CASE WHEN 18 + l.oracle_expo - l.decimals >= 0
            THEN div(p.deposit_shares * l.deposit_index_wad, 1e18) * l.oracle_price * power(10::numeric, 18 + l.oracle_expo - l.decimals)
            ELSE div(div(p.deposit_shares * l.deposit_index_wad, 1e18) * l.oracle_price, power(10::numeric, -(18 + l.oracle_expo - l.decimals))) END
          * l.liquidation_threshold_wad, 1e18)
    ELSE 0 END AS collateral,
    CASE WHEN l.oracle_price > 0 AND l.oracle_expo IS NOT NULL THEN
      (CASE WHEN p.borrow_idx_snap = 0 THEN p.borrow_principal
            ELSE div(p.borrow_principal * l.borrow_index_wad + p.borrow_idx_snap - 1, p.borrow_idx_snap) END)
      * l.oracle_price
      * CASE WHEN 18 + l.oracle_expo - l.decimals >= 0 THEN power(10::numeric, 18 + l.oracle_expo - l.decimals) ELSE 1 END
      / CASE WHEN 18 + l.oracle_expo - l.decimals < 0 THEN power(10::numeric, -(18 + l.oracle_expo - l.decimals)) ELSE 1 END
    ELSE 0 END AS debt_exact
  FROM positions p JOIN pools l ON l.cluster = p.cluster AND l.pool_address = p.pool_address
  WHERE p.cluster = 'localnet'
), accounts AS (
  SELECT owner, div(sum(collateral) * 1e18, sum(floor(debt_exact))) AS hf
  FROM terms GROUP BY owner HAVING sum(floor(debt_exact)) > 0
)
SELECT p.position_address, p.pool_address, p.owner, p.deposit_shares::text AS deposit_shares,
       p.borrow_principal::text AS borrow_principal, p.health_factor_wad::text AS health_factor_wad,
       a.hf::text AS account_health_factor_wad
FROM accounts a JOIN positions p ON p.cluster = 'localnet' AND p.owner = a.owner
WHERE a.hf < 1e18
ORDER BY a.hf, p.owner, p.borrow_principal = 0, p.position_address
LIMIT $1";

/// The strongest SQL: the stored account health factor through its index.
const UNHEALTHY_STORED_SQL: &str = "
SELECT position_address, pool_address, owner, deposit_shares::text AS deposit_shares,
       borrow_principal::text AS borrow_principal, health_factor_wad::text AS health_factor_wad,
       health_factor_wad::text AS account_health_factor_wad
FROM positions WHERE cluster = 'localnet' AND health_factor_wad < 1000000000000000000
ORDER BY health_factor_wad, owner, borrow_principal = 0, position_address
LIMIT $1";

#[derive(serde::Serialize)]
struct Row {
    position_address: String,
    pool_address: String,
    owner: String,
    deposit_shares: String,
    borrow_principal: String,
    health_factor_wad: String,
    account_health_factor_wad: String,
}

async fn sql_baseline(url: &str, bind: &str, stored: bool) {
    let pool = lendex::db::connect_pool(&lendex::config::DatabaseConfig {
        url: url.to_string(),
        pool_size: 16,
        acquire_timeout_ms: 10_000,
        write_timeout_ms: 5_000,
    })
    .unwrap();
    let sql: &'static str = if stored {
        UNHEALTHY_STORED_SQL
    } else {
        UNHEALTHY_SQL
    };
    let data = web::Data::new(pool);
    println!(
        "sql baseline ({}) on {bind}",
        if stored { "stored column" } else { "computed" }
    );
    HttpServer::new(move || {
        App::new().app_data(data.clone()).route(
            "/api/positions/unhealthy",
            web::get().to(
                move |pool: web::Data<deadpool_postgres::Pool>,
                      q: web::Query<std::collections::HashMap<String, String>>| async move {
                    let limit =
                        lendex::domain::limits::clamp_limit(q.get("limit").map(String::as_str));
                    let client = pool.get().await.unwrap();
                    let stmt = client.prepare_cached(sql).await.unwrap();
                    let rows: Vec<Row> = client
                        .query(&stmt, &[&limit])
                        .await
                        .unwrap()
                        .iter()
                        .map(|r| Row {
                            position_address: r.get(0),
                            pool_address: r.get(1),
                            owner: r.get(2),
                            deposit_shares: r.get(3),
                            borrow_principal: r.get(4),
                            health_factor_wad: r.get(5),
                            account_health_factor_wad: r.get(6),
                        })
                        .collect();
                    HttpResponse::Ok().json(serde_json::json!({ "positions": rows }))
                },
            ),
        )
    })
    .bind(bind)
    .unwrap()
    .run()
    .await
    .unwrap();
}

async fn hello(bind: &str, body: &std::path::Path) {
    let body = actix_web::web::Bytes::from(std::fs::read(body).expect("read the body file"));
    actix_web::HttpServer::new(move || {
        let body = body.clone();
        actix_web::App::new().default_service(actix_web::web::to(move || {
            let body = body.clone();
            async move {
                HttpResponse::Ok()
                    .content_type("application/json")
                    .body(body)
            }
        }))
    })
    .on_connect(|conn, _| {
        // The same socket option as Lendex's server.
        if let Some(tcp) = conn.downcast_ref::<actix_web::rt::net::TcpStream>() {
            let _ = tcp.set_nodelay(true);
        }
    })
    .bind(bind)
    .unwrap()
    .run()
    .await
    .unwrap();
}

async fn price_latency(url: &str, api: &str, rounds: usize) {
    let db = connect(url).await;
    let pool0 = key("load pool 0");
    let http = reqwest::Client::new();
    let res = http
        .get(format!("{api}/api/positions/unhealthy/stream"))
        .send()
        .await
        .expect("stream");
    let mut body = res.bytes_stream();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(Instant, String)>();
    actix_rt::spawn(async move {
        let mut buffer = String::new();
        while let Some(Ok(chunk)) = body.next().await {
            let at = Instant::now();
            buffer.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buffer.find("\n\n") {
                let frame: String = buffer.drain(..end + 2).collect();
                if let Some(line) = frame.lines().find(|l| l.starts_with("event: ")) {
                    let _ = tx.send((at, line[7..].to_string()));
                }
            }
        }
    });
    // Drain the initial snapshot.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    while rx.try_recv().is_ok() {}

    let mut first = Vec::new();
    let mut last = Vec::new();
    let base = pool_price(0);
    for round in 0..rounds {
        // Alternate: pool 0 at 60% (many accounts sink) and back (they recover).
        let price = if round % 2 == 0 { base * 6 / 10 } else { base };
        let started = Instant::now();
        db.execute(
            "UPDATE pools SET oracle_price = $1 WHERE cluster = 'localnet' AND pool_address = $2",
            &[&price, &pool0],
        )
        .await
        .unwrap();
        let Ok(Some((at, _))) = tokio::time::timeout(Duration::from_secs(10), rx.recv()).await
        else {
            println!("round {round}: no event within 10 s");
            continue;
        };
        let mut end = at;
        let mut events = 1;
        while let Ok(Some((t, _))) =
            tokio::time::timeout(Duration::from_millis(300), rx.recv()).await
        {
            end = t;
            events += 1;
        }
        first.push(at - started);
        last.push(end - started);
        println!(
            "round {round}: {events} events, first after {:?}, last after {:?}",
            at - started,
            end - started
        );
    }
    first.sort();
    last.sort();
    if !first.is_empty() {
        let p50 = |v: &Vec<Duration>| v[v.len() / 2];
        // Nearest rank: with fewer than 100 rounds the p99 is the slowest round.
        let p99 = |v: &Vec<Duration>| v[(v.len() * 99).div_ceil(100) - 1];
        println!(
            "price change -> feed ({} rounds): first event median {:?} (p99 {:?}); last event median {:?} (p99 {:?})",
            first.len(),
            p50(&first),
            p99(&first),
            p50(&last),
            p99(&last)
        );
    }
    let health: Value = http
        .get(format!("{api}/api/health"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    println!("cache: {}", health["checks"]["cache"]);
}

async fn post_json(http: &reqwest::Client, url: &str, body: &Value) -> Option<Value> {
    let res = http
        .post(url)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(body).unwrap())
        .send()
        .await
        .ok()?;
    let ok = res.status().is_success();
    let value: Value = serde_json::from_slice(&res.bytes().await.ok()?).ok()?;
    ok.then_some(value)
}

async fn admin_calls(url: &str, api: &str, concurrency: usize, seconds: u64) {
    use ed25519_dalek::{Signer, SigningKey};
    // One super-admin per client, as operators each sign with their own wallet
    // (one wallet may hold only auth.max_nonces_per_wallet live nonces).
    let signers: Vec<SigningKey> = (0..concurrency)
        .map(|w| {
            SigningKey::from_bytes(&Sha256::digest(format!("load root {w}").as_bytes()).into())
        })
        .collect();
    let db = connect(url).await;
    for signer in &signers {
        let pubkey = Pubkey::new_from_array(signer.verifying_key().to_bytes()).to_string();
        db.execute(
            "INSERT INTO pool_admins (pubkey, role, label, added_by) VALUES ($1, 'super_admin', 'loadgen', 'system')
             ON CONFLICT (pubkey) DO UPDATE SET role = 'super_admin', revoked_at = NULL",
            &[&pubkey],
        )
        .await
        .unwrap();
    }
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(concurrency)
        .build()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let mut workers = Vec::new();
    for w in 0..concurrency {
        let root = signers[w].clone();
        let root_key = Pubkey::new_from_array(root.verifying_key().to_bytes()).to_string();
        let (http, api) = (http.clone(), api.to_string());
        workers.push(actix_rt::spawn(async move {
            let (mut done, mut failed, mut latencies) = (0u64, 0u64, Vec::new());
            let mut i = 0u64;
            while Instant::now() < deadline {
                i += 1;
                let call = Instant::now();
                let target = key(&format!(
                    "load admin {w} {i} {}",
                    started.elapsed().as_nanos()
                ));
                let action = format!("add_admin:{target}:pool_admin");
                let nonce = post_json(
                    &http,
                    &format!("{api}/api/auth/nonce"),
                    &serde_json::json!({ "pubkey": root_key, "action": action }),
                )
                .await;
                let added = match nonce {
                    Some(n) => {
                        let message = n["message"].as_str().unwrap_or_default();
                        let signature =
                            bs58::encode(root.sign(message.as_bytes()).to_bytes()).into_string();
                        post_json(
                            &http,
                            &format!("{api}/api/admin/allowlist"),
                            &serde_json::json!({ "actor": root_key, "nonce": n["nonce"],
                                "signature": signature, "pubkey": target, "role": "pool_admin" }),
                        )
                        .await
                        .is_some()
                    }
                    None => false,
                };
                if added {
                    done += 1;
                    latencies.push(call.elapsed());
                } else {
                    failed += 1;
                }
            }
            (done, failed, latencies)
        }));
    }
    let (mut done, mut failed, mut latencies) = (0u64, 0u64, Vec::new());
    for worker in workers {
        let (d, f, l) = worker.await.unwrap();
        done += d;
        failed += f;
        latencies.extend(l);
    }
    let elapsed = started.elapsed().as_secs_f64();
    latencies.sort();
    let pct = |p: f64| {
        latencies
            .get(((latencies.len() as f64 * p) as usize).min(latencies.len().saturating_sub(1)))
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    println!(
        "admin_calls_per_s {:.0} completed {done} failed {failed} p50_ms {:.1} p99_ms {:.1}",
        done as f64 / elapsed,
        pct(0.5),
        pct(0.99)
    );
}
