//! Every public route, typed: its path and parameters in, its wire type out
//! (docs/api.md). Queries take the route's own parameters (`Query`); a
//! refusal is `Error::Api` with the spec's `error`.
//!
//! The polled answers are also read conditionally (`Client::poll`,
//! docs/design.md §11): a read names the ETag it holds; the service answers
//! 304 when nothing changed, or, asked to wait (`wait_ms`), holds the request
//! until the answer changes or the wait is over. A bot polls with the ETag of
//! its last answer and never parses a body twice.

use std::time::Duration;

use lendex_domain::pubkey::Pubkey;
use lendex_domain::view_key::ViewKey;
use lendex_wire::{
    addresses::AddressResponse,
    admin::{AllowlistResponse, MeResponse},
    health::HealthResponse,
    history::{HistoryEventsResponse, MarketHistoryResponse, OwnerHistoryResponse, PricesResponse},
    liquidations::{AtRiskResponse, LiquidationsResponse},
    pools::{
        PoolOnChain, PoolStatusResponse, PoolsResponse, SyncPoolResponse, UnregisteredPoolsResponse,
    },
    positions::{DetailResponse, PositionsResponse, SyncPositionResponse, UnhealthyResponse},
    risk::{CurveResponse, ShockResponse},
    transactions::{RecordTransactionRequest, RecordTransactionResponse, TransactionsResponse},
};
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::{Client, Error, Query};

/// The paths of the polled answers (`Client::poll`).
pub mod path {
    pub const UNHEALTHY: &str = "/api/positions/unhealthy";
    pub const LIQUIDATIONS: &str = "/api/liquidations";
    pub const AT_RISK: &str = "/api/positions/at-risk";
    pub const POOLS: &str = "/api/pools";
    pub const POOL_STATUS: &str = "/api/pools/status";
    pub const STREAM: &str = "/api/positions/unhealthy/stream";
}

impl Client {
    /// GET /api/health (a 503 answer is `Error::Api` with status 503).
    pub async fn health(&self) -> Result<HealthResponse, Error> {
        self.get("/api/health").await
    }

    /// GET /api/pools: the registered pools.
    pub async fn pools(&self) -> Result<PoolsResponse, Error> {
        self.get(path::POOLS).await
    }

    /// GET /api/pools/status: prices, oracle ages, rates.
    pub async fn pool_status(&self) -> Result<PoolStatusResponse, Error> {
        self.get(path::POOL_STATUS).await
    }

    /// GET /api/pools/unregistered: the program's pools not in the index.
    pub async fn unregistered_pools(&self) -> Result<UnregisteredPoolsResponse, Error> {
        self.get("/api/pools/unregistered").await
    }

    /// GET /api/pools/{address}/chain: the pool as the chain holds it.
    pub async fn pool_on_chain(&self, pool: &Pubkey) -> Result<PoolOnChain, Error> {
        self.get(&format!("/api/pools/{pool}/chain")).await
    }

    /// GET /api/pools/{pool}/prices: `from`, `to`, `limit`, `cursor`.
    pub async fn pool_prices(&self, pool: &Pubkey, query: &Query) -> Result<PricesResponse, Error> {
        self.get(&format!("/api/pools/{pool}/prices{}", query.encode()))
            .await
    }

    /// POST /api/pools/sync: a registered pool re-read from chain.
    pub async fn sync_pool(&self, pool: &Pubkey) -> Result<SyncPoolResponse, Error> {
        let body = json!({ "pool_address": pool.to_string() });
        self.send_json(reqwest::Method::POST, "/api/pools/sync", &body)
            .await
    }

    /// GET /api/positions/{user}: every position of a wallet.
    pub async fn positions(&self, owner: &Pubkey) -> Result<PositionsResponse, Error> {
        self.get(&format!("/api/positions/{owner}")).await
    }

    /// GET /api/addresses/{address}: a wallet, a pool or a position account,
    /// with the position's pool and owner.
    pub async fn address(&self, address: &Pubkey) -> Result<AddressResponse, Error> {
        self.get(&format!("/api/addresses/{address}")).await
    }

    /// GET /api/positions/{user}/detail: the account's health and its parts.
    pub async fn detail(&self, owner: &Pubkey) -> Result<DetailResponse, Error> {
        self.get(&format!("/api/positions/{owner}/detail")).await
    }

    /// GET /api/positions/{user} in one view (docs/design.md §15, §17:
    /// `processed` on a cluster reading the chain at processed, `feed` where
    /// feeds are read).
    pub async fn positions_in(
        &self,
        owner: &Pubkey,
        view: impl Into<ViewKey>,
    ) -> Result<PositionsResponse, Error> {
        let query = Query::new().view(view).encode();
        self.get(&format!("/api/positions/{owner}{query}")).await
    }

    /// GET /api/positions/{user}/detail in one view.
    pub async fn detail_in(
        &self,
        owner: &Pubkey,
        view: impl Into<ViewKey>,
    ) -> Result<DetailResponse, Error> {
        let query = Query::new().view(view).encode();
        self.get(&format!("/api/positions/{owner}/detail{query}"))
            .await
    }

    /// GET /api/positions/{user}/history: `from`, `to`, `resolution`, `limit`, `cursor`.
    pub async fn owner_history(
        &self,
        owner: &Pubkey,
        query: &Query,
    ) -> Result<OwnerHistoryResponse, Error> {
        self.get(&format!("/api/positions/{owner}/history{}", query.encode()))
            .await
    }

    /// POST /api/positions/sync: one position re-read from chain.
    pub async fn sync_position(
        &self,
        pool: &Pubkey,
        owner: &Pubkey,
    ) -> Result<SyncPositionResponse, Error> {
        let body = json!({ "pool_address": pool.to_string(), "user": owner.to_string() });
        self.send_json(reqwest::Method::POST, "/api/positions/sync", &body)
            .await
    }

    /// GET /api/positions/unhealthy: `limit`, `pool`.
    pub async fn unhealthy(&self, query: &Query) -> Result<UnhealthyResponse, Error> {
        self.get(&format!("{}{}", path::UNHEALTHY, query.encode()))
            .await
    }

    /// GET /api/liquidations: `limit`, `min_profit_wad`, `debt_pool`, `collateral_pool`.
    pub async fn liquidations(&self, query: &Query) -> Result<LiquidationsResponse, Error> {
        self.get(&format!("{}{}", path::LIQUIDATIONS, query.encode()))
            .await
    }

    /// GET /api/positions/at-risk: `below`, `limit`.
    pub async fn at_risk(&self, query: &Query) -> Result<AtRiskResponse, Error> {
        self.get(&format!("{}{}", path::AT_RISK, query.encode()))
            .await
    }

    /// GET /api/history/events: `kind`, `owner`, `pool`, `from`, `to`, `limit`, `cursor`.
    pub async fn history_events(&self, query: &Query) -> Result<HistoryEventsResponse, Error> {
        self.get(&format!("/api/history/events{}", query.encode()))
            .await
    }

    /// GET /api/history/market: `from`, `to`, `resolution`.
    pub async fn history_market(&self, query: &Query) -> Result<MarketHistoryResponse, Error> {
        self.get(&format!("/api/history/market{}", query.encode()))
            .await
    }

    /// GET /api/risk/shock: `shock` (`<pool>:<bps>`, repeated), `limit`.
    pub async fn risk_shock(&self, query: &Query) -> Result<ShockResponse, Error> {
        self.get(&format!("/api/risk/shock{}", query.encode()))
            .await
    }

    /// GET /api/risk/curve: `pool`, `from_bps`, `to_bps`, `steps`.
    pub async fn risk_curve(&self, query: &Query) -> Result<CurveResponse, Error> {
        self.get(&format!("/api/risk/curve{}", query.encode()))
            .await
    }

    /// GET /api/transactions: `wallet`, `pool`, `limit`.
    pub async fn transactions(&self, query: &Query) -> Result<TransactionsResponse, Error> {
        self.get(&format!("/api/transactions{}", query.encode()))
            .await
    }

    /// POST /api/transactions: a transaction of the program, recorded once
    /// (its signature is the key: a second record of it is the first's answer).
    pub async fn record_transaction(
        &self,
        record: &RecordTransactionRequest,
    ) -> Result<RecordTransactionResponse, Error> {
        let body = serde_json::to_value(record).expect("strings serialize");
        self.send_json(reqwest::Method::POST, "/api/transactions", &body)
            .await
    }

    /// GET /api/admin/me: the wallet's active role, if any.
    pub async fn me(&self, wallet: &Pubkey) -> Result<MeResponse, Error> {
        self.get(&format!("/api/admin/me?pubkey={wallet}")).await
    }

    /// GET /api/admin/allowlist: the admins.
    pub async fn allowlist(&self) -> Result<AllowlistResponse, Error> {
        self.get("/api/admin/allowlist").await
    }
}

/// The answer of a conditional read.
#[derive(Debug, Clone, PartialEq)]
pub enum Polled<T> {
    /// A new answer, with the ETag to name next time.
    Changed { body: T, etag: String },
    /// The same as the ETag named (304).
    NotModified,
}

impl<T> Polled<T> {
    /// The new answer, if any.
    pub fn changed(self) -> Option<(T, String)> {
        match self {
            Polled::Changed { body, etag } => Some((body, etag)),
            Polled::NotModified => None,
        }
    }
}

impl Client {
    /// `GET path` (one of `routes::path`, or any GET route) with `query`,
    /// conditional on `etag`; with `wait`, held up to that long for a change
    /// (at most 30 s: more is refused as `invalid`).
    pub async fn poll<T: DeserializeOwned>(
        &self,
        path: &str,
        query: &Query,
        etag: Option<&str>,
        wait: Option<Duration>,
    ) -> Result<Polled<T>, Error> {
        let query = query
            .clone()
            .with_some("wait_ms", wait.map(|w| w.as_millis()));
        let mut request = self
            .http
            .get(self.url(&format!("{path}{}", query.encode())));
        if let Some(etag) = etag {
            request = request.header(reqwest::header::IF_NONE_MATCH, etag);
        }
        if let Some(wait) = wait {
            // However the caller's client is set up, the hold is not cut short.
            request = request.timeout(wait + Duration::from_secs(10));
        }
        let response = self.send(request).await?;
        if response.status().as_u16() == 304 {
            return Ok(Polled::NotModified);
        }
        let etag = response
            .headers()
            .get(reqwest::header::ETAG)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
            .ok_or_else(|| Error::Unexpected(format!("{path} answered without an ETag")))?;
        Ok(Polled::Changed {
            body: crate::json(response).await?,
            etag,
        })
    }
}
