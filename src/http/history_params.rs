//! The parameters of the history reads (docs/design.md §12), parsed once:
//! `from` / `to` (RFC 3339 or Unix milliseconds; by default the 24 hours up
//! to now), `resolution`, `limit` and `cursor`. Anything malformed is
//! `400 invalid`. A cursor is opaque to clients: it names its listing and
//! resolution, the first page's `to`, and where the next page starts.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::DateTime;

use crate::domain::history::{DAY_US, Resolution};
use crate::error::{ApiError, ApiResult};
use crate::http::query::Query;

/// The default window: the 24 hours up to `to`.
pub const DEFAULT_SPAN_US: i64 = DAY_US;
/// The longest raw listing (points, events, prices, market samples).
pub const MAX_RAW_SPAN_US: i64 = 31 * DAY_US;
pub const DEFAULT_LIMIT: i64 = 500;
pub const MAX_LIMIT: i64 = 5000;

/// Which listing a cursor continues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listing {
    OwnerPoints = 1,
    Events = 2,
    Prices = 3,
    Market = 4,
}

/// A time parameter: RFC 3339, or whole Unix milliseconds.
pub fn parse_time(text: &str) -> ApiResult<i64> {
    if !text.is_empty() && text.len() <= 15 && text.bytes().all(|b| b.is_ascii_digit()) {
        let ms: i64 = text.parse().map_err(|_| ApiError::Invalid)?;
        return Ok(ms * 1_000);
    }
    let at = DateTime::parse_from_rfc3339(text).map_err(|_| ApiError::Invalid)?;
    Ok(at.timestamp_micros())
}

/// Where a continued listing stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    pub listing: Listing,
    pub resolution: Resolution,
    /// The first page's `to`: rows added after it are not in this paging.
    pub to_us: i64,
    /// Points, prices and samples: the next page's first time; events: the
    /// id the next page's are below.
    pub next: i64,
}

const CURSOR_VERSION: u8 = 1;

impl Cursor {
    pub fn encode(&self) -> String {
        let mut bytes = Vec::with_capacity(19);
        bytes.push(CURSOR_VERSION);
        bytes.push(self.listing as u8);
        bytes.push(self.resolution.code() as u8);
        bytes.extend_from_slice(&self.to_us.to_be_bytes());
        bytes.extend_from_slice(&self.next.to_be_bytes());
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// A cursor of this listing and resolution, or `invalid`.
    pub fn decode(text: &str, listing: Listing, resolution: Resolution) -> ApiResult<Cursor> {
        let bytes = URL_SAFE_NO_PAD
            .decode(text)
            .map_err(|_| ApiError::Invalid)?;
        let [version, l, r, rest @ ..] = bytes.as_slice() else {
            return Err(ApiError::Invalid);
        };
        if *version != CURSOR_VERSION
            || *l != listing as u8
            || i16::from(*r) != resolution.code()
            || rest.len() != 16
        {
            return Err(ApiError::Invalid);
        }
        let to_us = i64::from_be_bytes(rest[..8].try_into().expect("8 bytes"));
        let next = i64::from_be_bytes(rest[8..].try_into().expect("8 bytes"));
        Ok(Cursor {
            listing,
            resolution,
            to_us,
            next,
        })
    }
}

/// A history read's window and paging, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub from_us: i64,
    pub to_us: i64,
    pub resolution: Resolution,
    pub limit: i64,
    pub cursor: Option<Cursor>,
}

impl Window {
    /// Where this page starts: `from`, or past the last page.
    pub fn page_from(&self) -> i64 {
        match self.cursor {
            Some(c) if self.listing_by_time() => self.from_us.max(c.next),
            _ => self.from_us,
        }
    }

    fn listing_by_time(&self) -> bool {
        self.cursor.is_some_and(|c| c.listing != Listing::Events)
    }

    /// The cursor of the page after this one.
    pub fn next(&self, listing: Listing, next: i64) -> String {
        Cursor {
            listing,
            resolution: self.resolution,
            to_us: self.to_us,
            next,
        }
        .encode()
    }
}

/// The parameters of `listing`; `resolution` is read only where the listing
/// has buckets (elsewhere raw). `now_us` is the default `to`.
pub fn window(query: Query, listing: Listing, now_us: i64) -> ApiResult<Window> {
    let resolution = match listing {
        Listing::OwnerPoints | Listing::Market => match query.get("resolution") {
            Some(r) => Resolution::parse(&r).ok_or(ApiError::Invalid)?,
            None => Resolution::Raw,
        },
        Listing::Events | Listing::Prices => Resolution::Raw,
    };
    let cursor = query
        .get("cursor")
        .map(|c| Cursor::decode(&c, listing, resolution))
        .transpose()?;
    let to_us = match (cursor, query.get("to")) {
        (Some(c), _) => c.to_us,
        (None, Some(t)) => parse_time(&t)?,
        (None, None) => now_us,
    };
    let from_us = match query.get("from") {
        Some(f) => parse_time(&f)?,
        None => to_us.saturating_sub(DEFAULT_SPAN_US),
    };
    if from_us >= to_us {
        return Err(ApiError::Invalid);
    }
    if resolution == Resolution::Raw && to_us - from_us > MAX_RAW_SPAN_US {
        return Err(ApiError::Invalid);
    }
    Ok(Window {
        from_us,
        to_us,
        resolution,
        limit: limit(query.get("limit").as_deref())?,
        cursor,
    })
}

/// `limit`: a positive whole number, at most 5000 (larger is clamped); 500 when absent.
pub fn limit(raw: Option<&str>) -> ApiResult<i64> {
    let Some(raw) = raw else {
        return Ok(DEFAULT_LIMIT);
    };
    if raw.is_empty() || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ApiError::Invalid);
    }
    let n = raw.parse::<u64>().unwrap_or(u64::MAX);
    if n == 0 {
        return Err(ApiError::Invalid);
    }
    Ok(n.min(MAX_LIMIT as u64) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_764_079_387_000_000; // 2025-11-25T14:03:07Z

    fn w(query: &str) -> ApiResult<Window> {
        window(Query(query), Listing::OwnerPoints, NOW)
    }

    #[test]
    fn times_are_rfc3339_or_unix_milliseconds() {
        assert_eq!(parse_time("1764079387000"), Ok(NOW));
        assert_eq!(parse_time("2025-11-25T14:03:07Z"), Ok(NOW));
        assert_eq!(parse_time("2025-11-25T15:03:07+01:00"), Ok(NOW));
        assert_eq!(parse_time("2025-11-25T14:03:07.5Z"), Ok(NOW + 500_000));
        for bad in [
            "",
            "yesterday",
            "-5",
            "1.5",
            "2025-11-25",
            "9999999999999999999",
        ] {
            assert_eq!(parse_time(bad), Err(ApiError::Invalid), "{bad}");
        }
    }

    #[test]
    fn the_window_defaults_to_the_last_day() {
        let d = w("").unwrap();
        assert_eq!((d.from_us, d.to_us), (NOW - DAY_US, NOW));
        assert_eq!(
            (d.resolution, d.limit, d.cursor),
            (Resolution::Raw, 500, None)
        );
        let d = w("to=1000&from=0").unwrap();
        assert_eq!((d.from_us, d.to_us), (0, 1_000_000));
    }

    #[test]
    fn malformed_reversed_or_too_long_is_invalid() {
        for bad in [
            "from=x",
            "to=2025-13-01T00:00:00Z",
            "from=2000&to=1000",
            "from=1000&to=1000",
            "from=0&to=2678400001", // 31 days and a millisecond
            "resolution=2h",
            "resolution=RAW",
            "limit=0",
            "limit=-1",
            "limit=ten",
            "cursor=%%%",
            "cursor=AQE",
        ] {
            assert_eq!(w(bad), Err(ApiError::Invalid), "{bad}");
        }
        assert!(w("from=0&to=2678400000").is_ok(), "exactly 31 days");
        assert!(
            w("from=0&to=99999999999&resolution=1d").is_ok(),
            "buckets may span more"
        );
        assert_eq!(w("limit=99999999999999999999999").unwrap().limit, 5000);
    }

    #[test]
    fn a_cursor_keeps_its_to_and_names_its_listing() {
        let c = Cursor {
            listing: Listing::OwnerPoints,
            resolution: Resolution::Hour,
            to_us: NOW,
            next: NOW - 5,
        };
        let text = c.encode();
        let d = w(&format!("resolution=1h&cursor={text}&to=5")).unwrap();
        assert_eq!(d.to_us, NOW, "the first page's to");
        assert_eq!(d.page_from(), NOW - 5);
        assert_eq!(
            w(&format!("resolution=1m&cursor={text}")),
            Err(ApiError::Invalid)
        );
        let other = window(Query(&format!("cursor={text}")), Listing::Events, NOW);
        assert_eq!(other, Err(ApiError::Invalid));
    }
}
