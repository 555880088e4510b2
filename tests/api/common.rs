//! Test harness: a throw-away PostgreSQL database per test (so tests run in
//! parallel), the real service started in-process on a free loopback port, and
//! wallets with real ed25519 keys.

use std::sync::atomic::{AtomicU32, Ordering};

use ed25519_dalek::{Signer, SigningKey};
use lendex::config::Config;
use serde_json::{Value, json};

/// Server of the throw-away databases; overridable for other machines.
pub fn admin_database_url() -> String {
    std::env::var("LENDEX_TEST_ADMIN_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_string())
}

/// A database created for one test and dropped (forcibly) when the test ends.
pub struct TestDb {
    pub url: String,
    name: String,
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

impl TestDb {
    pub async fn create() -> TestDb {
        let name = format!(
            "lendex_test_{}_{}_{:08x}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed),
            rand::random::<u32>()
        );
        let admin = admin_client().await;
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .expect("create test database");
        let base = admin_database_url();
        let url = match base.rfind('/') {
            Some(i) => format!("{}/{name}", &base[..i]),
            None => panic!("bad admin database url"),
        };
        TestDb { url, name }
    }

    /// The service's own connection pool on this database (its default
    /// settings), for tests that run the store's code directly.
    pub fn pool(&self) -> deadpool_postgres::Pool {
        let mut cfg = Config::defaults().database;
        cfg.url = self.url.clone();
        lendex::store::connect_pool(&cfg).unwrap()
    }

    /// A direct connection, for asserting on what is really in the database.
    pub async fn connect(&self) -> tokio_postgres::Client {
        let (client, conn) = tokio_postgres::connect(&self.url, tokio_postgres::NoTls)
            .await
            .expect("connect test db");
        tokio::spawn(conn);
        client
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let name = self.name.clone();
        // Drop runs outside any async context we could block on: use a thread.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let admin = admin_client().await;
                let _ = admin
                    .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .await;
            });
        })
        .join();
    }
}

async fn admin_client() -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(&admin_database_url(), tokio_postgres::NoTls)
        .await
        .expect("PostgreSQL must be running on 127.0.0.1:5432 (see README)");
    tokio::spawn(conn);
    client
}

/// A wallet with a real ed25519 key.
pub struct Wallet {
    key: SigningKey,
}

impl Wallet {
    pub fn new() -> Wallet {
        Wallet {
            key: SigningKey::from_bytes(&rand::random::<[u8; 32]>()),
        }
    }

    pub fn pubkey(&self) -> String {
        bs58::encode(self.key.verifying_key().as_bytes()).into_string()
    }

    /// The 64 bytes of a Solana CLI keypair file (secret, then public key).
    pub fn keypair_bytes(&self) -> [u8; 64] {
        self.key.to_keypair_bytes()
    }

    /// Writes this wallet as a Solana CLI keypair file (what `lendex remote` reads).
    pub fn save(&self, path: &std::path::Path) {
        std::fs::write(path, lendex_client::keypair::encode(&self.key)).unwrap();
    }

    /// This wallet as the typed client's signer.
    pub fn signer(&self) -> lendex_client::Signer {
        lendex_client::Signer::new(self.key.clone())
    }

    /// Detached signature of the UTF-8 bytes of `message`, base58-encoded.
    pub fn sign(&self, message: &str) -> String {
        bs58::encode(self.key.sign(message.as_bytes()).to_bytes()).into_string()
    }
}

/// The service running in this test's actix system, its database, and a client.
pub struct TestApp {
    pub base: String,
    pub db: TestDb,
    pub http: reqwest::Client,
    /// The bootstrap super-admin (seeded from SUPER_ADMIN_PUBKEY by the migration).
    pub root: Wallet,
    pub config: Config,
    /// History's writer (None when history is off).
    pub history: Option<actix::Addr<lendex::actors::history::HistoryWriter>>,
}

/// Test settings: own database, free port, no chain (an address that refuses
/// connections at once), public-write limits off unless a test turns them on.
pub async fn spawn_app_with(tweak: impl FnOnce(&mut Config)) -> TestApp {
    let db = TestDb::create().await;
    let root = Wallet::new();
    let mut config = Config::defaults();
    config.database.url = db.url.clone();
    config.database.pool_size = 8;
    config.server.bind = "127.0.0.1:0".into();
    config.server.workers = 2;
    config.server.shutdown_timeout_seconds = 5;
    config.rpc.url = "http://127.0.0.1:9".into();
    config.rpc.timeout_ms = 1000;
    config.auth.super_admin_pubkey = root.pubkey();
    config.limits.public_write_per_second = 0;
    config.sync.interval_seconds = 0;
    tweak(&mut config);
    let service = lendex::app::start(config.clone())
        .await
        .expect("service starts");
    let base = format!("http://{}", service.addrs[0]);
    let history = service.history.clone();
    actix_rt::spawn(service.server);
    TestApp {
        base,
        db,
        http: test_client(),
        root,
        config,
        history,
    }
}

/// The service reaches PostgreSQL through the proxy at `proxied` (a test
/// cuts it to stage an outage), with bounds short enough that the outage
/// shows within seconds.
pub fn through_proxy(c: &mut Config, proxied: &str) {
    c.database.url = c.database.url.replace("127.0.0.1:5432", proxied);
    c.database.write_timeout_ms = 1_500;
    c.database.acquire_timeout_ms = 1_000;
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// The text of GET /metrics.
    pub async fn metrics_text(&self) -> String {
        let res = self
            .http
            .get(self.url("/metrics"))
            .send()
            .await
            .expect("scrape");
        res.text().await.expect("metrics text")
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        let res = self.http.get(self.url(path)).send().await.expect("request");
        decode(res).await
    }

    pub async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        let res = self
            .http
            .post(self.url(path))
            .json(body)
            .send()
            .await
            .expect("request");
        decode(res).await
    }

    pub async fn delete(&self, path: &str, body: &Value) -> (u16, Value) {
        let res = self
            .http
            .delete(self.url(path))
            .json(body)
            .send()
            .await
            .expect("request");
        decode(res).await
    }

    pub async fn post_raw(&self, path: &str, body: impl Into<reqwest::Body>) -> (u16, Value) {
        let res = self
            .http
            .post(self.url(path))
            .body(body)
            .send()
            .await
            .expect("request");
        decode(res).await
    }

    /// Steps 1-2 of the handshake: a nonce for `action`, signed by `wallet`.
    /// Checks the message is the exact canonical text. Returns (nonce, signature).
    pub async fn signed(&self, wallet: &Wallet, action: &str) -> (String, String) {
        let (status, body) = self
            .post(
                "/api/auth/nonce",
                &json!({ "pubkey": wallet.pubkey(), "action": action }),
            )
            .await;
        assert_eq!(status, 200, "nonce: {body}");
        let nonce = body["nonce"].as_str().unwrap().to_string();
        let message = body["message"].as_str().unwrap();
        assert_eq!(
            message,
            format!("Service admin auth\nAction: {action}\nNonce: {nonce}")
        );
        (nonce.clone(), wallet.sign(message))
    }

    /// Adds `wallet` with `role` through the API, signed by the bootstrap super-admin.
    pub async fn add_admin(&self, wallet: &Wallet, role: &str) {
        let action = format!("add_admin:{}:{role}", wallet.pubkey());
        let (nonce, signature) = self.signed(&self.root, &action).await;
        let (status, body) = self
            .post(
                "/api/admin/allowlist",
                &json!({ "actor": self.root.pubkey(), "nonce": nonce, "signature": signature,
                         "pubkey": wallet.pubkey(), "role": role }),
            )
            .await;
        assert_eq!((status, body), (200, json!({ "ok": true })));
    }
}

/// Anything the tests read the API of: a service in this process, or a
/// `lendex serve` process (`Remote`).
pub trait Api {
    async fn get(&self, path: &str) -> (u16, Value);
}

impl Api for TestApp {
    async fn get(&self, path: &str) -> (u16, Value) {
        TestApp::get(self, path).await
    }
}

/// The API of a `lendex serve` process on a loopback port.
pub struct Remote {
    pub base: String,
    pub http: reqwest::Client,
}

impl Remote {
    pub fn on(port: u16) -> Remote {
        Remote {
            base: format!("http://127.0.0.1:{port}"),
            http: test_client(),
        }
    }
}

impl Api for Remote {
    async fn get(&self, path: &str) -> (u16, Value) {
        let res = self
            .http
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .expect("request");
        decode(res).await
    }
}

pub async fn decode(res: reqwest::Response) -> (u16, Value) {
    let status = res.status().as_u16();
    let text = res.text().await.expect("body");
    let value =
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("non-JSON body ({status}): {text}"));
    (status, value)
}

pub fn error(msg: &str) -> Value {
    json!({ "error": msg })
}

/// Polls `check` until it holds or `limit` passes (for effects that happen in the
/// background: NOTIFY, the refresh timer). Not a speed assertion: the limit is generous.
pub async fn eventually(limit: std::time::Duration, mut check: impl AsyncFnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + limit;
    while std::time::Instant::now() < deadline {
        if check().await {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    check().await
}

/// A client that lets an idle connection go after 2 s, before the server's
/// 5 s keep-alive closes it: reusing a connection the server is closing at
/// that moment fails the request (IncompleteMessage), a race of the client,
/// not an answer of the service.
pub fn test_client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_idle_timeout(std::time::Duration::from_secs(2))
        .build()
        .expect("an HTTP client")
}

/// Every row of a two-column query, as pairs.
pub async fn pairs<A, B>(db: &tokio_postgres::Client, sql: &str) -> Vec<(A, B)>
where
    A: for<'a> tokio_postgres::types::FromSql<'a>,
    B: for<'a> tokio_postgres::types::FromSql<'a>,
{
    db.query(sql, &[])
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

/// GET `url` as JSON (a test's read of a spawned server).
pub async fn get_json(http: &reqwest::Client, url: &str) -> Value {
    http.get(url).send().await.unwrap().json().await.unwrap()
}

/// GET `url` as text (a spawned server's /metrics).
pub async fn get_text(http: &reqwest::Client, url: &str) -> String {
    http.get(url).send().await.unwrap().text().await.unwrap()
}

/// A loopback port nobody listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `N` loopback ports free now, all different: each picked while the ones
/// before it are still held (two picks in a row can return the same port).
pub fn free_ports<const N: usize>() -> [u16; N] {
    let held: Vec<std::net::TcpListener> = (0..N)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    std::array::from_fn(|i| held[i].local_addr().unwrap().port())
}

/// $1 at the oracle's exponent -8.
pub const ORACLE_DOLLAR: i64 = 100_000_000;

/// A localnet pool at `price` (exponent -8, 6 decimals, liquidation threshold
/// 0.8, indexes at 1), written by SQL as an indexer would. Returns its address.
pub async fn insert_pool(db: &tokio_postgres::Client, price: i64) -> String {
    use lendex::domain::pubkey::Pubkey;
    let (pool, mint) = (
        Pubkey::new_unique().to_string(),
        Pubkey::new_unique().to_string(),
    );
    db.execute(
        "INSERT INTO pools (cluster, pool_address, token_mint, authority, vault, pool_bump, authority_bump,
            vault_bump, decimals, paused, total_deposits, total_borrows, accumulated_fees, total_deposit_shares,
            deposit_index_wad, borrow_index_wad, last_update_ts, ltv_wad, liquidation_threshold_wad,
            liquidation_bonus_wad, protocol_liq_fee_wad, reserve_factor_wad, close_factor_wad, base_rate_wad,
            optimal_util_wad, slope1_wad, slope2_wad, flash_fee_bps, created_by, init_signature, slot,
            oracle_price, oracle_expo)
         VALUES ('localnet', $1, $2, $2, $2, 255, 255, 255, 6, false, 0, 0, 0, 0, 1000000000000000000,
            1000000000000000000, 0, 0, 800000000000000000, 0, 0, 0, 0, 0, 0, 0, 0, 0, 'test', 'test', 1,
            $3, -8)",
        &[&pool, &mint, &price],
    )
    .await
    .unwrap();
    pool
}
