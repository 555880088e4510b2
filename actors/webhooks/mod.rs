//! Webhooks' I/O (docs/design.md §18): where a target's host points, judged
//! by the domain's rules at creation and at every attempt.

pub mod targets;
