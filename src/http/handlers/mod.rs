//! One file per resource of the API.

pub mod addresses;
pub mod admin;
pub mod auth;
pub mod console;
pub mod health;
pub mod history;
pub mod liquidations;
pub mod metrics;
pub mod pools;
pub mod positions;
pub mod risk;
pub mod transactions;
pub mod webhooks;
