//! What the service serves as bytes: each SSE subscriber's bounded queue
//! (`subscriber`; the frames come rendered from the engine), the replay window
//! a reconnect resumes from (`replay`), the caps on open streams (`gate`), and
//! the rendered answers every HTTP worker reads, with their ETags (`rendered`).

pub mod gate;
pub mod poll_answers;
pub mod replay;
pub mod subscriber;
