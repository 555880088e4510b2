//! The admin console (docs/design.md §9): static files compiled
//! into the binary, so it works offline and needs no CDN. It talks to the same
//! signed endpoints as any client; nothing here is privileged.

use actix_web::http::header;
use actix_web::{HttpResponse, web};

use crate::error::ApiError;

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

fn asset(content_type: &'static str, body: &'static str) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(content_type)
        .insert_header((header::CONTENT_SECURITY_POLICY, POLICY))
        .insert_header((header::X_FRAME_OPTIONS, "DENY"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .body(body)
}

pub async fn page() -> HttpResponse {
    asset("text/html; charset=utf-8", INDEX)
}

pub async fn file(name: web::Path<String>) -> Result<HttpResponse, ApiError> {
    if name.as_str() == "console.css" {
        return Ok(asset("text/css; charset=utf-8", STYLE));
    }
    SCRIPTS
        .iter()
        .find(|(file, _)| *file == name.as_str())
        .map(|(_, script)| asset("text/javascript; charset=utf-8", script))
        .ok_or(ApiError::NotFound)
}
