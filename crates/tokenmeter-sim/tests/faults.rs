//! Every fault, as tokenmeter-core classifies it: the simulator and the core are
//! checked against each other, the truth record as the referee.

mod common;

use std::time::{Duration, Instant};

use common::{chat_body, fast_config, measure, post_chat, start, Received};
use tokenmeter_core::schema::{ErrorKind, RequestRecord};
use tokenmeter_sim::SimServer;

async fn with_fault(sim: &SimServer, fault: &str, max_tokens: u64) -> (Received, RequestRecord) {
    let origin = Instant::now();
    let r = post_chat(
        sim.addr,
        &[("x-tokenmeter-fault", fault)],
        &chat_body(max_tokens, true),
    )
    .await;
    let record = measure(&r, origin, true);
    (r, record)
}

fn kind(record: &RequestRecord) -> Option<ErrorKind> {
    record.error.as_ref().map(|e| e.kind)
}

#[tokio::test]
async fn http_error_faults() {
    let sim = start(fast_config()).await;
    for (fault, status, expected) in [
        ("401", 401, ErrorKind::Auth),
        ("404", 404, ErrorKind::NotFound),
        ("429", 429, ErrorKind::RateLimited),
        ("500", 500, ErrorKind::ServerError),
        ("html-502", 502, ErrorKind::ServerError),
    ] {
        let (r, record) = with_fault(&sim, fault, 4).await;
        assert_eq!(r.status, status, "{fault}");
        assert_eq!(kind(&record), Some(expected), "{fault}");
    }
    let (_, record) = with_fault(&sim, "429", 4).await;
    assert_eq!(record.error.unwrap().retry_after_s, Some(2.0));
    let (_, record) = with_fault(&sim, "html-502", 4).await;
    assert!(record
        .error
        .unwrap()
        .body_sample
        .unwrap()
        .contains("502 Bad Gateway"));
    let truth = common::truth(sim.addr).await;
    assert!(truth["requests"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["outcome"] == "http_error"));
}

#[tokio::test]
async fn hang_holds_the_headers_back() {
    let mut config = fast_config();
    config.hang_s = 0.3;
    let sim = start(config).await;
    let (r, _) = with_fault(&sim, "hang", 4).await;
    assert!(r.headers_at - r.sent_at >= Duration::from_millis(300));
    assert_eq!(r.status, 504);
}

#[tokio::test]
async fn cut_is_a_stream_cut() {
    let sim = start(fast_config()).await;
    let (r, record) = with_fault(&sim, "cut", 10).await;
    assert!(r.body_error.is_some(), "the body read failed");
    assert_eq!(kind(&record), Some(ErrorKind::StreamCut));
    // Five tokens were written before the cut; the reset that cuts the connection
    // may discard the last of them before the client reads it.
    assert!(
        (1..=5).contains(&record.n_token_events),
        "{}",
        record.n_token_events
    );
    let truth = common::truth(sim.addr).await;
    assert_eq!(truth["requests"][0]["outcome"], "faulted");
    assert_eq!(truth["requests"][0]["tokens"].as_array().unwrap().len(), 5);
}

#[tokio::test]
async fn error_event_inside_a_200_stream() {
    let sim = start(fast_config()).await;
    let (r, record) = with_fault(&sim, "error-event", 10).await;
    assert_eq!(r.status, 200);
    let err = record.error.unwrap();
    assert_eq!(err.kind, ErrorKind::StreamErrorEvent);
    assert!(err.detail.contains("KV cache"));
    let truth = common::truth(sim.addr).await;
    assert_eq!(truth["requests"][0]["outcome"], "faulted");
}

#[tokio::test]
async fn empty_bad_json_and_huge_event() {
    let sim = start(fast_config()).await;
    let (_, record) = with_fault(&sim, "empty", 10).await;
    assert_eq!(kind(&record), Some(ErrorKind::EmptyStream));
    let (_, record) = with_fault(&sim, "bad-json", 10).await;
    assert_eq!(kind(&record), Some(ErrorKind::MalformedJson));
    let (r, record) = with_fault(&sim, "huge-event", 3).await;
    assert!(r.body().len() > 1 << 20);
    assert_eq!(kind(&record), Some(ErrorKind::EventTooLarge));
}

#[tokio::test]
async fn format_faults_are_measured_exactly() {
    let sim = start(fast_config()).await;
    for fault in ["split-utf8", "comments", "crlf", "split-utf8,crlf,comments"] {
        let (r, record) = with_fault(&sim, fault, 12).await;
        assert!(record.is_ok(), "{fault}: {:?}", record.error);
        assert_eq!(record.n_out, Some(12), "{fault}");
        assert_eq!(record.token_mismatch, Some(0), "{fault}");
        let truth = common::truth(sim.addr).await;
        let mine = truth["requests"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| Some(t["response_id"].as_str().unwrap()) == r.header("x-request-id"))
            .unwrap()
            .clone();
        assert_eq!(
            record.output_text.as_deref(),
            mine["text"].as_str(),
            "{fault}: text exact"
        );
        if fault.contains("comments") {
            assert!(record.n_comment_lines >= 3, "{fault}");
        }
        if fault.contains("crlf") {
            assert!(r.text().contains("\r\n\r\n"));
        }
        if fault == "split-utf8" {
            let cut_inside = r
                .frames
                .iter()
                .any(|(_, b)| std::str::from_utf8(b).is_err());
            assert!(cut_inside, "some frame ends or starts inside a character");
        }
    }
}

/// The truth of the response `r`.
async fn truth_of(sim: &SimServer, r: &Received) -> serde_json::Value {
    let truth = common::truth(sim.addr).await;
    truth["requests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| Some(t["response_id"].as_str().unwrap()) == r.header("x-request-id"))
        .unwrap()
        .clone()
}

#[tokio::test]
async fn split_writes_and_bytes_after_done_change_no_record() {
    let sim = start(fast_config()).await;
    for fault in [
        "split-writes",
        "after-done",
        "split-writes,after-done",
        "split-writes,after-done,multi-token,comments,crlf,reasoning",
    ] {
        let (r, record) = with_fault(&sim, fault, 12).await;
        assert!(record.is_ok(), "{fault}: {:?}", record.error);
        assert_eq!(
            record.n_out,
            Some(12),
            "{fault}: usage of the real usage chunk"
        );
        let mine = truth_of(&sim, &r).await;
        assert_eq!(
            record.output_text.as_deref(),
            mine["text"].as_str(),
            "{fault}: text exact, nothing after the end in it"
        );
        assert_eq!(
            record.n_token_events,
            mine["n_token_events"].as_u64().unwrap(),
            "{fault}"
        );
        let body = r.body();
        if fault.contains("split-writes") {
            // Each piece is a chunk of its own (HTTP/1.1 chunked), so the reads show
            // the cuts whatever the machine's timing: `[DONE]` among them.
            // `data: [DONE]` and its line ends, cut in the middle.
            let (head, tail) = if fault.contains("crlf") {
                ("data: [D", "ONE]\r\n\r\n")
            } else {
                ("data: [", "DONE]\n\n")
            };
            let i = r
                .frames
                .iter()
                .position(|(_, b)| b.ends_with(head.as_bytes()))
                .unwrap_or_else(|| panic!("{fault}: no read ends with `{head}`"));
            assert!(r.frames[i + 1].1.starts_with(tail.as_bytes()), "{fault}");
        }
        if fault.contains("after-done") {
            let text = String::from_utf8_lossy(&body);
            let after = &text[text.find("[DONE]").unwrap()..];
            assert!(
                after.contains("多余") && after.contains("999"),
                "{fault}: {after}"
            );
            assert!(!record.output_text.as_deref().unwrap().contains("多余"));
        }
    }
}

#[tokio::test]
async fn multi_token_events_are_counted_by_usage() {
    let sim = start(fast_config()).await;
    let (_, record) = with_fault(&sim, "multi-token", 10).await;
    assert!(record.is_ok());
    assert_eq!(record.n_token_events, 3, "4 + 4 + 2 tokens");
    assert_eq!(record.n_out, Some(10));
    assert_eq!(record.token_mismatch, Some(7));
}

#[tokio::test]
async fn reasoning_comes_before_the_answer() {
    let sim = start(fast_config()).await;
    let (_, record) = with_fault(&sim, "reasoning", 12).await;
    assert!(record.is_ok());
    assert_eq!(record.n_reasoning_events, 3);
    assert_eq!(record.usage.unwrap().reasoning_tokens, Some(3));
    assert!(record.ttfat_us().unwrap() > record.ttft_us().unwrap());
    let truth = common::truth(sim.addr).await;
    assert_eq!(truth["requests"][0]["n_reasoning_tokens"], 3);
}

#[tokio::test]
async fn a_global_fault_applies_to_every_request() {
    let mut config = fast_config();
    config.faults = vec![tokenmeter_sim::fault::Fault::RateLimited];
    let sim = start(config).await;
    let r = post_chat(sim.addr, &[], &chat_body(2, true)).await;
    assert_eq!(r.status, 429);
}

#[tokio::test]
async fn done_hold_keeps_the_body_open_after_done_and_echo_headers_shows_the_key() {
    let mut config = fast_config();
    config.hang_s = 0.4;
    config.api_key = Some("sk-echo-me-0123456789".into());
    let sim = start(config).await;
    let origin = Instant::now();
    let r = post_chat(
        sim.addr,
        &[
            ("x-tokenmeter-fault", "done-hold"),
            ("authorization", "Bearer sk-echo-me-0123456789"),
        ],
        &chat_body(4, true),
    )
    .await;
    // [DONE] arrives, then the body stays open for the hang time.
    let done_at = r
        .frames
        .iter()
        .find(|(_, bytes)| bytes.windows(6).any(|w| w == b"[DONE]"))
        .map(|(at, _)| *at)
        .expect("[DONE] was sent");
    let body_end = r.frames.last().map(|(at, _)| *at).unwrap();
    assert!(done_at - r.sent_at < Duration::from_millis(300));
    assert!(
        Instant::now() - done_at >= Duration::from_millis(350),
        "the body ended {:?} after [DONE]",
        Instant::now() - done_at
    );
    assert!(body_end <= Instant::now());
    // The core ends the request at [DONE], not at the body's end.
    let record = measure(&r, origin, true);
    assert!(record.is_ok(), "{:?}", record.error);
    let done_us = (done_at - origin).as_micros() as u64;
    assert!(record.end_us <= done_us + 1_000, "E2E ends at [DONE]");

    // A gateway that echoes the request's headers in its error, key and all.
    let r = post_chat(
        sim.addr,
        &[
            ("x-tokenmeter-fault", "echo-headers"),
            ("authorization", "Bearer sk-echo-me-0123456789"),
        ],
        &chat_body(4, true),
    )
    .await;
    assert_eq!(r.status, 400);
    assert!(r
        .text()
        .contains("authorization: Bearer sk-echo-me-0123456789"));
}

#[tokio::test]
async fn hidden_reasoning_is_counted_but_never_streamed() {
    let sim = start(fast_config()).await;
    let (r, record) = with_fault(&sim, "hidden-reasoning", 16).await;
    assert!(record.is_ok(), "{:?}", record.error);
    assert!(
        !r.text().contains("reasoning_content"),
        "nothing of it is streamed"
    );
    assert_eq!(record.n_token_events, 12);
    assert_eq!(record.n_out, Some(16));
    assert_eq!(record.hidden_reasoning_tokens(), 4);
    assert_eq!(record.n_streamed_out(), Some(12));
    let truth = common::truth(sim.addr).await;
    assert_eq!(truth["requests"][0]["n_reasoning_tokens"], 4);
}
