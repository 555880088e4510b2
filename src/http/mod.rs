//! The HTTP API: routes, extractors and handlers. Handlers validate input, then
//! exchange typed messages with the actors (writes, nonces, chain reads) or read
//! PostgreSQL directly through named queries.

pub mod body;
pub mod conditional;
pub mod drain;
pub mod extract;
pub mod handlers;
pub mod held_polls;
pub mod history_params;
pub mod json_errors;
pub mod observe;
pub mod openapi;
pub mod polls;
pub mod query;
pub mod rate_limit;
pub mod server;
pub mod signed;
pub mod single_flight;
pub mod socket;
pub mod state;
pub mod view_key;

use actix_web::{HttpResponse, ResponseError, web};

use crate::error::ApiError;
use handlers::{
    addresses, admin, auth, console, health, history, liquidations, metrics, pools, positions,
    risk, transactions, webhooks,
};

/// Every route. A known path with an unknown method is 405 with the JSON error
/// body and an `Allow` header; an unknown path is 404 (set on the App). GET
/// routes answer HEAD too (same handler, no body). The routes sit in one flat
/// list, each named by its pattern (the metrics' route label, read without
/// formatting it per request), not under a scope: one match per request.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg
        // The liquidators' polls first (resources are matched in order); a
        // rendered one is answered before the App (`polls::answer`).
        .service(read(resource(polls::UNHEALTHY, GET), positions::unhealthy))
        .service(read(
            resource(polls::LIQUIDATIONS, GET),
            liquidations::liquidations,
        ))
        .service(read(resource(polls::AT_RISK, GET), liquidations::at_risk))
        .service(
            // An endless stream: no HEAD.
            resource("/api/positions/unhealthy/stream", "GET")
                .route(web::get().to(positions::unhealthy_stream)),
        )
        .service(
            resource("/api/positions/sync", "POST").route(web::post().to(positions::sync_position)),
        )
        // Fixed paths before "/api/positions/{user}", which would match them too.
        .service(read(resource(polls::OWNER_DETAIL, GET), positions::detail))
        .service(read(
            resource("/api/positions/{user}/history", GET),
            history::owner_history,
        ))
        .service(read(
            resource(polls::OWNER_POSITIONS, GET),
            positions::list_positions,
        ))
        .service(resource("/api/auth/nonce", "POST").route(web::post().to(auth::issue_nonce)))
        .service(read(resource("/api/admin/me", GET), admin::me))
        .service(
            read(
                resource("/api/admin/allowlist", "GET, HEAD, POST, DELETE"),
                admin::list_admins,
            )
            .route(web::post().to(admin::add_admin))
            .route(web::delete().to(admin::revoke_admin)),
        )
        .service(read(resource("/api/admin/audit", GET), admin::audit))
        .service(read(resource("/api/pools", GET), pools::list_pools))
        .service(read(resource("/api/pools/status", GET), pools::pool_status))
        .service(read(
            resource("/api/pools/unregistered", GET),
            pools::unregistered_pools,
        ))
        .service(read(
            resource("/api/pools/{address}/chain", GET),
            pools::pool_on_chain,
        ))
        .service(read(
            resource("/api/pools/{pool}/prices", GET),
            history::prices,
        ))
        .service(read(
            resource("/api/addresses/{address}", GET),
            addresses::lookup,
        ))
        .service(read(resource("/api/history/events", GET), history::events))
        .service(read(resource("/api/history/market", GET), history::market))
        .service(resource("/api/pools/init", "POST").route(web::post().to(pools::init_pool)))
        .service(resource("/api/pools/sync", "POST").route(web::post().to(pools::sync_pool)))
        .service(
            read(
                resource("/api/transactions", "GET, HEAD, POST"),
                transactions::list_transactions,
            )
            .route(web::post().to(transactions::record_transaction)),
        )
        .service(
            read(resource("/api/webhooks", "GET, HEAD, POST"), webhooks::list)
                .app_data(body::BodyLimit(webhooks::CREATE_BODY_BYTES))
                .route(web::post().to(webhooks::create)),
        )
        .service(resource("/api/webhooks/{id}", "DELETE").route(web::delete().to(webhooks::delete)))
        .service(read(
            resource("/api/webhooks/{id}/deliveries", GET),
            webhooks::deliveries,
        ))
        .service(
            resource("/api/webhooks/{id}/redeliver", "POST")
                .route(web::post().to(webhooks::redeliver)),
        )
        .service(read(resource("/api/risk/shock", GET), risk::shock))
        .service(read(resource("/api/risk/curve", GET), risk::curve))
        .service(read(resource("/api/health", GET), health::health))
        .service(read(
            resource("/api/openapi.json", GET),
            openapi::openapi_json,
        ))
        // Outside /api (docs/design.md §9), where scrapers look for it.
        .service(read(resource("/metrics", GET), metrics::metrics))
        .service(read(resource("/console", GET), console::page))
        .service(read(resource("/console/{file}", GET), console::file));
}

const GET: &str = "GET, HEAD";

/// A resource named by its pattern that answers `allow`; any other method is
/// 405 with that `Allow`.
fn resource(path: &str, allow: &'static str) -> actix_web::Resource {
    web::resource(path)
        .name(path)
        .default_service(web::to(move || async move {
            let mut response = ApiError::MethodNotAllowed.error_response();
            response.headers_mut().insert(
                actix_web::http::header::ALLOW,
                actix_web::http::header::HeaderValue::from_static(allow),
            );
            response
        }))
}

/// GET with `handler`, and HEAD with the same handler (actix sends no body).
fn read<F, Args>(resource: actix_web::Resource, handler: F) -> actix_web::Resource
where
    F: actix_web::Handler<Args> + Clone,
    Args: actix_web::FromRequest + 'static,
    F::Output: actix_web::Responder + 'static,
{
    resource
        .route(web::get().to(handler.clone()))
        .route(web::head().to(handler))
}

pub async fn not_found() -> Result<HttpResponse, ApiError> {
    Err(ApiError::NotFound)
}
