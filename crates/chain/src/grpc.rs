//! The Yellowstone gRPC (Geyser) source: one `Subscribe` stream carrying the
//! program's LendingPool and UserPosition accounts (owned by the program, a
//! memcmp on each discriminator: two named filters) and slot updates, at
//! `rpc.commitment`: at `confirmed`, the confirmed statuses; at `processed`,
//! every status with its parent (docs/design.md §15), for the slot tree.
//! Every account write comes with its slot and write version.
//! The server's pings are answered. After a reconnect the stream resumes from
//! the last slot it delivered when the server still holds it (replay);
//! otherwise, or when the server refuses, the caller reconciles. This file
//! is the wire: requests, updates, and one connection's life, reported as
//! `chain::source` events; `actors::chain_stream` applies them.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::sync::mpsc;

use super::source::{NamedFeeds, named_changed};
use yellowstone_grpc_client::{ClientTlsConfig, GeyserGrpcClient, GeyserGrpcClientError};
use yellowstone_grpc_proto::prelude::{
    CommitmentLevel, SlotStatus, SubscribeRequest, SubscribeRequestFilterAccounts,
    SubscribeRequestFilterAccountsFilter, SubscribeRequestFilterAccountsFilterMemcmp,
    SubscribeRequestFilterSlots, SubscribeRequestPing, SubscribeUpdate,
    subscribe_request_filter_accounts_filter::Filter,
    subscribe_request_filter_accounts_filter_memcmp::Data, subscribe_update::UpdateOneof,
};
use yellowstone_grpc_proto::tonic::Code;

use super::source::{AccountUpdate, Ended, SlotUpdate, StreamEvent};
use lendex_domain::accounts::{POOL_DISCRIMINATOR, POSITION_DISCRIMINATOR};
use lendex_domain::forks::{self, Commitment};
use lendex_domain::pubkey::Pubkey;

/// The subscription's named filters.
pub const POOLS_FILTER: &str = "lendex_pools";
pub const POSITIONS_FILTER: &str = "lendex_positions";
pub const SLOTS_FILTER: &str = "lendex_slots";
/// The pools' feed accounts, by address (docs/design.md §17).
pub const FEEDS_FILTER: &str = "lendex_feeds";

/// Connecting (TCP, TLS, HTTP/2) must finish within this; so must the
/// replay question.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// After subscribing, how long a refusal of `from_slot` is waited for before
/// the subscription counts as made.
const REFUSAL_WAIT: Duration = Duration::from_secs(1);
/// A probe of a node that is backed off from gets this long.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// The subscription: the program's pools and positions, the feed accounts
/// `feeds` names, and slot updates at `commitment` (set explicitly: a
/// server's default may differ); from `from_slot` when resuming. At
/// `processed` every slot status arrives, between slots too, so that the
/// slot tree sees forks and dead slots.
pub fn subscribe_request(
    program: &Pubkey,
    from_slot: Option<u64>,
    commitment: Commitment,
    feeds: &BTreeSet<Pubkey>,
) -> SubscribeRequest {
    let every_status = commitment == Commitment::Processed;
    let accounts = |discriminator: &[u8; 8]| SubscribeRequestFilterAccounts {
        owner: vec![program.to_string()],
        filters: vec![SubscribeRequestFilterAccountsFilter {
            filter: Some(Filter::Memcmp(SubscribeRequestFilterAccountsFilterMemcmp {
                offset: 0,
                data: Some(Data::Bytes(discriminator.to_vec())),
            })),
        }],
        ..Default::default()
    };
    let mut filters = HashMap::from([
        (POOLS_FILTER.to_string(), accounts(&POOL_DISCRIMINATOR)),
        (
            POSITIONS_FILTER.to_string(),
            accounts(&POSITION_DISCRIMINATOR),
        ),
    ]);
    if !feeds.is_empty() {
        let by_address = SubscribeRequestFilterAccounts {
            account: feeds.iter().map(Pubkey::to_string).collect(),
            ..Default::default()
        };
        filters.insert(FEEDS_FILTER.to_string(), by_address);
    }
    SubscribeRequest {
        accounts: filters,
        slots: HashMap::from([(
            SLOTS_FILTER.to_string(),
            SubscribeRequestFilterSlots {
                filter_by_commitment: Some(!every_status),
                interslot_updates: Some(every_status),
            },
        )]),
        commitment: Some(match commitment {
            Commitment::Confirmed => CommitmentLevel::Confirmed,
            Commitment::Processed => CommitmentLevel::Processed,
        } as i32),
        from_slot,
        ..Default::default()
    }
}

/// The answer to a server's ping: a request carrying only `ping`, which
/// leaves the subscription's filters as they are.
pub fn ping_answer() -> SubscribeRequest {
    SubscribeRequest {
        ping: Some(SubscribeRequestPing { id: 1 }),
        ..Default::default()
    }
}

/// What one update from the server means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Update {
    Account(AccountUpdate),
    Slot(SlotUpdate),
    Ping,
    /// Nothing for the index (pongs, kinds not asked for).
    Other,
    /// Not a usable update: counted and skipped.
    Bad(&'static str),
}

pub fn decode(update: SubscribeUpdate) -> Update {
    match update.update_oneof {
        Some(UpdateOneof::Account(update)) => {
            let Some(info) = update.account else {
                return Update::Bad("no account");
            };
            let key = |bytes: &[u8]| <[u8; 32]>::try_from(bytes).ok().map(Pubkey::new_from_array);
            let (Some(pubkey), Some(owner)) = (key(&info.pubkey), key(&info.owner)) else {
                return Update::Bad("malformed key");
            };
            Update::Account(AccountUpdate {
                slot: update.slot,
                pubkey,
                owner,
                lamports: Some(info.lamports),
                data: info.data,
                write_version: Some(info.write_version),
            })
        }
        Some(UpdateOneof::Slot(slot)) => match status(slot.status) {
            Some(status) => Update::Slot(SlotUpdate {
                slot: slot.slot,
                parent: slot.parent,
                status,
            }),
            None => Update::Bad("unknown slot status"),
        },
        Some(UpdateOneof::Ping(_)) => Update::Ping,
        _ => Update::Other,
    }
}

/// The proto's slot status in the slot tree's words.
fn status(status: i32) -> Option<forks::SlotStatus> {
    use forks::SlotStatus as S;
    Some(match SlotStatus::try_from(status).ok()? {
        SlotStatus::SlotProcessed => S::Processed,
        SlotStatus::SlotConfirmed => S::Confirmed,
        SlotStatus::SlotFinalized => S::Finalized,
        SlotStatus::SlotFirstShredReceived => S::FirstShredReceived,
        SlotStatus::SlotCompleted => S::Completed,
        SlotStatus::SlotCreatedBank => S::CreatedBank,
        SlotStatus::SlotDead => S::Dead,
    })
}

/// Where the next subscription resumes: the highest slot of any account
/// update received (that slot again: its writes may have been cut off, and a
/// repeat is harmless under the order rule).
#[derive(Debug, Default, Clone)]
pub struct Resume {
    pub last_slot: Option<u64>,
    /// The slot a resumed subscription started from, until the first slot
    /// update says how many slots the server resent.
    replaying_from: Option<u64>,
}

/// The endpoint and the token a connection uses.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub url: String,
    pub x_token: Option<String>,
}

/// One connection: connect, subscribe (resuming when the server holds the
/// last slot), then forward updates until the stream ends, errs or carries
/// nothing for `silence` (pings count). Returns why it ended.
pub async fn run_connection(
    endpoint: &Endpoint,
    program: &Pubkey,
    commitment: Commitment,
    silence: Duration,
    resume: &mut Resume,
    mut feeds: Option<NamedFeeds>,
    to: &mpsc::Sender<StreamEvent>,
) -> Ended {
    let mut client = match connect(endpoint).await {
        Ok(client) => client,
        Err(ended) => return ended,
    };
    let mut from = match resume.last_slot {
        Some(last) => replay_from(&mut client, last).await,
        None => None,
    };
    let mut followed = feeds
        .as_mut()
        .map(|named| named.borrow_and_update().clone())
        .unwrap_or_default();
    let (mut sink, mut stream) = loop {
        let request = subscribe_request(program, from, commitment, &followed);
        let (mut sink, mut stream) = match client.subscribe_with_request(Some(request)).await {
            Ok(subscribed) => subscribed,
            Err(e) => return Ended::reached(format!("subscribe failed: {e}")),
        };
        // A server that no longer holds the slot (or cannot replay) says so
        // first: subscribe again from now, and let the caller reconcile.
        let first = tokio::time::timeout(REFUSAL_WAIT, stream.next()).await;
        match first {
            Ok(Some(Err(status))) if from.is_some() && refuses_replay(status.code()) => {
                tracing::info!(%status, "gRPC replay refused; subscribing from now");
                from = None;
                continue;
            }
            Ok(Some(Err(status))) => return Ended::reached(format!("stream failed: {status}")),
            Ok(None) => return Ended::reached("closed by the server"),
            Ok(Some(Ok(update))) => {
                resume.replaying_from = from;
                if to
                    .send(StreamEvent::Subscribed {
                        replayed: from.is_some(),
                    })
                    .await
                    .is_err()
                {
                    return Ended::reached("stopped");
                }
                if let Err(ended) = forward(update, resume, &mut sink, to).await {
                    return ended;
                }
            }
            Err(_) => {
                resume.replaying_from = from;
                let subscribed = StreamEvent::Subscribed {
                    replayed: from.is_some(),
                };
                if to.send(subscribed).await.is_err() {
                    return Ended::reached("stopped");
                }
            }
        }
        break (sink, stream);
    };
    if let Some(from) = from {
        crate::metrics::stream::replayed("grpc");
        tracing::info!(from_slot = from, "gRPC stream resumed");
    }
    loop {
        let next = tokio::select! {
            next = tokio::time::timeout(silence, stream.next()) => next,
            Some(wanted) = named_changed(&mut feeds) => {
                // The filters replaced on the same stream (Yellowstone takes
                // a later request as the whole subscription), from now.
                followed = wanted;
                let request = subscribe_request(program, None, commitment, &followed);
                if let Err(e) = sink.send(request).await {
                    return Ended::reached(format!("resubscribe failed: {e}"));
                }
                continue;
            }
        };
        let update = match next {
            Err(_) => return Ended::reached(format!("silent for {silence:?}")),
            Ok(None) => return Ended::reached("closed by the server"),
            Ok(Some(Err(status))) => return Ended::reached(format!("stream failed: {status}")),
            Ok(Some(Ok(update))) => update,
        };
        // (The request side stays open while `sink` lives: closing it would
        // end the subscription on some servers.)
        if let Err(ended) = forward(update, resume, &mut sink, to).await {
            return ended;
        }
    }
}

/// One update: accounts and slots to the caller, pings answered, anything
/// unusable counted.
async fn forward(
    update: SubscribeUpdate,
    resume: &mut Resume,
    sink: &mut yellowstone_grpc_client::SubscribeRequestSink,
    to: &mpsc::Sender<StreamEvent>,
) -> Result<(), Ended> {
    let event = match decode(update) {
        Update::Account(account) => {
            resume.last_slot = Some(resume.last_slot.unwrap_or(0).max(account.slot));
            StreamEvent::Account(account)
        }
        Update::Slot(slot) => {
            if slot.status.confirms()
                && let Some(from) = resume.replaying_from.take()
            {
                crate::metrics::stream::replayed_slots("grpc", slot.slot.saturating_sub(from));
            }
            StreamEvent::Slot(slot)
        }
        Update::Ping => {
            return sink
                .send(ping_answer())
                .await
                .map_err(|e| Ended::reached(format!("ping answer failed: {e}")));
        }
        Update::Other => return Ok(()),
        Update::Bad(why) => {
            crate::metrics::stream::skipped("grpc", why);
            return Ok(());
        }
    };
    to.send(event).await.map_err(|_| Ended::reached("stopped"))
}

/// How Yellowstone refuses a `from_slot` it cannot serve: out of range (the
/// slot is gone), or an internal error when replay is not kept at all.
fn refuses_replay(code: Code) -> bool {
    matches!(
        code,
        Code::OutOfRange | Code::Internal | Code::InvalidArgument | Code::Unimplemented
    )
}

/// Resume from `last` when the server says it still holds it; when it does
/// not answer the question, try anyway (a refusal is handled on subscribe).
async fn replay_from(client: &mut GeyserGrpcClient, last: u64) -> Option<u64> {
    match tokio::time::timeout(CONNECT_TIMEOUT, client.subscribe_replay_info()).await {
        Ok(Ok(info)) => info
            .first_available
            .filter(|first| *first <= last)
            .map(|_| last),
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "gRPC replay info unavailable; trying from_slot");
            Some(last)
        }
        Err(_) => Some(last),
    }
}

/// Whether the node answers the protocol now: a connection and one `Ping`
/// call, each within `PROBE_TIMEOUT`. Any gRPC status counts as an answer
/// (a server that refuses the token, say, is there); a connection closed at
/// once (a balancer whose backend is down) or a timeout does not. Cheap
/// enough to ask every half second while a reconnect backs off.
pub async fn answers(endpoint: &Endpoint) -> bool {
    let probe = async {
        let mut builder = GeyserGrpcClient::build_from_shared(endpoint.url.clone())
            .ok()?
            .x_token(endpoint.x_token.clone())
            .ok()?
            .connect_timeout(PROBE_TIMEOUT)
            .tcp_nodelay(true);
        if endpoint.url.starts_with("https://") {
            builder = builder
                .tls_config(ClientTlsConfig::new().with_native_roots())
                .ok()?;
        }
        let mut client = builder.connect().await.ok()?;
        match client.ping(1).await {
            Ok(_) => Some(()),
            Err(GeyserGrpcClientError::TonicStatus(status)) if answered(status.code()) => Some(()),
            Err(_) => None,
        }
    };
    matches!(
        tokio::time::timeout(PROBE_TIMEOUT, probe).await,
        Ok(Some(()))
    )
}

/// A status the server itself sent, as opposed to one the client made up
/// for a transport that failed.
fn answered(code: Code) -> bool {
    !matches!(
        code,
        Code::Unavailable | Code::Unknown | Code::Cancelled | Code::DeadlineExceeded
    )
}

async fn connect(endpoint: &Endpoint) -> Result<GeyserGrpcClient, Ended> {
    let bad = |what: &str, e: &dyn std::fmt::Display| Ended::reached(format!("{what}: {e}"));
    let mut builder = GeyserGrpcClient::build_from_shared(endpoint.url.clone())
        .map_err(|e| bad("bad gRPC URL", &e))?
        .x_token(endpoint.x_token.clone())
        .map_err(|e| bad("bad x-token", &e))?
        .connect_timeout(CONNECT_TIMEOUT)
        .tcp_nodelay(true)
        .http2_keep_alive_interval(Duration::from_secs(10))
        .keep_alive_timeout(Duration::from_secs(5))
        .keep_alive_while_idle(true);
    if endpoint.url.starts_with("https://") {
        builder = builder
            .tls_config(ClientTlsConfig::new().with_native_roots())
            .map_err(|e| bad("TLS", &e))?;
    }
    // Refused, or connected and not answering HTTP/2: probed while waiting.
    builder
        .connect()
        .await
        .map_err(|e| Ended::unreachable(format!("connect failed: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use yellowstone_grpc_proto::prelude::{
        SubscribeUpdateAccount, SubscribeUpdateAccountInfo, SubscribeUpdatePing,
        SubscribeUpdateSlot,
    };

    fn update(oneof: UpdateOneof) -> SubscribeUpdate {
        SubscribeUpdate {
            update_oneof: Some(oneof),
            ..Default::default()
        }
    }

    #[test]
    fn the_request_names_two_account_filters_and_slots_at_confirmed() {
        let program = Pubkey::new_from_array([3; 32]);
        let request =
            subscribe_request(&program, Some(77), Commitment::Confirmed, &BTreeSet::new());
        assert_eq!(request.commitment, Some(CommitmentLevel::Confirmed as i32));
        assert_eq!(request.from_slot, Some(77));
        for (name, discriminator) in [
            (POOLS_FILTER, POOL_DISCRIMINATOR),
            (POSITIONS_FILTER, POSITION_DISCRIMINATOR),
        ] {
            let filter = &request.accounts[name];
            assert_eq!(filter.owner, vec![program.to_string()]);
            assert!(filter.account.is_empty());
            assert_eq!(
                filter.filters[0].filter,
                Some(Filter::Memcmp(SubscribeRequestFilterAccountsFilterMemcmp {
                    offset: 0,
                    data: Some(Data::Bytes(discriminator.to_vec())),
                }))
            );
        }
        assert_eq!(request.slots[SLOTS_FILTER].filter_by_commitment, Some(true));
        assert_eq!(request.slots[SLOTS_FILTER].interslot_updates, Some(false));
        assert_eq!(
            subscribe_request(&program, None, Commitment::Confirmed, &BTreeSet::new()).from_slot,
            None
        );
        // At processed: every status, between slots too, at processed.
        let processed = subscribe_request(&program, None, Commitment::Processed, &BTreeSet::new());
        assert_eq!(
            processed.commitment,
            Some(CommitmentLevel::Processed as i32)
        );
        let slots = &processed.slots[SLOTS_FILTER];
        assert_eq!(slots.filter_by_commitment, Some(false));
        assert_eq!(slots.interslot_updates, Some(true));
        assert_eq!(processed.accounts.len(), 2);
        // The feeds, by address, once any is named.
        let feed = Pubkey::new_from_array([8; 32]);
        let with_feeds = subscribe_request(
            &program,
            None,
            Commitment::Confirmed,
            &BTreeSet::from([feed]),
        );
        assert_eq!(
            with_feeds.accounts[FEEDS_FILTER].account,
            vec![feed.to_string()]
        );
        assert!(with_feeds.accounts[FEEDS_FILTER].owner.is_empty());
        // A ping's answer changes no filter.
        let ping = ping_answer();
        assert!(ping.ping.is_some() && ping.accounts.is_empty() && ping.slots.is_empty());
    }

    #[test]
    fn updates_decode() {
        let key = Pubkey::new_from_array([9; 32]);
        let owner = Pubkey::new_from_array([4; 32]);
        let account = |pubkey: Vec<u8>| {
            update(UpdateOneof::Account(SubscribeUpdateAccount {
                account: Some(SubscribeUpdateAccountInfo {
                    pubkey,
                    lamports: 5,
                    owner: owner.to_bytes().to_vec(),
                    data: vec![1, 2, 3],
                    write_version: 12,
                    ..Default::default()
                }),
                slot: 40,
                ..Default::default()
            }))
        };
        assert_eq!(
            decode(account(key.to_bytes().to_vec())),
            Update::Account(AccountUpdate {
                slot: 40,
                pubkey: key,
                owner,
                lamports: Some(5),
                data: vec![1, 2, 3],
                write_version: Some(12),
            })
        );
        assert_eq!(decode(account(vec![1; 31])), Update::Bad("malformed key"));
        assert_eq!(
            decode(update(UpdateOneof::Account(
                SubscribeUpdateAccount::default()
            ))),
            Update::Bad("no account")
        );
        let slot = |status: i32| {
            update(UpdateOneof::Slot(SubscribeUpdateSlot {
                slot: 41,
                parent: Some(40),
                status,
                ..Default::default()
            }))
        };
        for (proto, ours) in [
            (SlotStatus::SlotProcessed, forks::SlotStatus::Processed),
            (SlotStatus::SlotConfirmed, forks::SlotStatus::Confirmed),
            (SlotStatus::SlotFinalized, forks::SlotStatus::Finalized),
            (
                SlotStatus::SlotFirstShredReceived,
                forks::SlotStatus::FirstShredReceived,
            ),
            (SlotStatus::SlotCompleted, forks::SlotStatus::Completed),
            (SlotStatus::SlotCreatedBank, forks::SlotStatus::CreatedBank),
            (SlotStatus::SlotDead, forks::SlotStatus::Dead),
        ] {
            let expected = SlotUpdate {
                slot: 41,
                parent: Some(40),
                status: ours,
            };
            assert_eq!(decode(slot(proto as i32)), Update::Slot(expected));
        }
        assert_eq!(decode(slot(99)), Update::Bad("unknown slot status"));
        assert_eq!(
            decode(update(UpdateOneof::Ping(SubscribeUpdatePing {}))),
            Update::Ping
        );
        assert_eq!(decode(SubscribeUpdate::default()), Update::Other);
    }
}
