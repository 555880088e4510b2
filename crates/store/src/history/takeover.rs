//! A leader taking over history: it bumps the cluster's writer epoch (from
//! then on no flush of an older leader can land), then reads what was last
//! recorded of every owner and pool: the owners' last values as of the last
//! checkpoint, overridden by any point stored after it; the ids the writer
//! will use; and the time the new records must come after.

use chrono::{DateTime, Utc};
use tokio_postgres::Client;

use super::queries;
use super::write::Ids;
use crate::numeric::NumericU128;
use lendex_domain::history::rule::Baseline;
use lendex_domain::pubkey::Pubkey;
use lendex_engine::history::{Baselines, Oracle};

pub struct Takeover {
    pub epoch: i64,
    pub baselines: Baselines,
    pub ids: Ids,
    /// The latest time recorded so far: new records are stamped after it.
    pub last_at_us: i64,
    /// Owners whose last point was stored after the checkpoint: (at, baseline),
    /// for the next checkpoint to write.
    pub after_checkpoint: Vec<(Pubkey, (i64, Baseline))>,
}

pub async fn take_over(client: &Client, cluster: &str) -> Result<Takeover, tokio_postgres::Error> {
    let epoch: i64 = client
        .query_one(queries::TAKE_OVER, &[&cluster])
        .await?
        .get(0);
    let mut ids = Ids::default();
    let mut owners = Vec::new();
    let mut last_at_us = i64::MIN;
    let mut seen = |at: Option<DateTime<Utc>>| {
        if let Some(at) = at {
            last_at_us = last_at_us.max(at.timestamp_micros());
        }
    };
    for row in client.query(queries::OWNER_BASELINES, &[&cluster]).await? {
        let Ok(owner) = row.get::<_, &str>(1).parse::<Pubkey>() else {
            continue;
        };
        ids.owners.insert(owner, row.get(0));
        let hf: Option<NumericU128> = row.get(2);
        let bad: Option<bool> = row.get(3);
        if let (Some(hf), Some(bad)) = (hf, bad) {
            owners.push((
                owner,
                Baseline {
                    health_factor: hf.0,
                    bad_debt: bad,
                },
            ));
        }
        seen(row.get(4));
    }
    // Points stored after the last checkpoint are newer than the owners' last values.
    let checkpoint: Option<DateTime<Utc>> = client
        .query_opt(queries::CHECKPOINT_AT, &[&cluster])
        .await?
        .and_then(|r| r.get(0));
    // Never checkpointed: every point counts (the epoch is before any).
    let after = checkpoint.unwrap_or(DateTime::<Utc>::UNIX_EPOCH);
    let by_id: std::collections::HashMap<i32, Pubkey> =
        ids.owners.iter().map(|(k, id)| (*id, *k)).collect();
    let mut newer: std::collections::HashMap<Pubkey, (i64, Baseline)> = Default::default();
    for row in client
        .query(queries::POINTS_AFTER, &[&cluster, &after])
        .await?
    {
        let Some(owner) = by_id.get(&row.get::<_, i32>(0)) else {
            continue;
        };
        let hf: NumericU128 = row.get(1);
        let at: DateTime<Utc> = row.get(3);
        let baseline = Baseline {
            health_factor: hf.0,
            bad_debt: row.get(2),
        };
        newer.insert(*owner, (at.timestamp_micros(), baseline));
        seen(Some(at));
    }
    let after_checkpoint: Vec<(Pubkey, (i64, Baseline))> =
        newer.iter().map(|(k, v)| (*k, *v)).collect();
    for (owner, baseline) in owners.iter_mut() {
        if let Some((_, newer)) = newer.remove(owner) {
            *baseline = newer;
        }
    }
    owners.extend(newer.into_iter().map(|(k, (_, b))| (k, b)));
    let (mut oracles, mut feed_oracles) = (Vec::new(), Vec::new());
    for row in client.query(queries::POOL_BASELINES, &[&cluster]).await? {
        let Ok(pool) = row.get::<_, &str>(1).parse::<Pubkey>() else {
            continue;
        };
        ids.pools.insert(pool, row.get(0));
        // The copy's columns from 2, the feed's from 6: price, conf, expo, at.
        for (first, last) in [(2, &mut oracles), (6, &mut feed_oracles)] {
            let at: Option<DateTime<Utc>> = row.get(first + 3);
            if at.is_some() {
                let conf: Option<NumericU128> = row.get(first + 1);
                let oracle: Oracle = (
                    row.get(first),
                    conf.and_then(|c| u64::try_from(c.0).ok()),
                    row.get(first + 2),
                );
                last.push((pool, oracle));
            }
            seen(at);
        }
    }
    let market: Option<DateTime<Utc>> = client
        .query_one(queries::LAST_MARKET_AT, &[&cluster])
        .await?
        .get(0);
    seen(market);
    Ok(Takeover {
        epoch,
        baselines: Baselines {
            owners,
            oracles,
            feed_oracles,
        },
        ids,
        last_at_us,
        after_checkpoint,
    })
}
