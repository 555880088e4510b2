//! The baselines Lendex is measured against, on the same HTTP stack:
//! `sql-baseline` serves the unhealthy feed computed by one SQL query per
//! request; `hello` serves fixed bytes (hello-world actix).

use std::time::Duration;

use actix_web::{App, HttpResponse, HttpServer, web};

/// The unhealthy feed in one SQL statement, from the raw inputs, with the exact
/// math of docs/design.md §3 in NUMERIC (div() is integer division).
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

pub async fn sql_baseline(url: &str, bind: &str, stored: bool) {
    let pool = lendex::store::connect_pool(&lendex::config::DatabaseConfig {
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
                    // Under 64 connections the pool's wait times out: answer as
                    // the service would (503), not with a panicking worker.
                    let read = async {
                        let client = pool.get().await.map_err(|e| e.to_string())?;
                        let stmt = client
                            .prepare_cached(sql)
                            .await
                            .map_err(|e| e.to_string())?;
                        client
                            .query(&stmt, &[&limit])
                            .await
                            .map_err(|e| e.to_string())
                    };
                    let Ok(read) = read.await else {
                        return HttpResponse::ServiceUnavailable()
                            .json(serde_json::json!({ "error": "database unavailable" }));
                    };
                    let rows: Vec<Row> = read
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

/// Releases the requests hello-world holds (every worker's).
static RELEASE: tokio::sync::Notify = tokio::sync::Notify::const_new();
/// Requests hello-world holds now (GET /held-count).
static HELD: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

pub async fn hello(bind: &str, body: &std::path::Path, hold_ms: u64) {
    let body = actix_web::web::Bytes::from(std::fs::read(body).expect("read the body file"));
    actix_web::HttpServer::new(move || {
        let body = body.clone();
        actix_web::App::new().default_service(actix_web::web::to(
            move |req: actix_web::HttpRequest| {
                let body = body.clone();
                async move {
                    if hold_ms > 0 {
                        use std::sync::atomic::Ordering::SeqCst;
                        match req.path() {
                            "/release" => RELEASE.notify_waiters(),
                            "/probe" => {}
                            "/held-count" => {
                                return HttpResponse::Ok().body(HELD.load(SeqCst).to_string());
                            }
                            _ => {
                                let wait = tokio::time::sleep(Duration::from_millis(hold_ms));
                                let released = RELEASE.notified();
                                HELD.fetch_add(1, SeqCst);
                                tokio::select! {
                                    () = released => {}
                                    () = wait => {}
                                }
                                HELD.fetch_sub(1, SeqCst);
                            }
                        }
                    }
                    HttpResponse::Ok()
                        .content_type("application/json")
                        .body(body)
                }
            },
        ))
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
