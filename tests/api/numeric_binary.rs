//! The cold load reads NUMERIC columns in PostgreSQL's binary form
//! (`store::numeric`): the values it must read exactly, and the ones it must
//! refuse, as this PostgreSQL sends them.

use lendex::store::numeric::NumericU128;

use crate::common::*;

async fn read(client: &tokio_postgres::Client, literal: &str) -> Result<NumericU128, String> {
    let row = client
        .query_one(&format!("SELECT {literal}::numeric"), &[])
        .await
        .unwrap();
    row.try_get::<_, NumericU128>(0).map_err(|e| e.to_string())
}

#[actix_rt::test]
async fn numeric_columns_read_in_binary_are_exact() {
    let db = TestDb::create().await;
    let client = db.connect().await;
    for (literal, want) in [
        ("0", 0),
        ("1", 1),
        ("9999", 9_999),
        ("10000", 10_000),
        ("20000000000", 20_000_000_000),
        ("1000000000000000000", 1_000_000_000_000_000_000),
        (
            "1230000000000000000000000",
            1_230_000_000_000_000_000_000_000,
        ),
        ("5.000", 5),
        ("340282366920938463463374607431768211455", u128::MAX),
    ] {
        assert_eq!(
            read(&client, literal).await,
            Ok(NumericU128(want)),
            "{literal}"
        );
    }
    for literal in [
        "-1",
        "0.5",
        "'NaN'",
        "340282366920938463463374607431768211456",
    ] {
        assert!(read(&client, literal).await.is_err(), "{literal}");
    }
}
