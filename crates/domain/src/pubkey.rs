//! Base58 wallet and account addresses.

use std::cmp::Ordering;
use std::str::FromStr;

pub use solana_pubkey::Pubkey;

/// Parses a base58 address into a 32-byte pubkey. The error text is the reason shown
/// in `bad pubkey: <reason>` (it is solana-pubkey's own wording).
pub fn parse_pubkey(s: &str) -> Result<Pubkey, String> {
    // Reject long input before decoding, so a 60 KiB body costs nothing.
    if s.len() > 44 {
        return Err("String is the wrong size".to_string());
    }
    Pubkey::from_str(s).map_err(|e| e.to_string())
}

/// True when `s` is a well-formed base58 32-byte address.
pub fn is_pubkey(s: &str) -> bool {
    parse_pubkey(s).is_ok()
}

/// Orders two keys as their base58 texts order (as SQL orders the text
/// columns), with no allocation: base58 digits are in ASCII order, but texts
/// of different lengths order otherwise than the bytes.
pub fn cmp_as_text(a: &Pubkey, b: &Pubkey) -> Ordering {
    let (mut x, mut y) = ([0u8; 44], [0u8; 44]);
    let n = usize::from(five8::encode_32(a.as_array(), &mut x));
    let m = usize::from(five8::encode_32(b.as_array(), &mut y));
    x[..n].cmp(&y[..m])
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn keys_order_as_their_texts(a in any::<[u8; 32]>(), b in any::<[u8; 32]>(), zeros in 0usize..4) {
            // Leading zero bytes are leading "1"s: a case of their own.
            let mut a = a;
            a[..zeros].fill(0);
            let (a, b) = (Pubkey::new_from_array(a), Pubkey::new_from_array(b));
            prop_assert_eq!(cmp_as_text(&a, &b), a.to_string().cmp(&b.to_string()));
            prop_assert_eq!(cmp_as_text(&a, &a), Ordering::Equal);
        }
    }

    #[test]
    fn accepts_real_addresses() {
        assert!(is_pubkey("11111111111111111111111111111111"));
        assert!(is_pubkey("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"));
    }

    #[test]
    fn rejects_bad_length_and_charset() {
        assert_eq!(parse_pubkey("abc").unwrap_err(), "String is the wrong size");
        assert_eq!(
            parse_pubkey(&"1".repeat(100)).unwrap_err(),
            "String is the wrong size"
        );
        // 0, O, I and l are not base58.
        assert_eq!(
            parse_pubkey("0OIl1111111111111111111111111111").unwrap_err(),
            "Invalid Base58 string"
        );
        assert!(!is_pubkey(""));
    }
}
