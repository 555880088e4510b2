//! The change log (sql/0011): every committed change of what the
//! health engine reads, as its row was committed, under the tick of its
//! transaction. Every replica reads it tick after tick, so all of them apply
//! the same changes in the same order and number the same events alike.

use deadpool_postgres::Pool;

use crate::change_clock::{Clock, clock, unsigned};
use crate::engine_rows::{PoolKeys, feed_reading, pool_state, position_state};
use crate::error::{DbError, DbResult};
use crate::overlay::OverlayChange;
use crate::queries;
use lendex_domain::pubkey::Pubkey;
use lendex_engine::Change;

/// The changes of one tick, in the order they were made.
#[derive(Debug, Default)]
pub struct Tick {
    pub tick: u64,
    pub changes: Vec<Change>,
    /// The processed overlay's moves (docs/design.md §15), in their order.
    pub overlay: Vec<OverlayChange>,
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
/// `max_rows` position changes; with `overlay`, the processed overlay's
/// moves too (a server reading at processed). Two round trips: the clock, then its ticks'
/// pool and position changes and the clock again, pipelined. The second
/// clock runs after the change reads: if no prune had reached `after` by
/// then, they saw every change of their range.
pub async fn read_after(
    db: &Pool,
    cluster: &'static str,
    after: u64,
    max_rows: usize,
    overlay: bool,
) -> DbResult<Read> {
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
    let (pools, positions, touches, feeds, moves, again) = futures_util::try_join!(
        async {
            let statement = client.prepare_cached(queries::FEED_POOL_CHANGES).await?;
            Ok::<_, DbError>(client.query(&statement, &[&from, &to, &cluster]).await?)
        },
        async {
            let statement = client
                .prepare_cached(queries::FEED_POSITION_CHANGES)
                .await?;
            Ok(client
                .query(&statement, &[&from, &to, &cluster, &limit])
                .await?)
        },
        async {
            let statement = client.prepare_cached(queries::FEED_TOUCHES).await?;
            Ok(client
                .query(&statement, &[&from, &to, &cluster, &limit])
                .await?)
        },
        async {
            let statement = client.prepare_cached(queries::FEED_ORACLE_CHANGES).await?;
            Ok(client.query(&statement, &[&from, &to, &cluster]).await?)
        },
        async {
            if !overlay {
                return Ok(Some(Vec::new()));
            }
            crate::overlay::read_changes(&client, cluster, (from, to), limit).await
        },
        async {
            let statement = client.prepare_cached(queries::FEED_CLOCK).await?;
            Ok(client.query_one(&statement, &[]).await?)
        },
    )?;
    let Some(moves) = moves else {
        return Ok(Read::Reload);
    };
    if positions.len() > max_rows
        || touches.len() > max_rows
        || unsigned(again.get("pruned_through")) > after
    {
        return Ok(Read::Reload);
    }
    let mut ticks: Vec<Tick> = Vec::new();
    let mut push = |tick: u64, change: Change| match ticks.last_mut() {
        Some(last) if last.tick == tick => last.changes.push(change),
        _ => ticks.push(Tick {
            tick,
            changes: vec![change],
            overlay: Vec::new(),
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
    let touches = touches.iter().filter_map(|row| {
        let tick = unsigned(row.get("change_tick"));
        touch(row).map(|change| (tick, change))
    });
    let feeds = feeds.iter().filter_map(|row| {
        let tick = unsigned(row.get("change_tick"));
        feed_reading(row).map(|(feed, reading)| (tick, Change::Feed { feed, reading }))
    });
    // A tick's touches and feeds after its rows: a feed is valued against
    // the pools as the tick leaves them.
    let ticks = with_trailing(with_trailing(ticks, touches), feeds);
    Ok(Read::Ticks {
        clock,
        ticks: with_moves(ticks, moves),
    })
}

/// A touch as the engine applies it (FEED_TOUCHES), None when unusable.
fn touch(row: &tokio_postgres::Row) -> Option<Change> {
    let slot = unsigned(row.get::<_, Option<i64>>("slot")?);
    let synced_us = row
        .get::<_, Option<chrono::DateTime<chrono::Utc>>>("last_synced_at")?
        .timestamp_micros();
    let key = |column: &str| row.get::<_, Option<&str>>(column)?.parse::<Pubkey>().ok();
    match row.get::<_, &str>("kind") {
        "T" => Some(Change::PoolTouched {
            pool: key("pool_address")?,
            slot,
            synced_us,
        }),
        _ => Some(Change::Touched {
            owner: key("owner")?,
            position: key("position_address")?,
            slot,
            synced_us,
        }),
    }
}

/// `ticks` (in tick order) with each change added at the end of its tick's
/// changes, or as a tick of its own: touches are applied after the rows they
/// may follow (`Engine::apply`), feeds after the pools they value.
fn with_trailing(ticks: Vec<Tick>, touches: impl IntoIterator<Item = (u64, Change)>) -> Vec<Tick> {
    let mut out: Vec<Tick> = Vec::with_capacity(ticks.len());
    let mut touches = touches.into_iter().peekable();
    for mut tick in ticks {
        while let Some((t, change)) = touches.next_if(|(t, _)| *t < tick.tick) {
            push_change(&mut out, t, change);
        }
        while let Some((_, change)) = touches.next_if(|(t, _)| *t == tick.tick) {
            tick.changes.push(change);
        }
        out.push(tick);
    }
    for (t, change) in touches {
        push_change(&mut out, t, change);
    }
    out
}

fn push_change(ticks: &mut Vec<Tick>, tick: u64, change: Change) {
    match ticks.last_mut() {
        Some(last) if last.tick == tick => last.changes.push(change),
        _ => ticks.push(Tick {
            tick,
            changes: vec![change],
            overlay: Vec::new(),
        }),
    }
}

/// `ticks` with the overlay's moves in their ticks, or in ticks of their own.
fn with_moves(ticks: Vec<Tick>, moves: Vec<(u64, OverlayChange)>) -> Vec<Tick> {
    if moves.is_empty() {
        return ticks;
    }
    let mut by_tick: std::collections::BTreeMap<u64, Tick> =
        ticks.into_iter().map(|t| (t.tick, t)).collect();
    for (tick, change) in moves {
        (by_tick.entry(tick).or_insert_with(|| Tick {
            tick,
            ..Tick::default()
        }))
        .overlay
        .push(change);
    }
    by_tick.into_values().collect()
}

/// The extra columns of FEED_POSITION_CHANGES, after the position's own.
mod col {
    pub(super) const TICK: usize = 11;
    pub(super) const KIND: usize = 12;
}

/// Prunes the changes older than `keep_seconds` (the lease holder's chore);
/// returns how many rows went. The pruned ticks are declared first, in their
/// own transaction, and deleted after: a replica reading in between either
/// still finds every row or sees the mark (its second clock read) and
/// reloads. The clock row is held only for the mark, not for the delete.
pub async fn prune(db: &Pool, keep_seconds: f64) -> DbResult<u64> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn touched(n: u8) -> Change {
        Change::Touched {
            owner: Pubkey::new_from_array([n; 32]),
            position: Pubkey::new_from_array([n; 32]),
            slot: u64::from(n),
            synced_us: i64::from(n),
        }
    }

    fn removed(n: u8) -> Change {
        Change::Removed {
            owner: Pubkey::new_from_array([n; 32]),
            position: Pubkey::new_from_array([n; 32]),
            slot: u64::from(n),
        }
    }

    #[test]
    fn overlay_moves_join_their_tick_or_make_their_own_in_order() {
        let retract = |n: u8| OverlayChange::Retract {
            account: Pubkey::new_from_array([n; 32]),
            rolled_back: false,
        };
        let ticks = vec![Tick {
            tick: 4,
            changes: vec![removed(4)],
            ..Tick::default()
        }];
        let merged = with_moves(
            ticks,
            vec![(2, retract(2)), (4, retract(4)), (4, retract(5))],
        );
        let shape: Vec<(u64, usize, usize)> = (merged.iter())
            .map(|t| (t.tick, t.changes.len(), t.overlay.len()))
            .collect();
        assert_eq!(shape, vec![(2, 0, 1), (4, 1, 2)]);
        assert_eq!(merged[1].overlay, vec![retract(4), retract(5)]);
    }

    #[test]
    fn touches_go_last_in_their_tick_or_in_a_tick_of_their_own() {
        let ticks = vec![
            Tick {
                tick: 3,
                changes: vec![removed(3)],
                ..Tick::default()
            },
            Tick {
                tick: 6,
                changes: vec![removed(6)],
                ..Tick::default()
            },
        ];
        let touches = [
            (2, touched(2)),
            (3, touched(3)),
            (5, touched(5)),
            (5, touched(50)),
            (9, touched(9)),
        ];
        let merged = with_trailing(ticks, touches);
        let shape: Vec<(u64, Vec<Change>)> =
            merged.into_iter().map(|t| (t.tick, t.changes)).collect();
        assert_eq!(
            shape,
            vec![
                (2, vec![touched(2)]),
                (3, vec![removed(3), touched(3)]),
                (5, vec![touched(5), touched(50)]),
                (6, vec![removed(6)]),
                (9, vec![touched(9)]),
            ]
        );
    }
}
