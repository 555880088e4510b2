//! The error body of every failure (docs/design.md §4.17).

use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// Short reason from the closed set of docs/design.md §4.17.
    pub error: String,
    /// The field at fault, for an `invalid` of a body with many (a webhook's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}
