//! The unhealthy stream, followed (docs/design.md §11, §13): it reconnects by
//! itself with the id of the last frame it read (`Last-Event-ID`), so a cut,
//! a restart or a move to another replica costs no event; it backs off with
//! jitter while the service is away or busy, takes a connection silent past
//! its keep-alives as dead, and hands over every event, `reset` included
//! (the service could not resume: a new snapshot follows).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use lendex_wire::events::EventId;
use rand::Rng;
use serde::de::DeserializeOwned;

use crate::sse::Parser;
use crate::{Client, Error, Query, api_error, routes::path};

/// One event of the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// `<epoch>.<seq>`; none on a `reset`.
    pub id: Option<String>,
    /// `candidate_start`, `candidate_update`, `candidate_stop`, `reset`, ...
    pub name: String,
    /// Its JSON.
    pub data: String,
}

impl Event {
    /// Its id read: the epoch, the tick of the change log and the place in it.
    pub fn event_id(&self) -> Option<EventId> {
        self.id.as_deref().and_then(EventId::parse)
    }

    /// The payload as `T`.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, Error> {
        serde_json::from_str(&self.data)
            .map_err(|e| Error::Unexpected(format!("{} event: {e}", self.name)))
    }
}

/// The service sends a keep-alive every second: this long without a byte
/// and the connection is taken as dead.
const SILENCE: Duration = Duration::from_secs(5);
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// A follower of the stream; `next` gives its events in order.
pub struct Feed {
    client: Client,
    path: String,
    response: Option<reqwest::Response>,
    parser: Parser,
    ready: VecDeque<Event>,
    last_id: Option<String>,
    /// Failed connection attempts in a row.
    failures: u32,
    connects: u64,
    refused: u64,
    silence: Duration,
}

impl Feed {
    /// Follows GET /api/positions/unhealthy/stream with `query`, from now
    /// (`Client::feed`).
    pub(crate) fn follow(client: Client, query: &Query) -> Feed {
        Feed {
            client,
            path: format!("{}{}", path::STREAM, query.encode()),
            response: None,
            parser: Parser::default(),
            ready: VecDeque::new(),
            last_id: None,
            failures: 0,
            connects: 0,
            refused: 0,
            silence: SILENCE,
        }
    }

    /// Resumes after `id` (an event id read before, by this or another
    /// follower) instead of starting with a snapshot.
    pub fn resume_after(mut self, id: &str) -> Feed {
        self.last_id = Some(id.to_string());
        self
    }

    /// Takes a connection silent this long as dead (5 s by default).
    pub fn silence(mut self, silence: Duration) -> Feed {
        self.silence = silence;
        self
    }

    /// The id of the last frame read: where a reconnect resumes.
    pub fn last_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// Connections made so far (the first included).
    pub fn connects(&self) -> u64 {
        self.connects
    }

    /// Connection attempts that failed or were refused (and were tried again).
    pub fn refused(&self) -> u64 {
        self.refused
    }

    /// Drops the connection; the next `next` reconnects and resumes.
    pub fn disconnect(&mut self) {
        self.response = None;
        self.parser = Parser::default();
    }

    /// The next event, reconnecting as long as the service is away or busy.
    /// An error only when the service refuses the stream for good (a bad
    /// query: `invalid`). Cancel-safe: a `next` dropped unfinished (a
    /// `select!` that took another branch) loses no event; a connection it
    /// was making is made again by the next call.
    pub async fn next(&mut self) -> Result<Event, Error> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Ok(event);
            }
            let Some(response) = self.response.as_mut() else {
                self.connect().await?;
                continue;
            };
            match tokio::time::timeout(self.silence, response.chunk()).await {
                Ok(Ok(Some(bytes))) => {
                    for frame in self.parser.push(&bytes) {
                        if frame.id.is_some() {
                            self.last_id.clone_from(&frame.id);
                        }
                        if let Some(name) = frame.event {
                            self.ready.push_back(Event {
                                id: frame.id,
                                name,
                                data: frame.data.unwrap_or_default(),
                            });
                        }
                    }
                }
                // Ended, cut, or silent: resume from the last id.
                _ => self.disconnect(),
            }
        }
    }

    /// The next event, or None once `stop` is set (checked every 100 ms): a
    /// follower that runs until told to end. `next` is cancel-safe, so
    /// nothing read is lost when the stop wins.
    pub async fn next_unless(&mut self, stop: &AtomicBool) -> Option<Result<Event, Error>> {
        let stopped = async {
            while !stop.load(Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        };
        tokio::select! {
            event = self.next() => Some(event),
            () = stopped => None,
        }
    }

    /// One connection attempt, after a pause when the last ones failed.
    async fn connect(&mut self) -> Result<(), Error> {
        if self.failures > 0 {
            tokio::time::sleep(backoff(self.failures)).await;
        }
        let mut request = self.client.http.get(self.client.url(&self.path));
        if let Some(id) = &self.last_id {
            request = request.header("Last-Event-ID", id);
        }
        let outcome = match request.send().await {
            Ok(response) if response.status().as_u16() == 200 => {
                self.failures = 0;
                self.connects += 1;
                self.response = Some(response);
                return Ok(());
            }
            Ok(response) => api_error(response).await,
            Err(e) => Error::Transport(e.to_string()),
        };
        if !outcome.is_transient() {
            return Err(outcome);
        }
        self.failures = self.failures.saturating_add(1);
        self.refused += 1;
        Ok(())
    }
}

/// 100 ms doubling to 5 s, each between half and all of it, so followers
/// cut together do not come back together.
fn backoff(failures: u32) -> Duration {
    let full = FIRST_BACKOFF
        .saturating_mul(1 << failures.saturating_sub(1).min(16))
        .min(MAX_BACKOFF);
    full.mul_f64(rand::thread_rng().gen_range(0.5..=1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_to_its_cap_with_jitter() {
        for failures in 1..40 {
            let pause = backoff(failures);
            let full = FIRST_BACKOFF
                .saturating_mul(1 << (failures - 1).min(16))
                .min(MAX_BACKOFF);
            assert!(pause >= full / 2 && pause <= full, "{failures}: {pause:?}");
        }
        assert!(backoff(30) >= MAX_BACKOFF / 2);
    }
}
