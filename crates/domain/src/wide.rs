//! The integer widths the money math runs at. Every step of §3 and §8 is written
//! once, generic over `Wide`, and run at two widths:
//!
//! - `U256`, checked: realistic values fit, and 4-limb products are several times
//!   cheaper than 8-limb ones. Any step that would overflow, or that reaches one
//!   of the saturating edges below, gives up with `Overflow`.
//! - `U512`, the definition: saturating where docs/design.md §3 says so, never
//!   giving up (`Infallible`).
//!
//! A 256-bit result that did not give up is exactly the 512-bit one: every step
//! that stayed below 2^256 is the same integer at 512 bits, and no saturating
//! edge was reached. Callers try 256 bits first and redo the rare rest at 512.

use std::convert::Infallible;
use std::ops::{Div, Rem};

use ruint::aliases::{U256, U512};

/// A 256-bit step overflowed: redo the computation at 512 bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overflow;

/// A width of the money math.
pub trait Wide:
    Copy + Ord + std::fmt::Debug + Div<Output = Self> + Rem<Output = Self> + Sized
{
    /// `Infallible` for the definition's width; `Overflow` for a checked one.
    type Err: std::fmt::Debug;
    const ZERO: Self;
    const ONE: Self;

    fn of(x: u128) -> Self;
    /// a x b where the definition cannot exceed the width (wrapping is never
    /// reached at 512 bits; checked at 256).
    fn mul(self, other: Self) -> Result<Self, Self::Err>;
    fn add(self, other: Self) -> Result<Self, Self::Err>;
    fn sub(self, other: Self) -> Result<Self, Self::Err>;
    /// Saturating at 512 bits, as §3 defines; checked at 256.
    fn sat_mul(self, other: Self) -> Result<Self, Self::Err>;
    fn sat_add(self, other: Self) -> Result<Self, Self::Err>;
    /// The all-ones value §3 saturates to (at 256 bits: give up).
    fn saturated() -> Result<Self, Self::Err>;
    fn is_max(self) -> bool;
    /// 10^exp for exp up to `MAX_TOTAL_EXPONENT`.
    fn pow10(exp: u32) -> Result<Self, Self::Err>;
    fn saturating_sub(self, other: Self) -> Self;
    /// The value, or u128::MAX when it is larger.
    fn clamp_u128(self) -> u128;
    fn widen(self) -> U512;
}

impl Wide for U512 {
    type Err = Infallible;
    const ZERO: Self = U512::ZERO;
    const ONE: Self = U512::from_limbs([1, 0, 0, 0, 0, 0, 0, 0]);

    fn of(x: u128) -> Self {
        U512::from(x)
    }
    fn mul(self, other: Self) -> Result<Self, Infallible> {
        Ok(self * other)
    }
    fn add(self, other: Self) -> Result<Self, Infallible> {
        Ok(self + other)
    }
    fn sub(self, other: Self) -> Result<Self, Infallible> {
        Ok(self - other)
    }
    fn sat_mul(self, other: Self) -> Result<Self, Infallible> {
        Ok(self.saturating_mul(other))
    }
    fn sat_add(self, other: Self) -> Result<Self, Infallible> {
        Ok(self.saturating_add(other))
    }
    fn saturated() -> Result<Self, Infallible> {
        Ok(U512::MAX)
    }
    fn is_max(self) -> bool {
        self == U512::MAX
    }
    fn pow10(exp: u32) -> Result<Self, Infallible> {
        Ok(U512::from(10u8).saturating_pow(U512::from(exp)))
    }
    fn saturating_sub(self, other: Self) -> Self {
        U512::saturating_sub(self, other)
    }
    fn clamp_u128(self) -> u128 {
        u128::try_from(self).unwrap_or(u128::MAX)
    }
    fn widen(self) -> U512 {
        self
    }
}

/// 10^n for n in 0..=76 (every power of ten below 2^256), computed once.
fn pow10_256(n: usize) -> Option<U256> {
    static TABLE: std::sync::OnceLock<[U256; 77]> = std::sync::OnceLock::new();
    TABLE
        .get_or_init(|| {
            let mut table = [U256::from(1u8); 77];
            for i in 1..77 {
                table[i] = table[i - 1] * U256::from(10u8);
            }
            table
        })
        .get(n)
        .copied()
}

impl Wide for U256 {
    type Err = Overflow;
    const ZERO: Self = U256::ZERO;
    const ONE: Self = U256::from_limbs([1, 0, 0, 0]);

    fn of(x: u128) -> Self {
        U256::from(x)
    }
    fn mul(self, other: Self) -> Result<Self, Overflow> {
        self.checked_mul(other).ok_or(Overflow)
    }
    fn add(self, other: Self) -> Result<Self, Overflow> {
        self.checked_add(other).ok_or(Overflow)
    }
    fn sub(self, other: Self) -> Result<Self, Overflow> {
        self.checked_sub(other).ok_or(Overflow)
    }
    fn sat_mul(self, other: Self) -> Result<Self, Overflow> {
        self.checked_mul(other).ok_or(Overflow)
    }
    fn sat_add(self, other: Self) -> Result<Self, Overflow> {
        self.checked_add(other).ok_or(Overflow)
    }
    fn saturated() -> Result<Self, Overflow> {
        Err(Overflow)
    }
    fn is_max(self) -> bool {
        // 2^256 - 1 is below the 512-bit saturation value: never the edge.
        false
    }
    fn pow10(exp: u32) -> Result<Self, Overflow> {
        pow10_256(exp as usize).ok_or(Overflow)
    }
    fn saturating_sub(self, other: Self) -> Self {
        U256::saturating_sub(self, other)
    }
    fn clamp_u128(self) -> u128 {
        u128::try_from(self).unwrap_or(u128::MAX)
    }
    fn widen(self) -> U512 {
        U512::from(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checked_width_gives_up_where_the_definition_saturates() {
        assert_eq!(U256::MAX.mul(U256::of(2)), Err(Overflow));
        assert_eq!(U256::MAX.sat_add(U256::ONE), Err(Overflow));
        assert_eq!(U256::ZERO.sub(U256::ONE), Err(Overflow));
        assert_eq!(<U256 as Wide>::saturated(), Err(Overflow));
        assert_eq!(<U256 as Wide>::pow10(77), Err(Overflow));
        assert_eq!(
            <U256 as Wide>::pow10(76).unwrap().widen(),
            U512::from(10u8).pow(U512::from(76u8))
        );
        let Ok(max) = U512::MAX.sat_mul(U512::of(2));
        assert_eq!(max, U512::MAX);
        let Ok(p) = <U512 as Wide>::pow10(90);
        assert_eq!(p, U512::from(10u8).pow(U512::from(90u8)));
    }
}
