//! Conditional GET and long polls on the six rendered routes (docs/design.md §11):
//! strong ETags that two replicas of one database agree on, 304 with no body,
//! held polls woken by a change or timing out, and the cap on held polls.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use reqwest::header::{CACHE_CONTROL, ETAG, IF_NONE_MATCH};
use serde_json::Value;

use crate::common::*;
use crate::fixtures::feeds::read_events;
use crate::fixtures::market::{USD, market};
use crate::fixtures::replicas::second_replica;

/// The six routes, for a market with `owner` under water.
fn routes(owner: &str) -> Vec<String> {
    vec![
        "/api/positions/unhealthy?limit=50".into(),
        "/api/liquidations?limit=50".into(),
        "/api/positions/at-risk?below=1900000000000000000".into(),
        format!("/api/positions/{owner}"),
        format!("/api/positions/{owner}/detail"),
        "/api/pools".into(),
    ]
}

struct Got {
    status: StatusCode,
    etag: Option<String>,
    cache_control: Option<String>,
    body: String,
}

async fn get(http: &reqwest::Client, url: &str, tag: Option<&str>) -> Got {
    let mut req = http.get(url);
    if let Some(tag) = tag {
        req = req.header(IF_NONE_MATCH, tag);
    }
    let res = req.send().await.unwrap();
    let header = |name| {
        res.headers()
            .get(name)
            .map(|v: &reqwest::header::HeaderValue| v.to_str().unwrap().to_string())
    };
    Got {
        status: res.status(),
        etag: header(ETAG),
        cache_control: header(CACHE_CONTROL),
        body: res.text().await.unwrap(),
    }
}

#[actix_rt::test]
async fn every_route_answers_304_for_its_tag_and_replicas_agree() {
    let mut m = market(|_| {}).await;
    let owner = m.account(500_000_000, 40_000_000_000).await; // 0.5: under water
    m.account(1_000_000_000, 42_000_000_000).await; // 0.95
    m.account(2_000_000_000, 60_000_000_000).await; // 1.33: at risk
    let replica = second_replica(&m).await;
    let b = replica.base.clone();
    let http = reqwest::Client::new();
    let a = m.t.app.base.clone();
    for route in routes(&owner) {
        let first = get(&http, &format!("{a}{route}"), None).await;
        assert_eq!(first.status, 200, "{route}: {}", first.body);
        let tag = first.etag.clone().expect("an ETag");
        assert!(
            tag.len() == 34 && tag.starts_with('"') && tag.ends_with('"'),
            "{route}: strong, quoted: {tag}"
        );
        assert_eq!(first.cache_control.as_deref(), Some("no-cache"), "{route}");
        serde_json::from_str::<Value>(&first.body).expect("JSON");

        let again = get(&http, &format!("{a}{route}"), Some(&tag)).await;
        assert_eq!(again.status, 304, "{route}");
        assert_eq!(again.body, "", "{route}: no body");
        assert_eq!(again.etag.as_deref(), Some(tag.as_str()), "{route}");
        assert_eq!(again.cache_control.as_deref(), Some("no-cache"), "{route}");

        // The other replica: the same bytes, so the same tag (it loads from the
        // database on its own; wait until it has).
        let agreed = eventually(Duration::from_secs(10), async || {
            get(&http, &format!("{b}{route}"), Some(&tag)).await.status == 304
        })
        .await;
        assert!(
            agreed,
            "{route}: replica B holds the same answer under the same tag"
        );
        let other = get(&http, &format!("{b}{route}"), None).await;
        assert_eq!(other.body, first.body, "{route}");
        assert_eq!(other.etag, first.etag, "{route}");

        for garbage in ["garbage", "\"0123\"", "W/", ",,,"] {
            let res = get(&http, &format!("{a}{route}"), Some(garbage)).await;
            assert_eq!(res.status, 200, "{route}: {garbage} does not match");
        }
        let listed = format!("\"nope\", W/{tag}");
        assert_eq!(
            get(&http, &format!("{a}{route}"), Some(&listed))
                .await
                .status,
            304
        );
        assert_eq!(
            get(&http, &format!("{a}{route}"), Some("*")).await.status,
            304
        );
    }

    // A change: every answer about it gets a new tag, on both replicas.
    let before: Vec<String> = {
        let mut tags = Vec::new();
        for route in routes(&owner) {
            tags.push(get(&http, &format!("{a}{route}"), None).await.etag.unwrap());
        }
        tags
    };
    m.set_sol_price(22 * USD).await;
    for (route, tag) in routes(&owner).iter().zip(&before) {
        let now = get(&http, &format!("{a}{route}"), Some(tag)).await;
        assert_eq!(
            now.status, 200,
            "{route}: changed on the replica that wrote"
        );
        assert_ne!(now.etag.as_ref(), Some(tag), "{route}");
        let seen = eventually(Duration::from_secs(10), async || {
            let there = get(&http, &format!("{b}{route}"), Some(tag)).await;
            there.status == 200 && there.etag == now.etag
        })
        .await;
        assert!(seen, "{route}: replica B moved to the same new tag");
    }
}

#[actix_rt::test]
async fn wait_ms_is_checked() {
    let m = market(|_| {}).await;
    let owner = m.account(500_000_000, 40_000_000_000).await;
    for route in routes(&owner) {
        let sep = if route.contains('?') { '&' } else { '?' };
        for bad in ["abc", "30001", "-1", "1.5", "%2B5", "99999999999999999999"] {
            let (status, body) = m.t.app.get(&format!("{route}{sep}wait_ms={bad}")).await;
            assert_eq!(
                (status, body),
                (400, error("invalid")),
                "{route} wait_ms={bad}"
            );
        }
        // An empty value is no value, as for every parameter.
        for ok in ["30000", "0", ""] {
            let (status, _) = m.t.app.get(&format!("{route}{sep}wait_ms={ok}")).await;
            assert_eq!(
                status, 200,
                "{route} wait_ms={ok}: no If-None-Match, answered at once"
            );
        }
    }
}

/// A held poll of `route` with `tag`: its status, tag and how long it took.
async fn long_poll(
    url: String,
    tag: String,
    wait_ms: u64,
) -> (StatusCode, Option<String>, Duration) {
    let started = Instant::now();
    let got = get(
        &reqwest::Client::new(),
        &format!("{url}&wait_ms={wait_ms}"),
        Some(&tag),
    )
    .await;
    (got.status, got.etag, started.elapsed())
}

#[actix_rt::test]
async fn a_long_poll_is_held_until_a_change_wakes_it() {
    let m = market(|_| {}).await;
    m.account(500_000_000, 40_000_000_000).await;
    let url = m.t.app.url("/api/positions/unhealthy?limit=50");
    let tag = get(&reqwest::Client::new(), &url, None).await.etag.unwrap();
    let poll = actix_rt::spawn(long_poll(url.clone(), tag.clone(), 20_000));
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(!poll.is_finished(), "held while nothing changes");
    // A new owner under water changes the answer.
    m.account(1_000_000_000, 45_000_000_000).await;
    let (status, new_tag, took) = poll.await.unwrap();
    assert_eq!(status, 200, "woken with the new answer");
    assert_ne!(new_tag, Some(tag));
    assert!(
        took < Duration::from_secs(15),
        "woken by the change, not the wait: {took:?}"
    );
    // The new tag is the current one.
    let now = get(&reqwest::Client::new(), &url, None).await;
    assert_eq!(now.etag, new_tag);
}

#[actix_rt::test]
async fn a_long_poll_with_nothing_new_ends_in_304_after_its_wait() {
    let m = market(|_| {}).await;
    let owner = m.account(500_000_000, 40_000_000_000).await;
    let url = m.t.app.url(&format!("/api/positions/{owner}?v=1"));
    let tag = get(&reqwest::Client::new(), &url, None).await.etag.unwrap();
    let (status, etag, took) = long_poll(url, tag.clone(), 800).await;
    assert_eq!(status, 304);
    assert_eq!(etag, Some(tag));
    assert!(
        took >= Duration::from_millis(800),
        "held for its wait: {took:?}"
    );
    // A tag that no longer matches is answered at once, whatever the wait.
    let url = m.t.app.url("/api/pools?v=1");
    let (status, _, took) = long_poll(url, "\"stale\"".into(), 20_000).await;
    assert_eq!(status, 200);
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[actix_rt::test]
async fn past_max_held_polls_a_poll_is_answered_at_once() {
    let m = market(|c| c.server.max_held_polls = 1).await;
    m.account(500_000_000, 40_000_000_000).await;
    let url = m.t.app.url("/api/liquidations?limit=50");
    let tag = get(&reqwest::Client::new(), &url, None).await.etag.unwrap();
    let held = actix_rt::spawn(long_poll(url.clone(), tag.clone(), 3_000));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!held.is_finished());
    let (status, _, took) = long_poll(url.clone(), tag.clone(), 3_000).await;
    assert_eq!(status, 304, "answered as a plain conditional GET");
    assert!(took < Duration::from_millis(2_500), "not held: {took:?}");
    assert_eq!(held.await.unwrap().0, 304);
    let text = m.t.app.metrics_text().await;
    assert!(
        text.lines()
            .any(|l| l.starts_with("lendex_long_polls_refused_total ") && !l.ends_with(" 0")),
        "refusals counted"
    );
    // Once the first is answered, a poll is held again.
    let again = actix_rt::spawn(long_poll(url, tag, 1_000));
    let (status, _, took) = again.await.unwrap();
    assert_eq!(status, 304);
    assert!(took >= Duration::from_millis(1_000), "{took:?}");
}

/// docs/design.md §15 on a server reading at confirmed: the five reads and the
/// stream name their view in `Lendex-Commitment` on 200 and 304, accept
/// `commitment=confirmed` as the default, and refuse `processed` (not served
/// here) and any other word; quotes and events carry `commitment`.
#[actix_rt::test]
async fn every_view_read_names_its_view_and_refuses_another() {
    let m = market(|_| {}).await;
    let owner = m.account(500_000_000, 40_000_000_000).await; // under water
    let http = reqwest::Client::new();
    let a = m.t.app.base.clone();
    let view_of = |res: &reqwest::Response| {
        res.headers()
            .get("lendex-commitment")
            .map(|v| v.to_str().unwrap().to_string())
    };
    // The five reads (not /api/pools: one view of pools' terms).
    for route in routes(&owner).into_iter().take(5) {
        let sep = if route.contains('?') { '&' } else { '?' };
        let res = http.get(format!("{a}{route}")).send().await.unwrap();
        assert_eq!(res.status(), 200, "{route}");
        assert_eq!(view_of(&res).as_deref(), Some("confirmed"), "{route}");
        let tag = res.headers()[ETAG].to_str().unwrap().to_string();
        let body = res.text().await.unwrap();

        let explicit = format!("{a}{route}{sep}commitment=confirmed");
        let res = http.get(&explicit).send().await.unwrap();
        assert_eq!(view_of(&res).as_deref(), Some("confirmed"), "{route}");
        assert_eq!(res.headers()[ETAG], tag.as_str(), "{route}: the same view");
        assert_eq!(res.text().await.unwrap(), body, "{route}");

        let res = http
            .get(&explicit)
            .header(IF_NONE_MATCH, &tag)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 304, "{route}");
        assert_eq!(view_of(&res).as_deref(), Some("confirmed"), "{route}: 304");

        for word in ["processed", "finalized", "Confirmed", "x"] {
            let res = http
                .get(format!("{a}{route}{sep}commitment={word}"))
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), 400, "{route} {word}");
            assert_eq!(view_of(&res), None, "{route} {word}: no view answered");
            let body: Value = res.json().await.unwrap();
            assert_eq!(
                body,
                serde_json::json!({"error": "invalid"}),
                "{route} {word}"
            );
        }
    }
    let (_, quotes) = m.t.app.get("/api/liquidations").await;
    assert_eq!(
        quotes["liquidations"][0]["commitment"], "confirmed",
        "{quotes}"
    );

    // The stream.
    let stream = format!("{a}/api/positions/unhealthy/stream");
    let res = http
        .get(format!("{stream}?commitment=processed"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    let mut res = http
        .get(format!("{stream}?commitment=confirmed"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(view_of(&res).as_deref(), Some("confirmed"));
    let mut buffer = String::new();
    let events = read_events(&mut res, &mut buffer, 1, Duration::from_secs(10)).await;
    let (name, data) = events.first().expect("the snapshot's event");
    assert_eq!(name, "candidate_start");
    assert_eq!(data["commitment"], "confirmed");
    assert_eq!(data["liquidation"]["commitment"], "confirmed", "{data}");
}

/// One GET as bytes on the wire (no client decoding anything): the status,
/// the headers (names lowercased) and the body.
async fn raw_get(
    base: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, std::collections::HashMap<String, String>, Vec<u8>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let end = answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8(answer[..end].to_vec()).unwrap();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let fields = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    (status, fields, answer[end + 4..].to_vec())
}

/// The console's own files: gzipped when the browser takes gzip, as they are
/// when it does not (or weighs it 0), each with its tag, and 304 with no body
/// while the browser holds that tag, so a second visit downloads nothing.
#[actix_rt::test]
async fn the_console_files_are_compressed_and_revalidated() {
    let app = spawn_app().await;
    let index = get_text(&app.http, &app.url("/console")).await;
    let mut files = vec!["/console".to_string()];
    for part in index
        .split("src=\"/console/")
        .skip(1)
        .chain(index.split("href=\"/console/").skip(1))
    {
        files.push(format!("/console/{}", &part[..part.find('"').unwrap()]));
    }
    assert!(files.len() >= 10, "{files:?}");
    let (mut plain_total, mut gzip_total) = (0, 0);
    for file in &files {
        let (status, head, plain) = raw_get(&app.base, file, &[]).await;
        assert_eq!(status, 200, "{file}");
        assert!(!head.contains_key("content-encoding"), "{file}");
        let plain_tag = head["etag"].clone();
        assert_eq!(head["cache-control"], "no-cache");
        assert!(head["vary"].contains("Accept-Encoding"));

        let (status, head, zipped) = raw_get(
            &app.base,
            file,
            &[("Accept-Encoding", "br;q=1.0, gzip;q=0.8")],
        )
        .await;
        assert_eq!(status, 200, "{file}");
        assert_eq!(head["content-encoding"], "gzip", "{file}");
        let gzip_tag = head["etag"].clone();
        assert_ne!(gzip_tag, plain_tag, "{file}: one tag for two encodings");
        let mut unzipped = Vec::new();
        std::io::Read::read_to_end(
            &mut flate2::read::GzDecoder::new(&zipped[..]),
            &mut unzipped,
        )
        .unwrap();
        assert_eq!(unzipped, plain, "{file}: the gzip is not the file");
        (plain_total, gzip_total) = (plain_total + plain.len(), gzip_total + zipped.len());

        let (_, head, _) = raw_get(
            &app.base,
            file,
            &[("Accept-Encoding", "gzip;q=0, identity")],
        )
        .await;
        assert!(!head.contains_key("content-encoding"), "{file}: gzip;q=0");

        for (encoding, tag) in [("gzip", &gzip_tag), ("identity", &plain_tag)] {
            let (status, head, body) = raw_get(
                &app.base,
                file,
                &[("Accept-Encoding", encoding), ("If-None-Match", tag)],
            )
            .await;
            assert_eq!(status, 304, "{file} {encoding}");
            assert_eq!(&head["etag"], tag);
            assert!(body.is_empty());
        }
        // Another build's tag is not this one's.
        let (status, _, _) = raw_get(
            &app.base,
            file,
            &[("Accept-Encoding", "gzip"), ("If-None-Match", "\"0000\"")],
        )
        .await;
        assert_eq!(status, 200, "{file}");
    }
    assert!(
        gzip_total * 2 < plain_total,
        "gzip {gzip_total} of {plain_total} bytes"
    );
}
