//! What the API reads straight from PostgreSQL (docs/design.md §4): each
//! resource's named statements, prepared once per connection, read into the
//! wire types it answers in. The health cache's reads are its own (engine_rows).

pub mod addresses;
pub mod admins;
pub mod health;
pub mod pools;
pub mod transactions;
