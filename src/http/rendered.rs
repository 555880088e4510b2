//! Serving the health cache's rendered answers: the bytes shared by every HTTP
//! worker for this change and second, or, on a miss, rendered by the actor.

use actix_web::HttpResponse;

use crate::actors::health_cache::Render;
use crate::actors::health_cache::feed::{Answer, cached_answer};
use crate::error::{ApiError, ApiResult};
use crate::http::state::AppState;

pub async fn serve_answer(state: &AppState, answer: Answer) -> ApiResult<HttpResponse> {
    let now = chrono::Utc::now().timestamp();
    let body = match cached_answer(&state.rendered, &answer, now) {
        Some(body) => body,
        None => state
            .cache
            .send(Render(answer))
            .await
            .map_err(|_| ApiError::Internal)??,
    };
    Ok(json_bytes(body))
}

/// A 200 with an already rendered JSON body.
pub fn json_bytes(body: actix_web::web::Bytes) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(body)
}
