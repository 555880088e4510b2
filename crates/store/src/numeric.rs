//! NUMERIC columns read in PostgreSQL's binary form as exact whole numbers.
//! A million positions are read at a cold start; selecting their six NUMERIC
//! columns as text made PostgreSQL format six million decimals and Lendex
//! parse them back (about a second of PostgreSQL's CPU). The binary form is
//! base-10000 digits, taken here without rounding: anything that is not a
//! non-negative whole number fitting in a u128 is refused.
//!
//! History writes its values (u128 health factors, 256-bit sums) by binary
//! COPY, so the same form is written here too, and read back at 256 bits.

use std::error::Error;

use bytes::{BufMut, BytesMut};
use ruint::aliases::U256;
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type, to_sql_checked};

/// A NUMERIC that is a whole number in `0..=u128::MAX`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NumericU128(pub u128);

const POSITIVE: u16 = 0x0000;

fn be16(raw: &[u8], at: usize) -> Result<u16, &'static str> {
    raw.get(at..at + 2)
        .map(|b| u16::from_be_bytes([b[0], b[1]]))
        .ok_or("numeric: truncated")
}

/// The value of numeric_send's output: ndigits, weight, sign, dscale, then
/// ndigits base-10000 digits, most significant first, the first at 10000^weight.
pub fn whole_from_binary(raw: &[u8]) -> Result<u128, &'static str> {
    let ndigits = be16(raw, 0)? as i16;
    let weight = be16(raw, 2)? as i16;
    let sign = be16(raw, 4)?;
    if ndigits < 0 {
        return Err("numeric: malformed");
    }
    if sign != POSITIVE {
        return Err("numeric: negative, NaN or infinite");
    }
    if raw.len() != 8 + 2 * ndigits as usize {
        return Err("numeric: malformed");
    }
    let digit = |i: i32| -> Result<u128, &'static str> {
        if i >= i32::from(ndigits) {
            return Ok(0); // trailing zero digits are not stored
        }
        let d = be16(raw, 8 + 2 * i as usize)?;
        if d >= 10_000 {
            return Err("numeric: malformed");
        }
        Ok(u128::from(d))
    };
    let mut value: u128 = 0;
    // Digits at 10000^weight down to 10000^0.
    for i in 0..=i32::from(weight) {
        let d = digit(i)?;
        value = value
            .checked_mul(10_000)
            .and_then(|v| v.checked_add(d))
            .ok_or("numeric: out of range")?;
    }
    // Digits below 10000^0 must all be zero.
    for i in (i32::from(weight) + 1).max(0)..i32::from(ndigits) {
        if digit(i)? != 0 {
            return Err("numeric: not a whole number");
        }
    }
    Ok(value)
}

impl<'a> FromSql<'a> for NumericU128 {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn Error + Sync + Send>> {
        Ok(NumericU128(whole_from_binary(raw)?))
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::NUMERIC
    }
}

/// A NUMERIC that is a whole number in `0..2^256` (history's sums).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NumericU256(pub U256);

/// `whole_from_binary` at 256 bits.
pub fn whole256_from_binary(raw: &[u8]) -> Result<U256, &'static str> {
    let ndigits = be16(raw, 0)? as i16;
    let weight = be16(raw, 2)? as i16;
    if ndigits < 0 || raw.len() != 8 + 2 * ndigits as usize {
        return Err("numeric: malformed");
    }
    if be16(raw, 4)? != POSITIVE {
        return Err("numeric: negative, NaN or infinite");
    }
    let ten_thousand = U256::from(10_000u16);
    let mut value = U256::ZERO;
    for i in 0..=i32::from(weight).max(-1) {
        let d = if i < i32::from(ndigits) {
            be16(raw, 8 + 2 * i as usize)?
        } else {
            0
        };
        if d >= 10_000 {
            return Err("numeric: malformed");
        }
        value = value
            .checked_mul(ten_thousand)
            .and_then(|v| v.checked_add(U256::from(d)))
            .ok_or("numeric: out of range")?;
    }
    for i in (i32::from(weight) + 1).max(0)..i32::from(ndigits) {
        if be16(raw, 8 + 2 * i as usize)? != 0 {
            return Err("numeric: not a whole number");
        }
    }
    Ok(value)
}

impl<'a> FromSql<'a> for NumericU256 {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn Error + Sync + Send>> {
        Ok(NumericU256(whole256_from_binary(raw)?))
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::NUMERIC
    }
}

/// numeric_recv's input for a whole number given as base-10000 digits, least
/// significant first: ndigits, weight, sign, dscale, then the digits most
/// significant first, trailing zero digits left out (as PostgreSQL stores them).
fn put_digits(digits: &[u16], out: &mut BytesMut) {
    let weight = digits.len() as i16 - 1;
    let kept = &digits[digits.iter().position(|d| *d != 0).unwrap_or(digits.len())..];
    out.put_i16(kept.len() as i16);
    out.put_i16(weight.max(0));
    out.put_u16(POSITIVE);
    out.put_u16(0);
    for d in kept.iter().rev() {
        out.put_u16(*d);
    }
}

/// Writes `value` in NUMERIC's binary form.
pub fn put_u128(mut value: u128, out: &mut BytesMut) {
    let mut digits = [0u16; 10];
    let mut n = 0;
    while value > 0 {
        digits[n] = (value % 10_000) as u16;
        value /= 10_000;
        n += 1;
    }
    put_digits(&digits[..n], out);
}

/// Writes `value` in NUMERIC's binary form.
pub fn put_u256(value: U256, out: &mut BytesMut) {
    if let Ok(small) = u128::try_from(value) {
        return put_u128(small, out);
    }
    let mut digits = Vec::with_capacity(20);
    let (mut v, ten_thousand) = (value, U256::from(10_000u16));
    while v > U256::ZERO {
        let (q, r) = v.div_rem(ten_thousand);
        digits.push(r.to::<u16>());
        v = q;
    }
    put_digits(&digits, out);
}

impl ToSql for NumericU128 {
    fn to_sql(&self, _: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        put_u128(self.0, out);
        Ok(IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::NUMERIC
    }

    to_sql_checked!();
}

impl ToSql for NumericU256 {
    fn to_sql(&self, _: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        put_u256(self.0, out);
        Ok(IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::NUMERIC
    }

    to_sql_checked!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// numeric_send's output for a whole number, with `scale` zero digits of
    /// fraction spelled out (as a value like 5.00 keeps its display scale).
    fn send(value: u128, sign: u16) -> Vec<u8> {
        let mut digits = Vec::new();
        let mut v = value;
        while v > 0 {
            digits.push((v % 10_000) as u16);
            v /= 10_000;
        }
        digits.reverse();
        let weight = digits.len() as i16 - 1;
        // numeric_send strips trailing zero digits.
        while digits.last() == Some(&0) {
            digits.pop();
        }
        let mut out = Vec::new();
        for h in [digits.len() as u16, weight as u16, sign, 0] {
            out.extend_from_slice(&h.to_be_bytes());
        }
        for d in digits {
            out.extend_from_slice(&d.to_be_bytes());
        }
        out
    }

    fn raw(ndigits: i16, weight: i16, sign: u16, digits: &[u16]) -> Vec<u8> {
        let mut out = Vec::new();
        for h in [ndigits as u16, weight as u16, sign, 0] {
            out.extend_from_slice(&h.to_be_bytes());
        }
        for d in digits {
            out.extend_from_slice(&d.to_be_bytes());
        }
        out
    }

    #[test]
    fn edges() {
        assert_eq!(whole_from_binary(&send(0, 0)), Ok(0));
        assert_eq!(whole_from_binary(&send(10_000, 0)), Ok(10_000));
        assert_eq!(whole_from_binary(&send(u128::MAX, 0)), Ok(u128::MAX));
        assert_eq!(
            whole_from_binary(&send(1_000_000_000_000_000_000, 0)),
            Ok(1_000_000_000_000_000_000)
        );
        // u128::MAX is 340 2823 6692 0938 4634 6337 4607 4317 6821 1455; one more
        // is out of range, and so is a digit past the top.
        let max = [340, 2823, 6692, 938, 4634, 6337, 4607, 4317, 6821, 1455];
        assert_eq!(whole_from_binary(&raw(10, 9, 0, &max)), Ok(u128::MAX));
        let mut over = max;
        over[9] = 1456;
        assert_eq!(
            whole_from_binary(&raw(10, 9, 0, &over)),
            Err("numeric: out of range")
        );
        assert!(whole_from_binary(&raw(1, 10, 0, &[1])).is_err());
        // 1.5, -1, NaN.
        assert!(whole_from_binary(&raw(2, 0, 0, &[1, 5000])).is_err());
        assert!(whole_from_binary(&raw(1, 0, 0x4000, &[1])).is_err());
        assert!(whole_from_binary(&raw(0, 0, 0xC000, &[])).is_err());
        // 0.0001 (weight -1) is not whole; 5.0000 stored as one digit is.
        assert!(whole_from_binary(&raw(1, -1, 0, &[1])).is_err());
        assert_eq!(whole_from_binary(&raw(1, 0, 0, &[5])), Ok(5));
        // Malformed: a digit past 9999, a short buffer.
        assert!(whole_from_binary(&raw(1, 0, 0, &[10_000])).is_err());
        assert!(whole_from_binary(&[0, 1]).is_err());
    }

    fn written_u128(v: u128) -> Vec<u8> {
        let mut out = BytesMut::new();
        put_u128(v, &mut out);
        out.to_vec()
    }

    fn written_u256(v: U256) -> Vec<u8> {
        let mut out = BytesMut::new();
        put_u256(v, &mut out);
        out.to_vec()
    }

    #[test]
    fn written_as_postgres_sends_it() {
        for v in [1u128, 9_999, 10_000, 10_001, WAD_LIKE, u128::MAX] {
            assert_eq!(written_u128(v), send(v, 0), "{v}");
        }
        // Zero as PostgreSQL writes it: no digit, weight 0.
        assert_eq!(written_u128(0), vec![0; 8]);
        assert_eq!(whole_from_binary(&written_u128(0)), Ok(0));
        assert_eq!(
            whole256_from_binary(&written_u256(U256::MAX)),
            Ok(U256::MAX)
        );
        let over = raw(1, 20, 0, &[1]); // 10^80, past 2^256
        assert_eq!(whole256_from_binary(&over), Err("numeric: out of range"));
    }

    const WAD_LIKE: u128 = 1_000_000_000_000_000_000;

    proptest! {
        #[test]
        fn every_value_is_written_and_read_back(v in any::<u128>(), hi in any::<u128>(), small in 0u128..100_000_000) {
            if v > 0 {
                prop_assert_eq!(written_u128(v), send(v, 0));
            }
            prop_assert_eq!(whole_from_binary(&written_u128(v)), Ok(v));
            prop_assert_eq!(whole_from_binary(&written_u128(small)), Ok(small));
            let wide = (U256::from(hi) << 128) | U256::from(v);
            prop_assert_eq!(whole256_from_binary(&written_u256(wide)), Ok(wide));
            prop_assert_eq!(whole256_from_binary(&send(v, 0)), Ok(U256::from(v)));
        }

        #[test]
        fn every_u128_reads_back(v in any::<u128>(), small in 0u128..100_000_000) {
            prop_assert_eq!(whole_from_binary(&send(v, 0)), Ok(v));
            prop_assert_eq!(whole_from_binary(&send(small, 0)), Ok(small));
            if v > 0 {
                prop_assert!(whole_from_binary(&send(v, 0x4000)).is_err());
            }
        }
    }
}
