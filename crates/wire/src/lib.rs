//! The API's wire types, by resource: every request and response body, defined
//! once. The OpenAPI document is derived from them (`http::openapi`), the
//! engine renders its answers in them, and handlers read request bodies into
//! typed calls through each request type's `ParseBody` (beside its handler).
//! A crate of its own: it depends on the domain alone, so a body cannot grow
//! a dependency on the server.

pub mod addresses;
pub mod admin;
pub mod auth;
pub mod error;
pub mod events;
pub mod formats;
pub mod health;
pub mod history;
pub mod liquidations;
pub mod pools;
pub mod positions;
pub mod risk;
pub mod transactions;
pub mod webhooks;
