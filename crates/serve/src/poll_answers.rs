//! Rendered answers, shared by the health cache (their only writer) and every
//! HTTP worker: the polled answers (unhealthy, liquidations, at-risk) for one
//! feed version and one wall-clock second (oracle staleness moves with time),
//! each owner's bodies (positions, detail) until the owner changes, and the
//! pools list for a second. Each body carries its strong ETag, a hash of its
//! exact bytes made once when it is kept, so a conditional GET is answered 304
//! without rendering or copying anything, and every replica gives the same tag
//! for the same bytes.
//!
//! Every change bumps a version that held polls wait on (`changes`): one for
//! the polled answers, one for owner bodies and the pools list, so a change of
//! one kind does not wake every poll of the other.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use bytes::Bytes;
use sha2::{Digest, Sha256};
use tokio::sync::watch;

use crate::render::Answer;
use lendex_domain::pubkey::Pubkey;

/// Distinct polled answers kept at once.
const MAX_RENDERED: usize = 1024;
/// Per-owner answers kept at once (about 1.5 KB each); past it they start over.
const MAX_OWNER_BODIES: usize = 10_000;

/// A rendered JSON body and its strong ETag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Body {
    pub bytes: Bytes,
    /// `"<32 hex digits>"`: the first 128 bits of the body's SHA-256, quoted.
    pub etag: Bytes,
}

impl Body {
    pub fn new(bytes: Bytes) -> Body {
        let digest = Sha256::digest(&bytes);
        let etag = format!("\"{}\"", hex::encode(&digest[..16]));
        Body {
            bytes,
            etag: Bytes::from(etag),
        }
    }

    /// Whether an `If-None-Match` header lists this body's tag (or `*`). Tags
    /// compare weakly, as RFC 9110 says for this header; anything malformed
    /// simply does not match.
    pub fn matches(&self, if_none_match: &[u8]) -> bool {
        if_none_match.split(|b| *b == b',').any(|tag| {
            let tag = tag.trim_ascii();
            let tag = tag.strip_prefix(b"W/").unwrap_or(tag);
            tag == b"*" || tag == &self.etag[..]
        })
    }
}

/// Which per-owner answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OwnerBody {
    Positions,
    Detail,
}

#[derive(Default)]
struct Kept {
    second: i64,
    bodies: HashMap<Answer, Body, foldhash::fast::RandomState>,
    /// GET /api/pools for `second`.
    pools: Option<Body>,
    /// Per-owner answers. They do not move with time, only with the owner's
    /// rows, its pools or its borrows.
    owner_bodies: HashMap<(Pubkey, OwnerBody), Body, foldhash::fast::RandomState>,
    /// Bumped by every forgetting of owner bodies: a body made from data read
    /// before that is not kept.
    owner_generation: u64,
}

/// The shared store.
pub struct Rendered {
    kept: RwLock<Kept>,
    /// Bumped by every change that can alter a polled answer.
    polls_version: watch::Sender<u64>,
    /// Bumped by every change that can alter an owner's body or the pools list.
    bodies_version: watch::Sender<u64>,
}

/// Which answers a held poll waits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Changes {
    /// Unhealthy, liquidations, at-risk.
    Polls,
    /// An owner's positions or detail, the pools list.
    Bodies,
}

impl Default for Rendered {
    fn default() -> Self {
        Rendered {
            kept: RwLock::default(),
            polls_version: watch::Sender::new(0),
            bodies_version: watch::Sender::new(0),
        }
    }
}

/// Shared between the health cache and the HTTP workers.
pub type SharedRendered = Arc<Rendered>;

/// The Unix second answers are rendered and kept for (and oracle ages
/// measured at). Read per request: no calendar arithmetic.
pub fn now_seconds() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Microseconds since the Unix epoch (history's stamps).
pub fn now_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

impl Rendered {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Kept> {
        self.kept.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Kept> {
        self.kept.write().unwrap_or_else(|e| e.into_inner())
    }

    fn changed(&self, of: Changes) {
        match of {
            Changes::Polls => &self.polls_version,
            Changes::Bodies => &self.bodies_version,
        }
        .send_modify(|v| *v += 1);
    }

    /// What held polls wait on: it changes with every change of those answers.
    pub fn changes(&self, of: Changes) -> watch::Receiver<u64> {
        match of {
            Changes::Polls => self.polls_version.subscribe(),
            Changes::Bodies => self.bodies_version.subscribe(),
        }
    }

    /// A rendered polled answer for this second, if one is there.
    pub fn answer(&self, answer: &Answer, now: i64) -> Option<Body> {
        let kept = self.read();
        if kept.second != now {
            return None;
        }
        kept.bodies.get(answer).cloned()
    }

    /// Keeps a polled answer for other readers of the same second and version.
    pub fn keep_answer(&self, answer: Answer, now: i64, body: Body) {
        let mut kept = self.write();
        if kept.second != now || kept.bodies.len() >= MAX_RENDERED {
            kept.bodies.clear();
            kept.pools = None;
            kept.second = now;
        }
        kept.bodies.insert(answer, body);
    }

    /// Drops every polled answer (the feed changed).
    pub fn forget_answers(&self) {
        self.write().bodies.clear();
        self.changed(Changes::Polls);
    }

    /// GET /api/pools as rendered in this second, if it was.
    pub fn pools(&self, now: i64) -> Option<Body> {
        let kept = self.read();
        (kept.second == now).then(|| kept.pools.clone()).flatten()
    }

    /// Keeps GET /api/pools, read at `generation` (`owner_generation`), for
    /// other readers of this second, unless it was forgotten since.
    pub fn keep_pools(&self, now: i64, generation: u64, body: Body) {
        let mut kept = self.write();
        if kept.owner_generation != generation {
            return;
        }
        if kept.second != now {
            kept.bodies.clear();
            kept.second = now;
        }
        kept.pools = Some(body);
    }

    /// A rendered per-owner answer, if one is there.
    pub fn owner_body(&self, owner: &Pubkey, kind: OwnerBody) -> Option<Body> {
        self.read().owner_bodies.get(&(*owner, kind)).cloned()
    }

    /// The generation to quote when handing out data a body will be made from.
    pub fn owner_generation(&self) -> u64 {
        self.read().owner_generation
    }

    /// Keeps a per-owner answer made from data read at `generation`, unless
    /// owner bodies were forgotten since (the data may be stale).
    pub fn keep_owner_body(&self, owner: Pubkey, kind: OwnerBody, generation: u64, body: Body) {
        let mut kept = self.write();
        if kept.owner_generation != generation {
            return;
        }
        if kept.owner_bodies.len() >= MAX_OWNER_BODIES {
            kept.owner_bodies.clear();
        }
        kept.owner_bodies.insert((owner, kind), body);
    }

    /// Forgets the given owners' answers (of `kinds`), or with `None` every
    /// owner's, and the pools list.
    pub fn forget_owner_bodies<'a>(
        &self,
        owners: Option<impl Iterator<Item = &'a Pubkey>>,
        kinds: &[OwnerBody],
    ) {
        {
            let mut kept = self.write();
            kept.owner_generation += 1;
            match owners {
                None => {
                    kept.owner_bodies.clear();
                    kept.pools = None;
                }
                Some(owners) => {
                    if !kept.owner_bodies.is_empty() {
                        for owner in owners {
                            for kind in kinds {
                                kept.owner_bodies.remove(&(*owner, *kind));
                            }
                        }
                    }
                }
            }
        }
        self.changed(Changes::Bodies);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_is_the_hash_of_the_bytes() {
        let a = Body::new(Bytes::from_static(b"{\"positions\":[]}"));
        let b = Body::new(Bytes::from(b"{\"positions\":[]}".to_vec()));
        assert_eq!(a.etag, b.etag, "the same bytes, the same tag, anywhere");
        assert_ne!(a.etag, Body::new(Bytes::from_static(b"{}")).etag);
        assert_eq!(a.etag.len(), 34);
        assert!(a.etag.starts_with(b"\"") && a.etag.ends_with(b"\""));
    }

    #[test]
    fn if_none_match_lists_weak_tags_and_star() {
        let body = Body::new(Bytes::from_static(b"[]"));
        let tag = String::from_utf8(body.etag.to_vec()).unwrap();
        for header in [
            tag.clone(),
            format!("W/{tag}"),
            format!("\"x\", {tag}"),
            format!(" {tag} ,\"y\""),
            "*".into(),
        ] {
            assert!(body.matches(header.as_bytes()), "{header}");
        }
        for header in [
            "",
            "\"x\"",
            &tag[1..],
            &format!("{tag}x"),
            "garbage, ,",
            "W/",
        ] {
            assert!(!body.matches(header.as_bytes()), "{header}");
        }
    }

    #[test]
    fn a_change_is_signalled_and_answers_kept_per_second() {
        let rendered = Rendered::default();
        let changes = rendered.changes(Changes::Polls);
        let answer = Answer::AtRisk { below: 2, limit: 3 };
        let body = Body::new(Bytes::from_static(b"x"));
        rendered.keep_answer(answer, 10, body.clone());
        assert_eq!(rendered.answer(&answer, 10), Some(body));
        assert_eq!(rendered.answer(&answer, 11), None, "another second");
        assert!(!changes.has_changed().unwrap());
        rendered.forget_answers();
        assert!(changes.has_changed().unwrap());
        assert_eq!(rendered.answer(&answer, 10), None);
    }
}
