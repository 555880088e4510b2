//! surfpool, the real offline local Solana RPC, started on free loopback
//! ports by `scripts/surfpool/start.js`; accounts are written with
//! `surfnet_setAccount`. Starting is bounded: a surfpool that does not come up
//! is started once more, then the caller fails with the reason, never a hang.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use lendex_chain::rpc::{surfnet_reset_account, surfnet_set_account};
use lendex_domain::pubkey::Pubkey;
use solana_rpc_client::nonblocking::rpc_client::RpcClient;

/// How long surfpool may take to print its addresses.
const START_WITHIN: Duration = Duration::from_secs(60);

/// A surfpool process; stopped when dropped (its stdin closing stops it too).
pub struct LocalChain {
    pub url: String,
    /// surfpool's websocket, on a port of its own.
    pub ws_url: String,
    rpc: RpcClient,
    child: Child,
}

impl LocalChain {
    pub async fn start() -> LocalChain {
        // Started again once if it does not come up in time (a slow start
        // under load), then the test fails with the reason: never a hang.
        match Self::try_start().await {
            Ok(chain) => chain,
            Err(first) => Self::try_start()
                .await
                .unwrap_or_else(|again| panic!("surfpool did not start: {first}; again: {again}")),
        }
    }

    async fn try_start() -> Result<LocalChain, String> {
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scripts/surfpool/start.js"
        );
        let mut child = Command::new("node")
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("node runs scripts/surfpool/start.js (run scripts/ensure-surfpool)");
        let stdout = child.stdout.take().unwrap();
        let read = tokio::task::spawn_blocking(move || {
            let mut out = BufReader::new(stdout);
            let mut line = |prefix: &str| {
                let mut line = String::new();
                out.read_line(&mut line).ok()?;
                line.trim().strip_prefix(prefix).map(str::to_string)
            };
            (line("RPC_URL="), line("WS_URL="))
        });
        // Killing the process ends a read still waiting (its stdout closes).
        let addresses = match tokio::time::timeout(START_WITHIN, read).await {
            Ok(Ok(addresses)) => addresses,
            Ok(Err(e)) => return Err(stop(child, format!("reading its output: {e}"))),
            Err(_) => return Err(stop(child, format!("no addresses within {START_WITHIN:?}"))),
        };
        let (Some(url), Some(ws_url)) = addresses else {
            return Err(stop(child, "it did not print RPC_URL and WS_URL".into()));
        };
        let rpc = RpcClient::new(url.clone());
        let chain = LocalChain {
            url,
            ws_url,
            rpc,
            child,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while lendex_chain::rpc::get_slot(&chain.rpc).await.is_err() {
            if Instant::now() >= deadline {
                return Err("it did not answer getSlot within 20 s".into());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(chain)
    }

    pub async fn set(&self, key: &Pubkey, owner: &Pubkey, data: &[u8]) {
        surfnet_set_account(&self.rpc, key, owner, 10_000_000, data)
            .await
            .expect("surfnet_setAccount");
    }

    /// The chain's slot now (`confirmed`).
    pub async fn slot(&self) -> u64 {
        lendex_chain::rpc::get_slot(&self.rpc)
            .await
            .expect("getSlot")
    }

    pub async fn remove(&self, key: &Pubkey) {
        surfnet_reset_account(&self.rpc, key)
            .await
            .expect("surfnet_resetAccount");
    }
}

/// Stops a surfpool that did not come up, and says why.
fn stop(mut child: Child, why: String) -> String {
    let _ = child.kill();
    let _ = child.wait();
    why
}

impl Drop for LocalChain {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
