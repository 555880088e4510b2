//! Oracle feeds (docs/design.md §17) on a real chain: a pool names a Pyth
//! `PriceUpdateV2` account written with `surfnet_setAccount`; a pool sync
//! reads it with the pool. Market: USDC $1 and SOL $20 (threshold 0.8); one
//! account deposits 1,000 USDC ($800 weighted) and borrows 35 SOL ($700):
//! 1.14 at the pools' copy, 0.91 with SOL's feed at $25.

use std::time::Duration;

use lendex::domain::accounts::encode_pool;
use lendex::domain::pubkey::Pubkey;
use lendex::domain::pyth::{PriceMessage, PriceUpdate, RECEIVER_PROGRAM, Verification};
use serde_json::Value;

use crate::common::*;
use crate::fixtures::feeds::read_events;
use crate::fixtures::market::{Market, USD, market};

pub(crate) fn receiver() -> Pubkey {
    RECEIVER_PROGRAM.parse().unwrap()
}

/// A feed account's data: `price` at exponent -8, confidence 1000 (the
/// copy's), fully verified unless `partial`.
pub(crate) fn feed_data(price: i64, partial: bool) -> Vec<u8> {
    feed_data_at(price, partial, chrono::Utc::now().timestamp())
}

/// `feed_data`, published at `publish_time`.
fn feed_data_at(price: i64, partial: bool, publish_time: i64) -> Vec<u8> {
    PriceUpdate {
        write_authority: Pubkey::new_unique(),
        verification: match partial {
            true => Verification::Partial { num_signatures: 3 },
            false => Verification::Full,
        },
        message: PriceMessage {
            feed_id: [7; 32],
            price,
            conf: 1000,
            exponent: -8,
            publish_time,
            prev_publish_time: publish_time - 1,
            ema_price: price,
            ema_conf: 1000,
        },
        posted_slot: 1,
    }
    .encode()
}

/// SOL's pool names `feed` on chain, and the index reads both (a pool sync).
async fn name_sol_feed(m: &mut Market, feed: &Pubkey) {
    m.sol_data.pyth_price_feed = Some(*feed);
    m.t.chain
        .set(&m.sol, &m.t.program, &encode_pool(&m.sol_data))
        .await;
    assert_eq!(m.t.sync_pool(&m.sol).await.0, 200);
}

/// SOL's feed at $25, named and read, and the account on the market: the
/// feed and the owner.
async fn sol_feed_ahead(m: &mut Market) -> (Pubkey, String) {
    let feed = Pubkey::new_unique();
    m.t.chain
        .set(&feed, &receiver(), &feed_data(25 * USD, false))
        .await;
    name_sol_feed(m, &feed).await;
    (feed, m.account(1_000_000_000, 35_000_000_000).await)
}

/// Writes SOL's feed account and reads it (with the pool).
async fn set_feed(m: &Market, feed: &Pubkey, owner: &Pubkey, data: &[u8]) {
    m.t.chain.set(feed, owner, data).await;
    assert_eq!(m.t.sync_pool(&m.sol).await.0, 200);
}

/// SOL's and USDC's `feed` objects in pools status.
async fn feeds_status(m: &Market) -> (Value, Value) {
    let (status, body) = m.t.app.get("/api/pools/status").await;
    assert_eq!(status, 200, "{body}");
    let of = |pool: &Pubkey| {
        let pools = body["pools"].as_array().unwrap();
        let p = pools.iter().find(|p| p["pool_address"] == pool.to_string());
        p.unwrap()["feed"].clone()
    };
    (of(&m.sol), of(&m.usdc))
}

/// The unhealthy rows at the feeds' prices.
async fn at_feed(m: &Market) -> Value {
    get_view(m, "/api/positions/unhealthy?oracle=feed").await.1["positions"].clone()
}

async fn get_view(m: &Market, path: &str) -> (u16, Value, Option<String>) {
    let res = m.t.app.http.get(m.t.app.url(path)).send().await.unwrap();
    let oracle = res
        .headers()
        .get("lendex-oracle")
        .map(|v| v.to_str().unwrap().to_string());
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null), oracle)
}

#[actix_rt::test]
async fn a_feed_ahead_of_its_copy_puts_an_owner_under_in_the_feed_view_only() {
    let mut m = market(|_| {}).await;
    let (feed, owner) = sol_feed_ahead(&mut m).await;
    let sol = m.sol.to_string();
    let (sol_feed, usdc_feed) = feeds_status(&m).await;
    assert_eq!(usdc_feed["status"], "unset");
    assert_eq!(usdc_feed["address"], Value::Null);
    assert_eq!(sol_feed["address"], feed.to_string());
    assert_eq!(sol_feed["status"], "ok");
    assert_eq!(
        (&sol_feed["price"], &sol_feed["exponent"]),
        (&Value::from("2500000000"), &Value::from(-8))
    );
    assert_eq!(
        (&sol_feed["differs"], &sol_feed["deviation_bps"]),
        (&Value::from(true), &Value::from(2500))
    );
    assert!(sol_feed["age_seconds"].as_i64().unwrap() < 60);

    // The pools' own prices: healthy; no crank list, oracle named.
    let (status, body, oracle) = get_view(&m, "/api/positions/unhealthy").await;
    assert_eq!((status, oracle.as_deref()), (200, Some("pool")));
    assert_eq!(body["positions"], serde_json::json!([]));
    // At the feeds' prices: under, with SOL's pool to crank on every row.
    let (status, body, oracle) = get_view(&m, "/api/positions/unhealthy?oracle=feed").await;
    assert_eq!((status, oracle.as_deref()), (200, Some("feed")));
    let rows = body["positions"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{body}");
    for row in rows {
        assert_eq!(row["owner"], owner);
        assert_eq!(row["crank"], serde_json::json!([sol]));
    }
    let (_, quotes, _) = get_view(&m, "/api/liquidations?oracle=feed").await;
    let quote = &quotes["liquidations"][0];
    assert_eq!(
        (&quote["oracle"], &quote["crank"]),
        (&Value::from("feed"), &serde_json::json!([sol]))
    );
    let (_, quotes, _) = get_view(&m, "/api/liquidations").await;
    assert_eq!(quotes["liquidations"], serde_json::json!([]));
    // The owner's own answers are valued at the feed too.
    let (_, mine, _) = get_view(&m, &format!("/api/positions/{owner}?oracle=feed")).await;
    let hf: u128 = mine["positions"][0]["health_factor_wad"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(hf < 1_000_000_000_000_000_000, "{mine}");

    // A liquidator follows the feed view: the owner starts with the list.
    let mut res =
        m.t.app
            .http
            .get(m.t.app.url("/api/positions/unhealthy/stream?oracle=feed"))
            .send()
            .await
            .unwrap();
    assert_eq!(res.headers()["lendex-oracle"], "feed");
    let mut buffer = String::new();
    let events = read_events(&mut res, &mut buffer, 1, Duration::from_secs(5)).await;
    assert_eq!(events[0].0, "candidate_start");
    assert_eq!(events[0].1["crank"], serde_json::json!([sol]));
    assert_eq!(events[0].1["oracle"], "feed");

    // The crank lands (the copy takes the feed's price): the pool view
    // follows, and the feed view updates the owner with nothing to crank.
    m.set_sol_price(25 * USD).await;
    let events = read_events(&mut res, &mut buffer, 1, Duration::from_secs(5)).await;
    assert_eq!(events[0].0, "candidate_update", "{events:?}");
    assert_eq!(events[0].1["crank"], serde_json::json!([]));
    let pool_view = m.unhealthy("").await;
    assert_eq!(pool_view.len(), 2);
    assert!(
        pool_view[0].get("crank").is_none(),
        "absent in the pool view"
    );
    let (_, body, _) = get_view(&m, "/api/positions/unhealthy?oracle=feed").await;
    assert_eq!(body["positions"][0]["crank"], serde_json::json!([]));
    let (sol_feed, _) = feeds_status(&m).await;
    assert_eq!(
        (&sol_feed["differs"], &sol_feed["deviation_bps"]),
        (&Value::from(false), &Value::from(0))
    );

    // /metrics: the feeds by status, SOL's deviation, an update, one crank.
    let text = m.t.app.metrics_text().await;
    let line = |prefix: String| {
        let found = text.lines().find(|l| l.starts_with(&prefix));
        found
            .unwrap_or_else(|| panic!("{prefix} not in /metrics"))
            .to_string()
    };
    assert!(line("lendex_oracle_feeds{status=\"ok\"}".into()).ends_with(" 1"));
    assert!(line("lendex_oracle_feeds{status=\"unset\"}".into()).ends_with(" 1"));
    let deviation = format!("lendex_oracle_feed_deviation_bps{{pool=\"{sol}\"}}");
    assert!(line(deviation).ends_with(" 0"));
    // Its own buckets, to Pyth's heartbeat and past it.
    line("lendex_oracle_crank_lag_seconds_bucket{le=\"1800\"}".into());
    // What the dashboard and the alerts read only where feeds are: here.
    for name in crate::metrics_api::FROM_FEEDS {
        line(name.to_string());
    }
    // (Counted by every service of this test process: at least ours.)
    for counted in [
        "lendex_oracle_crank_lag_seconds_count",
        "lendex_oracle_feed_updates_total",
    ] {
        let n: f64 = line(counted.into())
            .rsplit(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(n >= 1.0, "{counted} {n}");
    }
}

#[actix_rt::test]
async fn a_feed_that_cannot_value_leaves_the_pool_at_its_copy() {
    let mut m = market(|_| {}).await;
    let feed = Pubkey::new_unique();
    name_sol_feed(&mut m, &feed).await; // missing: no such account yet
    m.account(1_000_000_000, 35_000_000_000).await;
    assert_eq!(at_feed(&m).await, serde_json::json!([]));
    assert_eq!(feeds_status(&m).await.0["status"], "missing");
    // Every shape that is not a usable price: valued at the copy (healthy),
    // and named in pools status.
    let shapes: [(Pubkey, Vec<u8>, &str); 4] = [
        (
            Pubkey::new_unique(),
            feed_data(25 * USD, false),
            "not_a_price_update",
        ),
        (receiver(), vec![1, 2, 3], "not_a_price_update"),
        (receiver(), feed_data(25 * USD, true), "partially_verified"),
        (receiver(), feed_data(-25 * USD, false), "nonpositive"),
    ];
    for (owner, data, status) in shapes {
        set_feed(&m, &feed, &owner, &data).await;
        assert_eq!(at_feed(&m).await, serde_json::json!([]), "{status}");
        let shown = feeds_status(&m).await.0;
        assert_eq!(
            (&shown["status"], &shown["differs"]),
            (&Value::from(status), &Value::from(false))
        );
    }
    // Once usable, the same account values the pool.
    set_feed(&m, &feed, &receiver(), &feed_data(25 * USD, false)).await;
    assert_eq!(at_feed(&m).await.as_array().unwrap().len(), 2);
}

#[actix_rt::test]
async fn the_feed_view_is_refused_where_feeds_are_not_read() {
    let app = spawn_app_with(|c| c.oracle.feeds = false).await;
    for path in [
        "/api/positions/unhealthy?oracle=feed",
        "/api/liquidations?oracle=feed",
        "/api/positions/unhealthy/stream?oracle=feed",
        "/api/positions/unhealthy?oracle=copy",
    ] {
        let (status, body) = app.get(path).await;
        assert_eq!(
            (status, body["error"].as_str()),
            (400, Some("invalid")),
            "{path}"
        );
    }
    let (status, _) = app.get("/api/positions/unhealthy?oracle=pool").await;
    assert_eq!(status, 200);
}

/// The stream of `query`, resuming after `id` when given.
async fn stream(m: &Market, query: &str, id: Option<&str>) -> reqwest::Response {
    stream_at(&m.t.app.url(""), query, id).await
}

/// The stream of `query` on the replica at `base`.
async fn stream_at(base: &str, query: &str, id: Option<&str>) -> reqwest::Response {
    let base = base.trim_end_matches('/');
    let url = format!("{base}/api/positions/unhealthy/stream{query}");
    let mut req = reqwest::Client::new().get(url);
    if let Some(id) = id {
        req = req.header("Last-Event-ID", id);
    }
    let res = req.send().await.unwrap();
    assert_eq!(res.status(), 200);
    res
}

/// The `id:` of the stream's first frame.
async fn first_id(res: &mut reqwest::Response) -> String {
    let mut text = String::new();
    loop {
        if let Some(line) = text.lines().find(|l| l.starts_with("id: ")) {
            return line.trim_start_matches("id: ").to_string();
        }
        let chunk = tokio::time::timeout(Duration::from_secs(5), res.chunk()).await;
        text.push_str(&String::from_utf8_lossy(&chunk.unwrap().unwrap().unwrap()));
    }
}

#[actix_rt::test]
async fn an_event_id_of_one_view_resumed_on_the_other_gets_reset() {
    let m = market(|_| {}).await;
    crate::fixtures::feeds::under_water(&m, 2).await;
    let pool_id = first_id(&mut stream(&m, "", None).await).await;
    let feed_id = first_id(&mut stream(&m, "?oracle=feed", None).await).await;
    assert_ne!(
        pool_id.split('.').next(),
        feed_id.split('.').next(),
        "an epoch per view"
    );
    // Each view resumes its own id with nothing to send...
    for (query, id) in [("", &pool_id), ("?oracle=feed", &feed_id)] {
        let mut res = stream(&m, query, Some(id)).await;
        let mut buffer = String::new();
        let quiet = read_events(&mut res, &mut buffer, 1, Duration::from_millis(1500)).await;
        assert!(quiet.is_empty(), "{query}: {quiet:?}");
    }
    // ...and the other view's id gets reset, then its snapshot.
    for (query, id) in [("", &feed_id), ("?oracle=feed", &pool_id)] {
        let mut res = stream(&m, query, Some(id)).await;
        let mut buffer = String::new();
        let frames = read_events(&mut res, &mut buffer, 3, Duration::from_secs(5)).await;
        assert_eq!(frames[0].0, "reset", "{query}");
        assert!(
            frames[1..]
                .iter()
                .all(|(name, _)| name == "candidate_start")
        );
    }
}

#[actix_rt::test]
async fn a_grpc_source_follows_a_newly_named_feed_and_streams_it() {
    use lendex_testkit::geyser::{ScriptedGeyser, account_update};
    let server = ScriptedGeyser::start().await;
    let mut m = crate::fixtures::grpc::grpc_market(&server, |_| {}).await;
    let program = m.t.program;
    let owner = m.account(1_000_000_000, 35_000_000_000).await;
    // SOL's pool names a feed, by the stream: the subscription is made again
    // with the feed's address in a third filter.
    let feed = Pubkey::new_unique();
    m.sol_data.pyth_price_feed = Some(feed);
    let slot = m.t.chain.slot().await + 1_000;
    let pool = encode_pool(&m.sol_data);
    server.send(slot, account_update(&m.sol, &program, 1, pool, slot, 1));
    let followed = eventually(Duration::from_secs(10), async || {
        server.subscriptions().last().is_some_and(|s| {
            (s.accounts.get("lendex_feeds")).is_some_and(|f| f.account == vec![feed.to_string()])
        })
    })
    .await;
    assert!(followed, "{:?}", server.subscriptions().last());
    // The owner's answer in the feed view, rendered and kept before the feed
    // moves: a tick with the feed alone must drop it.
    let mine = format!("/api/positions/{owner}?oracle=feed");
    let hf = async |m: &Market| -> u128 {
        let body = m.t.app.get(&mine).await.1;
        body["positions"][0]["health_factor_wad"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(hf(&m).await >= 1_000_000_000_000_000_000);
    // The feed at $25, streamed: the owner is under in the feed view only.
    let data = feed_data(25 * USD, false);
    server.send(
        slot + 1,
        account_update(&feed, &receiver(), 1, data, slot + 1, 1),
    );
    let under = eventually(Duration::from_secs(10), async || {
        at_feed(&m).await.as_array().is_some_and(|rows| {
            rows.iter().any(|r| {
                r["owner"] == owner && r["crank"] == serde_json::json!([m.sol.to_string()])
            })
        })
    })
    .await;
    assert!(under, "{}", at_feed(&m).await);
    assert!(m.unhealthy("").await.is_empty());
    assert!(hf(&m).await < 1_000_000_000_000_000_000);
}

#[actix_rt::test]
async fn two_replicas_serve_the_same_feed_view() {
    let mut m = market(|_| {}).await;
    let second = crate::fixtures::replicas::second_replica(&m).await;
    let (_, owner) = sol_feed_ahead(&mut m).await;
    let path = "/api/positions/unhealthy?oracle=feed";
    let other = format!("{}{path}", second.base.trim_end_matches('/'));
    let http = reqwest::Client::new();
    let same = eventually(Duration::from_secs(10), async || {
        let theirs: Value = http.get(&other).send().await.unwrap().json().await.unwrap();
        theirs == m.t.app.get(path).await.1 && theirs["positions"][0]["owner"] == owner
    })
    .await;
    assert!(same, "{}", m.t.app.get(path).await.1);
    // The same event, under the same id, on either replica's feed view.
    let ours = first_id(&mut stream(&m, "?oracle=feed", None).await).await;
    let theirs = first_id(&mut stream_at(&second.base, "?oracle=feed", None).await).await;
    assert_eq!(ours, theirs);
}

#[actix_rt::test]
async fn a_websocket_source_follows_a_feed_and_each_write_reaches_the_feed_view() {
    let mut m = market(|c| c.sync.interval_seconds = 3600).await;
    let leading = eventually(Duration::from_secs(15), async || {
        let sync = m.t.app.get("/api/health").await.1["checks"]["sync"].clone();
        sync["stream"]["connected"] == true
    })
    .await;
    assert!(leading, "the websocket never connected");
    let (feed, owner) = sol_feed_ahead(&mut m).await;
    // Written on chain alone, no sync call: each price reaches the feed
    // view by the feed's own subscription, the last one included.
    for (price, under) in [(20, false), (26, true), (21, false), (27, true)] {
        let data = feed_data(price * USD, false);
        m.t.chain.set(&feed, &receiver(), &data).await;
        let text = (price * USD).to_string();
        let seen = eventually(Duration::from_secs(10), async || {
            let shown = feeds_status(&m).await.0;
            let priced = shown["price"] == text.as_str();
            let rows = at_feed(&m).await;
            let listed = rows
                .as_array()
                .is_some_and(|r| r.iter().any(|r| r["owner"] == owner));
            priced && listed == under
        })
        .await;
        assert!(seen, "${price}: {}", feeds_status(&m).await.0);
    }
}

#[actix_rt::test]
async fn a_processed_feed_write_leads_both_views_and_rolls_back_with_its_fork() {
    use crate::fixtures::feeds::Feed;
    use crate::fixtures::processed::{confirmed_base, play, processed_market, status};
    use lendex_testkit::geyser::{ScriptedGeyser, account_update};
    use yellowstone_grpc_proto::prelude::SlotStatus;
    let server = ScriptedGeyser::start().await;
    let mut m = processed_market(&server, |_| {}).await;
    // SOL's feed at its copy's price, named and read: nothing to crank.
    let feed = Pubkey::new_unique();
    (m.t.chain)
        .set(&feed, &receiver(), &feed_data(20 * USD, false))
        .await;
    name_sol_feed(&mut m, &feed).await;
    let owner = m.account(1_000_000_000, 35_000_000_000).await;
    let followed = eventually(Duration::from_secs(10), async || {
        server.subscriptions().last().is_some_and(|s| {
            (s.accounts.get("lendex_feeds")).is_some_and(|f| f.account == vec![feed.to_string()])
        })
    })
    .await;
    assert!(followed, "{:?}", server.subscriptions().last());
    let base = confirmed_base(&server, &m).await;
    let under = async |m: &Market, query: &str| -> Vec<Value> {
        let (code, body, _) = get_view(m, &format!("/api/positions/unhealthy?{query}")).await;
        assert_eq!(code, 200, "{query}: {body}");
        let rows = body["positions"].as_array().unwrap().clone();
        (rows.into_iter()).filter(|r| r["owner"] == owner).collect()
    };
    let (feeds_ahead, pools_ahead) = ("commitment=processed&oracle=feed", "commitment=processed");
    let mut stream = Feed::open_query(&m.t.app.base, feeds_ahead, None).await;

    // The feed at $25 in a processed slot: under water at the feeds' prices
    // at processed only, SOL to crank.
    let write = |slot: u64| {
        let data = feed_data(25 * USD, false);
        server.send(slot, account_update(&feed, &receiver(), 1, data, slot, 1));
        play(&server, slot, base);
    };
    write(base + 1);
    let shown = eventually(Duration::from_secs(10), async || {
        !under(&m, feeds_ahead).await.is_empty()
    })
    .await;
    assert!(shown, "{}", get_view(&m, "/api/pools/status").await.1);
    let row = under(&m, feeds_ahead).await.remove(0);
    assert_eq!(row["crank"], serde_json::json!([m.sol.to_string()]));
    assert!(under(&m, "oracle=feed").await.is_empty());
    assert!(under(&m, pools_ahead).await.is_empty());
    let (_, _, oracle) = get_view(&m, &format!("/api/positions/unhealthy?{feeds_ahead}")).await;
    assert_eq!(oracle.as_deref(), Some("feed"));
    let events = stream.read(1, Duration::from_secs(10)).await;
    let data = &events[0].data;
    assert_eq!(events[0].event, "candidate_start", "{data}");
    assert_eq!(
        (&data["commitment"], &data["oracle"]),
        (&Value::from("processed"), &Value::from("feed"))
    );
    assert_eq!(data["crank"], serde_json::json!([m.sol.to_string()]));

    // Its slot dies: the feed's write leaves with it, and the stream says so.
    status(&server, base + 1, None, SlotStatus::SlotDead);
    let events = stream.read(1, Duration::from_secs(10)).await;
    let data = &events[0].data;
    assert_eq!(events[0].event, "candidate_stop", "{data}");
    assert_eq!(data["rolled_back"], true, "{data}");
    assert!(under(&m, feeds_ahead).await.is_empty());

    // Again in a slot that lives: processed first, then confirmed.
    write(base + 2);
    let shown = eventually(Duration::from_secs(10), async || {
        !under(&m, feeds_ahead).await.is_empty()
    })
    .await;
    assert!(shown);
    assert!(under(&m, "oracle=feed").await.is_empty());
    status(&server, base + 2, None, SlotStatus::SlotConfirmed);
    let confirmed = eventually(Duration::from_secs(10), async || {
        !under(&m, "oracle=feed").await.is_empty()
    })
    .await;
    assert!(confirmed);
    assert!(under(&m, "").await.is_empty());
    assert!(under(&m, pools_ahead).await.is_empty());
}

#[actix_rt::test]
async fn history_records_each_usable_feed_price_beside_the_copy() {
    let mut m = market(|_| {}).await;
    let (feed, _) = sol_feed_ahead(&mut m).await;
    let receiver = receiver();
    // A new price; the same price again; a partially verified one: a row
    // for the first alone.
    set_feed(&m, &feed, &receiver, &feed_data(26 * USD, false)).await;
    set_feed(&m, &feed, &receiver, &feed_data(26 * USD, false)).await;
    set_feed(&m, &feed, &receiver, &feed_data(27 * USD, true)).await;
    // The copy cranked to the feed: a pool row.
    m.set_sol_price(26 * USD).await;
    let path = format!("/api/pools/{}/prices", m.sol);
    let of = |body: &Value, source: &str| -> Vec<String> {
        (body["prices"].as_array().unwrap().iter())
            .filter(|p| p["source"] == source)
            .map(|p| p["price"].as_str().unwrap().to_string())
            .collect()
    };
    let want_feed = vec![(25 * USD).to_string(), (26 * USD).to_string()];
    let recorded = eventually(Duration::from_secs(10), async || {
        let body = m.t.app.get(&path).await.1;
        of(&body, "feed") == want_feed && of(&body, "pool").last() == Some(&(26 * USD).to_string())
    })
    .await;
    let body = m.t.app.get(&path).await.1;
    assert!(recorded, "{body}");
    // Every row says whose price it is; each feed row's exponent is the feed's.
    for row in body["prices"].as_array().unwrap() {
        assert!(row["source"] == "pool" || row["source"] == "feed", "{row}");
        if row["source"] == "feed" {
            assert_eq!(row["expo"], -8);
            assert_eq!(row["conf"], "1000");
        }
    }
}

#[actix_rt::test]
async fn a_feed_that_stops_updating_ages_and_still_values_its_pool() {
    let mut m = market(|_| {}).await;
    let (feed, owner) = sol_feed_ahead(&mut m).await;
    // Its last update two hours old: the age says so; it still values the
    // pool (its age never excludes it), judged stale by its own publish time.
    let two_hours_ago = chrono::Utc::now().timestamp() - 7_200;
    let data = feed_data_at(25 * USD, false, two_hours_ago);
    set_feed(&m, &feed, &receiver(), &data).await;
    let (sol_feed, _) = feeds_status(&m).await;
    assert_eq!(sol_feed["status"], "ok");
    assert_eq!(sol_feed["publish_time"], two_hours_ago);
    assert!(
        sol_feed["age_seconds"].as_i64().unwrap() >= 7_200,
        "{sol_feed}"
    );
    let rows = at_feed(&m).await;
    let row = (rows.as_array().unwrap().iter())
        .find(|r| r["owner"] == owner)
        .cloned();
    let row = row.unwrap_or_else(|| panic!("{rows}"));
    assert_eq!(row["crank"], serde_json::json!([m.sol.to_string()]));
    assert_eq!(row["oracle_stale"], true, "{row}");
    // The pool view is untouched, and health does not degrade for a feed.
    assert!(m.unhealthy("").await.is_empty());
    let health = m.t.app.get("/api/health").await.1;
    assert_eq!(health["status"], "ok", "{health}");
}
