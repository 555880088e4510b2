//! History (docs/design.md §12) as pure rules: what is recorded of an owner's
//! health (`rule`), the `liquidated` inference (`liquidated`), and how points
//! are summed into buckets (`buckets`). The vocabularies are here, once: each
//! is stored as a small integer and served as its name.

pub mod buckets;
pub mod liquidated;
pub mod rule;

/// Why a health point was recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cause {
    /// The owner's positions changed.
    Position,
    /// A pool's oracle price or confidence changed.
    Price,
    /// Any other pool field changed (indexes, threshold, decimals).
    Terms,
    /// A baseline, a reload or a reconciliation found a difference.
    Load,
}

impl Cause {
    pub const ALL: [Cause; 4] = [Cause::Position, Cause::Price, Cause::Terms, Cause::Load];

    pub const fn as_str(self) -> &'static str {
        match self {
            Cause::Position => "position",
            Cause::Price => "price",
            Cause::Terms => "terms",
            Cause::Load => "load",
        }
    }

    /// The stored code (a smallint column).
    pub const fn code(self) -> i16 {
        match self {
            Cause::Position => 1,
            Cause::Price => 2,
            Cause::Terms => 3,
            Cause::Load => 4,
        }
    }

    pub fn from_code(code: i16) -> Option<Cause> {
        Cause::ALL.into_iter().find(|c| c.code() == code)
    }
}

/// What happened to an account.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// The health factor went from at least 1 WAD to below it.
    Under,
    /// Back to at least 1 WAD.
    Recovered,
    /// Inferred: debt repaid and collateral seized at one slot while under water.
    Liquidated,
    /// The collateral value became 0 while debt remained.
    BadDebt,
}

impl EventKind {
    pub const ALL: [EventKind; 4] = [
        EventKind::Under,
        EventKind::Recovered,
        EventKind::Liquidated,
        EventKind::BadDebt,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            EventKind::Under => "under",
            EventKind::Recovered => "recovered",
            EventKind::Liquidated => "liquidated",
            EventKind::BadDebt => "bad_debt",
        }
    }

    pub const fn code(self) -> i16 {
        match self {
            EventKind::Under => 1,
            EventKind::Recovered => 2,
            EventKind::Liquidated => 3,
            EventKind::BadDebt => 4,
        }
    }

    pub fn from_code(code: i16) -> Option<EventKind> {
        EventKind::ALL.into_iter().find(|k| k.code() == code)
    }

    pub fn parse(s: &str) -> Option<EventKind> {
        EventKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// Whose price a price row records (docs/design.md §12, §17): the pool's
/// copy, or its Pyth feed's reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PriceSource {
    Pool,
    Feed,
}

impl PriceSource {
    pub const ALL: [PriceSource; 2] = [PriceSource::Pool, PriceSource::Feed];

    pub const fn as_str(self) -> &'static str {
        match self {
            PriceSource::Pool => "pool",
            PriceSource::Feed => "feed",
        }
    }

    /// The stored code (a "char" column).
    pub const fn code(self) -> i8 {
        match self {
            PriceSource::Pool => b'p' as i8,
            PriceSource::Feed => b'f' as i8,
        }
    }

    pub fn from_code(code: i8) -> Option<PriceSource> {
        PriceSource::ALL.into_iter().find(|s| s.code() == code)
    }
}

/// The bucket width of a history read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Resolution {
    Raw,
    Minute,
    FiveMinutes,
    Hour,
    Day,
}

impl Resolution {
    pub const ALL: [Resolution; 5] = [
        Resolution::Raw,
        Resolution::Minute,
        Resolution::FiveMinutes,
        Resolution::Hour,
        Resolution::Day,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Resolution::Raw => "raw",
            Resolution::Minute => "1m",
            Resolution::FiveMinutes => "5m",
            Resolution::Hour => "1h",
            Resolution::Day => "1d",
        }
    }

    pub fn parse(s: &str) -> Option<Resolution> {
        Resolution::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// The bucket width in microseconds (None: raw points).
    pub const fn width_us(self) -> Option<i64> {
        const MINUTE: i64 = 60_000_000;
        match self {
            Resolution::Raw => None,
            Resolution::Minute => Some(MINUTE),
            Resolution::FiveMinutes => Some(5 * MINUTE),
            Resolution::Hour => Some(60 * MINUTE),
            Resolution::Day => Some(24 * 60 * MINUTE),
        }
    }

    /// The stored code of a market rollup (raw points are not rolled up).
    pub const fn code(self) -> i16 {
        match self {
            Resolution::Raw => 0,
            Resolution::Minute => 1,
            Resolution::FiveMinutes => 2,
            Resolution::Hour => 3,
            Resolution::Day => 4,
        }
    }
}

/// The start of the bucket of `width_us` holding `at_us` (both in microseconds
/// since the Unix epoch). Buckets are aligned on the epoch, so a day's bucket
/// starts at UTC midnight.
pub const fn bucket_start(at_us: i64, width_us: i64) -> i64 {
    at_us.div_euclid(width_us) * width_us
}

/// Microseconds in a UTC day: history is partitioned by day.
pub const DAY_US: i64 = 86_400_000_000;

/// The first day kept when `retention_days` are: today and the days before it.
pub fn keep_from(today: chrono::NaiveDate, retention_days: u32) -> chrono::NaiveDate {
    today
        .checked_sub_days(chrono::Days::new(u64::from(retention_days.max(1)) - 1))
        .unwrap_or(today)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vocabularies_round_trip() {
        for c in Cause::ALL {
            assert_eq!(Cause::from_code(c.code()), Some(c));
        }
        for k in EventKind::ALL {
            assert_eq!(EventKind::from_code(k.code()), Some(k));
            assert_eq!(EventKind::parse(k.as_str()), Some(k));
        }
        for r in Resolution::ALL {
            assert_eq!(Resolution::parse(r.as_str()), Some(r));
        }
        for s in PriceSource::ALL {
            assert_eq!(PriceSource::from_code(s.code()), Some(s));
        }
        assert_eq!(Resolution::parse("2h"), None);
        assert_eq!(EventKind::parse("Under"), None);
    }

    #[test]
    fn retention_keeps_today_and_the_days_before() {
        let day = |d| chrono::NaiveDate::from_ymd_opt(2026, 11, d).unwrap();
        assert_eq!(
            keep_from(day(25), 31),
            chrono::NaiveDate::from_ymd_opt(2026, 10, 26).unwrap()
        );
        assert_eq!(keep_from(day(25), 1), day(25));
        assert_eq!(keep_from(day(25), 2), day(24));
    }

    #[test]
    fn buckets_align_on_the_epoch() {
        let day = DAY_US;
        assert_eq!(bucket_start(day + 5, day), day);
        assert_eq!(bucket_start(day - 1, day), 0);
        assert_eq!(bucket_start(-1, day), -day);
        assert_eq!(bucket_start(3_599_999_999, 3_600_000_000), 0);
    }
}
