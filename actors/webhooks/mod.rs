//! Webhooks' I/O (docs/design.md §18): where a target's host points, judged
//! by the domain's rules (`targets`); one signed attempt (`attempt`); the
//! leader's deliverer that sends the queue in order (`deliverer`).

pub mod attempt;
pub mod deliverer;
pub mod producer;
pub mod targets;
