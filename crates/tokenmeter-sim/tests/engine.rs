//! The latency model seen from outside: queueing beyond the batch, a throughput
//! knee at the batch size, the truth record, disconnects, and HTTP/2 over TLS.

mod common;

use std::time::{Duration, Instant};

use common::{chat_body, measure, post_chat, start};
use futures_util::future::join_all;
use http_body_util::BodyExt;
use tokenmeter_core::{
    analyse,
    schema::{AnalysisParams, Slo},
    LevelStats,
};
use tokenmeter_sim::{engine::EngineParams, SimConfig};

/// Batch of 4; a step is 10 ms + 2 ms per extra sequence; prefill 5 ms; no jitter.
fn batch_of_4() -> SimConfig {
    let defaults = SimConfig::default();
    SimConfig {
        engine: EngineParams {
            max_batch: 4,
            decode_base_ms: 10.0,
            decode_per_seq_ms: 2.0,
            prefill_base_ms: 5.0,
            prefill_per_token_ms: 0.0,
            jitter: 0.0,
            ..defaults.engine
        },
        ..defaults
    }
}

#[tokio::test]
async fn requests_beyond_the_batch_wait_in_the_queue() {
    let sim = start(batch_of_4()).await;
    let body = chat_body(5, true);
    let requests = (0..8).map(|_| post_chat(sim.addr, &[], &body));
    let responses = join_all(requests).await;
    assert!(responses.iter().all(|r| r.status == 200));
    let truth = common::truth(sim.addr).await;
    let requests = truth["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 8);
    let waits: Vec<u64> = requests
        .iter()
        .map(|r| r["admitted_us"].as_u64().unwrap() - r["accepted_us"].as_u64().unwrap())
        .collect();
    let n_queued = waits.iter().filter(|&&w| w > 30_000).count();
    assert!(n_queued >= 4, "at least four waited for a slot: {waits:?}");
    for r in requests {
        let tokens = r["tokens"].as_array().unwrap();
        let dues: Vec<u64> = tokens
            .iter()
            .map(|t| t["due_us"].as_u64().unwrap())
            .collect();
        assert!(
            dues.windows(2).all(|w| w[1] - w[0] >= 10_000),
            "one token per step: {dues:?}"
        );
        for t in tokens {
            assert!(t["written_us"].as_u64().unwrap() >= t["due_us"].as_u64().unwrap());
        }
    }
    assert!(truth["lateness"]["n_tokens"].as_u64().unwrap() >= 40);
}

#[tokio::test]
async fn throughput_bends_into_a_knee_at_the_batch_size() {
    let sim = start(batch_of_4()).await;
    let origin = Instant::now();
    let mut summaries = Vec::new();
    for concurrency in [1u32, 2, 4, 8] {
        let mut stats = LevelStats::new(concurrency);
        // Closed loop: `concurrency` clients, each sending two requests in a row.
        let clients = (0..concurrency).map(|_| async {
            let mut records = Vec::new();
            for _ in 0..2 {
                let r = post_chat(sim.addr, &[], &chat_body(8, true)).await;
                records.push(measure(&r, origin, false));
            }
            records
        });
        for record in join_all(clients).await.into_iter().flatten() {
            assert!(record.is_ok());
            stats.add(&record);
        }
        summaries.push(stats.summary(&Slo::default()));
    }
    let tps: Vec<f64> = summaries.iter().map(|s| s.output_tps).collect();
    // The model: n / (10 + 2(n − 1)) tokens per ms, capped at n = 4 (prefill aside).
    assert!(
        tps[1] > tps[0] * 1.3 && tps[2] > tps[1] * 1.2,
        "scales up to the batch: {tps:?}"
    );
    assert!(tps[3] < tps[2] * 1.15, "no gain past the batch: {tps:?}");
    let verdict = analyse(&summaries, &Slo::default(), &AnalysisParams::default());
    assert_eq!(verdict.knee, Some(4), "{}", verdict.explanation_en);
}

#[tokio::test]
async fn a_client_that_leaves_frees_its_slot() {
    let mut config = batch_of_4();
    config.engine.max_batch = 1;
    let sim = start(config).await;
    // A long request, abandoned after its first events.
    let stream = tokio::net::TcpStream::connect(sim.addr).await.unwrap();
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    let conn = tokio::spawn(conn);
    let request = common::build(
        "POST",
        &format!("http://{}/v1/chat/completions", sim.addr),
        &[],
        Some(&chat_body(2000, true)),
    );
    let response = sender.send_request(request).await.unwrap();
    let mut body = response.into_body();
    for _ in 0..3 {
        body.frame().await.unwrap().unwrap();
    }
    drop(body);
    drop(sender);
    conn.abort();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let r = post_chat(sim.addr, &[], &chat_body(2, true)).await;
    assert_eq!(r.status, 200);
    let truth = common::truth(sim.addr).await;
    let find = |id: u64| {
        truth["requests"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id)
            .unwrap()
            .clone()
    };
    let (first, second) = (find(1), find(2));
    assert_eq!(first["outcome"], "disconnected");
    let n_first = first["tokens"].as_array().unwrap().len();
    assert!(n_first < 2000, "generation stopped after the client left");
    // Had the slot stayed taken, the second request would have waited for 2000 steps
    // of at least 10 ms each on the engine's own clock.
    let first_would_end = first["admitted_us"].as_u64().unwrap() + 2000 * 10_000;
    assert!(second["admitted_us"].as_u64().unwrap() < first_would_end);
    assert_eq!(second["outcome"], "completed");
}

#[tokio::test]
async fn http2_over_tls_multiplexes_many_streams() {
    let mut config = common::fast_config();
    config.tls = true;
    config.engine.max_batch = 64;
    let sim = start(config).await;
    assert!(sim.base_url().starts_with("https://"));
    let sender = common::h2_connect(&sim).await;
    let uri = format!("https://127.0.0.1:{}/v1/chat/completions", sim.addr.port());
    let body = chat_body(6, true);
    let streams = (0..64).map(|_| {
        let mut sender = sender.clone();
        let request = common::build("POST", &uri, &[], Some(&body));
        async move {
            let sent = Instant::now();
            let response = sender.send_request(request).await.expect("an h2 response");
            assert_eq!(response.version(), hyper::Version::HTTP_2);
            common::read(response, sent).await
        }
    });
    let responses = join_all(streams).await;
    assert!(responses
        .iter()
        .all(|r| r.status == 200 && r.text().ends_with("data: [DONE]\n\n")));
    let truth = common::truth_over(&sim, &sender).await;
    assert_eq!(truth["requests"].as_array().unwrap().len(), 64);
    assert_eq!(truth["lateness"]["n_tokens"], 64 * 6);
}

/// The simulator's promise to a benchmark: no token reaches the client before it is
/// due, and its "written" time lies between its due time and its arrival. Checked
/// over HTTP/1.1 (a connection per stream) and HTTP/2 (16 streams on a connection,
/// whose events are handed over ahead of the step and held by the connection).
#[tokio::test]
async fn no_token_arrives_before_it_is_due() {
    fn check(sim: &tokenmeter_sim::SimServer, received: &[common::Received]) {
        let truth = sim.truth.snapshot();
        for r in received {
            let id = r.header("x-request-id").expect("a request id");
            let mine = truth.iter().find(|t| t.response_id == id).expect("truth");
            // When each content event arrived: a read may carry several events.
            let mut arrivals = Vec::new();
            for (at, bytes) in &r.frames {
                let text = String::from_utf8_lossy(bytes);
                let n_tokens = text.matches("\"content\":\"").count()
                    - text.matches("\"content\":\"\"").count();
                arrivals.extend(std::iter::repeat_n(sim.truth.us(*at), n_tokens));
            }
            assert_eq!(arrivals.len(), mine.tokens.len(), "one event per token");
            for (token, arrived_us) in mine.tokens.iter().zip(arrivals) {
                let written_us = token.written_us.expect("written");
                assert!(written_us >= token.due_us, "written before due: {token:?}");
                assert!(arrived_us >= token.due_us, "arrived before due: {token:?}");
                assert!(
                    written_us <= arrived_us,
                    "written after it arrived: {token:?}, arrived {arrived_us}"
                );
            }
        }
    }

    let sim = start(batch_of_4()).await;
    let body = chat_body(6, true);
    let h1 = join_all((0..4).map(|_| post_chat(sim.addr, &[], &body))).await;
    check(&sim, &h1);

    let mut config = batch_of_4();
    config.tls = true;
    config.engine.max_batch = 16;
    let sim = start(config).await;
    let sender = common::h2_connect(&sim).await;
    let uri = format!("https://127.0.0.1:{}/v1/chat/completions", sim.addr.port());
    let h2 = join_all((0..16).map(|_| {
        let mut sender = sender.clone();
        let request = common::build("POST", &uri, &[], Some(&body));
        async move {
            let sent = Instant::now();
            let response = sender.send_request(request).await.expect("an h2 response");
            common::read(response, sent).await
        }
    }))
    .await;
    check(&sim, &h2);
}
