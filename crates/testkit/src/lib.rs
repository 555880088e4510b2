//! What the tests and the load generator share to stand in for the world
//! around Lendex: one copy of each (docs/architecture.md): the scripted
//! Yellowstone gRPC server and the updates it sends (`geyser`), surfpool
//! (`surfpool`), a TCP proxy that cuts, refuses, freezes and reorders
//! (`proxy`), and HAProxy with the shipped configuration (`haproxy`).

pub mod geyser;
pub mod haproxy;
pub mod proxy;
pub mod surfpool;
