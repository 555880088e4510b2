//! Query strings, read in place: `application/x-www-form-urlencoded` pairs
//! split on `&` and the first `=`, with `+` as a space and `%XX` escapes
//! decoded (invalid UTF-8 replaced), as `form_urlencoded` reads them. A part
//! without escapes is borrowed, so the liquidators' `?limit=50` costs no
//! allocation.

use std::borrow::Cow;

use percent_encoding::percent_decode;

use crate::domain::pubkey::{Pubkey, is_pubkey, parse_pubkey};
use crate::error::{ApiError, ApiResult};

/// A request's query string, read through typed getters.
#[derive(Clone, Copy)]
pub struct Query<'q>(pub &'q str);

impl<'q> Query<'q> {
    /// `400 invalid` when a key or value holds a NUL (PostgreSQL text cannot).
    /// The request line holds no raw NUL (the parser refuses it), so only an
    /// escape can make one.
    pub fn check(self) -> ApiResult<Self> {
        let has_nul = self.0.contains('%')
            && pairs(self.0).any(|(k, v)| k.contains('\0') || v.contains('\0'));
        if has_nul {
            Err(ApiError::Invalid)
        } else {
            Ok(self)
        }
    }

    /// A parameter (the last one when repeated); an empty value counts as absent.
    pub fn get(self, key: &str) -> Option<Cow<'q, str>> {
        last(self.0, key).filter(|v| !v.is_empty())
    }

    /// A parameter that must be a base58 pubkey when present, parsed (else `400 invalid`).
    pub fn key(self, key: &str) -> ApiResult<Option<Pubkey>> {
        self.get(key)
            .map(|v| parse_pubkey(&v).map_err(|_| ApiError::Invalid))
            .transpose()
    }

    /// A parameter that must be a base58 pubkey when present (else `400 invalid`).
    pub fn pubkey(self, key: &str) -> ApiResult<Option<Cow<'q, str>>> {
        match self.get(key) {
            Some(v) if !is_pubkey(&v) => Err(ApiError::Invalid),
            other => Ok(other),
        }
    }
}

/// Every pair, in order; empty `&&` sequences are skipped.
pub fn pairs(query: &str) -> impl Iterator<Item = (Cow<'_, str>, Cow<'_, str>)> {
    query.split('&').filter(|p| !p.is_empty()).map(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        (decode(key), decode(value))
    })
}

/// The value of the last pair named `key`, if any.
pub fn last<'q>(query: &'q str, key: &str) -> Option<Cow<'q, str>> {
    // A query with no escape names `key` only if it holds it as written: one
    // vectorised search, and a poll's absent parameters cost no split.
    let escaped = memchr::memchr2(b'%', b'+', query.as_bytes()).is_some();
    if !escaped && memchr::memmem::find(query.as_bytes(), key.as_bytes()).is_none() {
        return None;
    }
    pairs(query)
        .filter(|(k, _)| k == key)
        .last()
        .map(|(_, v)| v)
}

fn decode(part: &str) -> Cow<'_, str> {
    if !part.bytes().any(|b| b == b'%' || b == b'+') {
        return Cow::Borrowed(part);
    }
    let spaced = part.replace('+', " ");
    Cow::Owned(
        percent_decode(spaced.as_bytes())
            .decode_utf8_lossy()
            .into_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn reference(query: &str) -> Vec<(String, String)> {
        form_urlencoded::parse(query.as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect()
    }

    fn ours(query: &str) -> Vec<(String, String)> {
        pairs(query)
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect()
    }

    #[test]
    fn plain_parts_are_borrowed_and_escapes_decoded() {
        let got: Vec<_> = pairs("limit=50&pool=&a+b=%41%2&x").collect();
        assert!(matches!(
            got[0],
            (Cow::Borrowed("limit"), Cow::Borrowed("50"))
        ));
        assert_eq!(got[1], (Cow::Borrowed("pool"), Cow::Borrowed("")));
        assert_eq!(
            got[2],
            (Cow::Owned::<str>("a b".into()), Cow::Owned("A%2".into()))
        );
        assert_eq!(got[3], (Cow::Borrowed("x"), Cow::Borrowed("")));
        assert_eq!(last("limit=5&limit=7", "limit").as_deref(), Some("7"));
        assert_eq!(last("limit=5", "pool"), None);
        assert_eq!(last("a=b=c", "a").as_deref(), Some("b=c"));
        assert_eq!(last("li%6Dit=1&limit=2&x=3", "limit").as_deref(), Some("2"));
        assert_eq!(last("limit=1&li%6Dit=%32", "limit").as_deref(), Some("2"));
    }

    #[test]
    fn a_nul_anywhere_is_invalid_and_empty_values_are_absent() {
        assert!(Query("a=%00").check().is_err());
        assert!(Query("%00=1").check().is_err());
        assert!(Query("a=0&b=%2500").check().is_ok());
        assert_eq!(Query("limit=&limit=").get("limit"), None);
        assert!(Query("pool=xyz").key("pool").is_err());
        assert_eq!(Query("").key("pool").unwrap(), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// Reads every query string exactly as the decoder used before.
        #[test]
        fn reads_as_form_urlencoded_does(query in "([a-z=&+%]|%[0-9a-fA-F]{2}|%[c-f][0-9a-f]|é){0,24}") {
            let expected = reference(&query);
            prop_assert_eq!(ours(&query), expected.clone());
            for key in ["a", "b", "", " ", "a b"] {
                let want = expected.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
                let got = last(&query, key);
                prop_assert_eq!(got.as_deref(), want);
            }
        }
    }
}
