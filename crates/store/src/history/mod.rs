//! History in PostgreSQL (docs/design.md §12; schema in sql/0009): its named
//! statements, a batch stored by binary COPY exactly once (`write`), a
//! takeover's baselines (`takeover`), the day partitions made ahead and
//! dropped whole (`partitions`), and the reads the API serves (`read`).

pub mod partitions;
pub mod queries;
pub mod read;
pub mod takeover;
pub mod write;
