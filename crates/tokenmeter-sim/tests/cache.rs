//! The prompt cache, as a client sees it: a prompt seen before is found by its
//! whole blocks, costs no prefill for them, and the usage and the truth say how
//! many of its tokens were cached; a prompt with another first token shares none.

mod common;

use std::time::Instant;

use common::{fast_config, measure, post_chat, start};

fn body(prompt: &str) -> serde_json::Value {
    serde_json::json!({
        "model": "tokenmeter-sim",
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": 4,
        "stream": true,
        "stream_options": {"include_usage": true},
    })
}

#[tokio::test]
async fn a_prompt_seen_before_costs_no_prefill_for_its_cached_blocks() {
    let mut config = fast_config();
    // 1 ms of prefill per uncached token: 400 tokens are 400 ms.
    config.engine.prefill_per_token_ms = 1.0;
    let sim = start(config).await;
    let prompt = "预填充阶段计算整个提示词的键值缓存。".repeat(25); // 450 tokens
    let ttft_ms = |r: &tokenmeter_core::schema::RequestRecord| r.ttft_us().unwrap() as f64 / 1e3;

    let origin = Instant::now();
    let first = measure(
        &post_chat(sim.addr, &[], &body(&prompt)).await,
        origin,
        false,
    );
    let again = measure(
        &post_chat(sim.addr, &[], &body(&prompt)).await,
        origin,
        false,
    );
    let other = measure(
        &post_chat(sim.addr, &[], &body(&format!("one two. {prompt}"))).await,
        origin,
        false,
    );
    assert_eq!(first.usage.unwrap().prompt_tokens, Some(450));
    assert_eq!(first.cached_prompt_tokens(), Some(0));
    assert_eq!(
        again.cached_prompt_tokens(),
        Some(448),
        "every whole block of 16"
    );
    assert_eq!(
        other.cached_prompt_tokens(),
        Some(0),
        "another first token: no block shared"
    );
    // Prefill of 450 tokens against 2: the cached request's first token comes
    // hundreds of ms sooner.
    assert!(ttft_ms(&first) > 400.0, "{}", ttft_ms(&first));
    assert!(ttft_ms(&again) < 100.0, "{}", ttft_ms(&again));
    assert!(ttft_ms(&other) > 400.0);
    let truth = common::truth(sim.addr).await;
    let cached: Vec<u64> = truth["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["cached_tokens"].as_u64().unwrap())
        .collect();
    assert_eq!(cached, [0, 448, 0]);
}

#[tokio::test]
async fn no_cache_when_it_is_off_and_timings_say_what_was_cached() {
    let mut config = fast_config();
    config.prompt_cache_tokens = 0;
    config.timings = true;
    let sim = start(config).await;
    let prompt = "a".repeat(400); // 100 tokens
    let origin = Instant::now();
    for _ in 0..2 {
        let r = measure(
            &post_chat(sim.addr, &[], &body(&prompt)).await,
            origin,
            false,
        );
        assert_eq!(r.cached_prompt_tokens(), Some(0));
        let timings = r.server_timings.unwrap();
        assert_eq!((timings.prompt_n, timings.cache_n), (Some(100), Some(0)));
    }
    let mut config = fast_config();
    config.timings = true;
    let sim = start(config).await;
    let _ = post_chat(sim.addr, &[], &body(&prompt)).await;
    let r = measure(
        &post_chat(sim.addr, &[], &body(&prompt)).await,
        origin,
        false,
    );
    let timings = r.server_timings.unwrap();
    assert_eq!((timings.prompt_n, timings.cache_n), (Some(4), Some(96)));
}

#[tokio::test]
async fn a_model_that_ends_on_its_own_goes_on_when_asked_to() {
    let mut config = fast_config();
    config.eos_after = Some(5);
    let sim = start(config).await;
    let origin = Instant::now();
    let ask = |extra: serde_json::Value| {
        let mut b = body("你好");
        b["max_tokens"] = 12.into();
        b.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        b
    };
    let own = measure(
        &post_chat(sim.addr, &[], &ask(serde_json::json!({}))).await,
        origin,
        false,
    );
    assert_eq!(
        (own.n_out, own.finish_reason.as_deref()),
        (Some(5), Some("stop"))
    );
    let forced = measure(
        &post_chat(sim.addr, &[], &ask(serde_json::json!({"ignore_eos": true}))).await,
        origin,
        false,
    );
    assert_eq!(
        (forced.n_out, forced.finish_reason.as_deref()),
        (Some(12), Some("length"))
    );
    let at_least = measure(
        &post_chat(sim.addr, &[], &ask(serde_json::json!({"min_tokens": 8}))).await,
        origin,
        false,
    );
    assert_eq!(
        (at_least.n_out, at_least.finish_reason.as_deref()),
        (Some(8), Some("stop"))
    );
}
