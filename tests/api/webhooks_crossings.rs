//! Crossings of the confirmed view delivered (docs/design.md §18): a price
//! move that sinks owners reaches a webhook as `health.below`, the way back
//! as `health.recovered`; each webhook judges by its own line and owners,
//! from its creation on; one delivery per change.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use lendex::domain::wad::WAD;

use crate::common::*;
use crate::fixtures::history::{book, served, set_price};
use crate::fixtures::locks::Held;
use crate::fixtures::market::{USD, market};
use crate::fixtures::receiver::{Receiver, Reply};
use crate::fixtures::webhooks::{create, known_to_replicas};
use crate::process::leading_pair;

/// Every event the receiver got so far, by owner, in the order received
/// (each delivery's events together).
fn events(receiver: &Receiver) -> BTreeMap<String, Vec<(String, String)>> {
    let mut by_owner: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for request in receiver.received() {
        let body = request.json();
        for e in body["events"].as_array().unwrap() {
            assert_eq!(e["change_id"], body["change_id"], "{body}");
            by_owner
                .entry(e["owner"].as_str().unwrap().to_string())
                .or_default()
                .push((
                    e["type"].as_str().unwrap().to_string(),
                    e["account_health_factor_wad"].as_str().unwrap().to_string(),
                ));
        }
    }
    by_owner
}

#[actix_rt::test]
async fn a_move_across_each_line_is_delivered_below_then_recovered() {
    let mut m = market(|c| c.webhooks.allow_private_targets = true).await;
    // $800 of collateral (1,000 USDC at 0.8) against 30 SOL: 1.333 at $20.
    let first = m.account(1_000_000_000, 30_000_000_000).await;
    let second = m.account(1_000_000_000, 30_000_000_000).await;
    // Far from any line: 10 SOL, 4.0 at $20, 2.67 at $30.
    let safe = m.account(1_000_000_000, 10_000_000_000).await;
    let every = Receiver::start(vec![]);
    let app = &m.t.app;
    let (status, _) = create(app, &app.root, json!({ "url": every.url })).await;
    assert_eq!(status, 201);
    // Line 1.5, the second owner alone: it is under that line already, so
    // its going under 1.0 is no event here, and its recovery is.
    let narrow = Receiver::start(vec![]);
    let line = "1500000000000000000";
    let fields = json!({ "url": narrow.url, "below_wad": line, "owners": [second] });
    assert_eq!(create(app, &app.root, fields).await.0, 201);
    // By pools: the SOL pool's holders (every owner here), and a pool nobody
    // holds.
    let holders = Receiver::start(vec![]);
    let fields = json!({ "url": holders.url, "pools": [m.sol.to_string()] });
    assert_eq!(create(app, &app.root, fields).await.0, 201);
    let nobodys = Receiver::start(vec![]);
    let elsewhere = lendex::domain::pubkey::Pubkey::new_unique().to_string();
    let fields = json!({ "url": nobodys.url, "pools": [elsewhere] });
    assert_eq!(create(app, &app.root, fields).await.0, 201);
    // The replicas read the webhooks every second.
    known_to_replicas().await;

    // SOL to $30: $900 against $800, 0.889.
    m.set_sol_price(30 * USD).await;
    let under = "888888888888888888";
    let heard = eventually(Duration::from_secs(10), async || events(&every).len() == 2).await;
    assert!(heard, "{:?}", events(&every));
    let got = events(&every);
    assert_eq!(
        got[&first],
        [("health.below".to_string(), under.to_string())]
    );
    assert_eq!(
        got[&second],
        [("health.below".to_string(), under.to_string())]
    );
    assert!(!got.contains_key(&safe));
    assert_eq!(every.received().len(), 1, "one change, one delivery");
    let by_pool = eventually(Duration::from_secs(10), async || {
        events(&holders).len() == 2
    })
    .await;
    assert!(by_pool, "{:?}", events(&holders));

    // SOL to $15: $450 against $800, 1.778: both recover, and the second
    // crosses the narrow webhook's line.
    m.set_sol_price(15 * USD).await;
    let over = "1777777777777777777";
    let heard = eventually(Duration::from_secs(10), async || {
        events(&every).values().all(|e| e.len() == 2)
            && events(&holders).values().all(|e| e.len() == 2)
            && !narrow.received().is_empty()
    })
    .await;
    assert!(heard, "{:?} {:?}", events(&every), events(&narrow));
    let got = events(&every);
    for owner in [&first, &second] {
        assert_eq!(
            got[owner][1],
            ("health.recovered".to_string(), over.to_string())
        );
    }
    let narrow_got = events(&narrow);
    assert_eq!(
        narrow_got,
        BTreeMap::from([(
            second.clone(),
            vec![("health.recovered".to_string(), over.to_string())]
        )])
    );
    assert!(
        nobodys.received().is_empty(),
        "no holder of that pool moved"
    );
    let body: Value = narrow.received()[0].json();
    assert_eq!(body["events"][0]["below_wad"], line);
    assert!(body["events"][0]["slot"].as_u64().unwrap() > 0);
    // Each delivery stored once, and marked delivered once its 2xx is in.
    let db = m.t.app.db.connect().await;
    let count = async |sql: &str| -> i64 { db.query_one(sql, &[]).await.unwrap().get(0) };
    let all = "SELECT count(*) FROM webhook_deliveries";
    let done = "SELECT count(*) FROM webhook_deliveries WHERE status = 'delivered'";
    assert_eq!(count(all).await, 5, "every: 2, narrow: 1, by pool: 2");
    let marked = eventually(Duration::from_secs(5), async || count(done).await == 5).await;
    assert!(marked);
}

/// A kill -9 of the delivering leader: one delivery cut mid-attempt, one
/// change judged but not stored. The other replica takes over, stores what
/// was not stored and finishes both, the cut one with the same id.
#[actix_rt::test]
async fn a_killed_leaders_deliveries_are_finished_by_the_next() {
    let db = TestDb::create().await;
    let env = [
        ("LENDEX_WEBHOOKS__ALLOW_PRIVATE_TARGETS", "true"),
        ("LENDEX_WEBHOOKS__TIMEOUT_MS", "60000"),
    ];
    let (mut children, ports, leader) = leading_pair(&db, &env).await;
    let client = db.connect().await;
    let b = book(&Remote::on(leader), &client).await;
    // The first attempt hangs: the leader is mid-delivery when it dies.
    let receiver = Receiver::start(vec![Reply::Hang]);
    let webhook = "wh_0000000000000000000000ab";
    client
        .execute(
            "INSERT INTO webhooks (id, cluster, url, below_wad, secret, created_by, created_tick)
             SELECT $1, 'localnet', $2, 1000000000000000000,
                 'whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=', 'test', tick
             FROM feed_clock",
            &[&webhook, &receiver.url],
        )
        .await
        .unwrap();
    known_to_replicas().await;

    // Under: stored, and its attempt hangs.
    set_price(&client, &b.sol, 12 * ORACLE_DOLLAR).await;
    let hanging = eventually(Duration::from_secs(10), async || {
        receiver.received().len() == 1
    })
    .await;
    assert!(hanging, "the first attempt reached the receiver");
    // Recovered: judged by both, not stored by the leader.
    let held = Held::table(&db.url, "webhook_deliveries").await;
    set_price(&client, &b.sol, 20 * ORACLE_DOLLAR).await;
    let follower = *ports.iter().find(|p| **p != leader).unwrap();
    let applied = eventually(Duration::from_secs(10), async || {
        served(&Remote::on(follower), &b.owner).await == Some((16 * WAD / 10).to_string())
    })
    .await;
    assert!(applied, "the follower applied the recovery");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let index = ports.iter().position(|p| *p == leader).unwrap();
    children[index].kill().unwrap();
    let _ = children[index].wait();
    held.release().await;

    let finished = eventually(Duration::from_secs(20), async || {
        receiver.received().len() == 3
    })
    .await;
    let got = receiver.received();
    assert!(finished, "{} requests", got.len());
    let ids: Vec<&str> = got.iter().map(|r| r.header("webhook-id")).collect();
    assert_eq!(ids[0], ids[1], "the cut delivery again, with its id");
    assert_ne!(ids[1], ids[2]);
    let kinds: Vec<String> = got[1..]
        .iter()
        .map(|r| r.json()["events"][0]["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(kinds, ["health.below", "health.recovered"]);
    let stored: i64 = client
        .query_one("SELECT count(*) FROM webhook_deliveries", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(stored, 2, "each stored once");
    for child in &mut children {
        let _ = child.kill();
        let _ = child.wait();
    }
}
