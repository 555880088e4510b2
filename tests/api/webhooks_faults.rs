//! Webhooks under load and trouble (docs/design.md §18): a move of more
//! owners than one delivery holds goes out in parts; a deleted webhook gets
//! nothing more; a database outage during deliveries loses none; a change
//! a replica takes in by a full reload is judged all the same.

use std::time::Duration;

use lendex::domain::pubkey::Pubkey;
use serde_json::{Value, json};

use crate::common::*;
use crate::fixtures::history::{Book, book, served, set_price};
use crate::fixtures::receiver::Receiver;
use crate::fixtures::webhooks::{created, delete, known_to_replicas};
use lendex_testkit::proxy::TcpProxy;

/// `n` owners, each with 10 of `collateral` ($20) against 100 of `debt`
/// ($1): 1.6 WAD each. Their keys, sorted.
async fn owners(
    db: &tokio_postgres::Client,
    collateral: &str,
    debt: &str,
    n: usize,
) -> Vec<String> {
    let mut keys: Vec<Pubkey> = (0..n).map(|_| Pubkey::new_unique()).collect();
    keys.sort();
    let owners: Vec<String> = keys.iter().map(Pubkey::to_string).collect();
    let address = |_| Pubkey::new_unique().to_string();
    let deposits: Vec<String> = owners.iter().map(address).collect();
    let borrows: Vec<String> = owners.iter().map(address).collect();
    db.execute(
        "INSERT INTO positions (cluster, position_address, pool_address, owner, deposit_shares,
             borrow_principal, deposit_idx_snap, borrow_idx_snap, slot)
         SELECT 'localnet', d, $4, o, 10000000, 0, 1000000000000000000, 1000000000000000000, 10
         FROM unnest($1::text[], $3::text[]) AS t(d, o)
         UNION ALL
         SELECT 'localnet', b, $5, o, 0, 100000000, 1000000000000000000, 1000000000000000000, 10
         FROM unnest($2::text[], $3::text[]) AS t(b, o)",
        &[&deposits, &borrows, &owners, &collateral, &debt],
    )
    .await
    .unwrap();
    owners
}

/// Every event received, with the delivery id and change id it came in.
fn received(receiver: &Receiver) -> Vec<(String, Value)> {
    receiver
        .received()
        .iter()
        .flat_map(|r| {
            let id = r.header("webhook-id").to_string();
            let body = r.json();
            body["events"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| (id.clone(), e.clone()))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[actix_rt::test]
async fn a_move_past_a_thousand_owners_goes_out_in_parts_and_a_deleted_webhook_hears_no_more() {
    let app = spawn_app_with(|c| c.webhooks.allow_private_targets = true).await;
    let db = app.db.connect().await;
    let (sol, usdc) = (
        insert_pool(&db, 20 * ORACLE_DOLLAR).await,
        insert_pool(&db, ORACLE_DOLLAR).await,
    );
    let owners = owners(&db, &sol, &usdc, 1_001).await;
    let loaded = eventually(Duration::from_secs(20), async || {
        served(&app, owners.last().unwrap()).await.is_some()
    })
    .await;
    assert!(loaded);
    let receiver = Receiver::start(vec![]);
    let (webhook, _) = created(&app, &receiver.url).await;
    known_to_replicas().await;

    set_price(&db, &sol, 12 * ORACLE_DOLLAR).await;
    let all = eventually(Duration::from_secs(20), async || {
        received(&receiver).len() == 1_001
    })
    .await;
    assert!(all, "{} events", received(&receiver).len());
    let requests = receiver.received();
    assert_eq!(requests.len(), 2, "1,000 and 1");
    let bodies: Vec<Value> = requests.iter().map(|r| r.json()).collect();
    assert_eq!(bodies[0]["events"].as_array().unwrap().len(), 1_000);
    assert_eq!(bodies[0]["change_id"], bodies[1]["change_id"]);
    assert_ne!(bodies[0]["delivery_id"], bodies[1]["delivery_id"]);
    // Sorted by owner across the parts: every replica cuts them alike.
    let got: Vec<String> = received(&receiver)
        .iter()
        .map(|(_, e)| e["owner"].as_str().unwrap().to_string())
        .collect();
    assert!(got == owners, "not in the owners' order");

    // Deleted: the way back is no one's business any more.
    assert_eq!(delete(&app, &app.root, &webhook).await.0, 200);
    set_price(&db, &sol, 20 * ORACLE_DOLLAR).await;
    let back = eventually(Duration::from_secs(10), async || {
        served(&app, &owners[0]).await == Some("1600000000000000000".into())
    })
    .await;
    assert!(back);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(receiver.received().len(), 2, "nothing after the delete");
}

#[actix_rt::test]
async fn a_database_outage_during_deliveries_loses_none() {
    let pg = TcpProxy::start("127.0.0.1:5432").await;
    let proxied = pg.url.clone();
    let app = spawn_app_with(|c| {
        through_proxy(c, &proxied);
        c.webhooks.allow_private_targets = true;
    })
    .await;
    let db = app.db.connect().await;
    let b: Book = book(&app, &db).await;
    let receiver = Receiver::start(vec![]);
    created(&app, &receiver.url).await;
    known_to_replicas().await;

    set_price(&db, &b.sol, 12 * ORACLE_DOLLAR).await;
    let under = eventually(Duration::from_secs(10), async || {
        served(&app, &b.owner).await == Some("960000000000000000".into())
    })
    .await;
    assert!(under);
    pg.down();
    // The chain moves on while the database is away (written around the proxy).
    set_price(&db, &b.sol, 20 * ORACLE_DOLLAR).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    pg.up();

    let both = eventually(Duration::from_secs(30), async || {
        let kinds: std::collections::BTreeSet<String> = received(&receiver)
            .iter()
            .map(|(_, e)| e["type"].as_str().unwrap().to_string())
            .collect();
        kinds.len() == 2
    })
    .await;
    let got = received(&receiver);
    assert!(both, "{got:?}");
    // At least once: a repeat carries its id; each event is of one id.
    let mut ids: Vec<&str> = got.iter().map(|(id, _)| id.as_str()).collect();
    ids.dedup();
    assert_eq!(ids.len(), 2, "{got:?}");
    let kinds: Vec<&str> = got
        .iter()
        .map(|(_, e)| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"health.below"));
    assert_eq!(kinds.last(), Some(&"health.recovered"));
    let mut health = Value::Null;
    let pending = eventually(Duration::from_secs(10), async || {
        health = app.get("/api/health").await.1;
        health["checks"]["webhooks"]["pending"] == json!(0)
    })
    .await;
    assert!(pending, "the backlog drained: {health}");
}

/// A change taken in by a full reload (here the log pruned past the
/// replica, as after an outage or a pause) rather than tick by tick is
/// judged as one change: the owner's way back is announced.
#[actix_rt::test]
async fn a_change_taken_in_by_a_reload_is_judged() {
    let app = spawn_app_with(|c| c.webhooks.allow_private_targets = true).await;
    let mut db = app.db.connect().await;
    let b: Book = book(&app, &db).await;
    let receiver = Receiver::start(vec![]);
    created(&app, &receiver.url).await;
    known_to_replicas().await;
    set_price(&db, &b.sol, 12 * ORACLE_DOLLAR).await;
    let below = eventually(Duration::from_secs(10), async || {
        received(&receiver).len() == 1
    })
    .await;
    assert!(below, "{:?}", received(&receiver));

    // One transaction: the move and the prune that passes it.
    let tx = db.transaction().await.unwrap();
    set_price(&tx, &b.sol, 20 * ORACLE_DOLLAR).await;
    tx.execute("UPDATE feed_clock SET pruned_through = tick", &[])
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let back = eventually(Duration::from_secs(10), async || {
        received(&receiver).len() == 2
    })
    .await;
    let got = received(&receiver);
    assert!(back, "{got:?}");
    assert_eq!(got[1].1["type"], "health.recovered");
    assert_eq!(got[1].1["account_health_factor_wad"], "1600000000000000000");
}
