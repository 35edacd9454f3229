//! The engine in a real browser against the simulator (started on loopback by
//! `cargo xtask test`, which passes its URL at compile time): one request measured
//! end to end, a timeout, and Cancel.

#![cfg(target_arch = "wasm32")]

use std::time::Duration;

use tokenmeter::engine::{
    cancel::CancelToken,
    clock::Clock,
    request::{send, Target},
};
use tokenmeter_core::{
    error::ErrorKind,
    record::{RecordOptions, RequestStart},
};
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

fn sim_url() -> &'static str {
    match option_env!("TOKENMETER_SIM_URL") {
        Some(url) => url,
        None => {
            panic!("TOKENMETER_SIM_URL is set by `cargo xtask test`, which starts the simulator")
        }
    }
}

fn target(max_tokens: u32, fault: Option<&str>, timeout_ms: f64) -> Target {
    let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
    if let Some(fault) = fault {
        headers.push(("x-tokenmeter-fault".into(), fault.into()));
    }
    Target {
        url: format!("{}/chat/completions", sim_url()),
        body: serde_json::json!({
            "model": "tokenmeter-sim",
            "messages": [{"role": "user", "content": "你好"}],
            "max_tokens": max_tokens,
            "stream": true,
            "stream_options": {"include_usage": true},
        })
        .to_string(),
        headers,
        timeout_ms,
    }
}

fn start(clock: &Clock) -> RequestStart {
    let now = clock.now_us();
    RequestStart {
        id: 1,
        concurrency: 1,
        warmup: false,
        wanted_us: now,
        sent_us: now,
    }
}

#[wasm_bindgen_test]
async fn one_request_is_measured_end_to_end() {
    let clock = Clock::start();
    let options = RecordOptions {
        keep_text: true,
        ..RecordOptions::default()
    };
    let record = send(
        &target(12, None, 30_000.0),
        start(&clock),
        &clock,
        &CancelToken::default(),
        options,
    )
    .await;
    assert!(record.is_ok(), "{:?}", record.error);
    assert_eq!(record.n_out, Some(12));
    assert_eq!(record.n_token_events, 12);
    assert_eq!(record.token_mismatch, Some(0));
    assert!(record
        .response_id
        .as_deref()
        .unwrap()
        .starts_with("chatcmpl-"));
    assert!(record.ttft_us().unwrap() > 0);
    assert!(record.output_text.unwrap().chars().count() >= 12);
    assert!(record.saw_done);
}

#[wasm_bindgen_test]
async fn the_timeout_aborts_a_hung_request() {
    let clock = Clock::start();
    let record = send(
        &target(4, Some("hang"), 300.0),
        start(&clock),
        &clock,
        &CancelToken::default(),
        RecordOptions::default(),
    )
    .await;
    assert_eq!(
        record.error.as_ref().unwrap().kind,
        ErrorKind::TimeoutBeforeHeaders
    );
    assert!(record.e2e_us() >= 300_000);
}

#[wasm_bindgen_test]
async fn cancel_aborts_a_stream_in_flight() {
    let clock = Clock::start();
    let cancel = CancelToken::default();
    let canceller = cancel.clone();
    wasm_bindgen_futures::spawn_local(async move {
        gloo_timers::future::sleep(Duration::from_millis(600)).await;
        canceller.cancel();
    });
    let record = send(
        &target(2000, None, 30_000.0),
        start(&clock),
        &clock,
        &cancel,
        RecordOptions::default(),
    )
    .await;
    let err = record.error.clone().unwrap();
    assert_eq!(err.kind, ErrorKind::Cancelled);
    assert!(record.n_token_events > 0 && record.n_token_events < 2000);
    assert_eq!(cancel.n_in_flight(), 0, "the request unregistered itself");
}
