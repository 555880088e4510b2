//! The append-only transaction log (docs/design.md §4.14, 4.15).

use crate::wire::formats::PubkeyText;
use actix_web::{HttpResponse, web};

use crate::actors::db_writer::write;
use crate::actors::health_cache::BorrowsChanged;
use crate::domain::enums::{is_tx_action, is_tx_status, is_u64_decimal};
use crate::domain::limits::clamp_limit;
use crate::domain::pubkey::{Pubkey, parse_pubkey};
use crate::error::{ApiError, ApiResult};
use crate::http::body::{JsonBody, ParseBody};
use crate::http::extract::{Params, PublicWrite};
use crate::http::state::AppState;
use crate::store::reads::transactions::{self, TxFilter};
use crate::store::writes::RecordTransaction;
use crate::wire::error::ErrorBody;
use crate::wire::transactions::{
    RecordTransactionRequest, RecordTransactionResponse, TransactionsResponse,
};

/// Bounds on free-text fields (a signature is 88 base58 characters at most).
const MAX_SIGNATURE_CHARS: usize = 128;
const MAX_ERROR_MSG_CHARS: usize = 4096;

/// A transaction record as the handler needs it.
pub struct RecordTransactionCall<'a> {
    pub signature: &'a str,
    pub wallet: Pubkey,
    pub action: &'a str,
    pub pool_address: Option<Pubkey>,
    pub amount: Option<&'a str>,
    /// `confirmed` when absent.
    pub status: &'a str,
    pub error_msg: Option<&'a str>,
}

impl ParseBody for RecordTransactionRequest {
    type Call<'a> = RecordTransactionCall<'a>;

    /// docs/design.md §4.15's `signature, wallet, action required` first; any malformed
    /// field after that is `invalid` (docs/design.md §4).
    fn parse(body: &JsonBody) -> ApiResult<Self::Call<'_>> {
        let (signature, wallet, action) = (
            body.str("signature")?,
            body.str("wallet")?,
            body.str("action")?,
        );
        let (Some(signature), Some(wallet), Some(action)) = (signature, wallet, action) else {
            return Err(ApiError::Required("signature, wallet, action required"));
        };
        let valid_signature = signature.chars().count() <= MAX_SIGNATURE_CHARS
            && signature.chars().all(|c| c.is_ascii_graphic());
        let wallet = parse_pubkey(wallet).map_err(|_| ApiError::Invalid);
        let pool_address = body
            .str("pool_address")?
            .map(|p| parse_pubkey(p).map_err(|_| ApiError::Invalid))
            .transpose()?;
        let amount = body.str("amount")?;
        let status = body.str("status")?.unwrap_or("confirmed");
        let error_msg = body.str("error_msg")?;
        if !valid_signature
            || !is_tx_action(action)
            || !is_tx_status(status)
            || amount.is_some_and(|a| !is_u64_decimal(a))
            || error_msg.is_some_and(|m| m.chars().count() > MAX_ERROR_MSG_CHARS)
        {
            return Err(ApiError::Invalid);
        }
        Ok(RecordTransactionCall {
            signature,
            wallet: wallet?,
            action,
            pool_address,
            amount,
            status,
            error_msg,
        })
    }
}

#[utoipa::path(get, path = "/api/transactions", tag = "transactions",
    params(("wallet" = Option<PubkeyText>, Query), ("pool" = Option<PubkeyText>, Query),
           ("limit" = Option<i64>, Query, description = "default 50, at most 200")),
    responses((status = 200, body = TransactionsResponse, description = "newest first, at most `limit`"),
        (status = 400, body = ErrorBody, description = "invalid (malformed wallet or pool)")))]
pub async fn list_transactions(
    state: web::Data<AppState>,
    params: Params,
) -> ApiResult<HttpResponse> {
    let wallet = params.pubkey("wallet")?;
    let pool = params.pubkey("pool")?;
    let limit = clamp_limit(params.get("limit").as_deref());
    let cluster = state.cluster.as_str();
    let filter = TxFilter {
        wallet: wallet.as_deref(),
        pool: pool.as_deref(),
        limit,
    };
    let transactions = transactions::list(&state.store, cluster, filter).await?;
    Ok(HttpResponse::Ok().json(TransactionsResponse { transactions }))
}

#[utoipa::path(post, path = "/api/transactions", tag = "transactions",
    request_body = RecordTransactionRequest,
    responses((status = 200, body = RecordTransactionResponse, description = "committed (an existing signature is updated and keeps its id)"),
        (status = 400, body = ErrorBody, description = "bad json | signature, wallet, action required | invalid"),
        (status = 429, body = ErrorBody, description = "rate limited")))]
pub async fn record_transaction(
    _: PublicWrite,
    state: web::Data<AppState>,
    body: JsonBody,
) -> ApiResult<HttpResponse> {
    let RecordTransactionCall {
        signature,
        wallet,
        action,
        pool_address,
        amount,
        status,
        error_msg,
    } = RecordTransactionRequest::parse(&body)?;
    let cmd = RecordTransaction {
        cluster: state.cluster.as_str(),
        signature: signature.to_string(),
        pool_address: pool_address.map(|p| p.to_string()),
        wallet: wallet.to_string(),
        action: action.to_string(),
        amount: amount.map(str::to_string),
        status: status.to_string(),
        error_msg: error_msg.map(str::to_string),
    };
    let borrower = (action == "borrow").then_some(wallet);
    let id = write(&state.writer, cmd).await?;
    if let Some(borrower) = borrower {
        // Committed: this replica's cached borrow list goes before the answer
        // (the mailbox is in order, so a following detail read sees the write).
        state.cache.do_send(BorrowsChanged(vec![borrower]));
    }
    Ok(HttpResponse::Ok().json(RecordTransactionResponse { ok: true, id }))
}
