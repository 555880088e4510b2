//! Load-test companion of `scripts/load-test` (built with `--features loadgen`,
//! never part of the service):
//! - `seed`: writes a synthetic market straight into PostgreSQL (COPY);
//! - `sql-baseline`: serves the unhealthy feed computed by one SQL query per
//!   request, on the same HTTP stack, as the fair baseline for the cache;
//! - `price-latency`: times a pool price change until the SSE feed shows it;
//! - `admin-calls`: complete signed admin calls (nonce, sign, add_admin) per second;
//! - `held-polls`, `resume`: long polls and feed resumes at scale (`wire`);
//! - `failover`: subscribers behind a balancer while a replica is killed;
//! - `history-seed`, `history-reads`, `history-store`: history at scale (`history`);
//! - `grpc-bridge`, `cut-catch-up`: the two live chain sources (`sources`);
//! - `forks-demo`, `processed-latency`: slot trees played over gRPC (`forks`).

use std::io::Write as _;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use futures_util::SinkExt;
use sha2::{Digest, Sha256};

use lendex::domain::pubkey::Pubkey;

mod baselines;
mod chain;
mod failover;
mod feed;
mod follow;
mod forks;
mod history;
mod market;
mod oracle;
mod slow_link;
mod sources;
mod webhooks;
mod wire;
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

/// The synthetic market's shape (see market.rs).
#[derive(clap::Args)]
struct MarketArgs {
    #[arg(long, default_value_t = 10)]
    pools: usize,
    #[arg(long, default_value_t = 25_000)]
    owners: usize,
    #[arg(long, default_value_t = 4)]
    positions_per_owner: usize,
    #[arg(long, default_value_t = 0.01)]
    underwater: f64,
}

/// Where the chain is, for the chain-* commands.
#[derive(clap::Args)]
struct ChainArgs {
    #[arg(long, env = "RPC_URL", default_value = "http://127.0.0.1:8899")]
    rpc: String,
    #[arg(
        long,
        env = "PROGRAM_ID",
        default_value = "7TixJ1md75J4RgQGhjeB8AdYEFuhSdoHRYn27EPDhKW7"
    )]
    program: String,
}

impl ChainArgs {
    fn program(&self) -> Pubkey {
        self.program.parse().expect("PROGRAM_ID is a pubkey")
    }
}

#[derive(Subcommand)]
enum Command {
    /// Replace the localnet market with a synthetic one: every owner deposits in
    /// pool 0 (so a pool-0 price change re-scores every position) and has
    /// positions in other pools; `underwater` of the owners borrow past their limit.
    Seed {
        #[command(flatten)]
        market: MarketArgs,
        /// Each pool names a Pyth feed (`load feed <i>`), unread.
        #[arg(long)]
        feeds: bool,
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
        /// Hold each request (the baseline of a held long poll) until a GET of
        /// /release answers them all, or this many milliseconds pass; 0: none.
        /// GET /probe is always answered at once.
        #[arg(long, default_value_t = 0)]
        hold_ms: u64,
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
    /// Write the same market on a chain (surfpool) and register its pools at
    /// slot 0 in PostgreSQL, for the service to index from the chain.
    ChainSeed {
        #[command(flatten)]
        chain: ChainArgs,
        #[command(flatten)]
        market: MarketArgs,
        /// surfnet_setAccount calls in flight.
        #[arg(long, default_value_t = 16)]
        concurrency: usize,
    },
    /// Change pool 0's price on the chain `rounds` times; time the chain's own
    /// notification and Lendex's SSE events.
    ChainPriceLatency {
        #[arg(long, default_value = "http://127.0.0.1:18080")]
        api: String,
        #[command(flatten)]
        chain: ChainArgs,
        #[arg(long, env = "WS_URL", default_value = "ws://127.0.0.1:8900")]
        ws: String,
        /// Time the floor on this gRPC endpoint instead of the websocket.
        #[arg(long)]
        grpc: Option<String>,
        #[arg(long, default_value_t = 20)]
        rounds: usize,
        /// Pool 0's price in the low rounds, in percent (30: every owner sinks).
        #[arg(long, default_value_t = 30)]
        low_percent: i64,
    },
    /// Play slot trees over the first registered pool on a Yellowstone
    /// endpoint, with mainnet's rhythm (a service reading it at processed).
    ForksDemo {
        #[arg(long, default_value = "http://127.0.0.1:8080")]
        api: String,
        #[command(flatten)]
        chain: ChainArgs,
        #[arg(long, default_value = "127.0.0.1:18097")]
        listen: String,
    },
    /// Time a processed write to the processed stream, its confirmation to
    /// the confirmed stream, and a dead slot to its correction (on the market
    /// `seed` wrote).
    ProcessedLatency {
        #[arg(long, default_value = "http://127.0.0.1:18090")]
        api: String,
        #[command(flatten)]
        chain: ChainArgs,
        #[arg(long, default_value = "127.0.0.1:18097")]
        listen: String,
        #[arg(long, default_value_t = 20)]
        rounds: usize,
        /// The pool's price in the low rounds, in percent.
        #[arg(long, default_value_t = 30)]
        low_percent: i64,
    },
    /// Time a feed write to the feed view's stream and its crank to the pool
    /// view's (on the market `seed --feeds` wrote).
    FeedLatency {
        #[arg(long, default_value = "http://127.0.0.1:18090")]
        api: String,
        #[command(flatten)]
        chain: ChainArgs,
        #[arg(long, default_value = "127.0.0.1:18097")]
        listen: String,
        #[arg(long, default_value_t = 20)]
        rounds: usize,
        /// The feed's price in the low rounds, in percent.
        #[arg(long, default_value_t = 30)]
        low_percent: i64,
    },
    /// Webhooks at load: pool 0 flipped by SQL with no webhook, with
    /// `webhooks` registered (receivers on `listen`), and with none again;
    /// P2 of each phase, and each delivery from its change's commit to 2xx.
    WebhookLatency {
        #[arg(long, default_value = "http://127.0.0.1:18090")]
        api: String,
        #[arg(long, default_value = "127.0.0.1:18099")]
        listen: String,
        #[arg(long, default_value_t = 10)]
        webhooks: usize,
        /// Owners the seed made (each flip crosses them all).
        #[arg(long)]
        owners: usize,
        #[arg(long, default_value_t = 10)]
        rounds: usize,
        #[arg(long, default_value_t = 30)]
        low_percent: i64,
    },
    /// Serve the chain's program notifications as a Yellowstone gRPC endpoint.
    GrpcBridge {
        #[command(flatten)]
        chain: ChainArgs,
        #[arg(long, env = "WS_URL", default_value = "ws://127.0.0.1:8900")]
        ws: String,
        #[arg(long, default_value = "127.0.0.1:18095")]
        listen: String,
    },
    /// Cut the live source (through a proxy on `listen`) while pool 0's price
    /// moves; time the catch-up once it returns.
    CutCatchUp {
        #[arg(long, default_value = "http://127.0.0.1:18080")]
        api: String,
        #[command(flatten)]
        chain: ChainArgs,
        /// The source the proxy forwards to (its URL).
        #[arg(long)]
        upstream: String,
        #[arg(long, default_value = "127.0.0.1:18096")]
        listen: String,
        #[arg(long, default_value_t = 10)]
        cut_secs: u64,
        #[arg(long, default_value_t = 3)]
        rounds: usize,
    },
    /// Hold `polls` long polls of /api/liquidations at once, change a price,
    /// time every answer (and /api/health meanwhile, and the server's RSS).
    HeldPolls {
        #[arg(long, default_value = "http://127.0.0.1:18080")]
        api: String,
        #[arg(long, default_value_t = 10_000)]
        polls: usize,
        /// The server's process id (its RSS is read from /proc).
        #[arg(long)]
        server_pid: u32,
        /// First the baseline: as many requests held by hello-world (`hello
        /// --hold-ms`) at this URL, with its process id.
        #[arg(long, requires = "hello_pid")]
        hello_url: Option<String>,
        #[arg(long)]
        hello_pid: Option<u32>,
        /// What answers them.
        #[arg(long, value_enum, default_value = "price")]
        change: wire::Change,
    },
    /// Reconnect with a Last-Event-ID after at least `missed` events, `rounds`
    /// times; time until the last missed event arrives.
    Resume {
        #[arg(long, default_value = "http://127.0.0.1:18080")]
        api: String,
        #[arg(long, default_value_t = 1000)]
        missed: usize,
        #[arg(long, default_value_t = 5)]
        rounds: usize,
    },
    /// `streams` subscribers through the balancer at `api` and one straight
    /// to `reference`; pool 0 moved to `percent` of its price by SQL (30: every
    /// owner sinks) and the replica `kill_pid` killed `kill_after_ms` later,
    /// while the move goes out.
    Failover {
        #[arg(long, default_value = "http://127.0.0.1:8080")]
        api: String,
        #[arg(long)]
        reference: String,
        #[arg(long, default_value_t = 100)]
        streams: usize,
        #[arg(long)]
        kill_pid: u32,
        #[arg(long, default_value_t = 30)]
        percent: i64,
        #[arg(long, default_value_t = 5)]
        kill_after_ms: u64,
    },
    /// Subscribers on links of `links_mb` MB/s each (a throttling proxy), and
    /// one on loopback, while pool 0 sinks every owner and lifts them back,
    /// `rounds` times: whether each is dropped, resumes or resets, and when
    /// it holds the state after the move.
    SlowLink {
        #[arg(long, default_value = "http://127.0.0.1:18080")]
        api: String,
        #[arg(long, value_delimiter = ',', default_value = "1,4,16,64")]
        links_mb: Vec<f64>,
        #[arg(long, default_value_t = 10)]
        rounds: usize,
        #[arg(long, default_value_t = 30)]
        percent: i64,
    },
    /// Write `days` of history of `owners` straight into its partitions.
    HistorySeed {
        #[arg(long, default_value_t = 100_000)]
        owners: i64,
        #[arg(long, default_value_t = 30)]
        days: u64,
        #[arg(long, default_value_t = 10)]
        points_per_day: i64,
        #[arg(long, default_value_t = 10)]
        pools: i64,
    },
    /// Time the history reads (p50, p99) over random owners.
    HistoryReads {
        #[arg(long, default_value = "http://127.0.0.1:18080")]
        api: String,
        #[arg(long, default_value_t = 500)]
        requests: usize,
        #[arg(long, default_value_t = 30)]
        days: i64,
    },
    /// Move pool 0's price `rounds` times by SQL; time until its points are stored.
    HistoryStore {
        #[arg(long, default_value = "http://127.0.0.1:18080")]
        api: String,
        #[arg(long, default_value_t = 6)]
        rounds: usize,
    },
    /// Flip pool 0's price `rounds` times by SQL and time until the feed shows it.
    PriceLatency {
        #[arg(long, default_value = "http://127.0.0.1:18080")]
        api: String,
        #[arg(long, default_value_t = 20)]
        rounds: usize,
        /// Pool 0's price in the low rounds, in percent (60: the owners already
        /// under water move; 30: every owner sinks).
        #[arg(long, default_value_t = 60)]
        low_percent: i64,
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
        Command::Seed { market, feeds } => seed(&cli.database_url, &market, feeds).await,
        Command::SqlBaseline { bind, stored } => {
            baselines::sql_baseline(&cli.database_url, &bind, stored).await
        }
        Command::Hello {
            bind,
            body,
            hold_ms,
        } => baselines::hello(&bind, &body, hold_ms).await,
        Command::AdminCalls {
            api,
            concurrency,
            seconds,
        } => admin_calls(&cli.database_url, &api, concurrency, seconds).await,
        Command::ChainSeed {
            chain: at,
            market,
            concurrency,
        } => {
            let db = connect(&cli.database_url).await;
            chain::seed(&db, &at.rpc, at.program(), &market, concurrency).await
        }
        Command::ChainPriceLatency {
            api,
            chain: at,
            ws,
            grpc,
            rounds,
            low_percent,
        } => {
            let source = (ws.as_str(), grpc.as_deref());
            chain::price_latency(&api, &at.rpc, source, at.program(), rounds, low_percent).await
        }
        Command::GrpcBridge {
            chain: at,
            ws,
            listen,
        } => sources::bridge(&at.rpc, &ws, at.program(), &listen).await,
        Command::ForksDemo {
            api,
            chain: at,
            listen,
        } => forks::demo(&api, &at.rpc, at.program(), &listen).await,
        Command::ProcessedLatency {
            api,
            chain: at,
            listen,
            rounds,
            low_percent,
        } => forks::latency(&api, at.program(), &listen, rounds, low_percent).await,
        Command::FeedLatency {
            api,
            chain: at,
            listen,
            rounds,
            low_percent,
        } => oracle::latency(&api, at.program(), &listen, rounds, low_percent).await,
        Command::WebhookLatency {
            api,
            listen,
            webhooks,
            owners,
            rounds,
            low_percent,
        } => {
            webhooks::latency(
                &cli.database_url,
                &api,
                &listen,
                webhooks,
                owners,
                rounds,
                low_percent,
            )
            .await
        }
        Command::CutCatchUp {
            api,
            chain: at,
            upstream,
            listen,
            cut_secs,
            rounds,
        } => {
            let program = at.program();
            sources::cut_catch_up(&api, &at.rpc, program, &upstream, &listen, cut_secs, rounds)
                .await
        }
        Command::PriceLatency {
            api,
            rounds,
            low_percent,
        } => feed::price_latency(&cli.database_url, &api, rounds, low_percent).await,
        Command::HeldPolls {
            api,
            polls,
            server_pid,
            hello_url,
            hello_pid,
            change,
        } => {
            if let (Some(url), Some(pid)) = (hello_url, hello_pid) {
                wire::baseline_holds(&url, polls, pid).await;
            }
            wire::held_polls(&cli.database_url, &api, polls, server_pid, change).await
        }
        Command::Resume {
            api,
            missed,
            rounds,
        } => wire::resume(&cli.database_url, &api, missed, rounds).await,
        Command::Failover {
            api,
            reference,
            streams,
            kill_pid,
            percent,
            kill_after_ms,
        } => {
            let kill_after = Duration::from_millis(kill_after_ms);
            let db = &cli.database_url;
            failover::run(db, &api, &reference, streams, kill_pid, percent, kill_after).await
        }
        Command::SlowLink {
            api,
            links_mb,
            rounds,
            percent,
        } => slow_link::run(&cli.database_url, &api, &links_mb, rounds, percent).await,
        Command::HistorySeed {
            owners,
            days,
            points_per_day,
            pools,
        } => history::seed(&cli.database_url, owners, days, points_per_day, pools).await,
        Command::HistoryReads {
            api,
            requests,
            days,
        } => history::reads(&cli.database_url, &api, requests, days).await,
        Command::HistoryStore { api, rounds } => {
            history::store(&cli.database_url, &api, rounds).await
        }
    }
}

/// Pool i: decimals cycle 6, 8, 9; $1 at expo -8 scaled per pool; threshold 0.8.
async fn seed(url: &str, shape: &MarketArgs, feeds: bool) {
    let (pools, owners) = (shape.pools, shape.owners);
    let started = Instant::now();
    let db = connect(url).await;
    db.batch_execute("DELETE FROM pools WHERE cluster = 'localnet'")
        .await
        .unwrap();
    let pool_keys: Vec<String> = (0..pools).map(|i| key(&format!("load pool {i}"))).collect();
    for (i, address) in pool_keys.iter().enumerate() {
        let mint = key(&format!("load mint {i}"));
        let vault = key(&format!("load vault {i}"));
        market::insert_pool(&db, i, [address, &mint, &key("load authority"), &vault], 1).await;
        if feeds {
            let feed = key(&format!("load feed {i}"));
            db.execute(
                "UPDATE pools SET pyth_price_feed = $1 WHERE cluster = 'localnet' AND pool_address = $2",
                &[&feed, address],
            )
            .await
            .unwrap();
        }
    }
    let market = market::build(shape);
    let sink = db
        .copy_in("COPY positions (cluster, position_address, pool_address, owner, deposit_shares, borrow_principal,
                   deposit_idx_snap, borrow_idx_snap, original_deposit, slot) FROM STDIN")
        .await
        .unwrap();
    futures_util::pin_mut!(sink);
    let mut buf = Vec::with_capacity(1 << 20);
    let mut rows = 0usize;
    for (o, entries) in market.owners.iter().enumerate() {
        let owner = key(&format!("load owner {o}"));
        for e in entries {
            writeln!(
                buf,
                "localnet\t{}\t{}\t{}\t{}\t{}\t{WAD}\t{WAD}\t{}\t1",
                key(&format!("load position {o} {}", e.pool)),
                pool_keys[e.pool],
                owner,
                e.shares,
                e.principal,
                e.shares
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
        "seeded {pools} pools, {rows} positions of {owners} owners ({} under water) in {:.1}s",
        market.sunk,
        started.elapsed().as_secs_f64()
    );
}

async fn admin_calls(url: &str, api: &str, concurrency: usize, seconds: u64) {
    use ed25519_dalek::SigningKey;
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
    for (w, root) in signers.iter().take(concurrency).cloned().enumerate() {
        let (http, api) = (http.clone(), api.to_string());
        workers.push(actix_rt::spawn(async move {
            // The typed client does the handshake as an operator's tool does.
            let lendex = lendex_client::Client::with_http(&api, http);
            let root = lendex_client::Signer::new(root);
            let (mut done, mut failed, mut latencies) = (0u64, 0u64, Vec::new());
            let mut i = 0u64;
            while Instant::now() < deadline {
                i += 1;
                let call = Instant::now();
                let target: Pubkey = key(&format!(
                    "load admin {w} {i} {}",
                    started.elapsed().as_nanos()
                ))
                .parse()
                .expect("a key");
                let added = lendex
                    .add_admin(&root, &target, lendex::domain::enums::Role::PoolAdmin, None)
                    .await;
                if added.is_ok() {
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
