//! The feed's change log (sql/0011): every committed change of what the
//! health engine reads, as its row was committed, under the tick of its
//! transaction. Every replica reads it tick after tick, so all of them apply
//! the same changes in the same order and number the same events alike.

use deadpool_postgres::Pool;

use crate::db::engine_rows::{PoolKeys, pool_state, position_state};
use crate::db::feed_clock::{Clock, clock, unsigned};
use crate::db::queries;
use crate::domain::pubkey::Pubkey;
use crate::engine::Change;
use crate::error::ApiResult;

/// The changes of one tick, in the order they were made.
#[derive(Debug, Default)]
pub struct Tick {
    pub tick: u64,
    pub changes: Vec<Change>,
}

/// What a read of the log after some tick found.
#[derive(Debug)]
pub enum Read {
    /// Every tick up to `clock.tick` (those with changes of this cluster listed).
    Ticks { clock: Clock, ticks: Vec<Tick> },
    /// Some of the ticks wanted are pruned, or there are more changes than one
    /// read takes (a bulk write): the engine reloads everything instead.
    Reload,
}

/// The changes of cluster `cluster` committed after tick `after`, at most
/// `max_rows` position changes. Two round trips: the clock, then its ticks'
/// pool and position changes and the clock again, pipelined. The second
/// clock runs after the change reads: if no prune had reached `after` by
/// then, they saw every change of their range.
pub async fn read_after(
    db: &Pool,
    cluster: &'static str,
    after: u64,
    max_rows: usize,
) -> ApiResult<Read> {
    let client = db.get().await?;
    let clock = clock(&client).await?;
    if clock.pruned_through > after {
        return Ok(Read::Reload);
    }
    if clock.tick <= after {
        return Ok(Read::Ticks {
            clock,
            ticks: Vec::new(),
        });
    }
    let (from, to) = (signed(after), signed(clock.tick));
    let limit = i64::try_from(max_rows).unwrap_or(i64::MAX - 1) + 1;
    let (pools, positions, again) = futures_util::try_join!(
        async {
            let statement = client.prepare_cached(queries::FEED_POOL_CHANGES).await?;
            client.query(&statement, &[&from, &to, &cluster]).await
        },
        async {
            let statement = client
                .prepare_cached(queries::FEED_POSITION_CHANGES)
                .await?;
            client
                .query(&statement, &[&from, &to, &cluster, &limit])
                .await
        },
        async {
            let statement = client.prepare_cached(queries::FEED_CLOCK).await?;
            client.query_one(&statement, &[]).await
        },
    )?;
    if positions.len() > max_rows || unsigned(again.get("pruned_through")) > after {
        return Ok(Read::Reload);
    }
    let mut ticks: Vec<Tick> = Vec::new();
    let mut push = |tick: u64, change: Change| match ticks.last_mut() {
        Some(last) if last.tick == tick => last.changes.push(change),
        _ => ticks.push(Tick {
            tick,
            changes: vec![change],
        }),
    };
    // Merged by tick, a tick's pools first: the engine applies a tick's
    // pools before its positions anyway (`Engine::apply`).
    let mut pool_changes = pools
        .iter()
        .filter_map(|row| {
            let tick = unsigned(row.get("change_tick"));
            let change = match row.get::<_, &str>("kind") {
                "P" => row
                    .get::<_, &str>("pool_address")
                    .parse::<Pubkey>()
                    .ok()
                    .map(Change::PoolRemoved),
                _ => pool_state(row).map(Change::Pool),
            };
            change.map(|c| (tick, c))
        })
        .peekable();
    let mut keys = PoolKeys::default();
    for row in &positions {
        let tick = unsigned(row.get(col::TICK));
        while let Some((t, change)) = pool_changes.next_if(|(t, _)| *t <= tick) {
            push(t, change);
        }
        let Some((owner, position, row_health_factor)) = position_state(row, &mut keys) else {
            continue;
        };
        let change = match row.get::<_, &str>(col::KIND) {
            "x" => Change::Removed {
                owner,
                position: position.address,
                slot: position.slot,
            },
            _ => Change::Position {
                owner,
                position,
                row_health_factor,
            },
        };
        push(tick, change);
    }
    for (tick, change) in pool_changes {
        push(tick, change);
    }
    Ok(Read::Ticks { clock, ticks })
}

/// The extra columns of FEED_POSITION_CHANGES, after the position's own.
mod col {
    pub const TICK: usize = 11;
    pub const KIND: usize = 12;
}

/// Prunes the changes older than `keep_seconds` (the lease holder's chore);
/// returns how many rows went. The pruned ticks are declared first, in their
/// own transaction, and deleted after: a replica reading in between either
/// still finds every row or sees the mark (its second clock read) and
/// reloads. The clock row is held only for the mark, not for the delete.
pub async fn prune(db: &Pool, keep_seconds: f64) -> ApiResult<u64> {
    let client = db.get().await?;
    let Some(mark) = client
        .query_opt(queries::FEED_PRUNE_MARK, &[&keep_seconds])
        .await?
    else {
        return Ok(0);
    };
    let through: i64 = mark.get(0);
    Ok(client
        .execute(queries::FEED_PRUNE_DELETE, &[&through])
        .await?)
}

fn signed(tick: u64) -> i64 {
    i64::try_from(tick).unwrap_or(i64::MAX)
}
