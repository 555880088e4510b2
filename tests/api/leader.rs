//! One ingester per cluster: two `lendex serve` processes on one
//! database, each with its own counting proxy in front of one surfpool.

use std::process::{Command, Stdio};
use std::time::Duration;

use lendex::domain::accounts::*;
use lendex::domain::pubkey::Pubkey;
use serde_json::Value;

use crate::chain_support::*;
use crate::common::*;
use crate::fixtures::feeds::read_events;
use crate::process::Served;

const BIN: &str = env!("CARGO_BIN_EXE_lendex");

/// `lendex serve` on `db`, its RPC through `rpc`, refreshing every second.
fn replica(db: &TestDb, port: u16, rpc: &str, ws: &str) -> Served {
    Served(
        Command::new(BIN)
            .arg("serve")
            .env("DATABASE_URL", &db.url)
            .env("BIND_ADDR", format!("127.0.0.1:{port}"))
            .env("RPC_URL", rpc)
            .env("WS_URL", ws)
            .env("LENDEX_SYNC__INTERVAL_SECONDS", "1")
            .env_remove("SUPER_ADMIN_PUBKEY")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

async fn role(http: &reqwest::Client, port: u16) -> Option<String> {
    let res = http
        .get(format!("http://127.0.0.1:{port}/api/health"))
        .send()
        .await
        .ok()?;
    let body: Value = res.json().await.ok()?;
    body["checks"]["sync"]["role"].as_str().map(str::to_string)
}

/// Background chain reads a replica made (health's getSlot excluded).
fn background_reads(proxy: &RpcProxy) -> usize {
    proxy
        .hits()
        .iter()
        .filter(|(_, body)| {
            body.contains("getMultipleAccounts") || body.contains("getProgramAccounts")
        })
        .count()
}

#[actix_rt::test]
async fn one_replica_ingests_and_another_takes_over_within_5s() {
    let db = TestDb::create().await;
    let chain = LocalChain::start().await;
    let (proxy_a, proxy_b) = (
        RpcProxy::start(&chain.url).await,
        RpcProxy::start(&chain.url).await,
    );
    let [port_a, port_b] = free_ports();
    let http = reqwest::Client::new();
    let mut a = replica(&db, port_a, &proxy_a.url, &chain.ws_url);
    assert!(
        eventually(Duration::from_secs(20), async || role(&http, port_a)
            .await
            .as_deref()
            == Some("leader"))
        .await,
        "the first replica leads"
    );
    // A pool on chain, registered (its row as registration writes it; the
    // leader's refresh fills in the chain state).
    let program: Pubkey = lendex::config::Config::defaults()
        .chain
        .program_id
        .parse()
        .unwrap();
    let mint = Pubkey::new_unique();
    chain
        .set(&mint, &token_program(), &encode_mint(6, 1_000_000))
        .await;
    let (pool_key, pool_data) = pool_account(
        &program,
        &Pubkey::new_unique(),
        &mint,
        Some(100_000_000),
        Some(-8),
    );
    chain
        .set(&pool_key, &program, &encode_pool(&pool_data))
        .await;
    let pool = pool_key.to_string();
    db.connect()
        .await
        .execute(
            "INSERT INTO pools (cluster, pool_address, token_mint, authority, vault, pool_bump, authority_bump,
                vault_bump, decimals, paused, total_deposits, total_borrows, accumulated_fees, total_deposit_shares,
                deposit_index_wad, borrow_index_wad, last_update_ts, ltv_wad, liquidation_threshold_wad,
                liquidation_bonus_wad, protocol_liq_fee_wad, reserve_factor_wad, close_factor_wad, base_rate_wad,
                optimal_util_wad, slope1_wad, slope2_wad, flash_fee_bps, created_by, init_signature, slot)
             VALUES ('localnet', $1, $2, $2, $2, 255, 255, 255, 6, false, 0, 0, 0, 0, 1000000000000000000,
                1000000000000000000, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 'test', 'test', 1)",
            &[&pool, &mint.to_string()],
        )
        .await
        .unwrap();

    let mut b = replica(&db, port_b, &proxy_b.url, &chain.ws_url);
    assert!(
        eventually(Duration::from_secs(20), async || role(&http, port_b)
            .await
            .is_some())
        .await,
        "the second replica serves"
    );
    proxy_a.clear();
    proxy_b.clear();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(role(&http, port_a).await.as_deref(), Some("leader"));
    assert_eq!(role(&http, port_b).await.as_deref(), Some("follower"));
    assert!(background_reads(&proxy_a) > 0, "the leader refreshes");
    assert_eq!(
        background_reads(&proxy_b),
        0,
        "the follower reads nothing in the background"
    );

    // The leader dies without a word: the follower leads within 5 s and ingests.
    a.kill().unwrap();
    a.wait().unwrap();
    let killed = std::time::Instant::now();
    assert!(
        eventually(Duration::from_secs(5), async || role(&http, port_b)
            .await
            .as_deref()
            == Some("leader"))
        .await,
        "no takeover within 5 s"
    );
    let took = killed.elapsed();
    proxy_b.clear();
    assert!(
        eventually(Duration::from_secs(5), async || background_reads(&proxy_b)
            > 0)
        .await,
        "the new leader refreshes"
    );
    // The next change on chain reaches the new leader's index (and its feed).
    let owner = Pubkey::new_unique();
    let (address, position) = position_account(&program, &pool_key, &owner, 5_000_000, 0);
    chain
        .set(&address, &program, &encode_position(&position))
        .await;
    let positions = format!("http://127.0.0.1:{port_b}/api/positions/{owner}");
    assert!(
        eventually(Duration::from_secs(10), async || {
            let body: Option<Value> = match http.get(&positions).send().await {
                Ok(res) => res.json().await.ok(),
                Err(_) => None,
            };
            body.is_some_and(|b| b["positions"].as_array().is_some_and(|p| p.len() == 1))
        })
        .await,
        "a change after the takeover never reached the new leader"
    );
    // And the new leader's feed: an owner sinks, then a price move re-quotes it.
    let mut feed = http
        .get(format!(
            "http://127.0.0.1:{port_b}/api/positions/unhealthy/stream"
        ))
        .send()
        .await
        .unwrap();
    let mut buffer = String::new();
    let sinker = Pubkey::new_unique();
    let (address, position) = position_account(&program, &pool_key, &sinker, 1_000_000, 900_000);
    chain
        .set(&address, &program, &encode_position(&position))
        .await;
    let sinker = sinker.to_string();
    until_event(&mut feed, &mut buffer, "candidate_start", &sinker).await;
    let mut moved = pool_data.clone();
    moved.oracle_price = Some(200_000_000);
    chain.set(&pool_key, &program, &encode_pool(&moved)).await;
    until_event(&mut feed, &mut buffer, "candidate_update", &sinker).await;
    println!("takeover after SIGKILL: {took:?}");
    b.kill().unwrap();
    b.wait().unwrap();
}

/// Reads the feed until `name` arrives for `owner` (each read waits up to 10 s).
async fn until_event(feed: &mut reqwest::Response, buffer: &mut String, name: &str, owner: &str) {
    let mut events = Vec::new();
    while !events
        .iter()
        .any(|(n, d): &(String, Value)| n == name && d["owner"] == owner)
    {
        let more = read_events(feed, buffer, 1, Duration::from_secs(10)).await;
        assert!(
            !more.is_empty(),
            "no {name} for {owner} on the new leader's feed: {events:?}"
        );
        events.extend(more);
    }
}
