//! The liquidation feed as bytes on a socket: each SSE subscriber's bounded
//! queue (`subscriber`). The frames come rendered from the engine.

pub mod subscriber;
