//! What the tests and the load generator share to stand in for the world
//! around Lendex: one copy of each (docs/architecture.md). Today: the scripted
//! Yellowstone gRPC server and the updates it sends.

pub mod geyser;
