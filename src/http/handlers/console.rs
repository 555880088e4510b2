//! The admin console (docs/design.md §9): static files compiled
//! into the binary, so it works offline and needs no CDN; sent gzipped when
//! asked, with strong tags so that a browser revalidates instead of
//! downloading them again. It talks to the same
//! signed endpoints as any client; nothing here is privileged.

use std::io::Write;
use std::sync::LazyLock;

use actix_web::http::header::{self, HeaderMap, HeaderValue};
use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse, web};
use flate2::Compression;
use flate2::write::GzEncoder;

use crate::error::ApiError;
use crate::serve::poll_answers::Body;

const INDEX: &str = include_str!("../console/index.html");
const STYLE: &str = include_str!("../console/console.css");
/// The scripts, by name: helpers, sections and sign-in; charts; freshness and
/// the overview; pools; admin; feed; risk lens; history.
const SCRIPTS: [(&str, &str); 9] = [
    ("console.js", include_str!("../console/console.js")),
    ("chart.js", include_str!("../console/chart.js")),
    ("live.js", include_str!("../console/live.js")),
    ("pools.js", include_str!("../console/pools.js")),
    ("admin.js", include_str!("../console/admin.js")),
    ("feed.js", include_str!("../console/feed.js")),
    ("risk.js", include_str!("../console/risk.js")),
    ("account.js", include_str!("../console/account.js")),
    ("history.js", include_str!("../console/history.js")),
];

/// Only this origin's scripts, styles and connections, and never in a frame (a
/// framed console could be used to trick an admin into signing).
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

/// One file as served: its bytes with their tag, and the same gzipped (once,
/// at first use) with a tag of their own, since RFC 9110 gives each encoding
/// its own strong validator. A browser revalidates (`no-cache`) and gets 304
/// while the file is unchanged: a visit downloads only what a new build changed.
struct Asset {
    content_type: &'static str,
    plain: Body,
    gzip: Option<Body>,
}

impl Asset {
    fn new(content_type: &'static str, text: &'static str) -> Asset {
        let plain = Body::new(Bytes::from_static(text.as_bytes()));
        let gzip = gzipped(text.as_bytes()).map(|bytes| {
            let tag = &plain.etag[..plain.etag.len() - 1];
            let etag = Bytes::from([tag, b"-gz\""].concat());
            Body { bytes, etag }
        });
        Asset {
            content_type,
            plain,
            gzip,
        }
    }

    /// The representation the request accepts, 304 when it holds it already.
    fn respond(&self, headers: &HeaderMap) -> HttpResponse {
        let body = match &self.gzip {
            Some(gzip) if accepts_gzip(headers) => gzip,
            _ => &self.plain,
        };
        let held = headers
            .get(header::IF_NONE_MATCH)
            .is_some_and(|tags| body.matches(tags.as_bytes()));
        let mut response = if held {
            HttpResponse::NotModified()
        } else {
            HttpResponse::Ok()
        };
        response
            .insert_header((header::CONTENT_SECURITY_POLICY, POLICY))
            .insert_header((header::X_FRAME_OPTIONS, "DENY"))
            .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
            .insert_header((header::REFERRER_POLICY, "no-referrer"))
            .insert_header((header::CACHE_CONTROL, "no-cache"))
            .insert_header((header::VARY, "Accept-Encoding"));
        if let Ok(tag) = HeaderValue::from_maybe_shared(body.etag.clone()) {
            response.insert_header((header::ETAG, tag));
        }
        if held {
            return response.finish();
        }
        if !std::ptr::eq(body, &self.plain) {
            response.insert_header((header::CONTENT_ENCODING, "gzip"));
        }
        response
            .content_type(self.content_type)
            .body(body.bytes.clone())
    }
}

/// The file gzipped at the best level (done once); None if that failed, and
/// the file is then sent as it is.
fn gzipped(bytes: &[u8]) -> Option<Bytes> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::best());
    encoder.write_all(bytes).ok()?;
    encoder.finish().ok().map(Bytes::from)
}

/// Whether `Accept-Encoding` takes gzip (by name or `*`) with a weight above 0.
fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| {
            let mut parts = coding.split(';');
            let name = parts.next().unwrap_or("").trim();
            let weight = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .find_map(|q| q.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            ["gzip", "x-gzip", "*"]
                .iter()
                .any(|g| name.eq_ignore_ascii_case(g))
                && weight > 0.0
        })
}

/// Every file, by the name it is asked for ("" is the page).
static ASSETS: LazyLock<Vec<(&'static str, Asset)>> = LazyLock::new(|| {
    let mut assets = vec![
        ("", Asset::new("text/html; charset=utf-8", INDEX)),
        ("console.css", Asset::new("text/css; charset=utf-8", STYLE)),
    ];
    for (name, script) in SCRIPTS {
        assets.push((name, Asset::new("text/javascript; charset=utf-8", script)));
    }
    assets
});

fn served(name: &str, request: &HttpRequest) -> Option<HttpResponse> {
    ASSETS
        .iter()
        .find(|(file, _)| *file == name)
        .map(|(_, asset)| asset.respond(request.headers()))
}

pub async fn page(request: HttpRequest) -> Result<HttpResponse, ApiError> {
    served("", &request).ok_or(ApiError::NotFound)
}

pub async fn file(name: web::Path<String>, request: HttpRequest) -> Result<HttpResponse, ApiError> {
    // "" is the page's own key, not a file name.
    if name.is_empty() {
        return Err(ApiError::NotFound);
    }
    served(name.as_str(), &request).ok_or(ApiError::NotFound)
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header::HeaderName;

    fn with(name: HeaderName, value: &'static str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(name, HeaderValue::from_static(value));
        headers
    }

    #[test]
    fn gzip_is_taken_by_name_or_star_unless_weighted_zero() {
        for (value, takes) in [
            ("gzip", true),
            ("br, gzip;q=0.5", true),
            ("GZIP", true),
            ("x-gzip", true),
            ("*", true),
            ("gzip;q=0", false),
            ("gzip; q=0.0", false),
            ("br, deflate", false),
            ("identity", false),
            ("", false),
        ] {
            assert_eq!(
                accepts_gzip(&with(header::ACCEPT_ENCODING, value)),
                takes,
                "{value:?}"
            );
        }
        assert!(!accepts_gzip(&HeaderMap::new()));
    }

    #[test]
    fn each_encoding_has_its_own_tag_and_the_gzip_holds_the_file() {
        let asset = Asset::new("text/plain", "console file ".repeat(200).leak());
        let gzip = asset.gzip.as_ref().unwrap();
        assert_ne!(gzip.etag, asset.plain.etag);
        assert!(gzip.bytes.len() * 5 < asset.plain.bytes.len());
        let mut out = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&gzip.bytes[..]), &mut out)
            .unwrap();
        assert_eq!(out.as_bytes(), &asset.plain.bytes[..]);
    }
}
