//! Serving the health cache's rendered answers: the bytes shared by every HTTP
//! worker for this change and second, or, on a miss, rendered by the actor.

use actix_web::HttpResponse;
use actix_web::http::header::{CONTENT_TYPE, HeaderValue};

use crate::actors::health_cache::Render;
use crate::engine::answers::{Answer, cached_answer, now_seconds};
use crate::error::ApiResult;
use crate::http::state::AppState;

pub async fn serve_answer(state: &AppState, answer: Answer) -> ApiResult<HttpResponse> {
    let now = now_seconds();
    let body = match cached_answer(&state.rendered, &answer, now) {
        Some(body) => body,
        None => state.cache.send(Render(answer)).await??,
    };
    Ok(json_bytes(body))
}

/// A 200 with an already rendered JSON body.
pub fn json_bytes(body: actix_web::web::Bytes) -> HttpResponse {
    // A static header value: nothing parsed or copied per answer.
    HttpResponse::Ok()
        .insert_header((CONTENT_TYPE, HeaderValue::from_static("application/json")))
        .body(body)
}
