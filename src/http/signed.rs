//! Verification of signed admin requests (docs/design.md §5.2, steps 4 to 7).
//!
//! Order matters: the signature is checked over the exact canonical bytes for the
//! action this endpoint expects; only then is the nonce spent (atomically, bound
//! to the signer); only then is the allowlist read, fresh on every request, so a
//! revoked admin is refused at once.

use ed25519_dalek::{Signature, VerifyingKey};

use crate::actors::nonce_registry::ConsumeNonce;
use crate::domain::auth_message::{canonical_message, is_valid_nonce};
use crate::domain::enums::Role;
use crate::domain::pubkey::parse_pubkey;
use crate::error::{ApiError, ApiResult};
use crate::http::body::JsonBody;
use crate::http::state::AppState;
use crate::store::reads::admins;

/// The three credentials every signed request carries.
pub struct Credentials<'a> {
    pub actor: &'a str,
    pub nonce: &'a str,
    pub signature: &'a str,
}

/// Which roles an endpoint admits.
#[derive(Debug, Clone, Copy)]
pub enum Need {
    SuperAdmin,
    AnyAdmin,
}

/// The three credentials of a signed body; `None` when any is missing.
pub fn credentials(body: &JsonBody) -> ApiResult<Option<Credentials<'_>>> {
    let (actor, nonce, signature) = (
        body.str("actor")?,
        body.str("nonce")?,
        body.str("signature")?,
    );
    Ok(match (actor, nonce, signature) {
        (Some(actor), Some(nonce), Some(signature)) => Some(Credentials {
            actor,
            nonce,
            signature,
        }),
        _ => None,
    })
}

/// Pure step 4: ed25519 over the canonical message. A malformed signature or key
/// cannot verify, so it is `bad signature` too.
pub fn verify_signature(creds: &Credentials<'_>, action: &str) -> ApiResult<()> {
    let key_bytes = parse_pubkey(creds.actor)
        .map_err(|_| ApiError::Invalid)?
        .to_bytes();
    let key = VerifyingKey::from_bytes(&key_bytes).map_err(|_| ApiError::BadSignature)?;
    let mut sig_bytes = [0u8; 64];
    match bs58::decode(creds.signature).onto(&mut sig_bytes) {
        Ok(64) => {}
        _ => return Err(ApiError::BadSignature),
    }
    let signature = Signature::from_bytes(&sig_bytes);
    let message = canonical_message(action, creds.nonce);
    key.verify_strict(message.as_bytes(), &signature)
        .map_err(|_| ApiError::BadSignature)
}

/// Steps 4 to 7: signature, single-use nonce, fresh allowlist check, role.
pub async fn authorize(
    state: &AppState,
    creds: &Credentials<'_>,
    action: &str,
    need: Need,
) -> ApiResult<Role> {
    verify_signature(creds, action)?;
    if !is_valid_nonce(creds.nonce) {
        return Err(ApiError::NonceInvalidOrExpired);
    }
    let consumed = state
        .nonces
        .send(ConsumeNonce {
            pubkey: creds.actor.to_string(),
            nonce: creds.nonce.to_string(),
            action: action.to_string(),
        })
        .await??;
    if !consumed {
        return Err(ApiError::NonceInvalidOrExpired);
    }
    let role = active_role(state, creds.actor)
        .await?
        .ok_or(ApiError::NotAuthorized)?;
    match (need, role) {
        (Need::SuperAdmin, Role::PoolAdmin) => Err(ApiError::SuperAdminRequired),
        _ => Ok(role),
    }
}

/// The wallet's role if it is an active (not revoked) admin.
pub async fn active_role(state: &AppState, pubkey: &str) -> ApiResult<Option<Role>> {
    Ok(admins::active_role(&state.store, pubkey).await?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::{Signer, SigningKey};

    fn signed(key: &SigningKey, action: &str, nonce: &str) -> (String, String) {
        let sig = key.sign(canonical_message(action, nonce).as_bytes());
        (
            bs58::encode(key.verifying_key().as_bytes()).into_string(),
            bs58::encode(sig.to_bytes()).into_string(),
        )
    }

    #[test]
    fn signature_binds_action_and_nonce() {
        let key = SigningKey::from_bytes(&[7u8; 32]);
        let nonce = "0123456789abcdef0123456789abcdef";
        let (actor, sig) = signed(&key, "add_admin:X:pool_admin", nonce);
        let creds = Credentials {
            actor: &actor,
            nonce,
            signature: &sig,
        };
        assert_eq!(verify_signature(&creds, "add_admin:X:pool_admin"), Ok(()));
        assert_eq!(
            verify_signature(&creds, "revoke_admin:X"),
            Err(ApiError::BadSignature)
        );
        let other_nonce = Credentials {
            nonce: "ffffffffffffffffffffffffffffffff",
            ..creds
        };
        assert_eq!(
            verify_signature(&other_nonce, "add_admin:X:pool_admin"),
            Err(ApiError::BadSignature)
        );
    }

    #[test]
    fn malformed_signatures_are_bad_signatures() {
        let key = SigningKey::from_bytes(&[9u8; 32]);
        let actor = bs58::encode(key.verifying_key().as_bytes()).into_string();
        for sig in ["", "xyz", "0OIl", &"1".repeat(200)] {
            let creds = Credentials {
                actor: &actor,
                nonce: "00",
                signature: sig,
            };
            assert_eq!(verify_signature(&creds, "a"), Err(ApiError::BadSignature));
        }
        let creds = Credentials {
            actor: "not-a-key",
            nonce: "00",
            signature: "x",
        };
        assert_eq!(verify_signature(&creds, "a"), Err(ApiError::Invalid));
    }
}
