//! What the service serves as bytes, the one layer that makes them: the
//! engine's typed answers rendered (`render`) and its events as SSE frames
//! (`frame`), each SSE subscriber's bounded queue (`subscriber`), the replay
//! window a reconnect resumes from (`replay`), the caps on open streams
//! (`gate`), and the rendered answers every HTTP worker reads, with their
//! ETags (`poll_answers`).

pub mod frame;
pub mod gate;
pub mod poll_answers;
pub mod render;
pub mod replay;
pub mod subscriber;
