//! A route's query string, built from typed values and percent-encoded once.

use std::fmt::Display;

use lendex_domain::view_key::{Oracle, ViewKey};

/// `k=v` pairs in the order given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query(Vec<(&'static str, String)>);

impl Query {
    pub fn new() -> Query {
        Query::default()
    }

    /// Adds `name=value`.
    pub fn with(mut self, name: &'static str, value: impl Display) -> Query {
        self.0.push((name, value.to_string()));
        self
    }

    /// Adds `name=value` when there is a value.
    pub fn with_some(self, name: &'static str, value: Option<impl Display>) -> Query {
        match value {
            Some(value) => self.with(name, value),
            None => self,
        }
    }

    /// The view read (docs/design.md §15, §17):
    /// `commitment=confirmed|processed`, and `oracle=feed` for the feeds'
    /// prices, for the polled reads and the feed. Answers say theirs in the
    /// `Lendex-Commitment` and `Lendex-Oracle` headers and in each quote and
    /// event.
    pub fn view(self, view: impl Into<ViewKey>) -> Query {
        let view = view.into();
        let query = self.with("commitment", view.commitment.name());
        match view.oracle {
            Oracle::Pool => query,
            Oracle::Feed => query.with("oracle", view.oracle.name()),
        }
    }

    /// `?k=v&...` (RFC 3986 unreserved characters kept), or nothing.
    pub fn encode(&self) -> String {
        if self.0.is_empty() {
            return String::new();
        }
        let pairs: Vec<String> = self
            .0
            .iter()
            .map(|(k, v)| format!("{k}={}", encode(v)))
            .collect();
        format!("?{}", pairs.join("&"))
    }
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use lendex_domain::forks::Commitment;

    #[test]
    fn values_are_encoded() {
        let q = Query::new()
            .with("actor", "Ab1")
            .with("action", "add_admin:x y&z")
            .with_some("limit", None::<u32>);
        assert_eq!(q.encode(), "?actor=Ab1&action=add_admin%3Ax%20y%26z");
        assert_eq!(Query::new().encode(), "");
        let view = Query::new().with("limit", 5).view(Commitment::Processed);
        assert_eq!(view.encode(), "?limit=5&commitment=processed");
        let feed = Query::new().view(ViewKey::new(Commitment::Confirmed, Oracle::Feed));
        assert_eq!(feed.encode(), "?commitment=confirmed&oracle=feed");
    }
}
