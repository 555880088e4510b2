//! clients/scenarios.json replayed against the Rust client (`lendex-client`),
//! as the TypeScript and Python packages replay it in their own tests: a
//! scripted service answers each request in turn (one per connection), and
//! the client must send and do exactly what the file says.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use lendex::domain::forks::Commitment;
use lendex_client::routes::path;
use lendex_client::sse::Parser;
use lendex_client::{Client, Error, Polled, Query};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn scenarios() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/clients/scenarios.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn text(v: &Value) -> Option<String> {
    v.as_str().map(str::to_string)
}

/// What the scripted service saw of one request.
#[derive(Debug, Clone)]
struct Seen {
    target: String,
    headers: Vec<(String, String)>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<String> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    }

    fn param(&self, name: &str) -> Option<String> {
        let query = self.target.split_once('?')?.1;
        query.split('&').find_map(|pair| {
            let (k, v) = pair.split_once('=')?;
            (k == name).then(|| v.to_string())
        })
    }
}

/// Answers the n-th request with the n-th response of `responses`, then
/// closes the connection; returns its URL and what it saw.
async fn service(responses: Vec<Value>) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    tokio::spawn(async move {
        for response in responses {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && socket.read(&mut byte).await.unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            let head = String::from_utf8_lossy(&head).into_owned();
            let mut lines = head.split("\r\n");
            let target = lines
                .next()
                .unwrap_or("")
                .split(' ')
                .nth(1)
                .unwrap_or("")
                .to_string();
            let headers = lines
                .filter_map(|l| l.split_once(':'))
                .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
                .collect();
            record.lock().unwrap().push(Seen { target, headers });
            let status = response["status"].as_u64().unwrap();
            let mut out = format!("HTTP/1.1 {status} Scripted\r\nconnection: close\r\n");
            for (name, value) in response["headers"].as_object().into_iter().flatten() {
                out.push_str(&format!("{name}: {}\r\n", value.as_str().unwrap()));
            }
            if let Some(chunks) = response["sse"].as_array() {
                out.push_str("content-type: text/event-stream\r\n\r\n");
                let _ = socket.write_all(out.as_bytes()).await;
                for chunk in chunks {
                    let _ = socket.write_all(chunk.as_str().unwrap().as_bytes()).await;
                    let _ = socket.flush().await;
                }
            } else {
                let body = response["body"].as_str().unwrap_or("");
                out.push_str(&format!("content-length: {}\r\n\r\n{body}", body.len()));
                let _ = socket.write_all(out.as_bytes()).await;
            }
            let _ = socket.shutdown().await;
        }
    });
    (url, seen)
}

#[test]
fn sse_frames() {
    for s in scenarios()["sse"].as_array().unwrap() {
        let bytes = s["text"].as_str().unwrap().as_bytes();
        let want: Vec<Vec<Option<String>>> = s["frames"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_array().unwrap().iter().map(text).collect())
            .collect();
        for cut in 0..=bytes.len() {
            let mut parser = Parser::default();
            let mut frames = parser.push(&bytes[..cut]);
            frames.extend(parser.push(&bytes[cut..]));
            let got: Vec<Vec<Option<String>>> = frames
                .into_iter()
                .map(|f| vec![f.id, f.event, f.data])
                .collect();
            assert_eq!(got, want, "{}: cut at {cut}", s["name"]);
        }
    }
}

#[actix_rt::test]
async fn errors() {
    for s in scenarios()["errors"].as_array().unwrap() {
        let (url, _) = service(vec![s.clone()]).await;
        let error = Client::new(&url).pools().await.unwrap_err();
        let Error::Api {
            status,
            error: reason,
            retry_after,
            field,
        } = &error
        else {
            panic!("{}: {error:?}", s["name"]);
        };
        assert_eq!(
            u64::from(*status),
            s["status"].as_u64().unwrap(),
            "{}",
            s["name"]
        );
        assert_eq!(reason, s["error"].as_str().unwrap(), "{}", s["name"]);
        assert_eq!(*retry_after, s["retry_after"].as_u64(), "{}", s["name"]);
        assert_eq!(field.as_deref(), s["field"].as_str(), "{}", s["name"]);
        assert_eq!(
            error.is_transient(),
            s["transient"].as_bool().unwrap(),
            "{}",
            s["name"]
        );
    }
}

#[actix_rt::test]
async fn polls() {
    for s in scenarios()["polls"].as_array().unwrap() {
        let (url, seen) = service(s["responses"].as_array().unwrap().clone()).await;
        let client = Client::new(&url);
        for (i, call) in s["calls"].as_array().unwrap().iter().enumerate() {
            let wait = call["wait_ms"]
                .as_u64()
                .filter(|w| *w > 0)
                .map(Duration::from_millis);
            let answer = client
                .poll::<Value>(
                    path::LIQUIDATIONS,
                    &Query::new(),
                    call["etag"].as_str(),
                    wait,
                )
                .await
                .unwrap();
            let changed = matches!(answer, Polled::Changed { .. });
            assert_eq!(changed, call["changed"].as_bool().unwrap(), "{}", s["name"]);
            if let (Polled::Changed { etag, .. }, Some(after)) =
                (&answer, call["etag_after"].as_str())
            {
                assert_eq!(etag, after);
            }
            let request = seen.lock().unwrap()[i].clone();
            assert_eq!(
                request.header("if-none-match"),
                text(&call["sent"]["if_none_match"])
            );
            assert_eq!(request.param("wait_ms"), text(&call["sent"]["wait_ms"]));
        }
    }
}

#[actix_rt::test]
async fn feeds() {
    for s in scenarios()["feeds"].as_array().unwrap() {
        let (url, seen) = service(s["responses"].as_array().unwrap().clone()).await;
        let view = match s["commitment"].as_str().unwrap() {
            "processed" => Commitment::Processed,
            _ => Commitment::Confirmed,
        };
        let mut feed = Client::new(&url).feed(&Query::new().view(view));
        let mut events = Vec::new();
        let end = loop {
            match tokio::time::timeout(Duration::from_secs(10), feed.next()).await {
                Ok(Ok(e)) => {
                    let data: Value = serde_json::from_str(&e.data).unwrap();
                    events.push(serde_json::json!([e.id, e.name, data]));
                }
                Ok(Err(error)) => break error,
                Err(_) => panic!("{}: no end within 10 s, events {events:?}", s["name"]),
            }
        };
        assert_eq!(Value::Array(events), s["events"], "{}", s["name"]);
        let Error::Api { status, error, .. } = end else {
            panic!("{}: ended with {end:?}", s["name"]);
        };
        assert_eq!(
            u64::from(status),
            s["ends_with"]["status"].as_u64().unwrap()
        );
        assert_eq!(error, s["ends_with"]["error"].as_str().unwrap());
        let seen = seen.lock().unwrap().clone();
        let ids: Vec<Value> = seen
            .iter()
            .map(|r| r.header("last-event-id").into())
            .collect();
        assert_eq!(Value::Array(ids), s["last_event_ids"], "{}", s["name"]);
        assert!(
            seen.iter()
                .all(|r| r.param("commitment").as_deref() == s["commitment"].as_str())
        );
    }
}
