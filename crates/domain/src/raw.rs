//! Accounts as the chain gives them, before any decoding: a read as of a
//! slot (RPC) and an update as a live source carries it (websocket or gRPC).
//! The chain crate fills them; the ingest step and the engine's callers read
//! them, with no I/O of their own (docs/design.md §7, §14).

use crate::forks::SlotWrite;
use crate::pubkey::Pubkey;

/// An account's owner program, lamports and data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawAccount {
    pub owner: Pubkey,
    pub lamports: u64,
    pub data: Vec<u8>,
}

/// An account (or its absence) as of a slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountRead {
    pub slot: u64,
    pub account: Option<RawAccount>,
}

impl AccountRead {
    /// The owner program and data, as the domain's account checks take them.
    pub fn parts(&self) -> Option<(&Pubkey, &[u8])> {
        self.account.as_ref().map(|a| (&a.owner, a.data.as_slice()))
    }
}

/// An account as a source carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountUpdate {
    /// The slot of the write (gRPC), or the notification's context slot
    /// (websocket: some nodes send the subscription's).
    pub slot: u64,
    pub pubkey: Pubkey,
    pub owner: Pubkey,
    /// The account's lamports (0: closed), when the source says.
    pub lamports: Option<u64>,
    pub data: Vec<u8>,
    /// The write's version within its slot (gRPC only): a later write of the
    /// same slot has a higher one.
    pub write_version: Option<u64>,
}

/// A gRPC write in the slot tree (docs/design.md §15).
impl SlotWrite for AccountUpdate {
    fn slot(&self) -> u64 {
        self.slot
    }
    fn write_version(&self) -> u64 {
        self.write_version.unwrap_or(0)
    }
    fn account(&self) -> Pubkey {
        self.pubkey
    }
}
