//! Pure logic: no I/O here, so every rule is unit- and property-tested on its own.

pub mod accounts;
pub mod auth_message;
pub mod enums;
pub mod forks;
pub mod history;
pub mod index_writes;
pub mod limits;
pub mod liquidation;
pub mod pubkey;
pub mod pyth;
pub mod rates;
pub mod raw;
pub mod risk;
pub mod view_key;
pub mod wad;
pub mod webhooks;
mod wide;
