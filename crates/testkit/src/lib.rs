//! What the tests and the load generator share to stand in for the world
//! around Lendex: one copy of each (docs/architecture.md): the scripted
//! Yellowstone gRPC server and the updates it sends (`geyser`), surfpool
//! (`surfpool`), and a TCP proxy that cuts, refuses, freezes and reorders
//! (`proxy`).

pub mod geyser;
pub mod proxy;
pub mod surfpool;
