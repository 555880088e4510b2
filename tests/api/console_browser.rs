//! The admin console in a real browser (issue 12): Debian's chromium driven by
//! playwright-core (tests/console/console-test.mjs), with a test wallet
//! injected through the Wallet Standard. Sign in, add an admin and see it
//! listed, revoke it, see a rejected signature shown as an error, see an
//! owner appear in the live view after a price change on the chain, see the
//! live view resume after its connection drops (the browser's Last-Event-ID),
//! draw a pool's liquidation curve and shock its price (1280 and 375 px). The
//! page reaches the service through a link the test cuts.
//! scripts/ensure-browser installs chromium and playwright-core.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::health_feed::{USD, market};
use crate::ws_proxy::WsProxy;

fn chromium() -> PathBuf {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .expect("chromium is installed (scripts/ensure-browser; scripts/test runs it)")
}

#[actix_rt::test]
async fn the_console_in_a_browser() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let script = root.join("tests/console/console-test.mjs");
    assert!(
        root.join("tests/console/node_modules/playwright-core")
            .exists(),
        "run scripts/ensure-browser first (scripts/test does)"
    );
    let mut m = market(|_| {}).await;
    // Healthy for now: 1,000 USDC (x0.8) against 30 SOL at $20.
    let owner = m.account(1_000_000_000, 30_000_000_000).await;
    // Healthy after that too (10 SOL), until the risk lens shocks SOL +200%.
    let shocked = m.account(1_000_000_000, 10_000_000_000).await;
    let secret = format!("{:?}", m.t.app.root.keypair_bytes().to_vec()).replace(' ', "");
    let shots = root.join("target/console-screenshots");
    let link = WsProxy::start(&m.t.app.base).await;

    let mut child = tokio::process::Command::new("node")
        .arg(&script)
        .env("LENDEX_URL", &link.url)
        .env("ROOT_SECRET", secret)
        .env("CHROMIUM", chromium())
        .env("SHOTS", &shots)
        .env("OWNER", &owner)
        .env("SHOCKED", &shocked)
        .env("SOL", m.sol.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node runs the console test");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut stderr = child.stderr.take().unwrap();
    let mut seen = Vec::new();
    for (cue, limit) in [("READY_FOR_PRICE", 90), ("READY_FOR_DROP", 30)] {
        let ready = tokio::time::timeout(Duration::from_secs(limit), async {
            while let Ok(Some(line)) = stdout.next_line().await {
                seen.push(line.clone());
                if line == cue {
                    return true;
                }
            }
            false
        })
        .await
        .unwrap_or(false);
        if !ready {
            let mut err = String::new();
            let _ = tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut err).await;
            panic!("the browser steps failed before {cue}: {seen:?}\n{err}");
        }
        if cue == "READY_FOR_PRICE" {
            // SOL at $30: debt 900 against 800 of collateral; the owner sinks.
            m.set_sol_price(30 * USD).await;
        } else {
            // Cut off while SOL moves to $32: the owner sinks further unseen.
            link.down();
            m.set_sol_price(32 * USD).await;
            tokio::time::sleep(Duration::from_millis(300)).await;
            link.up();
        }
        stdin.write_all(b"go\n").await.unwrap();
    }
    let finished = tokio::time::timeout(Duration::from_secs(60), async {
        while let Ok(Some(line)) = stdout.next_line().await {
            seen.push(line);
        }
        child.wait().await.unwrap()
    })
    .await
    .expect("the browser test ends within 60 s");
    let mut err = String::new();
    let _ = tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut err).await;
    assert!(
        finished.success() && seen.last().map(String::as_str) == Some("OK"),
        "{seen:?}\n{err}"
    );
    for shot in [
        "01-signed-in",
        "02-admin-added",
        "03-admin-revoked",
        "04-rejected-signature",
        "05-live-feed",
        "06-feed-resumed",
        "07-risk-curve",
        "08-risk-shock",
        "09-risk-375",
    ] {
        assert!(
            shots.join(format!("{shot}.png")).exists(),
            "{shot} screenshot"
        );
    }
}
