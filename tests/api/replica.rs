//! Another replica of the service in a test: the real binary on the same
//! database and chain as a test's market, in its own process.

use std::time::Duration;

use crate::common::*;
use crate::health_feed::Market;

/// Its own cache, loaded from the database; killed when dropped.
pub(crate) struct Replica {
    pub base: String,
    pub process: std::process::Child,
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

pub(crate) async fn second_replica(m: &Market) -> Replica {
    second_replica_with(m, &[]).await
}

/// Another replica, with these settings (environment) besides.
pub(crate) async fn second_replica_with(m: &Market, env: &[(&str, &str)]) -> Replica {
    let port = free_port();
    let process = std::process::Command::new(env!("CARGO_BIN_EXE_lendex"))
        .arg("serve")
        .envs(env.iter().copied())
        .env("DATABASE_URL", &m.t.app.db.url)
        .env("RPC_URL", &m.t.chain.url)
        .env("BIND_ADDR", format!("127.0.0.1:{port}"))
        .env("LENDEX_SYNC__INTERVAL_SECONDS", "0")
        .env("LENDEX_LIMITS__PUBLIC_WRITE_PER_SECOND", "0")
        .env_remove("SUPER_ADMIN_PUBKEY")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let replica = Replica {
        base: format!("http://127.0.0.1:{port}"),
        process,
    };
    let http = reqwest::Client::new();
    let up = eventually(Duration::from_secs(20), async || {
        let health = http
            .get(format!("{}/api/health", replica.base))
            .send()
            .await;
        health.is_ok_and(|r| r.status() == 200)
    })
    .await;
    assert!(up, "a second replica started");
    replica
}
