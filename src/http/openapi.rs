//! GET /api/openapi.json: the OpenAPI 3 document, generated from the handlers'
//! annotations and the response types, so it cannot drift from the code.

use actix_web::HttpResponse;
use utoipa::OpenApi;

use super::handlers::{admin, auth, health, liquidations, pools, positions, transactions};
use crate::error::ErrorBody;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Lendex",
        description = "Live index of a Solana lending program: pools, positions, health factors, admin allowlist."
    ),
    paths(
        auth::issue_nonce,
        admin::me,
        admin::list_admins,
        admin::add_admin,
        admin::revoke_admin,
        admin::audit,
        pools::list_pools,
        pools::init_pool,
        pools::sync_pool,
        positions::list_positions,
        positions::sync_position,
        positions::unhealthy,
        positions::unhealthy_stream,
        positions::detail,
        liquidations::liquidations,
        liquidations::at_risk,
        transactions::list_transactions,
        transactions::record_transaction,
        health::health,
    ),
    components(schemas(ErrorBody))
)]
pub struct ApiDoc;

/// The document with `info.version` set to the crate version.
pub fn document() -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    doc.info.version = env!("CARGO_PKG_VERSION").to_string();
    doc
}

pub async fn openapi_json() -> HttpResponse {
    HttpResponse::Ok().json(document())
}
