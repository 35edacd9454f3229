//! A network between the client and the simulator (`--rtt-ms`): each direction
//! delays by half the round trip, as distance does. A request waits half of it
//! before the server sees it; a response's headers and every piece of its body
//! arrive half of it after the server wrote them, their spacing kept. The truth's
//! times are the server socket's, which this sits in front of: its `accepted_us`
//! is after the request's half, its `written_us` after the response's. The
//! connection's own set-up, done by the kernel, is not delayed. The simulator's own endpoints (`/v1/sim/…`) are not
//! behind it.

use std::{sync::Arc, time::Duration};

use axum::{
    body::Body,
    extract::{Request, State},
    middleware::Next,
    response::Response,
};
use bytes::Bytes;
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use tokio::time::Instant;

use super::AppState;

/// A piece of a body, and when it arrives.
type Due = (Instant, Result<Frame<Bytes>, axum::Error>);

pub(super) async fn network(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    let one_way = Duration::from_secs_f64(state.config.rtt_ms.max(0.0) / 2e3);
    if one_way.is_zero() || request.uri().path().starts_with("/v1/sim/") {
        return next.run(request).await;
    }
    tokio::time::sleep(one_way).await;
    let response = next.run(request).await;
    let written = Instant::now();
    let (parts, mut body) = response.into_parts();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Due>();
    // Read as the server writes, so each piece is stamped when written; a client
    // gone (the receiver dropped) drops the server's body too.
    tokio::spawn(async move {
        while let Some(frame) = body.frame().await {
            if tx.send((Instant::now() + one_way, frame)).is_err() {
                break;
            }
        }
    });
    tokio::time::sleep_until(written + one_way).await;
    let arriving = futures_util::stream::unfold(rx, |mut rx| async move {
        let (due, frame) = rx.recv().await?;
        tokio::time::sleep_until(due).await;
        Some((frame, rx))
    });
    Response::from_parts(parts, Body::new(StreamBody::new(arriving)))
}
