//! The API's wire types, by resource: every request and response body, defined
//! once. The OpenAPI document is derived from them (`http::openapi`), the
//! engine renders its answers in them, and handlers read request bodies into
//! typed calls through each request type's `parse` (in its handler file).
//! This module depends on nothing of the crate above the domain.

pub mod admin;
pub mod auth;
pub mod error;
pub mod formats;
pub mod health;
pub mod history;
pub mod liquidations;
pub mod pools;
pub mod positions;
pub mod risk;
pub mod transactions;
