//! Pyth price feed accounts (docs/design.md §17): the Solana Receiver's
//! `PriceUpdateV2`, decoded, judged usable or named by what is wrong with it,
//! and its distance from a pool's copy of the price. A pool's
//! `pyth_price_feed` names the account the UpdateOraclePrice crank copies.

use borsh::{BorshDeserialize, BorshSerialize};

use super::pubkey::Pubkey;
use crate::wad::Big;

/// sha256("account:PriceUpdateV2")[..8]
pub const PRICE_UPDATE_DISCRIMINATOR: [u8; 8] = [0x22, 0xf1, 0x23, 0x63, 0x9d, 0x7e, 0xf4, 0xcd];
/// The Pyth Solana Receiver program on mainnet and devnet (`[oracle]
/// receiver_program` names another on a local chain).
pub const RECEIVER_PROGRAM: &str = "rec5EKMGg6MxZYaMdyBfgwp4d5rB9T1VQH5pJv5LtFJ";

/// How far the Wormhole guardians' signatures were checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, BorshDeserialize, BorshSerialize)]
pub enum Verification {
    Partial { num_signatures: u8 },
    Full,
}

/// The price as Pyth published it: `price × 10^exponent`, ± `conf`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, BorshDeserialize, BorshSerialize)]
pub struct PriceMessage {
    pub feed_id: [u8; 32],
    pub price: i64,
    pub conf: u64,
    pub exponent: i32,
    pub publish_time: i64,
    pub prev_publish_time: i64,
    pub ema_price: i64,
    pub ema_conf: u64,
}

/// A `PriceUpdateV2` account's fields, after its discriminator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, BorshDeserialize, BorshSerialize)]
pub struct PriceUpdate {
    pub write_authority: Pubkey,
    pub verification: Verification,
    pub message: PriceMessage,
    pub posted_slot: u64,
}

impl PriceUpdate {
    /// A fully verified update of `price` ± `conf` at `exponent`, published
    /// at `publish_time` (the EMA at the same price): what a local chain's
    /// feeds are written as, by the demo and the load generator.
    pub fn full(price: i64, conf: u64, exponent: i32, publish_time: i64) -> PriceUpdate {
        PriceUpdate {
            write_authority: Pubkey::new_from_array([7; 32]),
            verification: Verification::Full,
            message: PriceMessage {
                feed_id: [7; 32],
                price,
                conf,
                exponent,
                publish_time,
                prev_publish_time: publish_time - 1,
                ema_price: price,
                ema_conf: conf,
            },
            posted_slot: 0,
        }
    }

    /// The account's data as the receiver program writes it (a local
    /// chain's feeds, the demo's, the tests').
    pub fn encode(&self) -> Vec<u8> {
        let mut out = PRICE_UPDATE_DISCRIMINATOR.to_vec();
        BorshSerialize::serialize(self, &mut out).expect("a Vec takes every byte");
        out
    }
}

/// What Lendex keeps of a feed account: what the valuation and the pools
/// status read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeedPrice {
    pub price: i64,
    pub conf: u64,
    pub exponent: i32,
    pub publish_time: i64,
    pub posted_slot: u64,
}

impl From<&PriceUpdate> for FeedPrice {
    fn from(u: &PriceUpdate) -> FeedPrice {
        FeedPrice {
            price: u.message.price,
            conf: u.message.conf,
            exponent: u.message.exponent,
            publish_time: u.message.publish_time,
            posted_slot: u.posted_slot,
        }
    }
}

/// What a pool's feed is to the valuation: `Ok` is usable; every other
/// status values the pool at its copy (docs/design.md §17).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FeedStatus {
    Ok,
    /// The pool names no feed.
    Unset,
    /// No such account (followed: usable once written).
    Missing,
    /// Another owner, another discriminator, or data too short.
    NotAPriceUpdate,
    PartiallyVerified,
    /// A price at or below zero.
    Nonpositive,
}

impl FeedStatus {
    /// Every status, usable first.
    pub const ALL: [FeedStatus; 6] = [
        FeedStatus::Ok,
        FeedStatus::Unset,
        FeedStatus::Missing,
        FeedStatus::NotAPriceUpdate,
        FeedStatus::PartiallyVerified,
        FeedStatus::Nonpositive,
    ];

    /// Its name on the wire and in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            FeedStatus::Ok => "ok",
            FeedStatus::Unset => "unset",
            FeedStatus::Missing => "missing",
            FeedStatus::NotAPriceUpdate => "not_a_price_update",
            FeedStatus::PartiallyVerified => "partially_verified",
            FeedStatus::Nonpositive => "nonpositive",
        }
    }

    /// The status named `name`, if any.
    pub fn parse(name: &str) -> Option<FeedStatus> {
        FeedStatus::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

/// A feed account's data decoded: its discriminator and every field through
/// `posted_slot` (trailing bytes ignored); None otherwise.
pub fn decode(data: &[u8]) -> Option<PriceUpdate> {
    let body = data.strip_prefix(&PRICE_UPDATE_DISCRIMINATOR)?;
    let mut rest = body;
    PriceUpdate::deserialize(&mut rest).ok()
}

/// A pool's feed as read: the account (its owner and data) when it exists.
pub struct FeedAccount<'a> {
    pub owner: &'a Pubkey,
    pub data: &'a [u8],
}

/// A pool's feed judged: its status (the first that holds, in the order of
/// `FeedStatus`), and its fields whenever the data decodes (pools status shows
/// them whatever the status).
pub fn judge(
    named: Option<&Pubkey>,
    account: Option<FeedAccount<'_>>,
    receiver: &Pubkey,
) -> (FeedStatus, Option<PriceUpdate>) {
    if named.is_none() {
        return (FeedStatus::Unset, None);
    }
    let Some(account) = account else {
        return (FeedStatus::Missing, None);
    };
    let decoded = decode(account.data);
    let status = match decoded {
        _ if account.owner != receiver => FeedStatus::NotAPriceUpdate,
        None => FeedStatus::NotAPriceUpdate,
        Some(u) if matches!(u.verification, Verification::Partial { .. }) => {
            FeedStatus::PartiallyVerified
        }
        Some(u) if u.message.price <= 0 => FeedStatus::Nonpositive,
        Some(_) => FeedStatus::Ok,
    };
    let shown = decoded.filter(|_| account.owner == receiver);
    (status, shown)
}

/// (feed − copy) / copy × 10,000, each price scaled by its own exponent,
/// exact and rounded toward zero; None unless both prices are above zero.
/// Past what an i64 holds it saturates (a copy 10^19 times below its feed).
pub fn deviation_bps(feed: (i64, i32), copy: (i64, i32)) -> Option<i64> {
    let ((fp, fe), (cp, ce)) = (feed, copy);
    if fp <= 0 || cp <= 0 {
        return None;
    }
    // Both on the smaller exponent: F = fp·10^(fe−m), C = cp·10^(ce−m).
    let m = fe.min(ce);
    let gap = |e: i32| (i64::from(e) - i64::from(m)) as u64;
    // 10^130 × 2^63 × 10^4 stays below 2^512; a wider gap is settled by
    // which side it lifts.
    const WIDEST: u64 = 130;
    if gap(fe) > WIDEST {
        return Some(i64::MAX); // the feed is above the copy by more than 10^130
    }
    if gap(ce) > WIDEST {
        return Some(-9_999); // the feed is a vanishing part of the copy
    }
    let ten = Big::from(10u8);
    let f = Big::from(fp as u64) * ten.pow(Big::from(gap(fe)));
    let c = Big::from(cp as u64) * ten.pow(Big::from(gap(ce)));
    let bps = Big::from(10_000u16);
    // Truncation toward zero, on magnitudes.
    let (magnitude, negative) = if f >= c {
        ((f - c) * bps / c, false)
    } else {
        ((c - f) * bps / c, true)
    };
    let magnitude = i64::try_from(magnitude).unwrap_or(i64::MAX);
    Some(if negative { -magnitude } else { magnitude })
}

#[cfg(test)]
mod tests {
    use borsh::BorshSerialize;
    use num_bigint::BigInt;
    use proptest::prelude::*;

    use super::*;

    /// The account as the receiver program writes it (borsh, field by field).
    fn encode(update: &Update) -> Vec<u8> {
        let mut out = PRICE_UPDATE_DISCRIMINATOR.to_vec();
        out.extend_from_slice(&update.write_authority);
        match update.verification {
            None => out.push(1),
            Some(n) => out.extend_from_slice(&[0, n]),
        }
        out.extend_from_slice(&update.feed_id);
        update.price.serialize(&mut out).unwrap();
        update.conf.serialize(&mut out).unwrap();
        update.exponent.serialize(&mut out).unwrap();
        update.publish_time.serialize(&mut out).unwrap();
        update.prev_publish_time.serialize(&mut out).unwrap();
        update.ema_price.serialize(&mut out).unwrap();
        update.ema_conf.serialize(&mut out).unwrap();
        update.posted_slot.serialize(&mut out).unwrap();
        out
    }

    #[derive(Debug, Clone)]
    struct Update {
        write_authority: [u8; 32],
        /// None: Full; Some(n): Partial with n signatures.
        verification: Option<u8>,
        feed_id: [u8; 32],
        price: i64,
        conf: u64,
        exponent: i32,
        publish_time: i64,
        prev_publish_time: i64,
        ema_price: i64,
        ema_conf: u64,
        posted_slot: u64,
    }

    fn update() -> impl Strategy<Value = Update> {
        (
            (any::<[u8; 32]>(), any::<Option<u8>>(), any::<[u8; 32]>()),
            (any::<i64>(), any::<u64>(), any::<i32>()),
            (any::<i64>(), any::<i64>(), any::<i64>(), any::<u64>()),
            any::<u64>(),
        )
            .prop_map(|((wa, v, id), (p, c, e), (pt, ppt, ep, ec), slot)| Update {
                write_authority: wa,
                verification: v,
                feed_id: id,
                price: p,
                conf: c,
                exponent: e,
                publish_time: pt,
                prev_publish_time: ppt,
                ema_price: ep,
                ema_conf: ec,
                posted_slot: slot,
            })
    }

    fn receiver() -> Pubkey {
        RECEIVER_PROGRAM.parse().unwrap()
    }

    #[test]
    fn the_discriminator_is_the_anchor_hash() {
        use sha2::{Digest, Sha256};
        let hash = Sha256::digest(b"account:PriceUpdateV2");
        assert_eq!(hash[..8], PRICE_UPDATE_DISCRIMINATOR);
    }

    #[test]
    fn every_status_is_named_and_parsed_back() {
        for status in FeedStatus::ALL {
            assert_eq!(FeedStatus::parse(status.as_str()), Some(status));
        }
        let names: std::collections::HashSet<&str> =
            FeedStatus::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(names.len(), FeedStatus::ALL.len());
        assert_eq!(FeedStatus::parse("OK"), None);
    }

    proptest! {
        #[test]
        fn every_field_is_read_back(u in update(), trailing in proptest::collection::vec(any::<u8>(), 0..40)) {
            let mut data = encode(&u);
            // The service's own encoder writes the same bytes.
            prop_assert_eq!(decode(&data).map(|d| d.encode()), Some(data.clone()));
            data.extend(trailing);
            let d = decode(&data).expect("a whole account decodes");
            prop_assert_eq!(d.write_authority, Pubkey::new_from_array(u.write_authority));
            prop_assert_eq!(d.verification, match u.verification {
                None => Verification::Full,
                Some(n) => Verification::Partial { num_signatures: n },
            });
            let m = d.message;
            prop_assert_eq!(m.feed_id, u.feed_id);
            prop_assert_eq!((m.price, m.conf, m.exponent), (u.price, u.conf, u.exponent));
            prop_assert_eq!((m.publish_time, m.prev_publish_time), (u.publish_time, u.prev_publish_time));
            prop_assert_eq!((m.ema_price, m.ema_conf), (u.ema_price, u.ema_conf));
            prop_assert_eq!(d.posted_slot, u.posted_slot);
        }

        #[test]
        fn short_data_is_not_a_price_update(u in update(), cut in 0usize..200) {
            let data = encode(&u);
            let cut = cut % data.len();
            prop_assert!(decode(&data[..cut]).is_none());
            let owner = receiver();
            let feed = Pubkey::new_from_array([7; 32]);
            let account = FeedAccount { owner: &owner, data: &data[..cut] };
            prop_assert_eq!(judge(Some(&feed), Some(account), &owner).0, FeedStatus::NotAPriceUpdate);
        }

        #[test]
        fn the_status_is_the_first_that_holds(u in update(), foreign in any::<bool>(), wrong in any::<bool>()) {
            let mut data = encode(&u);
            if wrong {
                data[0] ^= 1;
            }
            let owner = if foreign { Pubkey::new_from_array([9; 32]) } else { receiver() };
            let feed = Pubkey::new_from_array([7; 32]);
            let (status, shown) = judge(Some(&feed), Some(FeedAccount { owner: &owner, data: &data }), &receiver());
            let expected = if foreign || wrong {
                FeedStatus::NotAPriceUpdate
            } else if u.verification.is_some() {
                FeedStatus::PartiallyVerified
            } else if u.price <= 0 {
                FeedStatus::Nonpositive
            } else {
                FeedStatus::Ok
            };
            prop_assert_eq!(status, expected);
            prop_assert_eq!(shown.is_some(), !foreign && !wrong);
        }

        #[test]
        fn the_deviation_is_exact_and_rounded_toward_zero(
            fp in 1i64..=i64::MAX, fe in -30i32..30, cp in 1i64..=i64::MAX, ce in -30i32..30,
        ) {
            // Brute force on rationals: (fp·10^fe − cp·10^ce)·10^4 / (cp·10^ce).
            let m = fe.min(ce);
            let ten = |e: i32| BigInt::from(10).pow((e - m) as u32);
            let f = BigInt::from(fp) * ten(fe);
            let c = BigInt::from(cp) * ten(ce);
            let exact: BigInt = (f - &c) * 10_000 / c; // BigInt division truncates toward zero
            let expected = i64::try_from(exact).unwrap_or(i64::MAX);
            prop_assert_eq!(deviation_bps((fp, fe), (cp, ce)), Some(expected));
        }
    }

    #[test]
    fn unset_and_missing_come_first() {
        let owner = receiver();
        let feed = Pubkey::new_from_array([7; 32]);
        assert_eq!(judge(None, None, &owner), (FeedStatus::Unset, None));
        assert_eq!(
            judge(Some(&feed), None, &owner),
            (FeedStatus::Missing, None)
        );
    }

    #[test]
    fn a_deviation_needs_two_positive_prices() {
        assert_eq!(deviation_bps((0, -8), (100, -8)), None);
        assert_eq!(deviation_bps((100, -8), (-1, -8)), None);
        assert_eq!(deviation_bps((101, -8), (100, -8)), Some(100));
        assert_eq!(deviation_bps((99, -8), (100, -8)), Some(-100));
        // 1.0001 against 1: 1 bp; 1.00009 against 1: 0 (toward zero).
        assert_eq!(deviation_bps((100_010, -5), (1, 0)), Some(1));
        assert_eq!(deviation_bps((-100_009, -5), (1, 0)), None);
        assert_eq!(deviation_bps((100_009, -5), (1, 0)), Some(0));
        assert_eq!(deviation_bps((99_991, -5), (1, 0)), Some(0));
        // Exponent gaps past what is worked out: saturated.
        assert_eq!(deviation_bps((1, 200), (1, -200)), Some(i64::MAX));
        assert_eq!(deviation_bps((1, -200), (1, 200)), Some(-9_999));
    }
}
