//! `lendex remote` and `lendex keygen` (docs/design.md §9): the operator's signed
//! client. It does the whole handshake of docs/design.md §5 over HTTP with a Solana CLI
//! keypair file, so an operator never signs anything by hand.
//!
//! The client signs only the canonical message it builds itself from the action
//! it asked for and the nonce it was given; a server answering another message
//! (another action) is refused, so a hostile server cannot make it sign one.

pub mod audit_table;
pub mod webhooks;

use std::path::Path;

use lendex_client::{Client, Error, Query, Signer, keypair};

use crate::domain::enums::Role;
use crate::domain::pubkey::parse_pubkey;

/// What went wrong: the server's refusal (its error body, printed as is), or
/// something before or around it.
#[derive(Debug)]
pub enum Failure {
    /// A refusal: its body.
    Answer(String),
    Other(String),
}

impl From<String> for Failure {
    fn from(e: String) -> Self {
        Failure::Other(e)
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        match e {
            Error::Api { error, field, .. } => Failure::Answer(
                serde_json::to_string(&crate::wire::error::ErrorBody { error, field })
                    .expect("a string serializes"),
            ),
            other => Failure::Other(other.to_string()),
        }
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
    Webhook(webhooks::WebhookCall),
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

/// Runs `command` against the service at `url` through the typed client,
/// signed with the keypair at `keypair_path` (read only when something is to
/// be signed: a public audit read needs none); returns the answer as JSON
/// (or, for the audit, a table).
pub async fn run(url: &str, keypair_path: &Path, command: Remote) -> Result<String, Failure> {
    let client = Client::new(url);
    let signer = || Signer::from_file(keypair_path);
    let pubkey = |text: &str, what: &str| {
        parse_pubkey(text).map_err(|e| Failure::Other(format!("bad {what}: {e}")))
    };
    let answer = match command {
        Remote::AddAdmin {
            pubkey: who,
            role,
            label,
        } => {
            let role = Role::parse(&role)
                .ok_or_else(|| format!("invalid role {role}: super_admin or pool_admin"))?;
            let who = pubkey(&who, "pubkey")?;
            json(
                &client
                    .add_admin(&signer()?, &who, role, label.as_deref())
                    .await?,
            )
        }
        Remote::RevokeAdmin { pubkey: who } => {
            let who = pubkey(&who, "pubkey")?;
            json(&client.revoke_admin(&signer()?, &who).await?)
        }
        Remote::RegisterPool {
            pool_address,
            init_signature,
            symbol,
        } => {
            // The service reads the pool account from its chain: no RPC here.
            let pool = pubkey(&pool_address, "pool address")?;
            let on_chain = client.pool_on_chain(&pool).await?;
            let signer = signer()?;
            let me = signer.pubkey().to_string();
            if on_chain.authority != me {
                eprintln!(
                    "note: the pool's on-chain authority is {}, not this keypair's {me}",
                    on_chain.authority,
                );
            }
            let registered = client
                .register_pool(
                    &signer,
                    &on_chain,
                    init_signature.as_deref(),
                    symbol.as_deref(),
                )
                .await
                .map_err(|e| match e {
                    Error::Refused(why) => Failure::Other(format!("{why} (--init-signature)")),
                    other => other.into(),
                })?;
            json(&registered)
        }
        Remote::Audit {
            actor,
            action,
            limit,
            json: as_json,
        } => {
            let query = Query::new()
                .with_some("actor", actor)
                .with_some("action", action)
                .with_some("limit", limit);
            // Public on devnet and localnet; on mainnet the read is signed in
            // headers (docs/design.md §4), which the server asks for with a 403.
            let signer = signer().ok();
            let entries = client.audit(signer.as_ref(), &query).await?;
            if as_json {
                json(&entries)
            } else {
                audit_table::render(&entries)
            }
        }
        Remote::Webhook(call) => webhooks::run(&client, &signer()?, call).await?,
    };
    Ok(answer)
}

fn json(answer: &impl serde::Serialize) -> String {
    serde_json::to_string(answer).expect("wire types serialize")
}
