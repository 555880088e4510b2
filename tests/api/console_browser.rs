//! The console in a real browser: Debian's chromium driven by playwright-core
//! (tests/console/console-test.mjs), with two test wallets injected through
//! the Wallet Standard (the super-admin and a pool admin). The overview's
//! figures against the API's; the sections and their URLs; sign-in, a
//! refused one, a pool admin's narrower page, sign out; checks before any
//! signature, one wallet prompt at a time, the audit's action picker, dates
//! and CSV; a revoke confirmed (and one cancelled), a rejected signature; an
//! unregistered pool registered from its row; an owner appearing in the feed
//! after a price change on the chain (sorted, filtered, paused), the feed
//! resuming on another replica after its connection drops (the browser's
//! Last-Event-ID; the rest of the steps go to that replica); the
//! risk lens's ticks, tooltip and click; the wallet's history, the events and
//! the market; the service paused (stale within 10 s), down (an error, never
//! "no pools"), an empty market, long errors; the keyboard. Each step is
//! checked and shot at 1280 and at 375 px, with no horizontal scroll. The page
//! reaches the service through a link the test cuts, pauses and downs.
//! scripts/ensure-browser installs chromium and playwright-core.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use lendex::domain::accounts::{encode_mint, encode_pool};

use crate::chain_support::{key, pool_account, token_program};
use crate::fixtures::market::{USD, market};
use lendex_testkit::proxy::TcpProxy;

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
    let link = TcpProxy::start(&m.t.app.base).await;
    // A second replica on the same database: the page's feed resumes there
    // after its connection drops, as behind a load balancer.
    let replica = crate::fixtures::replicas::second_replica(&m).await;
    // A service with nothing registered: the empty market's page.
    let empty = crate::common::spawn_app().await;

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
        .env("EMPTY_URL", &empty.base)
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
    // The page asks for each change of the world by a line, and goes on when
    // answered: a price move, a cut connection, a paused or a downed service.
    loop {
        let line = tokio::time::timeout(Duration::from_secs(120), stdout.next_line()).await;
        let Ok(Ok(Some(line))) = line else {
            let mut err = String::new();
            let _ = tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut err).await;
            panic!("the browser steps stopped: {seen:?}\n{err}");
        };
        seen.push(line.clone());
        match line.as_str() {
            // SOL at $30: debt 900 against 800 of collateral; the owner sinks.
            "READY_FOR_PRICE" => m.set_sol_price(30 * USD).await,
            "READY_FOR_DROP" => {
                // Cut off while SOL moves to $32: the owner sinks further
                // unseen; the page comes back to the other replica.
                link.down();
                m.set_sol_price(32 * USD).await;
                tokio::time::sleep(Duration::from_millis(300)).await;
                link.retarget(&replica.base);
                link.up();
            }
            // SOL at $33 while the account page is open: it must follow.
            "READY_FOR_NUDGE" => m.set_sol_price(33 * USD).await,
            "READY_FOR_PAUSE" => link.pause(),
            "READY_FOR_RESUME" => link.resume(),
            "READY_FOR_DOWN" => link.down(),
            "READY_FOR_UP" => link.up(),
            "OK" => break,
            _ => continue,
        }
        stdin.write_all(b"go\n").await.unwrap();
    }
    let finished = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("the browser test ends")
        .unwrap();
    let mut err = String::new();
    let _ = tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut err).await;
    assert!(finished.success(), "{seen:?}\n{err}");
    for shot in [
        "01-overview-and-pools",
        "02-failed-sign-in",
        "03-pool-admin",
        "04-signed-out-again",
        "05-signed-in",
        "06-checked-before-signing",
        "07-one-prompt-at-a-time",
        "08-audit",
        "09-revoke-confirmed",
        "10-rejected-signature",
        "11-unregistered-pool-registered",
        "12-live-feed",
        "13-feed-resumed",
        "14-risk-curve",
        "15-risk-shock",
        "16-wallet-history",
        "17-events",
        "18-market",
        "19-service-paused",
        "20-service-down",
        "21-empty-market",
        "22-long-errors",
        "23-keyboard",
    ] {
        for width in ["", "-375"] {
            assert!(
                shots.join(format!("{shot}{width}.png")).exists(),
                "{shot}{width} screenshot"
            );
        }
    }
}
