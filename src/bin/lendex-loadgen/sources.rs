//! The two live chain sources side by side (scripts/load-test-chain):
//! - `grpc-bridge`: a Yellowstone gRPC server (the tests' scripted one,
//!   `lendex_testkit::geyser`) fed from the local chain. The
//!   chain's websocket notifications of the program's accounts (read with the
//!   service's own websocket client, `chain::websocket`) are re-served as
//!   Geyser `Subscribe` updates, each stamped with the chain's processed slot
//!   at relay time and a rising write version, with confirmed slot updates and
//!   a ping every 10 s. It keeps no replay, so the service reconciles after a
//!   cut, as with the websocket. It adds one hop: what it measures is an upper
//!   bound of the gRPC path.
//! - `cut-catch-up`: a TCP proxy in front of either source, which the service
//!   connects through. Once connected, the proxy cuts every connection and
//!   refuses new ones for `cut_secs` while pool 0's price moves on the chain
//!   every second, then listens again; the time until the index holds the last
//!   price is the figure.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use lendex_testkit::geyser::{Options, ScriptedGeyser, account_update, slot_update};
use lendex_testkit::proxy::TcpProxy;
use solana_commitment_config::CommitmentConfig;
use solana_rpc_client::nonblocking::rpc_client::RpcClient;
use tokio::sync::mpsc;

use lendex::chain::rpc::{get_accounts, surfnet_set_account};
use lendex::chain::source::StreamEvent;
use lendex::domain::accounts::{check_pool, encode_pool, pool_address};
use lendex::domain::pubkey::Pubkey;

use crate::{key, market};

/// Relays the chain's program notifications as Geyser updates on `listen`.
pub async fn bridge(rpc: &str, ws: &str, program: Pubkey, listen: &str) {
    let server = Arc::new(
        ScriptedGeyser::start_with(Options {
            listen: listen.to_string(),
            keep_sent: false,
            capacity: 1 << 16,
            ping_every: Some(Duration::from_secs(10)),
        })
        .await,
    );
    let slot = Arc::new(AtomicU64::new(0));
    // The chain's processed slot, every 50 ms (and a slot update for it).
    let chain = RpcClient::new(rpc.to_string());
    let (slots, watched) = (server.clone(), slot.clone());
    tokio::spawn(async move {
        loop {
            let processed = chain.get_slot_with_commitment(CommitmentConfig::processed());
            if let Ok(now) = processed.await
                && now > watched.swap(now, Ordering::SeqCst)
            {
                slots.send(now, slot_update(now));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    let (relay, ws, stamp) = (server.clone(), ws.to_string(), slot.clone());
    tokio::spawn(async move {
        let version = AtomicU64::new(1);
        loop {
            let (tx, mut rx) = mpsc::channel(4096);
            let connection = lendex::chain::websocket::run_connection(
                &ws,
                &program,
                Duration::from_secs(30),
                None,
                &tx,
            );
            let forward = async {
                while let Some(event) = rx.recv().await {
                    if let StreamEvent::Account(n) = event {
                        let slot = stamp.load(Ordering::SeqCst).max(n.slot);
                        let v = version.fetch_add(1, Ordering::SeqCst);
                        let lamports = n.lamports.unwrap_or(1);
                        let update = account_update(&n.pubkey, &n.owner, lamports, n.data, slot, v);
                        relay.send(slot, update);
                        // As a Yellowstone server does: the slot's status
                        // after its writes (the client applies the slot then).
                        relay.send(slot, slot_update(slot));
                    }
                }
            };
            tokio::select! {
                ended = connection => eprintln!("bridge: chain websocket ended: {}", ended.reason),
                () = forward => {}
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
    println!("gRPC bridge on {}", server.url);
    std::future::pending::<()>().await;
}

/// The host:port of a URL.
fn authority(url: &str) -> String {
    let (host, port) = lendex::chain::source::endpoint_of(url).expect("a source URL");
    format!("{host}:{port}")
}

/// Whether the service's live source is connected.
async fn connected(api: &str) -> bool {
    let health = lendex_client::Client::new(api).health().await;
    health.is_ok_and(|h| h.checks.sync.stream.connected)
}

/// Pool 0's oracle price as the index holds it.
async fn indexed_price(api: &str, pool: &Pubkey) -> Option<String> {
    let status = lendex_client::Client::new(api).pool_status().await.ok()?;
    let pool = pool.to_string();
    status
        .pools
        .into_iter()
        .find(|p| p.pool_address == pool)?
        .oracle_price
}

/// `rounds` cuts of `cut_secs` each; prints the catch-up after each.
pub async fn cut_catch_up(
    api: &str,
    rpc: &str,
    program: Pubkey,
    upstream: &str,
    listen: &str,
    cut_secs: u64,
    rounds: usize,
) {
    // Cut: every connection dropped and nothing listening, as a node that stopped.
    let link = TcpProxy::start_on(listen, &authority(upstream)).await;
    let deadline = Instant::now() + Duration::from_secs(300);
    while !connected(api).await {
        assert!(Instant::now() < deadline, "the service never connected");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let chain = RpcClient::new(rpc.to_string());
    let mint = key("load mint 0").parse().expect("a key");
    let pool0 = pool_address(&program, &mint).0;
    let read = get_accounts(&chain, &[pool0]).await.expect("read pool 0");
    let mut pool = check_pool(&program, read[0].parts()).expect("pool 0 is on the chain");
    let base = market::pool_price(0);
    let mut took = Vec::new();
    for round in 0..rounds {
        tokio::time::sleep(Duration::from_secs(2)).await;
        link.close();
        let mut price = base;
        for s in 0..cut_secs {
            // A move a second, a different price each time.
            price = base * (90 + ((round as i64 * 7 + s as i64) % 20)) / 100;
            pool.oracle_price = Some(price);
            surfnet_set_account(&chain, &pool0, &program, 10_000_000, &encode_pool(&pool))
                .await
                .expect("surfnet_setAccount");
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        link.reopen().await;
        let back = Instant::now();
        let want = price.to_string();
        while indexed_price(api, &pool0).await.as_deref() != Some(want.as_str()) {
            assert!(back.elapsed() < Duration::from_secs(120), "never caught up");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let caught = back.elapsed();
        while !connected(api).await {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        println!(
            "round {round}: caught up {caught:?} after the source returned (reconnected after {:?})",
            back.elapsed()
        );
        took.push(caught);
    }
    took.sort();
    println!(
        "cut of {cut_secs} s, price moving: caught up median {:?}, slowest {:?} ({} rounds)",
        took[took.len() / 2],
        took[took.len() - 1],
        took.len()
    );
}
