//! The service's door to PostgreSQL: a handle the HTTP layer holds instead
//! of a driver pool. What it reads is a function of this crate taking the
//! handle (or a session of it) and answering in domain or wire types, so no
//! statement or driver type lives above the store (docs/architecture.md).
//! The actors, which own their statements and connections, take its pool.

use deadpool_postgres::{Object, Pool};

use crate::error::{DbResult, SetupError};
use crate::settings::DatabaseConfig;

/// A cloneable handle on the shared connection pool.
#[derive(Clone)]
pub struct Store {
    pool: Pool,
}

impl Store {
    /// Connections are made lazily: the service starts (degraded) while the
    /// database is down.
    pub fn connect(cfg: &DatabaseConfig) -> Result<Store, SetupError> {
        Ok(Store {
            pool: crate::connect_pool(cfg)?,
        })
    }

    /// The pool itself, for the actors and the migration runner.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// One pooled connection for several reads (asked at once, they pipeline).
    pub async fn session(&self) -> DbResult<Session> {
        Ok(Session(self.pool.get().await?))
    }

    /// Applies the migrations (docs/design.md §1); the names applied now.
    pub async fn migrate(&self, super_admin_pubkey: &str) -> DbResult<Vec<&'static str>> {
        crate::migrate::run(&self.pool, super_admin_pubkey).await
    }
}

/// A connection taken from the pool, given back when dropped.
pub struct Session(Object);

impl Session {
    pub(crate) fn client(&self) -> &Object {
        &self.0
    }
}
