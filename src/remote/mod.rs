//! `lendex remote` and `lendex keygen` (docs/design.md §9): the operator's signed
//! client. It does the whole handshake of docs/design.md §5 over HTTP with a Solana CLI
//! keypair file, so an operator never signs anything by hand.
//!
//! The client signs only the canonical message it builds itself from the action
//! it asked for and the nonce it was given; a server answering another message
//! (another action) is refused, so a hostile server cannot make it sign one.

pub mod audit_table;
pub mod keypair;

use std::path::{Path, PathBuf};

use ed25519_dalek::{Signer, SigningKey};
use serde_json::{Value, json};

use crate::domain::auth_message::{
    READ_AUDIT_ACTION, add_admin_action, canonical_message, init_pool_action, revoke_admin_action,
};
use crate::domain::pubkey::{Pubkey, parse_pubkey};

/// What went wrong: the server's answer to a request (printed as is), or
/// something before or around it.
#[derive(Debug)]
pub enum Failure {
    /// A non-2xx answer: its body.
    Answer(String),
    Other(String),
}

impl From<String> for Failure {
    fn from(e: String) -> Self {
        Failure::Other(e)
    }
}

/// One command of `lendex remote`.
pub enum Remote {
    AddAdmin {
        pubkey: String,
        role: String,
        label: Option<String>,
    },
    RevokeAdmin {
        pubkey: String,
    },
    RegisterPool {
        pool_address: String,
        /// None: the signature the service finds on chain.
        init_signature: Option<String>,
        symbol: Option<String>,
    },
    Audit {
        actor: Option<String>,
        action: Option<String>,
        limit: Option<u32>,
        /// The server's JSON instead of the table.
        json: bool,
    },
}

/// `lendex keygen`: a new keypair file; prints its pubkey.
pub fn keygen(outfile: Option<&Path>) -> Result<(), String> {
    let path = outfile
        .map(Path::to_path_buf)
        .unwrap_or_else(keypair::default_path);
    let key = keypair::generate(&path)?;
    println!("{}", keypair::pubkey_of(&key));
    eprintln!("wrote {}", path.display());
    Ok(())
}

/// Runs `command` against the service at `url`, signed with the keypair at
/// `keypair_path` (read only when something is to be signed: a public audit
/// read needs none); returns the server's JSON answer.
pub async fn run(url: &str, keypair_path: &Path, command: Remote) -> Result<String, Failure> {
    let client = Client {
        http: reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(30))
            .build()
            .map_err(|e| e.to_string())?,
        base: url.trim_end_matches('/').to_string(),
        keypair: keypair_path.to_path_buf(),
    };
    match command {
        Remote::AddAdmin {
            pubkey,
            role,
            label,
        } => {
            let signed = client.signed(&add_admin_action(&pubkey, &role)).await?;
            let body = signed.body(json!({ "pubkey": pubkey, "role": role, "label": label }));
            client
                .send(
                    reqwest::Method::POST,
                    "/api/admin/allowlist",
                    Some(body),
                    &[],
                )
                .await
        }
        Remote::RevokeAdmin { pubkey } => {
            let signed = client.signed(&revoke_admin_action(&pubkey)).await?;
            let body = signed.body(json!({ "pubkey": pubkey }));
            client
                .send(
                    reqwest::Method::DELETE,
                    "/api/admin/allowlist",
                    Some(body),
                    &[],
                )
                .await
        }
        Remote::RegisterPool {
            pool_address,
            init_signature,
            symbol,
        } => {
            // The service reads the pool account from its chain: no RPC here.
            parse_pubkey(&pool_address).map_err(|e| format!("bad pool address: {e}"))?;
            let read = client
                .send(
                    reqwest::Method::GET,
                    &format!("/api/pools/{pool_address}/chain"),
                    None,
                    &[],
                )
                .await?;
            let fields: Value = serde_json::from_str(&read)
                .map_err(|_| format!("the pool read is not JSON: {read}"))?;
            let field = |name: &str| fields[name].clone();
            let mint = fields["token_mint"]
                .as_str()
                .ok_or_else(|| format!("the pool read has no token_mint: {read}"))?
                .to_string();
            let init_signature = match init_signature {
                Some(given) => given,
                None => fields["init_signature"]
                    .as_str()
                    .map(str::to_string)
                    .ok_or_else(|| {
                        "the chain does not say which transaction created the pool: give --init-signature"
                            .to_string()
                    })?,
            };
            let signed = client.signed(&init_pool_action(&mint)).await?;
            let body = signed.body(json!({
                "pool_address": pool_address, "token_mint": mint, "symbol": symbol,
                "authority": field("authority"), "vault": field("vault"),
                "pool_bump": field("pool_bump"), "authority_bump": field("authority_bump"),
                "vault_bump": field("vault_bump"), "init_signature": init_signature,
            }));
            let me = client.pubkey()?;
            if fields["authority"].as_str() != Some(me.to_string().as_str()) {
                eprintln!(
                    "note: the pool's on-chain authority is {}, not this keypair's {me}",
                    fields["authority"],
                );
            }
            client
                .send(reqwest::Method::POST, "/api/pools/init", Some(body), &[])
                .await
        }
        Remote::Audit {
            actor,
            action,
            limit,
            json,
        } => {
            let mut query = Vec::new();
            query.extend(actor.map(|a| ("actor", a)));
            query.extend(action.map(|a| ("action", a)));
            query.extend(limit.map(|l| ("limit", l.to_string())));
            let path = format!("/api/admin/audit?{}", encode_query(&query));
            // Public on devnet and localnet; on mainnet the read is signed in
            // headers (docs/design.md §4), which the server asks for with a 403.
            let answer = match client.send(reqwest::Method::GET, &path, None, &[]).await {
                Err(Failure::Answer(body)) if body.contains("\"forbidden\"") => {
                    let signed = client.signed(READ_AUDIT_ACTION).await?;
                    let headers = [
                        ("x-actor", signed.actor.clone()),
                        ("x-nonce", signed.nonce.clone()),
                        ("x-signature", signed.signature.clone()),
                    ];
                    client
                        .send(reqwest::Method::GET, &path, None, &headers)
                        .await
                }
                other => other,
            }?;
            if json {
                Ok(answer)
            } else {
                Ok(audit_table::render(&answer)?)
            }
        }
    }
}

struct Client {
    http: reqwest::Client,
    base: String,
    /// The Solana CLI keypair file, read when something is signed.
    keypair: PathBuf,
}

/// A nonce issued for this client's wallet and its signature.
struct Signed {
    actor: String,
    nonce: String,
    signature: String,
}

impl Signed {
    /// `fields` with actor, nonce and signature added.
    fn body(&self, mut fields: Value) -> Value {
        fields["actor"] = self.actor.clone().into();
        fields["nonce"] = self.nonce.clone().into();
        fields["signature"] = self.signature.clone().into();
        fields
    }
}

impl Client {
    fn key(&self) -> Result<SigningKey, Failure> {
        Ok(keypair::read(&self.keypair)?)
    }

    fn pubkey(&self) -> Result<Pubkey, Failure> {
        Ok(keypair::pubkey_of(&self.key()?))
    }

    /// Steps 1 and 2 of the handshake: a nonce for `action`, and the signature
    /// of the canonical message (only if the server's message is exactly it).
    async fn signed(&self, action: &str) -> Result<Signed, Failure> {
        let key = self.key()?;
        let actor = keypair::pubkey_of(&key).to_string();
        let answer = self
            .send(
                reqwest::Method::POST,
                "/api/auth/nonce",
                Some(json!({ "pubkey": actor, "action": action })),
                &[],
            )
            .await?;
        let issued: Value = serde_json::from_str(&answer)
            .map_err(|_| format!("the nonce answer is not JSON: {answer}"))?;
        let nonce = issued["nonce"]
            .as_str()
            .ok_or_else(|| format!("the nonce answer has no nonce: {answer}"))?
            .to_string();
        let message = canonical_message(action, &nonce);
        if issued["message"].as_str() != Some(message.as_str()) {
            return Err(Failure::Other(format!(
                "refusing to sign: the server's message is not the canonical one for {action}"
            )));
        }
        let signature = bs58::encode(key.sign(message.as_bytes()).to_bytes()).into_string();
        Ok(Signed {
            actor,
            nonce,
            signature,
        })
    }

    /// One request; the body of a 2xx answer, else `Failure::Answer`.
    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
        headers: &[(&str, String)],
    ) -> Result<String, Failure> {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        if let Some(body) = body {
            request = request
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.to_string());
        }
        let response = request
            .send()
            .await
            .map_err(|e| format!("cannot reach {}: {e}", self.base))?;
        let ok = response.status().is_success();
        let text = response
            .text()
            .await
            .map_err(|e| format!("answer from {} cut short: {e}", self.base))?;
        if ok {
            Ok(text)
        } else {
            Err(Failure::Answer(text))
        }
    }
}

/// `k=v&...` with values percent-encoded (RFC 3986 unreserved kept).
fn encode_query(pairs: &[(&str, String)]) -> String {
    let encode = |s: &str| {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect::<String>()
    };
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={}", encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_encoded() {
        let q = encode_query(&[
            ("actor", "Ab1".into()),
            ("action", "add_admin:x y&z".into()),
        ]);
        assert_eq!(q, "actor=Ab1&action=add_admin%3Ax%20y%26z");
        assert_eq!(encode_query(&[]), "");
    }
}
