//! Webhooks as stored (docs/design.md §18): what the signed calls manage
//! (`manage`), and the deliverer's queue (`deliver`).

pub mod deliver;
mod manage;
pub mod produce;

pub use manage::*;
