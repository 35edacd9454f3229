//! `GET /metrics` against the engine's true state, read by tokenmeter-core's
//! reader: requests running and waiting while a batch is full, the prompt cache's
//! counters, and none of it without metrics.

mod common;

use std::time::Duration;

use common::{chat_body, fast_config, post_chat, send, start};
use tokenmeter_core::{parse_metrics, schema::Server};
use tokenmeter_sim::server::metrics::MetricsNames;

#[tokio::test]
async fn metrics_show_the_batch_full_and_the_queue_behind_it() {
    let mut config = fast_config();
    config.engine.max_batch = 2;
    // Long enough steps that the poll below lands while all five are in flight.
    config.engine.decode_base_ms = 20.0;
    let sim = start(config).await;
    let addr = sim.addr;
    let requests: Vec<_> = (0..5)
        .map(|_| tokio::spawn(async move { post_chat(addr, &[], &chat_body(20, true)).await }))
        .collect();
    tokio::time::sleep(Duration::from_millis(150)).await;
    let metrics = send(addr, "GET", "/metrics", &[], None).await;
    assert_eq!(metrics.status, 200);
    assert!(metrics
        .header("content-type")
        .unwrap()
        .starts_with("text/plain"));
    let (server, sample) = parse_metrics(&metrics.text()).unwrap();
    assert_eq!(server, Server::Vllm);
    assert_eq!((sample.running, sample.waiting), (Some(2.0), Some(3.0)));
    assert!(sample.kv_pct.unwrap() > 0.0);
    assert_eq!(sample.preemptions, Some(0.0));
    for request in requests {
        assert_eq!(request.await.unwrap().status, 200);
    }
    // Idle again; every prompt was looked up in the prompt cache.
    let (_, idle) = parse_metrics(&send(addr, "GET", "/metrics", &[], None).await.text()).unwrap();
    assert_eq!((idle.running, idle.waiting), (Some(0.0), Some(0.0)));
    assert!(idle.prefix_queries.unwrap() > 0.0);
}

#[tokio::test]
async fn other_servers_names_and_none() {
    for (names, server) in [
        (MetricsNames::Sglang, Some(Server::Sglang)),
        (MetricsNames::Tgi, Some(Server::Tgi)),
        (MetricsNames::Llamacpp, Some(Server::Llamacpp)),
        (MetricsNames::None, None),
    ] {
        let mut config = fast_config();
        config.metrics_names = names;
        let sim = start(config).await;
        let r = send(sim.addr, "GET", "/metrics", &[], None).await;
        match server {
            Some(server) => assert_eq!(parse_metrics(&r.text()).unwrap().0, server),
            None => assert_eq!(r.status, 404),
        }
    }
}
