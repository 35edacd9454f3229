//! The simulator's endpoints, byte for byte as OpenAI-compatible servers send them.

mod common;

use common::{chat_body, fast_config, post_chat, send, start, truth};
use serde_json::{json, Value};

#[tokio::test]
async fn models_lists_the_served_models() {
    let sim = start(fast_config()).await;
    let r = send(sim.addr, "GET", "/v1/models", &[], None).await;
    assert_eq!(r.status, 200);
    let body = r.json();
    assert_eq!(body["object"], "list");
    assert_eq!(body["data"][0]["id"], "tokenmeter-sim");
    assert_eq!(body["data"][0]["object"], "model");
}

#[tokio::test]
async fn chat_stream_has_the_real_wire_format() {
    let sim = start(fast_config()).await;
    let r = post_chat(sim.addr, &[], &chat_body(5, true)).await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("content-type"),
        Some("text/event-stream; charset=utf-8")
    );
    let raw = r.text();
    assert!(raw.ends_with("data: [DONE]\n\n"), "{raw}");
    assert!(raw
        .split("\n\n")
        .all(|e| e.is_empty() || e.starts_with("data: ")));
    let events = r.events();
    // role, 5 tokens, finish, usage, [DONE]
    assert_eq!(events.len(), 9, "{events:?}");
    let chunks: Vec<Value> = events[..8]
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    let id = chunks[0]["id"].as_str().unwrap();
    assert!(id.starts_with("chatcmpl-"));
    assert_eq!(r.header("x-request-id"), Some(id));
    for chunk in &chunks {
        assert_eq!(chunk["id"], id);
        assert_eq!(chunk["object"], "chat.completion.chunk");
        assert_eq!(chunk["model"], "tokenmeter-sim");
    }
    assert_eq!(
        chunks[0]["choices"][0]["delta"],
        json!({"role": "assistant", "content": ""})
    );
    assert_eq!(
        chunks[0]["usage"],
        Value::Null,
        "include_usage puts usage: null in every chunk"
    );
    let text: String = chunks[1..6]
        .iter()
        .map(|c| c["choices"][0]["delta"]["content"].as_str().unwrap())
        .collect();
    assert_eq!(chunks[6]["choices"][0]["finish_reason"], "length");
    assert_eq!(chunks[6]["choices"][0]["delta"], json!({}));
    assert_eq!(chunks[7]["choices"], json!([]));
    assert_eq!(chunks[7]["usage"]["completion_tokens"], 5);
    // 请用300字介绍大模型推理中的prefill和decode两个阶段: 17 CJK, 16 others / 4.
    assert_eq!(chunks[7]["usage"]["prompt_tokens"], 17 + 4);
    assert_eq!(events[8], "[DONE]");

    let truth = common::truth(sim.addr).await;
    let mine = &truth["requests"][0];
    assert_eq!(mine["response_id"], id);
    assert_eq!(mine["text"], text.as_str());
    assert_eq!(mine["outcome"], "completed");
    assert_eq!(mine["tokens"].as_array().unwrap().len(), 5);
}

#[tokio::test]
async fn without_include_usage_there_is_no_usage_chunk() {
    let sim = start(fast_config()).await;
    let mut body = chat_body(3, true);
    body.as_object_mut().unwrap().remove("stream_options");
    let r = post_chat(sim.addr, &[], &body).await;
    let events = r.events();
    assert_eq!(events.len(), 1 + 3 + 1 + 1);
    assert!(!r.text().contains("usage"));
}

#[tokio::test]
async fn legacy_completions_stream_text() {
    let sim = start(fast_config()).await;
    let body =
        json!({"model": "tokenmeter-sim", "prompt": "hello", "max_tokens": 4, "stream": true});
    let r = send(sim.addr, "POST", "/v1/completions", &[], Some(&body)).await;
    assert_eq!(r.status, 200);
    let events = r.events();
    assert_eq!(
        events.len(),
        4 + 1 + 1,
        "no role chunk for completions: {events:?}"
    );
    let first: Value = serde_json::from_str(&events[0]).unwrap();
    assert_eq!(first["object"], "text_completion");
    assert!(first["id"].as_str().unwrap().starts_with("cmpl-"));
    assert!(!first["choices"][0]["text"].as_str().unwrap().is_empty());
}

#[tokio::test]
async fn non_streaming_answers_with_one_json() {
    let sim = start(fast_config()).await;
    let r = post_chat(sim.addr, &[], &chat_body(6, false)).await;
    assert_eq!(r.status, 200);
    let body = r.json();
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["usage"]["completion_tokens"], 6);
    let truth = common::truth(sim.addr).await;
    assert_eq!(
        body["choices"][0]["message"]["content"],
        truth["requests"][0]["text"]
    );
}

#[tokio::test]
async fn cors_preflight_and_stream_headers() {
    let sim = start(fast_config()).await;
    let r = send(
        sim.addr,
        "OPTIONS",
        "/v1/chat/completions",
        &[
            ("origin", "http://127.0.0.1:8080"),
            ("access-control-request-method", "POST"),
            (
                "access-control-request-headers",
                "authorization,content-type,x-tokenmeter-fault",
            ),
        ],
        None,
    )
    .await;
    assert_eq!(r.status, 204);
    assert_eq!(r.header("access-control-allow-origin"), Some("*"));
    assert_eq!(
        r.header("access-control-allow-headers"),
        Some("authorization,content-type,x-tokenmeter-fault")
    );
    assert!(r
        .header("access-control-allow-methods")
        .unwrap()
        .contains("POST"));
    assert_eq!(r.header("access-control-max-age"), Some("86400"));

    let r = post_chat(
        sim.addr,
        &[("origin", "http://127.0.0.1:8080")],
        &chat_body(2, true),
    )
    .await;
    assert_eq!(r.header("access-control-allow-origin"), Some("*"));
    assert_eq!(r.header("timing-allow-origin"), Some("*"));
    assert!(r
        .header("access-control-expose-headers")
        .unwrap()
        .contains("retry-after"));

    let mut config = fast_config();
    config.no_cors_max_age = true;
    let sim = start(config).await;
    let r = send(sim.addr, "OPTIONS", "/v1/chat/completions", &[], None).await;
    assert_eq!(r.header("access-control-max-age"), None);
}

#[tokio::test]
async fn api_key_is_checked_when_set() {
    let mut config = fast_config();
    config.api_key = Some("sk-right".into());
    let sim = start(config).await;
    let body = chat_body(2, true);
    for (headers, status) in [
        (&[][..], 401),
        (&[("authorization", "Bearer sk-wrong")][..], 401),
        (&[("authorization", "Bearer sk-right")][..], 200),
        (&[("api-key", "sk-right")][..], 200),
    ] {
        let r = post_chat(sim.addr, headers, &body).await;
        assert_eq!(r.status, status, "{headers:?}");
        if status == 401 {
            assert_eq!(r.json()["error"]["code"], "invalid_api_key");
        }
    }
}

#[tokio::test]
async fn unknown_model_and_path_are_openai_style_404s() {
    let sim = start(fast_config()).await;
    let mut body = chat_body(2, true);
    body["model"] = json!("gpt-nonexistent");
    let r = post_chat(sim.addr, &[], &body).await;
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"]["code"], "model_not_found");
    // A base URL without /v1, the commonest mistake.
    let r = send(
        sim.addr,
        "POST",
        "/chat/completions",
        &[],
        Some(&chat_body(2, true)),
    )
    .await;
    assert_eq!(r.status, 404);
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("/v1"));
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("*"),
        "CORS on errors too"
    );

    let mut config = fast_config();
    config.any_model = true;
    let sim = start(config).await;
    let r = post_chat(sim.addr, &[], &body).await;
    assert_eq!(r.status, 200);
}

#[tokio::test]
async fn bad_bodies_are_400s_that_say_why() {
    let sim = start(fast_config()).await;
    let r = post_chat(sim.addr, &[], &json!({"messages": []})).await;
    assert_eq!(r.status, 400);
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("model"));
    let r = post_chat(
        sim.addr,
        &[("x-tokenmeter-fault", "explode")],
        &chat_body(1, true),
    )
    .await;
    assert_eq!(r.status, 400);
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("html-502"));
}

#[tokio::test]
async fn timings_say_what_the_server_spent_and_a_gateway_adds_what_they_do_not() {
    let mut config = fast_config();
    config.timings = true;
    config.gateway_delay_ms = 120.0;
    config.engine.prefill_base_ms = 30.0;
    let sim = start(config).await;
    let r = post_chat(sim.addr, &[], &chat_body(5, true)).await;
    assert_eq!(r.status, 200);
    let events = r.events();
    let finish: Value = serde_json::from_str(&events[events.len() - 3]).unwrap();
    assert_eq!(finish["choices"][0]["finish_reason"], "length");
    let timings = &finish["timings"];
    assert_eq!(timings["predicted_n"], 5);
    let prompt_ms = timings["prompt_ms"].as_f64().unwrap();
    // The prefill (30 ms), not the gateway's 120 ms.
    assert!((29.0..60.0).contains(&prompt_ms), "{timings}");
    assert!(timings["predicted_ms"].as_f64().unwrap() > 0.0);
    // The client waited for both.
    let first_token = r.frames[1].0.duration_since(r.sent_at).as_secs_f64() * 1e3;
    assert!(first_token >= 150.0, "{first_token} ms");
    // Without the flag, no timings.
    let plain = start(fast_config()).await;
    let events = post_chat(plain.addr, &[], &chat_body(2, true))
        .await
        .events();
    assert!(!events.iter().any(|e| e.contains("\"timings\"")));
}

#[tokio::test]
async fn a_network_delays_each_direction_by_half_its_round_trip_and_keeps_the_spacing() {
    let mut config = fast_config();
    config.rtt_ms = 80.0;
    let sim = start(config).await;
    // A tiny answer costs one round trip.
    let sent = std::time::Instant::now();
    let models = send(sim.addr, "GET", "/v1/models", &[], None).await;
    assert_eq!(models.status, 200);
    let ms = sent.elapsed().as_secs_f64() * 1e3;
    assert!((80.0..130.0).contains(&ms), "{ms} ms");
    // A stream: the request reaches the server half a round trip after it was
    // sent (the truth's times are the server's socket's, which the response's
    // half is behind); the gaps between tokens as written.
    let r = post_chat(sim.addr, &[], &chat_body(6, true)).await;
    let truth = truth(sim.addr).await;
    let request = &truth["requests"][0];
    let written: Vec<f64> = request["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["written_us"].as_f64().unwrap() / 1e3)
        .collect();
    let server_ttft = written[0] - request["accepted_us"].as_f64().unwrap() / 1e3;
    let arrived: Vec<f64> = r
        .frames
        .iter()
        // Tokens: a content that is not the opening role chunk's empty one.
        .filter(|(_, bytes)| {
            bytes.windows(11).any(|w| w == b"\"content\":\"")
                && !bytes.windows(12).any(|w| w == b"\"content\":\"\"")
        })
        .map(|(at, _)| at.duration_since(r.sent_at).as_secs_f64() * 1e3)
        .collect();
    let added = arrived[0] - server_ttft;
    let whole = arrived[0];
    assert!(
        whole >= 80.0,
        "a first token a round trip and more after sending: {whole} ms"
    );
    assert!((39.0..70.0).contains(&added), "the network added {added} ms to TTFT: arrived {arrived:?}, written {written:?}, accepted {}", request["accepted_us"]);
    for i in 1..written.len().min(arrived.len()) {
        let (server_gap, client_gap) = (written[i] - written[i - 1], arrived[i] - arrived[i - 1]);
        assert!(
            (server_gap - client_gap).abs() < 15.0,
            "gap {i}: written {server_gap}, arrived {client_gap}"
        );
    }
    // The simulator's own endpoints answer at once.
    let sent = std::time::Instant::now();
    let _ = truth_now(sim.addr).await;
    assert!(sent.elapsed().as_secs_f64() * 1e3 < 40.0);
}

async fn truth_now(addr: std::net::SocketAddr) -> Value {
    common::truth(addr).await
}
