//! The routes, CORS on every answer (errors and streams included), and the
//! simulator's own endpoints (`/v1/models`, `/v1/sim/truth`, `/v1/sim/config`,
//! `/metrics`).

use std::{sync::Arc, time::Duration};

use axum::{
    extract::{Query, Request, State},
    http::{header, HeaderValue, Method, StatusCode},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::{get, post},
    Json, Router,
};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{
    completion::{chat_completions, completions, messages, responses},
    AppState,
};

pub(super) fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/v1/models", get(models))
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/completions", post(completions))
        .route("/v1/responses", post(responses))
        .route("/v1/messages", post(messages))
        .route("/v1/sim/truth", get(truth).delete(clear_truth))
        .route("/v1/sim/config", get(sim_config))
        .route("/metrics", get(super::metrics::metrics))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(state.clone(), cors))
        // Outside CORS: a preflight crosses the network too.
        .layer(middleware::from_fn_with_state(
            state.clone(),
            super::network::network,
        ))
        .with_state(state)
}

/// CORS for browser callers, on every response including errors and the stream,
/// plus `Timing-Allow-Origin` so the browser exposes Resource Timing (unless told
/// to leave it out, as most real servers do).
async fn cors(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let requested_headers = request
        .headers()
        .get(header::ACCESS_CONTROL_REQUEST_HEADERS)
        .cloned();
    let metrics_without_cors = state.config.no_metrics_cors && request.uri().path() == "/metrics";
    let mut response = if request.method() == Method::OPTIONS {
        if state.config.preflight_delay_ms > 0.0 {
            // A far-away server: each preflight costs a round trip the page can see.
            tokio::time::sleep(Duration::from_secs_f64(
                state.config.preflight_delay_ms / 1e3,
            ))
            .await;
        }
        StatusCode::NO_CONTENT.into_response()
    } else {
        next.run(request).await
    };
    if state.config.no_cors || metrics_without_cors {
        return response;
    }
    let headers = response.headers_mut();
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    if !state.config.no_timing_allow_origin {
        headers.insert("timing-allow-origin", HeaderValue::from_static("*"));
    }
    headers.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("retry-after, x-request-id"),
    );
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, DELETE, OPTIONS"),
    );
    // Wildcards do not cover `Authorization`: name what was asked for, and ours.
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        requested_headers.unwrap_or_else(|| {
            HeaderValue::from_static("authorization, content-type, api-key, x-tokenmeter-fault")
        }),
    );
    if !state.config.no_cors_max_age {
        headers.insert(
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static("86400"),
        );
    }
    response
}

async fn index(State(state): State<Arc<AppState>>) -> impl IntoResponse {
    format!(
        "tokenmeter-sim: an OpenAI-compatible streaming simulator.\nBase URL: /v1  models: {}\nTruth: GET /v1/sim/truth\n",
        state.config.models.join(", ")
    )
}

async fn models(State(state): State<Arc<AppState>>) -> impl IntoResponse {
    let data: Vec<Value> = state
        .config
        .models
        .iter()
        .map(|id| {
            json!({"id": id, "object": "model", "created": state.created_unix_s, "owned_by": "tokenmeter-sim"})
        })
        .collect();
    Json(json!({"object": "list", "data": data}))
}

#[derive(Deserialize)]
struct SinceQuery {
    #[serde(default)]
    since: u64,
}

async fn truth(State(state): State<Arc<AppState>>, Query(q): Query<SinceQuery>) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        state.truth.to_json(q.since),
    )
        .into_response()
}

async fn clear_truth(State(state): State<Arc<AppState>>) -> StatusCode {
    state.truth.clear();
    StatusCode::NO_CONTENT
}

async fn sim_config(State(state): State<Arc<AppState>>) -> impl IntoResponse {
    Json(json!({
        "models": state.config.models,
        "engine": state.config.engine,
        "faults": state.config.faults.iter().map(|f| f.name()).collect::<Vec<_>>(),
        "tls": state.config.tls,
        "api_key_required": state.config.api_key.is_some(),
    }))
}

async fn not_found(method: Method, uri: axum::http::Uri) -> Response {
    openai_error(
        StatusCode::NOT_FOUND,
        &format!("{method} {uri} is not an endpoint of this server; the API is under /v1"),
        "invalid_request_error",
        Some("unknown_url"),
    )
}

pub(super) fn openai_error(
    status: StatusCode,
    message: &str,
    kind: &str,
    code: Option<&str>,
) -> Response {
    (
        status,
        Json(json!({"error": {"message": message, "type": kind, "param": null, "code": code}})),
    )
        .into_response()
}
