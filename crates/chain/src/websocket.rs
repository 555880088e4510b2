//! The RPC websocket source: `programSubscribe` on the lending program, one
//! subscription for LendingPool accounts and one for UserPosition accounts
//! (memcmp on the discriminator, `confirmed`, base64). This file is the wire:
//! the endpoint, the requests, the messages, and one connection's life
//! (subscribe, read, ping, notice silence), reported as `chain::source`
//! events. What a notification does to the index is `actors::chain_stream`'s.

use std::time::Duration;

use base64::Engine as _;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

use super::source::{AccountUpdate, Ended, NamedFeeds, SlotUpdate, StreamEvent, named_changed};
use super::websocket_feeds::FeedSubscriptions;
use lendex_domain::accounts::{POOL_DISCRIMINATOR, POSITION_DISCRIMINATOR};
use lendex_domain::forks::SlotStatus;
use lendex_domain::pubkey::Pubkey;

/// Connecting and subscribing must finish within this.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The websocket endpoint: `ws_url` when set, else derived from the HTTP one
/// (http→ws, https→wss, an explicit port p becomes p+1, Solana's convention).
pub fn ws_url(ws_url: &str, rpc_url: &str) -> String {
    if !ws_url.is_empty() {
        return ws_url.to_string();
    }
    let (scheme, rest) = match rpc_url.split_once("://") {
        Some(("https", rest)) => ("wss", rest),
        Some((_, rest)) => ("ws", rest),
        None => ("ws", rpc_url),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let authority = match authority.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(']') || authority.ends_with(']') => {
            match port.parse::<u16>() {
                Ok(p) => format!("{host}:{}", p.saturating_add(1)),
                Err(_) => authority.to_string(),
            }
        }
        _ => authority.to_string(),
    };
    format!("{scheme}://{authority}{path}")
}

/// The subscription requests (ids 1: pools, 2: positions, 3: slots). The
/// slots say when a slot is over, so that its writes apply as one change.
pub fn subscriptions(program: &Pubkey) -> [String; 3] {
    let request = |id: u64, discriminator: &[u8; 8]| {
        json!({
            "jsonrpc": "2.0", "id": id, "method": "programSubscribe",
            "params": [program.to_string(), {
                "encoding": "base64",
                "commitment": "confirmed",
                "filters": [{ "memcmp": { "offset": 0, "bytes": bs58::encode(discriminator).into_string() } }],
            }],
        })
        .to_string()
    };
    let slots = json!({ "jsonrpc": "2.0", "id": 3, "method": "slotSubscribe" }).to_string();
    [
        request(1, &POOL_DISCRIMINATOR),
        request(2, &POSITION_DISCRIMINATOR),
        slots,
    ]
}

/// What a text frame from the node means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A request was answered (a subscription's result is its number).
    Answered {
        id: u64,
        result: Value,
    },
    /// A subscription request was refused.
    Refused {
        id: u64,
        error: String,
    },
    Account(AccountUpdate),
    /// An account followed by its own subscription (a feed): the node names
    /// it by the subscription's number only, so `update.pubkey` is unset.
    Watched {
        subscription: u64,
        update: AccountUpdate,
    },
    /// The node began processing this slot (after `parent`).
    Slot(SlotUpdate),
    Other,
}

pub fn parse_frame(text: &str) -> Frame {
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        return Frame::Other;
    };
    if let Some(id) = v["id"].as_u64() {
        if let Some(result) = v.get("result") {
            return Frame::Answered {
                id,
                result: result.clone(),
            };
        }
        return Frame::Refused {
            id,
            error: v["error"].to_string(),
        };
    }
    if v["method"] == "slotNotification" {
        let result = &v["params"]["result"];
        return match result["slot"].as_u64() {
            Some(slot) => Frame::Slot(SlotUpdate {
                slot,
                parent: result["parent"].as_u64(),
                status: SlotStatus::Processed,
            }),
            None => Frame::Other,
        };
    }
    let watched = v["method"] == "accountNotification";
    if v["method"] != "programNotification" && !watched {
        return Frame::Other;
    }
    let result = &v["params"]["result"];
    let value = &result["value"];
    // A program's notification names the account; an account's is the account.
    let account = if watched { value } else { &value["account"] };
    let parsed = (|| {
        let slot = result["context"]["slot"].as_u64()?;
        let pubkey = match watched {
            true => Pubkey::default(),
            false => value["pubkey"].as_str()?.parse().ok()?,
        };
        let owner = account["owner"].as_str()?.parse().ok()?;
        let data = base64::engine::general_purpose::STANDARD
            .decode(account["data"][0].as_str()?)
            .ok()?;
        Some(AccountUpdate {
            slot,
            pubkey,
            owner,
            lamports: account["lamports"].as_u64(),
            data,
            write_version: None,
        })
    })();
    match (parsed, v["params"]["subscription"].as_u64()) {
        (Some(update), Some(subscription)) if watched => Frame::Watched {
            subscription,
            update,
        },
        (Some(update), _) if !watched => Frame::Account(update),
        _ => Frame::Other,
    }
}

/// Whether the node answers the protocol now: a websocket handshake within
/// a second, then closed. A connection accepted and closed at once (a
/// balancer whose backend is down) does not count. Cheap enough to ask
/// every half second while a reconnect backs off.
pub async fn answers(url: &str) -> bool {
    let handshake = tokio::time::timeout(
        Duration::from_secs(1),
        tokio_tungstenite::connect_async(url),
    );
    match handshake.await {
        Ok(Ok((mut socket, _))) => {
            let _ = tokio::time::timeout(Duration::from_millis(200), socket.close(None)).await;
            true
        }
        _ => false,
    }
}

/// One connection: connect, subscribe, then forward notifications until the
/// socket closes, errs or falls silent for `silence` (no frame, pongs included,
/// while a ping goes out every third of it). Returns why it ended.
pub async fn run_connection(
    url: &str,
    program: &Pubkey,
    silence: Duration,
    mut feeds: Option<NamedFeeds>,
    to: &mpsc::Sender<StreamEvent>,
) -> Ended {
    let connect = tokio::time::timeout(HANDSHAKE_TIMEOUT, tokio_tungstenite::connect_async(url));
    let failed = match connect.await {
        Ok(Ok((socket, _))) => Ok(socket),
        Ok(Err(e)) => Err(format!("connect failed: {e}")),
        Err(_) => Err("connect timed out".to_string()),
    };
    let mut socket = match failed {
        Ok(socket) => socket,
        // Refused outright, or no handshake once connected: not answering.
        Err(reason) => return Ended::unreachable(reason),
    };
    let requests = subscriptions(program);
    let wanted = requests.len();
    for request in requests {
        if let Err(e) = socket.send(Message::text(request)).await {
            return Ended::reached(format!("subscribe failed: {e}"));
        }
    }
    // The feeds the cache names, each followed on its own (docs/design.md §17).
    let mut followed = FeedSubscriptions::default();
    if let Some(named) = &mut feeds {
        let wanted = named.borrow_and_update().clone();
        for request in followed.follow(&wanted) {
            if let Err(e) = socket.send(Message::text(request)).await {
                return Ended::reached(format!("subscribe failed: {e}"));
            }
        }
    }
    let mut confirmed = 0;
    let mut ping = tokio::time::interval(silence / 3);
    ping.tick().await;
    // Moved on by every frame from the node, never by our own pings.
    let mut heard = tokio::time::Instant::now();
    loop {
        let frame = tokio::select! {
            frame = socket.next() => frame,
            Some(wanted) = named_changed(&mut feeds) => {
                for request in followed.follow(&wanted) {
                    if let Err(e) = socket.send(Message::text(request)).await {
                        return Ended::reached(format!("subscribe failed: {e}"));
                    }
                }
                continue;
            }
            _ = ping.tick() => {
                if heard.elapsed() >= silence {
                    return Ended::reached(format!("silent for {silence:?}"));
                }
                if let Err(e) = socket.send(Message::Ping(Vec::new().into())).await {
                    return Ended::reached(format!("ping failed: {e}"));
                }
                continue;
            }
        };
        heard = tokio::time::Instant::now();
        let message = match frame {
            None => return Ended::reached("closed by the node"),
            Some(Err(e)) => return Ended::reached(format!("read failed: {e}")),
            Some(Ok(message)) => message,
        };
        let Message::Text(text) = message else {
            continue;
        };
        match parse_frame(&text) {
            Frame::Answered { id, result } => {
                let mut then = Vec::new();
                if followed.answered(id, &result, &mut then) {
                    for request in then {
                        if let Err(e) = socket.send(Message::text(request)).await {
                            return Ended::reached(format!("unsubscribe failed: {e}"));
                        }
                    }
                    continue;
                }
                confirmed += 1;
                // A websocket resends nothing: what the socket missed
                // while down is the reconciliation's.
                let subscribed = StreamEvent::Subscribed { replayed: false };
                if confirmed == wanted && to.send(subscribed).await.is_err() {
                    return Ended::reached("stopped");
                }
            }
            Frame::Refused { id, error } => {
                return Ended::reached(format!("subscription {id} refused: {error}"));
            }
            Frame::Account(account) => {
                if to.send(StreamEvent::Account(account)).await.is_err() {
                    return Ended::reached("stopped");
                }
            }
            Frame::Watched {
                subscription,
                mut update,
            } => {
                // A notification of a subscription just dropped: not followed.
                let Some(feed) = followed.account_of(subscription) else {
                    continue;
                };
                update.pubkey = feed;
                if to.send(StreamEvent::Account(update)).await.is_err() {
                    return Ended::reached("stopped");
                }
            }
            Frame::Slot(update) => {
                if to.send(StreamEvent::Slot(update)).await.is_err() {
                    return Ended::reached("stopped");
                }
            }
            Frame::Other => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ws_urls() {
        assert_eq!(ws_url("", "http://127.0.0.1:8899"), "ws://127.0.0.1:8900");
        assert_eq!(
            ws_url("", "https://api.mainnet-beta.solana.com"),
            "wss://api.mainnet-beta.solana.com"
        );
        assert_eq!(
            ws_url("", "https://rpc.example.com:443/key/abc"),
            "wss://rpc.example.com:444/key/abc"
        );
        assert_eq!(ws_url("ws://x:1", "http://y:2"), "ws://x:1");
    }

    #[test]
    fn subscription_requests_filter_on_each_discriminator() {
        let program = Pubkey::new_from_array([3; 32]);
        let [pools, positions, slots] =
            subscriptions(&program).map(|s| serde_json::from_str::<Value>(&s).unwrap());
        assert_eq!(slots["method"], "slotSubscribe");
        assert_eq!(pools["method"], "programSubscribe");
        assert_eq!(pools["params"][0], program.to_string());
        assert_eq!(pools["params"][1]["commitment"], "confirmed");
        assert_eq!(pools["params"][1]["encoding"], "base64");
        let memcmp = |v: &Value| {
            v["params"][1]["filters"][0]["memcmp"]["bytes"]
                .as_str()
                .unwrap()
                .to_string()
        };
        assert_eq!(
            bs58::decode(memcmp(&pools)).into_vec().unwrap(),
            POOL_DISCRIMINATOR
        );
        assert_eq!(
            bs58::decode(memcmp(&positions)).into_vec().unwrap(),
            POSITION_DISCRIMINATOR
        );
    }

    #[test]
    fn frames() {
        assert_eq!(
            parse_frame(r#"{"jsonrpc":"2.0","result":7,"id":2}"#),
            Frame::Answered {
                id: 2,
                result: json!(7)
            }
        );
        assert!(matches!(
            parse_frame(r#"{"jsonrpc":"2.0","error":{"code":-32601},"id":1}"#),
            Frame::Refused { id: 1, .. }
        ));
        let key = Pubkey::new_from_array([9; 32]);
        let owner = Pubkey::new_from_array([4; 32]);
        let text = json!({
            "jsonrpc": "2.0", "method": "programNotification",
            "params": { "subscription": 7, "result": { "context": { "slot": 42 }, "value": {
                "pubkey": key.to_string(),
                "account": { "data": ["AQID", "base64"], "owner": owner.to_string(), "lamports": 1,
                             "executable": false, "rentEpoch": 0, "space": 3 } } } }
        })
        .to_string();
        assert_eq!(
            parse_frame(&text),
            Frame::Account(AccountUpdate {
                slot: 42,
                pubkey: key,
                owner,
                lamports: Some(1),
                data: vec![1, 2, 3],
                write_version: None,
            })
        );
        let watched = json!({
            "jsonrpc": "2.0", "method": "accountNotification",
            "params": { "subscription": 23, "result": { "context": { "slot": 43 }, "value": {
                "data": ["AQID", "base64"], "owner": owner.to_string(), "lamports": 0,
                "executable": false, "rentEpoch": 0, "space": 3 } } }
        })
        .to_string();
        assert_eq!(
            parse_frame(&watched),
            Frame::Watched {
                subscription: 23,
                update: AccountUpdate {
                    slot: 43,
                    pubkey: Pubkey::default(),
                    owner,
                    lamports: Some(0),
                    data: vec![1, 2, 3],
                    write_version: None,
                }
            }
        );
        assert_eq!(parse_frame("not json"), Frame::Other);
        assert_eq!(
            parse_frame(r#"{"method":"slotNotification"}"#),
            Frame::Other
        );
        assert_eq!(
            parse_frame(
                r#"{"jsonrpc":"2.0","method":"slotNotification","params":{"result":{"parent":75,"root":44,"slot":76},"subscription":3}}"#
            ),
            Frame::Slot(SlotUpdate {
                slot: 76,
                parent: Some(75),
                status: SlotStatus::Processed
            })
        );
    }
}
