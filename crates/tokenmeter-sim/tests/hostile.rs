//! Hostile servers, read as the page's engine reads them: each answer is stopped
//! at the limit it reaches, counted with the right kind, and read no further than
//! that limit (the bytes read are bounded, whatever the server would send).

mod common;

use std::time::Duration;

use common::{chat_body, fast_config, measure_live, start};
use tokenmeter_core::{
    schema::{ErrorKind, RequestRecord},
    SseLimits, ERROR_BODY_MAX_BYTES,
};
use tokenmeter_sim::SimServer;

async fn hostile(sim: &SimServer, fault: &str, timeout: Duration) -> (RequestRecord, u64) {
    measure_live(
        sim.addr,
        &[("x-tokenmeter-fault", fault)],
        &chat_body(12, true),
        timeout,
    )
    .await
}

fn kind(record: &RequestRecord) -> Option<ErrorKind> {
    record.error.as_ref().map(|e| e.kind)
}

const LONG: Duration = Duration::from_secs(30);

#[tokio::test]
async fn a_line_without_end_stops_at_the_line_limit() {
    let sim = start(fast_config()).await;
    let (record, n_bytes) = hostile(&sim, "huge-line", LONG).await;
    assert_eq!(kind(&record), Some(ErrorKind::EventTooLarge));
    let limit = SseLimits::default().max_line_bytes as u64;
    assert!(
        n_bytes > limit && n_bytes < limit + (256 << 10),
        "{n_bytes}"
    );
}

#[tokio::test]
async fn a_million_events_without_a_token_stop_at_the_event_limit() {
    let sim = start(fast_config()).await;
    let (record, n_bytes) = hostile(&sim, "million-events", LONG).await;
    let err = record.error.unwrap();
    assert_eq!(err.kind, ErrorKind::ResponseTooLarge);
    assert!(err.detail.contains("524288 events"), "{}", err.detail);
    // 21 bytes an event: stopped well before the million.
    assert!(n_bytes < 600_000 * 21, "{n_bytes}");
}

#[tokio::test]
async fn an_answer_that_ignores_max_tokens_stops_far_past_it() {
    let sim = start(fast_config()).await;
    let (record, _) = hostile(&sim, "endless", LONG).await;
    let err = record.error.as_ref().unwrap();
    assert_eq!(err.kind, ErrorKind::ResponseTooLarge);
    assert!(err.detail.contains("max_tokens"), "{}", err.detail);
    // 12 asked: 8 events a token asked and 256 more are allowed.
    assert_eq!(record.n_token_events, 12 * 8 + 256);
}

#[tokio::test]
async fn keep_alive_comments_forever_end_at_the_timeout_and_say_so() {
    let sim = start(fast_config()).await;
    let (record, _) = hostile(&sim, "keep-alive-forever", Duration::from_millis(700)).await;
    let err = record.error.unwrap();
    assert_eq!(err.kind, ErrorKind::TimeoutMidStream);
    assert!(
        err.detail.contains("keep-alive comment lines"),
        "{}",
        err.detail
    );
}

#[tokio::test]
async fn error_pages_are_sampled_and_an_endless_one_is_not_read_to_its_end() {
    let sim = start(fast_config()).await;
    let (record, n_bytes) = hostile(&sim, "html-200", LONG).await;
    let err = record.error.unwrap();
    assert_eq!(err.kind, ErrorKind::NotEventStream);
    assert!(err.body_sample.unwrap().contains("Welcome to nginx!"));
    assert!(n_bytes < 1_000);

    let (record, n_bytes) = hostile(&sim, "endless-error", LONG).await;
    let err = record.error.unwrap();
    assert_eq!(err.kind, ErrorKind::ServerError);
    assert!(err.detail.starts_with("HTTP 503"), "{}", err.detail);
    assert!(err.body_sample.unwrap().contains("upstream busy"));
    assert!(n_bytes < ERROR_BODY_MAX_BYTES + (128 << 10), "{n_bytes}");
}

#[tokio::test]
async fn a_header_block_without_end_is_refused_before_any_body() {
    let sim = start(fast_config()).await;
    let (record, n_bytes) = hostile(&sim, "endless-headers", LONG).await;
    assert_eq!(
        kind(&record),
        Some(ErrorKind::Network),
        "{:?}",
        record.error
    );
    assert_eq!((record.headers_us, n_bytes), (None, 0));
}

#[tokio::test]
async fn invalid_utf8_inside_a_token_is_read_as_a_replacement_character() {
    let sim = start(fast_config()).await;
    let (record, _) = hostile(&sim, "bad-utf8", LONG).await;
    assert!(record.is_ok(), "{:?}", record.error);
    assert_eq!((record.n_out, record.token_mismatch), (Some(12), Some(0)));
    let truth = common::truth(sim.addr).await;
    let text = truth["requests"][0]["text"].as_str().unwrap();
    assert_eq!(text.matches('\u{FFFD}').count(), 1, "{text}");
    assert_eq!(record.output_text.as_deref(), Some(text), "text exact");
}

#[tokio::test]
async fn fault_every_mixes_faulty_answers_with_good_ones() {
    let mut config = fast_config();
    config.faults = vec![tokenmeter_sim::fault::Fault::Html200];
    config.fault_every = 2;
    let sim = start(config).await;
    let mut kinds = Vec::new();
    for _ in 0..4 {
        let (record, _) = measure_live(sim.addr, &[], &chat_body(4, true), LONG).await;
        kinds.push(kind(&record));
    }
    let faulted = Some(ErrorKind::NotEventStream);
    assert_eq!(kinds, [None, faulted, None, faulted]);
    let truth = common::truth(sim.addr).await;
    let outcomes: Vec<&str> = truth["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["completed", "faulted", "completed", "faulted"]);
}
