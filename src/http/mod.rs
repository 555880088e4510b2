//! The HTTP API: routes, extractors and handlers. Handlers validate input, then
//! exchange typed messages with the actors (writes, nonces, chain reads) or read
//! PostgreSQL directly through named queries.

pub mod body;
pub mod extract;
pub mod handlers;
pub mod openapi;
pub mod rate_limit;
pub mod registered;
pub mod rendered;
pub mod signed;
pub mod state;

use actix_web::{HttpResponse, web};

use crate::error::ApiError;
use handlers::{admin, auth, health, liquidations, pools, positions, transactions};

/// Every route under /api. A known path with an unknown method is 405; an unknown
/// path is 404 (set on the App); both with the JSON error body.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/api")
            // The liquidators' hot paths first: resources are matched in order.
            .service(resource("/positions/unhealthy").route(web::get().to(positions::unhealthy)))
            .service(resource("/liquidations").route(web::get().to(liquidations::liquidations)))
            .service(resource("/positions/at-risk").route(web::get().to(liquidations::at_risk)))
            .service(
                resource("/positions/unhealthy/stream")
                    .route(web::get().to(positions::unhealthy_stream)),
            )
            .service(resource("/positions/sync").route(web::post().to(positions::sync_position)))
            // Fixed paths before "/positions/{user}", which would match them too.
            .service(resource("/positions/{user}/detail").route(web::get().to(positions::detail)))
            .service(resource("/positions/{user}").route(web::get().to(positions::list_positions)))
            .service(resource("/auth/nonce").route(web::post().to(auth::issue_nonce)))
            .service(resource("/admin/me").route(web::get().to(admin::me)))
            .service(
                resource("/admin/allowlist")
                    .route(web::get().to(admin::list_admins))
                    .route(web::post().to(admin::add_admin))
                    .route(web::delete().to(admin::revoke_admin)),
            )
            .service(resource("/admin/audit").route(web::get().to(admin::audit)))
            .service(resource("/pools").route(web::get().to(pools::list_pools)))
            .service(resource("/pools/init").route(web::post().to(pools::init_pool)))
            .service(resource("/pools/sync").route(web::post().to(pools::sync_pool)))
            .service(
                resource("/transactions")
                    .route(web::get().to(transactions::list_transactions))
                    .route(web::post().to(transactions::record_transaction)),
            )
            .service(resource("/health").route(web::get().to(health::health)))
            .service(resource("/openapi.json").route(web::get().to(openapi::openapi_json))),
    );
}

fn resource(path: &str) -> actix_web::Resource {
    web::resource(path).default_service(web::to(method_not_allowed))
}

async fn method_not_allowed() -> Result<HttpResponse, ApiError> {
    Err(ApiError::MethodNotAllowed)
}

pub async fn not_found() -> Result<HttpResponse, ApiError> {
    Err(ApiError::NotFound)
}
