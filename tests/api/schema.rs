//! The schema's functions and triggers have one definition, sql/functions.sql,
//! applied on start whenever it changed: a database made by any earlier
//! version ends with exactly those, under their current names.

use crate::common::*;

/// (table, trigger) of every trigger a migrated database has.
async fn triggers(db: &tokio_postgres::Client) -> Vec<(String, String)> {
    pairs(
        db,
        "SELECT tgrelid::regclass::text, tgname::text FROM pg_trigger
         WHERE NOT tgisinternal ORDER BY 1, 2",
    )
    .await
}

fn expected() -> Vec<(String, String)> {
    [
        ("oracle_feeds", "oracle_feeds_log_update"),
        ("oracle_feeds", "oracle_feeds_log_write"),
        ("pools", "pools_log_update"),
        ("pools", "pools_log_write"),
        ("positions", "positions_log_touch"),
        ("positions", "positions_log_update"),
        ("positions", "positions_log_write"),
        ("tx_log", "tx_log_notify_borrow"),
    ]
    .iter()
    .map(|(t, n)| (t.to_string(), n.to_string()))
    .collect()
}

#[actix_rt::test]
async fn a_database_of_any_age_ends_with_the_functions_of_one_file() {
    let db = TestDb::create().await;
    let pool = db.pool();
    let applied = lendex::store::migrate::run(&pool, "").await.unwrap();
    assert_eq!(applied.last(), Some(&"functions"));
    let client = db.connect().await;
    assert_eq!(triggers(&client).await, expected());

    // An older database: the change log's triggers under their retired names,
    // a function edited by hand, and the functions of another version.
    client
        .batch_execute(
            "CREATE FUNCTION lendex_notify_position() RETURNS trigger AS $$
             BEGIN RETURN NEW; END; $$ LANGUAGE plpgsql;
             CREATE TRIGGER positions_notify_write AFTER INSERT OR DELETE ON positions
                 FOR EACH ROW EXECUTE FUNCTION lendex_notify_position();
             DROP TRIGGER pools_log_update ON pools;
             CREATE OR REPLACE FUNCTION lendex_log_pool() RETURNS trigger AS $$
             BEGIN RETURN NEW; END; $$ LANGUAGE plpgsql;
             UPDATE schema_functions SET digest = 'an earlier version'",
        )
        .await
        .unwrap();
    let applied = lendex::store::migrate::run(&pool, "").await.unwrap();
    assert_eq!(applied, ["functions"]);
    assert_eq!(triggers(&client).await, expected());
    let retired = client
        .query_opt(
            "SELECT 1 FROM pg_proc WHERE proname = 'lendex_notify_position'",
            &[],
        )
        .await
        .unwrap();
    assert!(retired.is_none(), "the retired function is dropped");
    let body: String = client
        .query_one(
            "SELECT prosrc FROM pg_proc WHERE proname = 'lendex_log_pool'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(
        body.contains("lendex_log_change"),
        "the file's body is back: {body}"
    );

    // The same file again is not re-applied (re-making triggers locks tables).
    assert!(
        lendex::store::migrate::run(&pool, "")
            .await
            .unwrap()
            .is_empty()
    );
}
