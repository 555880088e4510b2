//! The transaction log (docs/design.md §16.5, 4.14, 4.15).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::formats::{PubkeyText, TxActionName, TxSignature, TxStatusName, U64Text};

/// docs/design.md §16.5.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Transaction {
    pub id: i64,
    #[schema(value_type = TxSignature)]
    pub signature: String,
    #[schema(value_type = Option<PubkeyText>)]
    pub pool_address: Option<String>,
    #[schema(value_type = PubkeyText)]
    pub wallet: String,
    #[schema(value_type = TxActionName)]
    pub action: String,
    /// u64 as a decimal string; null when the caller gave none.
    #[schema(value_type = Option<U64Text>)]
    pub amount: Option<String>,
    #[schema(value_type = TxStatusName)]
    pub status: String,
    pub error_msg: Option<String>,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TransactionsResponse {
    pub transactions: Vec<Transaction>,
}

/// The body of POST /api/transactions; its `parse` (http::handlers::transactions) reads it
/// into a typed call.
/// Serialized by the typed client; an absent field is left out.
#[derive(Debug, Serialize, ToSchema)]
pub struct RecordTransactionRequest {
    /// Chain transaction signature; the idempotency key.
    #[schema(value_type = TxSignature)]
    pub signature: String,
    #[schema(value_type = PubkeyText)]
    pub wallet: String,
    /// deposit, withdraw, borrow, repay, liquidate, flash, init, update_pool, pause,
    /// resume, collect_fees or update_oracle.
    #[schema(value_type = TxActionName)]
    pub action: String,
    #[schema(value_type = Option<PubkeyText>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool_address: Option<String>,
    /// u64 as a decimal string.
    #[schema(value_type = Option<U64Text>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub amount: Option<String>,
    /// pending, confirmed (the default) or failed.
    #[schema(value_type = Option<TxStatusName>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[schema(max_length = 4096)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_msg: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct RecordTransactionResponse {
    pub ok: bool,
    pub id: i64,
}
