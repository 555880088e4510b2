//! The market on a real chain (surfpool), for the live-ingestion figures:
//! - `chain-seed` writes the synthetic market's mints, pools and positions with
//!   `surfnet_setAccount` and registers the pools in PostgreSQL at slot 0, so the
//!   service's first reconcile indexes everything from the chain;
//! - `chain-price-latency` changes pool 0's oracle price on the chain and times
//!   the chain's own account notification (the floor) and Lendex's SSE events.

use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use solana_rpc_client::nonblocking::rpc_client::RpcClient;
use tokio_tungstenite::tungstenite::Message;

use lendex::chain::rpc::{get_accounts, surfnet_set_account};
use lendex::domain::accounts::*;
use lendex::domain::pubkey::Pubkey;
use lendex::domain::wad::WAD;

use crate::{MarketArgs, feed, key, market};

fn key_of(label: &str) -> Pubkey {
    key(label).parse().expect("a derived key is a pubkey")
}

/// Pool `i`'s mint and address (the program's PDA for that mint).
fn pool_keys(program: &Pubkey, i: usize) -> (Pubkey, Pubkey) {
    let mint = key_of(&format!("load mint {i}"));
    (mint, pool_address(program, &mint).0)
}

fn pool_account(program: &Pubkey, i: usize, authority: Pubkey) -> LendingPool {
    let (mint, address) = pool_keys(program, i);
    // The seed's terms, with the chain's own addresses and bumps.
    LendingPool {
        authority,
        token_mint: mint,
        vault: vault_address(program, &address).0,
        pool_bump: pool_address(program, &mint).1,
        authority_bump: authority_address(program, &address).1,
        vault_bump: vault_address(program, &address).1,
        pyth_price_feed: Some(key_of(&format!("load feed {i}"))),
        ..market::pool_account(i, market::pool_price(i))
    }
}

pub async fn seed(
    db: &tokio_postgres::Client,
    rpc: &str,
    program: Pubkey,
    shape: &MarketArgs,
    concurrency: usize,
) {
    let (pools, owners) = (shape.pools, shape.owners);
    let started = Instant::now();
    let chain = RpcClient::new_with_timeout(rpc.to_string(), Duration::from_secs(60));
    let token_program: Pubkey = SPL_TOKEN_PROGRAM.parse().unwrap();
    let authority = key_of("load authority");
    let market = market::build(shape);

    // Every account to write: (address, owner program, data).
    let mut accounts: Vec<(Pubkey, Pubkey, Vec<u8>)> = Vec::new();
    let mut pool_addresses = Vec::new();
    for i in 0..pools {
        let pool = pool_account(&program, i, authority);
        let address = pool_keys(&program, i).1;
        accounts.push((
            pool.token_mint,
            token_program,
            encode_mint(market::decimals(i), u64::MAX / 4),
        ));
        accounts.push((address, program, encode_pool(&pool)));
        pool_addresses.push((address, pool));
    }
    let mut positions = 0usize;
    for (o, entries) in market.owners.iter().enumerate() {
        let owner = key_of(&format!("load owner {o}"));
        for e in entries {
            let pool = pool_addresses[e.pool].0;
            let (address, bump) = position_address(&program, &pool, &owner);
            let position = UserPosition {
                owner,
                pool,
                deposit_shares: e.shares,
                borrow_principal: e.principal,
                deposit_idx_snap: WAD,
                borrow_idx_snap: WAD,
                original_deposit: e.shares,
                bump,
            };
            accounts.push((address, program, encode_position(&position)));
            positions += 1;
        }
    }
    let derived = started.elapsed();
    let results: Vec<_> = futures_util::stream::iter(accounts.iter())
        .map(|(address, owner, data)| surfnet_set_account(&chain, address, owner, 2_000_000, data))
        .buffer_unordered(concurrency)
        .collect()
        .await;
    if let Some(Err(e)) = results.into_iter().find(Result::is_err) {
        panic!("surfnet_setAccount: {e}");
    }
    let written = started.elapsed();

    // Registered as of slot 0: the service's first reconcile reads it all.
    db.batch_execute("DELETE FROM pools WHERE cluster = 'localnet'")
        .await
        .unwrap();
    for (i, (address, pool)) in pool_addresses.iter().enumerate() {
        let keys = [address, &pool.token_mint, &pool.authority, &pool.vault].map(|k| k.to_string());
        market::insert_pool(db, i, [&keys[0], &keys[1], &keys[2], &keys[3]], 0).await;
    }
    println!(
        "chain: {pools} pools, {positions} positions of {owners} owners ({} under water): {} accounts written in {:.1}s (keys derived in {:.1}s); pools registered at slot 0",
        market.sunk,
        accounts.len(),
        (written - derived).as_secs_f64(),
        derived.as_secs_f64()
    );
}

/// Times of pool 0's account notifications on the chain's own websocket.
async fn watch_account(ws: &str, account: Pubkey) -> tokio::sync::mpsc::UnboundedReceiver<Instant> {
    let (mut socket, _) = tokio_tungstenite::connect_async(ws)
        .await
        .expect("connect to the chain's websocket");
    let subscribe = json!({"jsonrpc": "2.0", "id": 1, "method": "accountSubscribe",
        "params": [account.to_string(), {"encoding": "base64", "commitment": "confirmed"}]});
    socket
        .send(Message::text(subscribe.to_string()))
        .await
        .expect("subscribe");
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    actix_rt::spawn(async move {
        while let Some(Ok(message)) = socket.next().await {
            if let Message::Text(text) = message
                && text.contains("accountNotification")
            {
                let _ = tx.send(Instant::now());
            }
        }
    });
    rx
}

/// Pool 0's updates as a Yellowstone gRPC endpoint delivers them (the
/// floor of the gRPC path: the source's own delivery).
async fn watch_grpc(url: &str, account: Pubkey) -> tokio::sync::mpsc::UnboundedReceiver<Instant> {
    use yellowstone_grpc_client::GeyserGrpcClient;
    use yellowstone_grpc_proto::prelude::{SubscribeRequest, SubscribeRequestFilterAccounts};
    let mut client = GeyserGrpcClient::build_from_shared(url.to_string())
        .expect("a gRPC URL")
        .connect()
        .await
        .expect("connect to the gRPC endpoint");
    let request = SubscribeRequest {
        accounts: [(
            "pool".to_string(),
            SubscribeRequestFilterAccounts {
                account: vec![account.to_string()],
                ..Default::default()
            },
        )]
        .into(),
        ..Default::default()
    };
    let (sink, mut stream) = client
        .subscribe_with_request(Some(request))
        .await
        .expect("subscribe");
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let wanted = account.to_bytes().to_vec();
    actix_rt::spawn(async move {
        let _sink = sink;
        while let Some(Ok(update)) = stream.next().await {
            use yellowstone_grpc_proto::prelude::subscribe_update::UpdateOneof;
            if let Some(UpdateOneof::Account(a)) = update.update_oneof
                && a.account.is_some_and(|info| info.pubkey == wanted)
            {
                let _ = tx.send(Instant::now());
            }
        }
    });
    rx
}

pub async fn price_latency(
    api: &str,
    rpc: &str,
    source: (&str, Option<&str>),
    program: Pubkey,
    rounds: usize,
    low_percent: i64,
) {
    let (ws, grpc) = source;
    let chain = RpcClient::new(rpc.to_string());
    let (_, pool0) = pool_keys(&program, 0);
    let read = get_accounts(&chain, &[pool0]).await.expect("read pool 0");
    let mut pool = check_pool(&program, read[0].parts()).expect("pool 0 is on the chain");
    let base = market::pool_price(0);
    // The floor: the source's own delivery of pool 0's update.
    let mut notified = match grpc {
        Some(url) => watch_grpc(url, pool0).await,
        None => watch_account(ws, pool0).await,
    };
    let mut rx = feed::subscribe(api).await;
    let (mut floor, mut first, mut last) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        // Alternate: pool 0 at low_percent (every owner sinks) and back.
        let price = if round % 2 == 0 {
            base * low_percent / 100
        } else {
            base
        };
        pool.oracle_price = Some(price);
        while notified.try_recv().is_ok() {}
        let started = Instant::now();
        surfnet_set_account(&chain, &pool0, &program, 10_000_000, &encode_pool(&pool))
            .await
            .expect("surfnet_setAccount");
        let chain_at = tokio::time::timeout(Duration::from_secs(5), notified.recv())
            .await
            .ok()
            .flatten();
        let Some((f, l, events)) = feed::round(&mut rx, started, Duration::from_millis(500)).await
        else {
            println!("round {round}: no event within 10 s");
            continue;
        };
        let chain_after = chain_at.map(|t| t - started);
        println!(
            "round {round}: chain notification after {chain_after:?}; {events} events, first after {f:?}, last after {l:?}"
        );
        floor.extend(chain_after);
        first.push(f);
        last.push(l);
        // Let the write-back settle before the next move.
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    if first.is_empty() {
        return;
    }
    let (c50, c99) = if floor.is_empty() {
        (Duration::ZERO, Duration::ZERO)
    } else {
        feed::p50_p99(&mut floor)
    };
    let (f50, f99) = feed::p50_p99(&mut first);
    let (l50, l99) = feed::p50_p99(&mut last);
    println!(
        "chain price change -> feed ({} rounds): the source's own delivery median {c50:?} (p99 {c99:?}); first event median {f50:?} (p99 {f99:?}); last event median {l50:?} (p99 {l99:?})",
        first.len()
    );
}
