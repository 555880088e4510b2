//! The error body of every failure (spec §7).

use serde::Serialize;

#[derive(Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// Short reason from the closed set of spec §7.
    pub error: String,
}
