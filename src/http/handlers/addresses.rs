//! What an address is to the index (docs/design.md §9): the console's one
//! search box takes a wallet, a pool or a position account and opens the page
//! it belongs to. Read from the committed index, so a position only the
//! processed view holds yet is found once confirmed.

use actix_web::{HttpResponse, web};

use crate::domain::pubkey::parse_pubkey;
use crate::error::{ApiError, ApiResult};
use crate::http::state::AppState;
use crate::store::reads::addresses;
use crate::wire::addresses::{AddressKind, AddressResponse};
use crate::wire::error::ErrorBody;
use crate::wire::formats::PubkeyText;

#[utoipa::path(get, path = "/api/addresses/{address}", tag = "positions",
    params(("address" = PubkeyText, Path, description = "a wallet, a pool or a position account")),
    responses((status = 200, body = AddressResponse, description = "what the index knows the address as (unknown: nothing yet)"),
        (status = 400, body = ErrorBody, description = "invalid (not a base58 32-byte address)")))]
pub async fn lookup(
    state: web::Data<AppState>,
    address: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let address = parse_pubkey(&address).map_err(|_| ApiError::Invalid)?;
    let address = address.to_string();
    let found = addresses::lookup(&state.store, state.cluster.as_str(), &address).await?;
    let (kind, pool_address, owner) = found.unwrap_or((AddressKind::Unknown, None, None));
    Ok(HttpResponse::Ok()
        .insert_header(("Cache-Control", "no-cache"))
        .json(AddressResponse {
            address,
            kind,
            pool_address,
            owner,
        }))
}
