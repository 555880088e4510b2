//! The ingest step on encoded accounts: what each read becomes, and the slot
//! rule of notifications.

use std::collections::{BTreeMap, BTreeSet};

use super::*;
use lendex_domain::accounts::{LendingPool, UserPosition, encode_pool, encode_position};
use lendex_domain::index_writes::AccountWrite;
use lendex_domain::raw::AccountUpdate;

const CLUSTER: &str = "localnet";

fn ingest() -> Ingest {
    Ingest {
        receiver: Some(Pubkey::new_from_array([77; 32])),
        program: Pubkey::new_from_array([9; 32]),
        cluster: CLUSTER,
    }
}

fn pool_data(price: i64) -> Vec<u8> {
    encode_pool(&LendingPool {
        oracle_price: Some(price),
        oracle_expo: Some(-8),
        ..LendingPool::default()
    })
}

fn position_data(owner: Pubkey, pool: Pubkey, deposit: u64) -> Vec<u8> {
    encode_position(&UserPosition {
        owner,
        pool,
        deposit_shares: deposit,
        ..UserPosition::default()
    })
}

fn read(owner: Pubkey, data: Vec<u8>, slot: u64) -> AccountRead {
    AccountRead {
        slot,
        account: Some(RawAccount {
            owner,
            lamports: 1,
            data,
        }),
    }
}

fn notified(pubkey: Pubkey, data: Vec<u8>, slot: u64) -> AccountUpdate {
    AccountUpdate {
        slot,
        pubkey,
        owner: ingest().program,
        lamports: Some(1),
        data,
        write_version: None,
    }
}

#[test]
fn a_position_sync_derives_the_address_and_removes_what_is_gone() {
    let (i, pool, user) = (ingest(), Pubkey::new_unique(), Pubkey::new_unique());
    let pool_read = read(i.program, pool_data(100), 50);
    let position_read = read(i.program, position_data(user, pool, 7), 40);
    let (write, exists) = i
        .position(&pool, &user, &pool_read, &position_read)
        .unwrap();
    assert!(exists);
    assert_eq!(
        write.position_address,
        i.position_address(&pool, &user).to_string()
    );
    assert_eq!(write.slot, 40, "the older of the two reads");
    assert_eq!(write.position.unwrap().deposit_shares, 7);
    assert!(write.pool.is_some(), "the pool's state goes with it");

    let gone = AccountRead {
        slot: 60,
        account: None,
    };
    let (write, exists) = i.position(&pool, &user, &pool_read, &gone).unwrap();
    assert!(
        !exists && write.position.is_none(),
        "closed on chain: removed"
    );

    // Another wallet's position, another program's account: invalid.
    let theirs = read(i.program, position_data(Pubkey::new_unique(), pool, 7), 40);
    assert_eq!(
        i.position(&pool, &user, &pool_read, &theirs).err(),
        Some(AccountCheck::Invalid)
    );
    let foreign = read(Pubkey::new_unique(), pool_data(1), 40);
    assert_eq!(
        i.position(&pool, &user, &foreign, &position_read).err(),
        Some(AccountCheck::Invalid)
    );
}

#[test]
fn a_scan_keeps_only_this_pools_positions() {
    let (i, pool) = (ingest(), Pubkey::new_unique());
    let mine = Pubkey::new_unique();
    let accounts = vec![
        (
            mine,
            RawAccount {
                owner: i.program,
                lamports: 1,
                data: position_data(Pubkey::new_unique(), pool, 3),
            },
        ),
        (
            Pubkey::new_unique(),
            RawAccount {
                owner: i.program,
                lamports: 1,
                data: position_data(Pubkey::new_unique(), Pubkey::new_unique(), 3),
            },
        ),
        (
            Pubkey::new_unique(),
            RawAccount {
                owner: Pubkey::new_unique(),
                lamports: 1,
                data: position_data(Pubkey::new_unique(), pool, 3),
            },
        ),
    ];
    let parts = i.reconcile(&pool, 77, accounts);
    assert_eq!(parts.len(), 1);
    let refresh = &parts[0];
    assert_eq!(refresh.slot, 77);
    let kept: Vec<&String> = refresh.positions.iter().map(|(a, _)| a).collect();
    assert_eq!(kept, [&mine.to_string()]);
    assert_eq!(refresh.prune_all_but, Some(vec![mine.to_string()]));
}

#[test]
fn a_large_scan_is_written_in_parts_and_the_last_prunes() {
    let i = ingest();
    let pool = Pubkey::new_unique();
    let accounts: Vec<_> = (0..2 * RECONCILE_PART + 1)
        .map(|_| {
            (
                Pubkey::new_unique(),
                RawAccount {
                    owner: i.program,
                    lamports: 1,
                    data: position_data(Pubkey::new_unique(), pool, 3),
                },
            )
        })
        .collect();
    let all: Vec<String> = accounts.iter().map(|(k, _)| k.to_string()).collect();
    let parts = i.reconcile(&pool, 9, accounts);
    let sizes: Vec<usize> = parts.iter().map(|p| p.positions.len()).collect();
    assert_eq!(sizes, [RECONCILE_PART, RECONCILE_PART, 1]);
    let written: Vec<&String> = parts
        .iter()
        .flat_map(|p| p.positions.iter().map(|(a, _)| a))
        .collect();
    assert_eq!(
        written,
        all.iter().collect::<Vec<_>>(),
        "every one, in order"
    );
    assert!(parts[..2].iter().all(|p| p.prune_all_but.is_none()));
    assert_eq!(parts[2].prune_all_but.as_ref(), Some(&all));
    assert!(i.reconcile(&pool, 9, Vec::new())[0].prune_all_but == Some(Vec::new()));
}

#[test]
fn notifications_are_sorted_by_kind() {
    let pool = Pubkey::new_unique();
    let position = Pubkey::new_unique();
    let batch = [
        notified(pool, pool_data(1), 1),
        notified(position, position_data(Pubkey::new_unique(), pool, 1), 1),
        notified(Pubkey::new_unique(), vec![0; 8], 1),
    ];
    let sorted = sort_out(&batch);
    assert_eq!(sorted.pools.into_iter().collect::<Vec<_>>(), [pool]);
    assert_eq!(
        sorted.positions.into_iter().collect::<Vec<_>>(),
        [(position, pool)]
    );
}

/// §7: a notification whose slot proves it newer is written as it came; one
/// at or below the slot the subscription was confirmed at (it may be the
/// subscription's) is re-read, and so is data that is not a valid account.
#[test]
fn only_a_provable_slot_is_written_as_notified() {
    let i = ingest();
    let (pool, position, owner) = (
        Pubkey::new_unique(),
        Pubkey::new_unique(),
        Pubkey::new_unique(),
    );
    let batch = [
        notified(pool, pool_data(5), 1_000),
        notified(position, position_data(owner, pool, 9), 1_000),
    ];
    let wanted = sort_out(&batch);

    let (writes, reread) = i.notified(&batch, &wanted, 999);
    assert!(reread.is_empty());
    assert_eq!(writes.len(), 2);
    for write in &writes {
        match write {
            AccountWrite::Pool(w) => assert_eq!((w.slot, w.catch_up), (1_000, false)),
            AccountWrite::Position(w) => {
                assert_eq!(w.slot, 1_000);
                assert_eq!(w.owner, owner);
                assert!(w.pool.is_none(), "the pool comes with its own notification");
            }
            AccountWrite::Feed(w) => panic!("no feed was notified: {w:?}"),
        }
    }

    let (writes, reread) = i.notified(&batch, &wanted, 1_000);
    assert!(
        writes.is_empty(),
        "a slot at the subscription's proves nothing"
    );
    assert_eq!(reread, BTreeSet::from([pool, position]));

    let garbled = [notified(position, vec![1, 2, 3], 5_000)];
    let (writes, reread) = i.notified(&garbled, &wanted, 0);
    assert!(writes.is_empty());
    assert_eq!(
        reread,
        BTreeSet::from([pool, position]),
        "the pool has no notification of its own here: re-read"
    );
}

#[test]
fn a_reread_position_carries_its_pools_state_and_skips_what_is_gone() {
    let i = ingest();
    let (pool, position, gone) = (
        Pubkey::new_unique(),
        Pubkey::new_unique(),
        Pubkey::new_unique(),
    );
    let owner = Pubkey::new_unique();
    let wanted = Notifications {
        pools: BTreeSet::new(),
        positions: BTreeSet::from([(position, pool), (gone, pool)]),
    };
    assert_eq!(
        wanted.keys()[0],
        pool,
        "the pool is read with its positions"
    );
    let reads = BTreeMap::from([
        (pool, read(i.program, pool_data(3), 20)),
        (position, read(i.program, position_data(owner, pool, 4), 21)),
        (
            gone,
            AccountRead {
                slot: 21,
                account: None,
            },
        ),
    ]);
    let writes = i.reread(&wanted, &reads);
    assert_eq!(
        writes.len(),
        2,
        "the pool, and the one position still there"
    );
    let AccountWrite::Position(w) = &writes[1] else {
        panic!("{writes:?}")
    };
    assert_eq!((w.slot, w.pool.is_some()), (21, true));
}

fn streamed(pubkey: Pubkey, data: Vec<u8>, slot: u64, write_version: u64) -> AccountUpdate {
    AccountUpdate {
        write_version: Some(write_version),
        ..notified(pubkey, data, slot)
    }
}

#[test]
fn a_streamed_write_is_written_as_it_came_with_its_version() {
    let (i, pool, user) = (ingest(), Pubkey::new_unique(), Pubkey::new_unique());
    match i.streamed(&streamed(pool, pool_data(5), 70, 3)) {
        Streamed::Write { pool: p, write } => {
            let AccountWrite::Pool(w) = *write else {
                panic!("{write:?}")
            };
            assert_eq!(p, pool);
            assert_eq!((w.slot, w.write_version, w.catch_up), (70, Some(3), false));
            assert_eq!(w.pool.oracle_price, Some(5));
        }
        other => panic!("{other:?}"),
    }
    let position = Pubkey::new_unique();
    // Longer data than the layout is fine (docs/design.md §2).
    let mut data = position_data(user, pool, 8);
    data.extend([0; 16]);
    match i.streamed(&streamed(position, data, 71, 4)) {
        Streamed::Write { pool: p, write } => {
            let AccountWrite::Position(w) = *write else {
                panic!("{write:?}")
            };
            assert_eq!(p, pool);
            assert_eq!((w.slot, w.write_version, w.owner), (71, Some(4), user));
            assert!(w.pool.is_none(), "a streamed position carries no pool read");
            assert_eq!(w.position.unwrap().deposit_shares, 8);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn unusable_streamed_accounts_are_skipped_and_closed_ones_named() {
    let (i, pool, user) = (ingest(), Pubkey::new_unique(), Pubkey::new_unique());
    let key = Pubkey::new_unique();
    let skipped = |n: AccountUpdate| match i.streamed(&n) {
        Streamed::Skipped(why) => why,
        other => panic!("{other:?}"),
    };
    let short = position_data(user, pool, 1)[..40].to_vec();
    assert_eq!(skipped(streamed(key, short, 5, 1)), "undecodable position");
    assert_eq!(
        skipped(streamed(key, pool_data(1)[..20].to_vec(), 5, 1)),
        "undecodable pool"
    );
    assert_eq!(
        skipped(streamed(key, vec![7; 64], 5, 1)),
        "unknown discriminator"
    );
    // Another program's account, or one with no lamports left: closed (the
    // caller removes it when it is a position it holds).
    let other = AccountUpdate {
        owner: Pubkey::new_unique(),
        ..streamed(key, position_data(user, pool, 1), 6, 2)
    };
    let emptied = AccountUpdate {
        lamports: Some(0),
        ..streamed(key, position_data(user, pool, 1), 7, 3)
    };
    for n in [other, emptied] {
        let slot = n.slot;
        assert!(matches!(
            i.streamed(&n),
            Streamed::Closed { account, slot: s } if account == key && s == slot
        ));
    }
}

#[test]
fn a_batch_keeps_each_accounts_highest_slot_and_version() {
    let (a, b) = (Pubkey::new_unique(), Pubkey::new_unique());
    let batch = [
        streamed(a, vec![1], 10, 5),
        streamed(a, vec![2], 10, 4), // older, arrived later
        streamed(b, vec![3], 9, 9),
        streamed(b, vec![4], 11, 1), // a later slot wins over any version
        streamed(a, vec![5], 10, 5), // a repeat: the later arrival
    ];
    let kept: Vec<(Pubkey, Vec<u8>)> = latest(&batch)
        .into_iter()
        .map(|n| (n.pubkey, n.data.clone()))
        .collect();
    let mut want = vec![(a, vec![5]), (b, vec![4])];
    want.sort();
    assert_eq!(kept, want);
}

#[test]
fn writes_are_grouped_by_slot_older_first_in_arrival_order() {
    let removal = |n: u8, slot: u64| {
        AccountWrite::Position(SyncPosition {
            cluster: "localnet",
            pool_address: Pubkey::new_from_array([9; 32]).to_string(),
            pool: None,
            position_address: Pubkey::new_from_array([n; 32]).to_string(),
            owner: Pubkey::new_from_array([n; 32]),
            position: None,
            slot,
            write_version: None,
        })
    };
    let writes = vec![
        removal(1, 7),
        removal(2, 5),
        removal(3, 7),
        removal(4, 6),
        removal(5, 5),
    ];
    let groups: Vec<Vec<(u64, Pubkey)>> = by_slot(writes)
        .iter()
        .map(|g| g.iter().map(|w| (w.slot(), w.account())).collect())
        .collect();
    let k = |n: u8| Pubkey::new_from_array([n; 32]);
    assert_eq!(
        groups,
        vec![
            vec![(5, k(2)), (5, k(5))],
            vec![(6, k(4))],
            vec![(7, k(1)), (7, k(3))],
        ]
    );
}

fn price_update(price: i64) -> lendex_domain::pyth::PriceUpdate {
    use lendex_domain::pyth::{PriceMessage, PriceUpdate, Verification};
    PriceUpdate {
        write_authority: Pubkey::new_from_array([5; 32]),
        verification: Verification::Full,
        message: PriceMessage {
            feed_id: [6; 32],
            price,
            conf: 20,
            exponent: -8,
            publish_time: 1_700_000_000,
            prev_publish_time: 1_699_999_999,
            ema_price: price,
            ema_conf: 20,
        },
        posted_slot: 990,
    }
}

#[test]
fn a_feed_read_is_judged_and_kept_with_its_slot() {
    use lendex_domain::pyth::FeedStatus;
    let i = ingest();
    let feed = Pubkey::new_from_array([40; 32]);
    let receiver = i.receiver.unwrap();
    let ok = i
        .feed(
            &feed,
            &read(receiver, price_update(7).encode(), 1_000),
            true,
        )
        .unwrap();
    assert_eq!(
        (ok.status, ok.slot, ok.catch_up),
        (FeedStatus::Ok, 1_000, true)
    );
    let price = ok.price.unwrap();
    assert_eq!((price.price, price.conf, price.exponent), (7, 20, -8));
    assert_eq!(
        (price.publish_time, price.posted_slot),
        (1_700_000_000, 990)
    );
    // Another owner: not a price update, and its fields are not shown.
    let foreign = i
        .feed(
            &feed,
            &read(i.program, price_update(7).encode(), 1_001),
            false,
        )
        .unwrap();
    assert_eq!(
        (foreign.status, foreign.price),
        (FeedStatus::NotAPriceUpdate, None)
    );
    // No account, or one with no lamports: missing.
    let missing = AccountRead {
        slot: 1_002,
        account: None,
    };
    assert_eq!(
        i.feed(&feed, &missing, false).unwrap().status,
        FeedStatus::Missing
    );
    let mut gone = read(receiver, price_update(7).encode(), 1_003);
    gone.account.as_mut().unwrap().lamports = 0;
    assert_eq!(
        i.feed(&feed, &gone, false).unwrap().status,
        FeedStatus::Missing
    );
    // Feeds off: nothing is written.
    let off = Ingest {
        receiver: None,
        ..i
    };
    assert!(off.feed(&feed, &missing, false).is_none());
}

#[test]
fn a_streamed_feed_keeps_its_write_version_and_a_closed_one_is_missing() {
    use lendex_domain::pyth::FeedStatus;
    let i = ingest();
    let feed = Pubkey::new_from_array([41; 32]);
    let mut update = AccountUpdate {
        slot: 2_000,
        pubkey: feed,
        owner: i.receiver.unwrap(),
        lamports: Some(1),
        data: price_update(0).encode(),
        write_version: Some(8),
    };
    let write = i.streamed_feed(&update).unwrap();
    assert_eq!(
        (write.feed, write.status, write.slot, write.write_version),
        (feed, FeedStatus::Nonpositive, 2_000, Some(8))
    );
    update.lamports = Some(0);
    assert_eq!(
        i.streamed_feed(&update).unwrap().status,
        FeedStatus::Missing
    );
}
