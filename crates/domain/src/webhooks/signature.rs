//! Standard Webhooks 1.0 signatures: a secret is `whsec_` and the base64 of
//! its key; a delivery is signed `v1,` + base64 of HMAC-SHA256 over
//! `<webhook-id>.<webhook-timestamp>.<body>` with that key. The receivers'
//! own libraries (`standardwebhooks` on PyPI and npm) verify it.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

const PREFIX: &str = "whsec_";

/// A webhook's signing key.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret {
    key: Vec<u8>,
}

impl std::fmt::Debug for Secret {
    /// Never the key (a secret in a log is a leaked secret).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl Secret {
    /// A new secret from 32 random bytes (drawn by the caller).
    pub fn new(key: [u8; 32]) -> Secret {
        Secret { key: key.to_vec() }
    }

    /// A secret as shown once to its creator and stored: `whsec_` + base64.
    pub fn parse(text: &str) -> Option<Secret> {
        let key = STANDARD.decode(text.strip_prefix(PREFIX)?).ok()?;
        (!key.is_empty()).then_some(Secret { key })
    }

    /// The text form, `whsec_` + base64 of the key.
    pub fn text(&self) -> String {
        format!("{PREFIX}{}", STANDARD.encode(&self.key))
    }

    /// The `webhook-signature` header of a delivery.
    pub fn sign(&self, id: &str, timestamp: i64, body: &[u8]) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC takes any key");
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test vector the Standard Webhooks libraries share.
    #[test]
    fn signs_the_standard_vector() {
        let secret = Secret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let signature = secret.sign(
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1_614_265_330,
            br#"{"test": 2432232314}"#,
        );
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn a_secret_round_trips_and_never_shows_in_a_log() {
        let secret = Secret::new([7; 32]);
        let text = secret.text();
        assert!(text.starts_with("whsec_"));
        assert_eq!(Secret::parse(&text), Some(secret.clone()));
        assert_eq!(format!("{secret:?}"), "Secret(..)");
        for bad in [
            "",
            "whsec_",
            "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "whsec_not base64!",
        ] {
            assert_eq!(Secret::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn every_part_is_signed() {
        let secret = Secret::new([1; 32]);
        let base = secret.sign("msg_a", 10, b"{}");
        assert_ne!(base, secret.sign("msg_b", 10, b"{}"));
        assert_ne!(base, secret.sign("msg_a", 11, b"{}"));
        assert_ne!(base, secret.sign("msg_a", 10, b"{ }"));
        assert_ne!(base, Secret::new([2; 32]).sign("msg_a", 10, b"{}"));
    }
}
