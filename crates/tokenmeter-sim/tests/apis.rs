//! The Responses and Messages APIs beside OpenAI's chunks: every kind's stream,
//! read by tokenmeter-core as that kind, gives the simulator's tokens exactly,
//! its reasoning and tool calls counted apart, its usage and its end; and only
//! what each API takes is taken.

mod common;

use std::time::Instant;

use common::{fast_config, measure_kind, send, start, truth};
use serde_json::{json, Value};
use tokenmeter_core::schema::{EndpointKind, ErrorKind};

const PROMPT: &str = "请用300字介绍大模型推理中的prefill和decode两个阶段";

/// A streaming request of `kind` for `max_tokens`, as tokenmeter's core writes it.
fn body(kind: EndpointKind, max_tokens: u32) -> Value {
    tokenmeter_core::request_body(&tokenmeter_core::BodySpec {
        kind,
        model: "tokenmeter-sim".into(),
        prompt: PROMPT.into(),
        max_tokens,
        temperature: None,
        include_usage: true,
        extra: Default::default(),
        messages: None,
    })
}

#[tokio::test]
async fn every_kind_s_stream_is_read_exactly_with_reasoning_and_tool_calls_apart() {
    let sim = start(fast_config()).await;
    let origin = Instant::now();
    let mut id = 0;
    for kind in EndpointKind::ALL {
        for faults in [
            "",
            "reasoning",
            "tool-call",
            "multi-token,crlf",
            "split-utf8",
        ] {
            let received = send(
                sim.addr,
                "POST",
                &format!("/v1{}", kind.path()),
                &[("x-tokenmeter-fault", faults)],
                Some(&body(kind, 12)),
            )
            .await;
            id += 1;
            let what = format!("{kind:?} with {faults:?}");
            assert_eq!(received.status, 200, "{what}: {}", received.text());
            let record = measure_kind(&received, origin, true, kind);
            let truth = truth(sim.addr).await;
            let t = &truth["requests"].as_array().unwrap()[id - 1];
            assert!(record.is_ok(), "{what}: {:?}", record.error);
            assert_eq!(
                record.n_token_events,
                t["n_token_events"].as_u64().unwrap(),
                "{what}"
            );
            assert_eq!(
                record.n_out,
                Some(t["tokens"].as_array().unwrap().len() as u64),
                "{what}"
            );
            // Usage counts every token, the events fewer where they carry several.
            let n_tokens = t["tokens"].as_array().unwrap().len() as i64;
            let n_events = t["n_token_events"].as_i64().unwrap();
            assert_eq!(record.token_mismatch, Some(n_tokens - n_events), "{what}");
            assert_eq!(
                record.response_id.as_deref(),
                t["response_id"].as_str(),
                "{what}"
            );
            let n_reasoning = t["n_reasoning_tokens"].as_u64().unwrap();
            assert_eq!(record.n_reasoning_events > 0, n_reasoning > 0, "{what}");
            let tool_call = t["tool_call"].as_bool().unwrap_or(false);
            assert_eq!(
                tool_call,
                faults == "tool-call" && kind != EndpointKind::Completions,
                "{what}"
            );
            if tool_call {
                assert_eq!(record.n_tool_call_events, record.n_token_events, "{what}");
                // Responses says only that it completed.
                let reason = if kind == EndpointKind::Responses {
                    "stop"
                } else {
                    "tool_calls"
                };
                assert_eq!(record.finish_reason.as_deref(), Some(reason), "{what}");
                assert_eq!(record.output_text.as_deref(), Some(""), "{what}");
            } else {
                assert_eq!(record.n_tool_call_events, 0, "{what}");
                assert_eq!(record.output_text.as_deref(), t["text"].as_str(), "{what}");
                assert_eq!(
                    record.finish_reason.as_deref(),
                    Some("length"),
                    "{what}: 12 tokens, as asked"
                );
            }
            let usage = record.usage.unwrap();
            assert_eq!(usage.prompt_tokens, t["prompt_tokens"].as_u64(), "{what}");
            // Each ends at its own last word: the usage chunk after the finish
            // (OpenAI), response.completed, message_stop; never at the body's end.
            assert!(
                record.end_us <= record.last_token_us.unwrap() + 50_000,
                "{what}"
            );
        }
    }
}

#[tokio::test]
async fn each_api_s_failures_in_its_own_words() {
    let sim = start(fast_config()).await;
    let origin = Instant::now();
    for kind in [EndpointKind::Responses, EndpointKind::Anthropic] {
        let path = format!("/v1{}", kind.path());
        let read = |received| measure_kind(&received, origin, false, kind);
        let failed = read(
            send(
                sim.addr,
                "POST",
                &path,
                &[("x-tokenmeter-fault", "error-event")],
                Some(&body(kind, 12)),
            )
            .await,
        );
        assert_eq!(
            failed.error.as_ref().map(|e| e.kind),
            Some(ErrorKind::StreamErrorEvent),
            "{kind:?}"
        );
        assert!(failed
            .error
            .unwrap()
            .detail
            .contains("out of KV cache blocks"));
        let broken = read(
            send(
                sim.addr,
                "POST",
                &path,
                &[("x-tokenmeter-fault", "bad-json")],
                Some(&body(kind, 12)),
            )
            .await,
        );
        assert_eq!(
            broken.error.map(|e| e.kind),
            Some(ErrorKind::MalformedJson),
            "{kind:?}"
        );
        let cut = read(
            send(
                sim.addr,
                "POST",
                &path,
                &[("x-tokenmeter-fault", "cut")],
                Some(&body(kind, 12)),
            )
            .await,
        );
        assert_eq!(
            cut.error.map(|e| e.kind),
            Some(ErrorKind::StreamCut),
            "{kind:?}"
        );
        // The length the server cut at, in OpenAI's words; an answer ending on its
        // own is a stop.
        let whole = read(send(sim.addr, "POST", &path, &[], Some(&body(kind, 5))).await);
        assert_eq!(whole.finish_reason.as_deref(), Some("length"));
        // They stream only.
        let mut quiet = body(kind, 5);
        quiet["stream"] = false.into();
        assert_eq!(
            send(sim.addr, "POST", &path, &[], Some(&quiet))
                .await
                .status,
            400
        );
    }
}

#[tokio::test]
async fn the_key_as_x_api_key_and_anthropic_s_headers_are_kept_in_the_truth() {
    let mut config = fast_config();
    config.api_key = Some("sk-ant-test".into());
    let sim = start(config).await;
    let path = "/v1/messages";
    let anthropic = [
        ("x-api-key", "sk-ant-test"),
        ("anthropic-version", "2023-06-01"),
        ("anthropic-dangerous-direct-browser-access", "true"),
    ];
    let ok = send(
        sim.addr,
        "POST",
        path,
        &anthropic,
        Some(&body(EndpointKind::Anthropic, 4)),
    )
    .await;
    assert_eq!(ok.status, 200);
    let wrong = send(
        sim.addr,
        "POST",
        path,
        &[("x-api-key", "sk-other")],
        Some(&body(EndpointKind::Anthropic, 4)),
    )
    .await;
    assert_eq!(wrong.status, 401);
    let truth = truth(sim.addr).await;
    let headers: Vec<&str> = truth["requests"][0]["anthropic_headers"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        headers,
        [
            "anthropic-version: 2023-06-01",
            "anthropic-dangerous-direct-browser-access: true"
        ]
    );
    // Its system prompt is read as the prompt's start.
    let mut with_system = body(EndpointKind::Anthropic, 4);
    with_system["system"] = json!("你是助手");
    let sent = send(sim.addr, "POST", path, &anthropic, Some(&with_system)).await;
    assert_eq!(sent.status, 200);
    let truth = common::truth(sim.addr).await;
    let last = truth["requests"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(last["prompt_head"]
        .as_str()
        .unwrap()
        .starts_with("你是助手"));
    assert!(last.get("anthropic_headers").is_some());
}
