//! GET /api/addresses/{address}: what the index knows an address as, for the
//! console's one search box (a wallet, a pool or a position account).

use lendex::domain::pubkey::Pubkey;
use serde_json::{Value, json};

use crate::common::*;

#[actix_rt::test]
async fn an_address_is_named_a_pool_a_position_a_wallet_or_unknown() {
    let app = spawn_app().await;
    let db = app.db.connect().await;
    let pool = insert_pool(&db, 100_000_000).await;
    let (position, owner) = (
        Pubkey::new_unique().to_string(),
        Pubkey::new_unique().to_string(),
    );
    db.execute(
        "INSERT INTO positions (cluster, position_address, pool_address, owner, deposit_shares,
             borrow_principal, deposit_idx_snap, borrow_idx_snap)
         VALUES ('localnet', $1, $2, $3, 5, 0, 1000000000000000000, 1000000000000000000)",
        &[&position, &pool, &owner],
    )
    .await
    .unwrap();
    // A wallet known only from its recorded history (its positions closed).
    let past = Pubkey::new_unique().to_string();
    db.execute(
        "INSERT INTO history_owners (cluster, owner) VALUES ('localnet', $1)",
        &[&past],
    )
    .await
    .unwrap();
    // The same address on another cluster is not this one's.
    let elsewhere = Pubkey::new_unique().to_string();
    db.execute(
        "INSERT INTO history_owners (cluster, owner) VALUES ('devnet', $1)",
        &[&elsewhere],
    )
    .await
    .unwrap();
    let unknown = Pubkey::new_unique().to_string();
    let answer = |address: &str, kind: &str, pool: Value, owner: Value| {
        json!({
            "address": address,
            "kind": kind,
            "pool_address": pool,
            "owner": owner,
        })
    };
    for (address, expected) in [
        (&pool, answer(&pool, "pool", json!(pool), Value::Null)),
        (
            &position,
            answer(&position, "position", json!(pool), json!(owner)),
        ),
        (&owner, answer(&owner, "wallet", Value::Null, json!(owner))),
        (&past, answer(&past, "wallet", Value::Null, json!(past))),
        (
            &elsewhere,
            answer(&elsewhere, "unknown", Value::Null, Value::Null),
        ),
        (
            &unknown,
            answer(&unknown, "unknown", Value::Null, Value::Null),
        ),
    ] {
        let (status, body) = app.get(&format!("/api/addresses/{address}")).await;
        assert_eq!((status, &body), (200, &expected));
    }
    // Not a 32-byte base58 address: the spec's invalid.
    for bad in [
        "not-a-key".to_string(),
        "1".repeat(45),
        format!("{}0", &pool[1..]),
    ] {
        let (status, body) = app.get(&format!("/api/addresses/{bad}")).await;
        assert_eq!((status, body), (400, error("invalid")), "{bad}");
    }
}
