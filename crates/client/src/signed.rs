//! The admin handshake (docs/design.md §5), done whole: a nonce asked for
//! one action, the canonical message checked and signed, the call sent with
//! actor, nonce and signature. The client signs only the message it builds
//! itself from the action it asked for and the nonce it was given: a server
//! answering another message (another action) is refused, so a hostile or
//! mistaken server cannot make it sign one.

use std::path::Path;

use ed25519_dalek::{Signer as _, SigningKey};
use lendex_domain::auth_message::{
    READ_AUDIT_ACTION, add_admin_action, canonical_message, init_pool_action, revoke_admin_action,
};
use lendex_domain::enums::Role;
use lendex_domain::pubkey::Pubkey;
use lendex_wire::admin::{AuditResponse, OkResponse};
use lendex_wire::auth::NonceResponse;
use lendex_wire::pools::{InitPoolResponse, PoolOnChain};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::{Client, Error, Query, keypair};

/// A wallet that signs admin calls.
pub struct Signer {
    key: SigningKey,
}

impl Signer {
    pub fn new(key: SigningKey) -> Signer {
        Signer { key }
    }

    /// From a Solana CLI keypair file.
    pub fn from_file(path: &Path) -> Result<Signer, Error> {
        keypair::read(path).map(Signer::new).map_err(Error::Refused)
    }

    pub fn pubkey(&self) -> Pubkey {
        keypair::pubkey_of(&self.key)
    }
}

/// A nonce issued for one action and this wallet, and its signature.
#[derive(Debug, Clone)]
pub struct Signature {
    pub actor: String,
    pub nonce: String,
    pub signature: String,
}

impl Signature {
    /// `fields` with actor, nonce and signature added.
    pub(crate) fn body(&self, mut fields: Value) -> Value {
        fields["actor"] = self.actor.clone().into();
        fields["nonce"] = self.nonce.clone().into();
        fields["signature"] = self.signature.clone().into();
        fields
    }

    /// As the headers of a signed read.
    fn headers(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        request
            .header("x-actor", &self.actor)
            .header("x-nonce", &self.nonce)
            .header("x-signature", &self.signature)
    }
}

impl Client {
    /// Steps 1 and 2 of the handshake: a nonce for `action`, and the
    /// signature of the canonical message (only if the server's message is
    /// exactly it).
    pub async fn sign(&self, signer: &Signer, action: &str) -> Result<Signature, Error> {
        let actor = signer.pubkey().to_string();
        let issued: NonceResponse = self
            .send_json(
                reqwest::Method::POST,
                "/api/auth/nonce",
                &json!({ "pubkey": actor, "action": action }),
            )
            .await?;
        let message = canonical_message(action, &issued.nonce);
        if issued.message != message {
            return Err(Error::Refused(format!(
                "the server's message is not the canonical one for {action}"
            )));
        }
        let signature = bs58::encode(signer.key.sign(message.as_bytes()).to_bytes()).into_string();
        Ok(Signature {
            actor,
            nonce: issued.nonce,
            signature,
        })
    }

    /// POST /api/admin/allowlist: `pubkey` becomes an admin of `role`.
    pub async fn add_admin(
        &self,
        signer: &Signer,
        pubkey: &Pubkey,
        role: Role,
        label: Option<&str>,
    ) -> Result<OkResponse, Error> {
        let (pubkey, role) = (pubkey.to_string(), role.as_str());
        let signed = self.sign(signer, &add_admin_action(&pubkey, role)).await?;
        let body = signed.body(json!({ "pubkey": pubkey, "role": role, "label": label }));
        self.send_json(reqwest::Method::POST, "/api/admin/allowlist", &body)
            .await
    }

    /// DELETE /api/admin/allowlist: `pubkey` is an admin no more.
    pub async fn revoke_admin(
        &self,
        signer: &Signer,
        pubkey: &Pubkey,
    ) -> Result<OkResponse, Error> {
        let pubkey = pubkey.to_string();
        let signed = self.sign(signer, &revoke_admin_action(&pubkey)).await?;
        let body = signed.body(json!({ "pubkey": pubkey }));
        self.send_json(reqwest::Method::DELETE, "/api/admin/allowlist", &body)
            .await
    }

    /// POST /api/pools/init: the pool as read from chain (`pool_on_chain`)
    /// registered, signed by its on-chain authority. `init_signature`: the
    /// transaction that created it, when the read did not find it.
    pub async fn register_pool(
        &self,
        signer: &Signer,
        pool: &PoolOnChain,
        init_signature: Option<&str>,
        symbol: Option<&str>,
    ) -> Result<InitPoolResponse, Error> {
        let init_signature = init_signature
            .map(str::to_string)
            .or_else(|| pool.init_signature.clone())
            .ok_or_else(|| {
                Error::Refused(
                    "the chain does not say which transaction created the pool: give its signature"
                        .into(),
                )
            })?;
        let signed = self
            .sign(signer, &init_pool_action(&pool.token_mint))
            .await?;
        let body = signed.body(json!({
            "pool_address": pool.pool_address, "token_mint": pool.token_mint, "symbol": symbol,
            "authority": pool.authority, "vault": pool.vault,
            "pool_bump": pool.pool_bump, "authority_bump": pool.authority_bump,
            "vault_bump": pool.vault_bump, "init_signature": init_signature,
        }));
        self.send_json(reqwest::Method::POST, "/api/pools/init", &body)
            .await
    }

    /// GET /api/admin/audit: `actor`, `action`, `limit`. Public on devnet and
    /// localnet; where the service answers 403 (mainnet) it is read again
    /// signed, when a signer is given.
    pub async fn audit(
        &self,
        signer: Option<&Signer>,
        query: &Query,
    ) -> Result<AuditResponse, Error> {
        let path = format!("/api/admin/audit{}", query.encode());
        match self.get(&path).await {
            Err(Error::Api { status: 403, .. }) if signer.is_some() => {
                let signer = signer.expect("checked");
                self.signed_get(signer, READ_AUDIT_ACTION, &path).await
            }
            other => other,
        }
    }

    pub(crate) async fn signed_get<T: DeserializeOwned>(
        &self,
        signer: &Signer,
        action: &str,
        path: &str,
    ) -> Result<T, Error> {
        let signed = self.sign(signer, action).await?;
        let request = signed.headers(self.http.get(self.url(path)));
        crate::json(self.send(request).await?).await
    }
}
