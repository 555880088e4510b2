//! The feed accounts one websocket connection follows (docs/design.md §17):
//! one `accountSubscribe` each, asked and dropped as the set the health
//! cache names changes, and each notification mapped back to its account
//! (the node names it by subscription number only). Plain state: the
//! connection sends what it returns.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Value, json};

use lendex_domain::pubkey::Pubkey;

/// Request ids of feed subscriptions start here (the program's are 1..=3).
pub(crate) const FEED_IDS: u64 = 1_000;

enum Asked {
    Subscribe(Pubkey),
    Unsubscribe,
}

#[derive(Default)]
pub(crate) struct FeedSubscriptions {
    next_id: u64,
    /// Requests not answered yet.
    asked: HashMap<u64, Asked>,
    /// Subscribed or being subscribed.
    following: BTreeSet<Pubkey>,
    /// The node's subscription number of each feed subscribed.
    subscription: HashMap<Pubkey, u64>,
    account: HashMap<u64, Pubkey>,
    /// What the cache names now.
    wanted: BTreeSet<Pubkey>,
}

impl FeedSubscriptions {
    /// The requests that bring what is followed to `wanted`.
    pub(crate) fn follow(&mut self, wanted: &BTreeSet<Pubkey>) -> Vec<String> {
        self.wanted = wanted.clone();
        let mut requests = Vec::new();
        for feed in wanted.difference(&self.following.clone()) {
            self.following.insert(*feed);
            let id = self.id(Asked::Subscribe(*feed));
            requests.push(
                json!({
                    "jsonrpc": "2.0", "id": id, "method": "accountSubscribe",
                    "params": [feed.to_string(), { "encoding": "base64", "commitment": "confirmed" }],
                })
                .to_string(),
            );
        }
        let gone: Vec<Pubkey> = self.following.difference(wanted).copied().collect();
        for feed in gone {
            // One still being subscribed is dropped once its answer comes.
            if let Some(number) = self.subscription.remove(&feed) {
                self.following.remove(&feed);
                self.account.remove(&number);
                requests.push(self.unsubscribe(number));
            }
        }
        requests
    }

    /// An answer to request `id`: true when it was one of these (then any
    /// request it calls for is in `then`).
    pub(crate) fn answered(&mut self, id: u64, result: &Value, then: &mut Vec<String>) -> bool {
        let Some(asked) = self.asked.remove(&id) else {
            return false;
        };
        if let (Asked::Subscribe(feed), Some(number)) = (asked, result.as_u64()) {
            if self.wanted.contains(&feed) {
                self.subscription.insert(feed, number);
                self.account.insert(number, feed);
            } else {
                self.following.remove(&feed);
                then.push(self.unsubscribe(number));
            }
        }
        true
    }

    /// The feed a notification's subscription number follows.
    pub(crate) fn account_of(&self, subscription: u64) -> Option<Pubkey> {
        self.account.get(&subscription).copied()
    }

    fn id(&mut self, asked: Asked) -> u64 {
        let id = FEED_IDS + self.next_id;
        self.next_id += 1;
        self.asked.insert(id, asked);
        id
    }

    fn unsubscribe(&mut self, number: u64) -> String {
        let id = self.id(Asked::Unsubscribe);
        json!({ "jsonrpc": "2.0", "id": id, "method": "accountUnsubscribe", "params": [number] })
            .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u8) -> Pubkey {
        Pubkey::new_from_array([n; 32])
    }

    fn ids(requests: &[String]) -> Vec<(u64, String)> {
        requests
            .iter()
            .map(|r| {
                let v: Value = serde_json::from_str(r).unwrap();
                (
                    v["id"].as_u64().unwrap(),
                    v["method"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn feeds_are_subscribed_once_mapped_back_and_dropped() {
        let mut f = FeedSubscriptions::default();
        let asked = f.follow(&BTreeSet::from([key(1), key(2)]));
        assert_eq!(
            ids(&asked),
            vec![
                (FEED_IDS, "accountSubscribe".to_string()),
                (FEED_IDS + 1, "accountSubscribe".to_string())
            ]
        );
        let v: Value = serde_json::from_str(&asked[0]).unwrap();
        assert_eq!(v["params"][0], key(1).to_string());
        // Asked again before any answer: nothing new.
        assert!(f.follow(&BTreeSet::from([key(1), key(2)])).is_empty());
        let mut then = Vec::new();
        assert!(f.answered(FEED_IDS, &json!(77), &mut then));
        assert!(f.answered(FEED_IDS + 1, &json!(78), &mut then));
        assert!(then.is_empty());
        assert!(!f.answered(2, &json!(5), &mut then), "the program's own");
        assert_eq!(f.account_of(77), Some(key(1)));
        assert_eq!(f.account_of(78), Some(key(2)));
        // Feed 1 no longer named, feed 3 named.
        let asked = f.follow(&BTreeSet::from([key(2), key(3)]));
        let methods: Vec<String> = ids(&asked).into_iter().map(|(_, m)| m).collect();
        assert_eq!(methods, vec!["accountSubscribe", "accountUnsubscribe"]);
        let v: Value = serde_json::from_str(&asked[1]).unwrap();
        assert_eq!(v["params"][0], 77);
        assert_eq!(f.account_of(77), None);
    }

    #[test]
    fn a_feed_dropped_while_being_subscribed_is_unsubscribed_on_its_answer() {
        let mut f = FeedSubscriptions::default();
        f.follow(&BTreeSet::from([key(1)]));
        assert!(
            f.follow(&BTreeSet::new()).is_empty(),
            "no number to drop yet"
        );
        let mut then = Vec::new();
        assert!(f.answered(FEED_IDS, &json!(9), &mut then));
        assert_eq!(ids(&then)[0].1, "accountUnsubscribe");
        assert_eq!(f.account_of(9), None);
        // Named again later: subscribed afresh.
        assert_eq!(f.follow(&BTreeSet::from([key(1)])).len(), 1);
    }
}
