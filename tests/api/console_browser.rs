//! The admin console in a real browser (issues 12 and 23): Debian's chromium
//! driven by playwright-core (tests/console/console-test.mjs), with two test
//! wallets injected through the Wallet Standard (the super-admin and a pool
//! admin). Signed out, a refused sign-in, a pool admin's narrower page, sign
//! out; checks before any signature, one wallet prompt at a time, the audit's
//! details and filters, a revoke confirmed (and one cancelled), a rejected
//! signature, a pool registered from two fields; an owner appearing in the
//! live view after a price change on the chain (token amounts, oracle badge,
//! explorer link), the live view resuming after its connection drops (the
//! browser's Last-Event-ID), the risk lens, nothing clipped at 1280 px, the
//! keyboard. Each step is checked and shot at 1280 and at 375 px. The page
//! reaches the service through a link the test cuts.
//! scripts/ensure-browser installs chromium and playwright-core.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use lendex::domain::accounts::{encode_mint, encode_pool};

use crate::chain_support::{key, pool_account, token_program};
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
    let pool_admin = format!("{:?}", m.t.admin.keypair_bytes().to_vec()).replace(' ', "");
    // A pool on chain whose authority is the super-admin: registered from the page.
    let mint = lendex::domain::pubkey::Pubkey::new_unique();
    m.t.chain
        .set(&mint, &token_program(), &encode_mint(6, 1_000_000))
        .await;
    let root_key = key(&m.t.app.root.pubkey());
    let (unregistered, pool) = pool_account(&m.t.program, &root_key, &mint, Some(USD), Some(-8));
    m.t.chain
        .set(&unregistered, &m.t.program, &encode_pool(&pool))
        .await;
    let shots = root.join("target/console-screenshots");
    // Only this run's screenshots count.
    let _ = std::fs::remove_dir_all(&shots);
    let link = WsProxy::start(&m.t.app.base).await;

    let mut child = tokio::process::Command::new("node")
        .arg(&script)
        .env("LENDEX_URL", &link.url)
        .env("ROOT_SECRET", secret)
        .env("POOL_ADMIN_SECRET", pool_admin)
        .env("UNREGISTERED", unregistered.to_string())
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
        "01-signed-out",
        "02-failed-sign-in",
        "03-pool-admin",
        "04-signed-out-again",
        "05-signed-in",
        "06-checked-before-signing",
        "07-one-prompt-at-a-time",
        "08-audit",
        "09-revoke-confirmed",
        "10-rejected-signature",
        "11-pool-registered",
        "12-live-feed",
        "13-feed-resumed",
        "14-risk-curve",
        "15-risk-shock",
        "16-nothing-clipped-at-1280",
        "16b-feed-cards-at-375",
        "17-keyboard",
    ] {
        for width in ["", "-375"] {
            assert!(
                shots.join(format!("{shot}{width}.png")).exists(),
                "{shot}{width} screenshot"
            );
        }
    }
}
