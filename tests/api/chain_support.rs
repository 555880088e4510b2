//! Test support for the chain: surfpool (the real, offline local Solana RPC)
//! started per test on a free loopback port, market fixtures written with
//! `surfnet_setAccount`, and a proxy that injects RPC faults and counts requests.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::{App, HttpResponse, HttpServer, web};
use lendex::domain::accounts::*;
use lendex::domain::pubkey::Pubkey;
use lendex::domain::wad::WAD;
use serde_json::json;

use crate::common::*;
pub use lendex_testkit::surfpool::LocalChain;

pub fn key(s: &str) -> Pubkey {
    s.parse().unwrap()
}

pub fn token_program() -> Pubkey {
    key(SPL_TOKEN_PROGRAM)
}

/// A pool as the program would create it, with sensible risk parameters.
pub fn pool_account(
    program: &Pubkey,
    authority: &Pubkey,
    mint: &Pubkey,
    price: Option<i64>,
    expo: Option<i32>,
) -> (Pubkey, LendingPool) {
    let (address, pool_bump) = pool_address(program, mint);
    let (vault, vault_bump) = vault_address(program, &address);
    let (_, authority_bump) = authority_address(program, &address);
    let pool = LendingPool {
        authority: *authority,
        token_mint: *mint,
        vault,
        pool_bump,
        authority_bump,
        vault_bump,
        paused: false,
        total_deposits: 1_000_000_000,
        total_borrows: 500_000_000,
        accumulated_fees: 0,
        total_deposit_shares: 1_000_000_000,
        deposit_index_wad: WAD,
        borrow_index_wad: WAD,
        last_update_ts: 1_700_000_000,
        ltv_wad: 75 * WAD / 100,
        liquidation_threshold_wad: 80 * WAD / 100,
        liquidation_bonus_wad: 5 * WAD / 100,
        protocol_liq_fee_wad: WAD / 100,
        reserve_factor_wad: 10 * WAD / 100,
        close_factor_wad: 50 * WAD / 100,
        base_rate_wad: 2 * WAD / 100,
        optimal_util_wad: 80 * WAD / 100,
        slope1_wad: 4 * WAD / 100,
        slope2_wad: 75 * WAD / 100,
        flash_fee_bps: 9,
        pyth_price_feed: None,
        oracle_price: price,
        oracle_conf: price.map(|_| 1000),
        oracle_expo: expo,
    };
    (address, pool)
}

pub fn position_account(
    program: &Pubkey,
    pool: &Pubkey,
    owner: &Pubkey,
    deposit_shares: u64,
    borrow_principal: u64,
) -> (Pubkey, UserPosition) {
    let (address, bump) = position_address(program, pool, owner);
    let position = UserPosition {
        owner: *owner,
        pool: *pool,
        deposit_shares,
        borrow_principal,
        deposit_idx_snap: WAD,
        borrow_idx_snap: WAD,
        original_deposit: deposit_shares,
        bump,
    };
    (address, position)
}

/// A test app wired to a local chain, with one pool admin who is also the on-chain
/// authority of the pools it creates.
pub struct ChainApp {
    pub app: TestApp,
    pub chain: LocalChain,
    pub admin: Wallet,
    pub program: Pubkey,
}

impl ChainApp {
    pub async fn start() -> ChainApp {
        Self::start_with(|_| {}).await
    }

    pub async fn start_with(tweak: impl FnOnce(&mut lendex::config::Config)) -> ChainApp {
        let chain = LocalChain::start().await;
        let url = chain.url.clone();
        Self::start_on(chain, &url, tweak).await
    }

    /// The service reading `chain` through `rpc_url` (the chain itself, or a proxy to it).
    pub async fn start_on(
        chain: LocalChain,
        rpc_url: &str,
        tweak: impl FnOnce(&mut lendex::config::Config),
    ) -> ChainApp {
        let url = rpc_url.to_string();
        let ws_url = chain.ws_url.clone();
        let app = spawn_app_with(|c| {
            c.rpc.url = url;
            c.rpc.ws_url = ws_url;
            c.rpc.timeout_ms = 3000;
            c.rpc.max_rps = 1000;
            tweak(c)
        })
        .await;
        let admin = Wallet::new();
        app.add_admin(&admin, "pool_admin").await;
        let program = key(&app.config.chain.program_id);
        ChainApp {
            app,
            chain,
            admin,
            program,
        }
    }

    pub fn admin_key(&self) -> Pubkey {
        key(&self.admin.pubkey())
    }

    /// Writes a mint with `decimals` and a pool for it to the chain; returns (pool address, pool).
    pub async fn create_pool(
        &self,
        decimals: u8,
        price: Option<i64>,
        expo: Option<i32>,
    ) -> (Pubkey, LendingPool) {
        let mint = Pubkey::new_unique();
        self.chain
            .set(&mint, &token_program(), &encode_mint(decimals, 1_000_000))
            .await;
        let (address, pool) = pool_account(&self.program, &self.admin_key(), &mint, price, expo);
        self.chain
            .set(&address, &self.program, &encode_pool(&pool))
            .await;
        (address, pool)
    }

    pub fn init_body(
        &self,
        pool_address: &Pubkey,
        pool: &LendingPool,
        nonce: &str,
        signature: &str,
    ) -> serde_json::Value {
        json!({
            "actor": self.admin.pubkey(), "nonce": nonce, "signature": signature,
            "pool_address": pool_address.to_string(), "token_mint": pool.token_mint.to_string(),
            "symbol": "TKN", "authority": pool.authority.to_string(), "vault": pool.vault.to_string(),
            "pool_bump": pool.pool_bump, "authority_bump": pool.authority_bump, "vault_bump": pool.vault_bump,
            "init_signature": "5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UaKdiSkoQ",
        })
    }

    /// Registers a pool through the real signed handshake; returns the response.
    pub async fn register(
        &self,
        pool_address: &Pubkey,
        pool: &LendingPool,
    ) -> (u16, serde_json::Value) {
        let (nonce, signature) = self
            .app
            .signed(&self.admin, &format!("init_pool:{}", pool.token_mint))
            .await;
        self.app
            .post(
                "/api/pools/init",
                &self.init_body(pool_address, pool, &nonce, &signature),
            )
            .await
    }

    pub async fn create_and_register(
        &self,
        decimals: u8,
        price: Option<i64>,
        expo: Option<i32>,
    ) -> (Pubkey, LendingPool) {
        let (address, pool) = self.create_pool(decimals, price, expo).await;
        let (status, body) = self.register(&address, &pool).await;
        assert_eq!(status, 200, "{body}");
        (address, pool)
    }

    /// POST /api/pools/sync for `pool`.
    pub async fn sync_pool(&self, pool: &Pubkey) -> (u16, serde_json::Value) {
        self.app
            .post(
                "/api/pools/sync",
                &json!({ "pool_address": pool.to_string() }),
            )
            .await
    }

    pub async fn put_position(
        &self,
        pool: &Pubkey,
        owner: &Pubkey,
        deposit_shares: u64,
        borrow_principal: u64,
    ) -> Pubkey {
        let (address, position) =
            position_account(&self.program, pool, owner, deposit_shares, borrow_principal);
        self.chain
            .set(&address, &self.program, &encode_position(&position))
            .await;
        address
    }
}

/// What the proxy answers.
#[derive(Clone, Copy, Debug)]
pub enum Fault {
    Forward,
    /// HTTP 500 to everything.
    ServerError,
    /// 429 with Retry-After: `retry_after` for the next `times` requests, then forward.
    RateLimited {
        retry_after: u64,
        times: u32,
    },
    /// Accept and never answer.
    Hang,
    /// Never answer a scan of a pool's positions (getProgramAccounts);
    /// forward the rest.
    HangScans,
}

pub struct ProxyState {
    upstream: String,
    client: reqwest::Client,
    pub fault: Mutex<Fault>,
    /// Arrival time and body of every request the chain side received.
    pub hits: Mutex<Vec<(Instant, String)>>,
}

/// An HTTP proxy between the service and surfpool.
pub struct RpcProxy {
    pub url: String,
    pub state: Arc<ProxyState>,
}

impl RpcProxy {
    pub async fn start(upstream: &str) -> RpcProxy {
        let state = Arc::new(ProxyState {
            upstream: upstream.to_string(),
            client: reqwest::Client::new(),
            fault: Mutex::new(Fault::Forward),
            hits: Mutex::new(Vec::new()),
        });
        let data = web::Data::from(state.clone());
        let server = HttpServer::new(move || {
            App::new()
                .app_data(data.clone())
                .default_service(web::to(proxy))
        })
        .workers(1)
        .bind("127.0.0.1:0")
        .unwrap();
        let url = format!("http://{}", server.addrs()[0]);
        actix_rt::spawn(server.run());
        RpcProxy { url, state }
    }

    pub fn set(&self, fault: Fault) {
        *self.state.fault.lock().unwrap() = fault;
    }

    pub fn hits(&self) -> Vec<(Instant, String)> {
        self.state.hits.lock().unwrap().clone()
    }

    pub fn clear(&self) {
        self.state.hits.lock().unwrap().clear();
    }
}

async fn proxy(state: web::Data<ProxyState>, body: web::Bytes) -> HttpResponse {
    let text = String::from_utf8_lossy(&body).to_string();
    let scan = text.contains("getProgramAccounts");
    state.hits.lock().unwrap().push((Instant::now(), text));
    let fault = {
        let mut fault = state.fault.lock().unwrap();
        let now = *fault;
        if let Fault::RateLimited { retry_after, times } = now {
            *fault = if times <= 1 {
                Fault::Forward
            } else {
                Fault::RateLimited {
                    retry_after,
                    times: times - 1,
                }
            };
        }
        now
    };
    match fault {
        Fault::ServerError => HttpResponse::InternalServerError().body("upstream exploded"),
        Fault::RateLimited { retry_after, .. } => HttpResponse::TooManyRequests()
            .insert_header(("Retry-After", retry_after.to_string()))
            .body("slow down"),
        Fault::Hang => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            HttpResponse::GatewayTimeout().finish()
        }
        Fault::HangScans if scan => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            HttpResponse::GatewayTimeout().finish()
        }
        Fault::Forward | Fault::HangScans => {
            let res = state
                .client
                .post(&state.upstream)
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await;
            match res {
                Ok(res) => {
                    let status = res.status().as_u16();
                    let bytes = res.bytes().await.unwrap_or_default();
                    HttpResponse::build(actix_web::http::StatusCode::from_u16(status).unwrap())
                        .content_type("application/json")
                        .body(bytes)
                }
                Err(_) => HttpResponse::BadGateway().finish(),
            }
        }
    }
}
