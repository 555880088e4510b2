//! NUMERIC columns read in PostgreSQL's binary form as exact whole numbers.
//! A million positions are read at a cold start; selecting their six NUMERIC
//! columns as text made PostgreSQL format six million decimals and Lendex
//! parse them back (about a second of PostgreSQL's CPU). The binary form is
//! base-10000 digits, taken here without rounding: anything that is not a
//! non-negative whole number fitting in a u128 is refused.

use std::error::Error;

use tokio_postgres::types::{FromSql, Type};

/// A NUMERIC that is a whole number in `0..=u128::MAX`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Whole(pub u128);

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

impl<'a> FromSql<'a> for Whole {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn Error + Sync + Send>> {
        Ok(Whole(whole_from_binary(raw)?))
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::NUMERIC
    }
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

    proptest! {
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
