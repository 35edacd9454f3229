//! `cargo xtask bench sim`: how many concurrent streams and events per second the
//! simulator sustains on this machine, and how late it writes tokens against its own
//! schedule (written − due, from its truth record). Prints figures, asserts nothing.
//!
//! The simulator runs on its own runtime (two workers, as `tokenmeter-sim` does);
//! the client runs on another runtime in the same process, as a browser would in
//! another process: over h2c (HTTP/2 without TLS), reading every frame, on the same
//! two cores. The figures include the cost of that client competing for the CPU.
//! By default all streams share one connection, as a browser's requests to one
//! origin do; `--per-connection N` spreads them (N streams per connection).
//!
//! Two lateness figures per level: *written* (the truth record: when the socket write
//! carrying each token started, minus when it was due) and *arrived* (when the
//! client read it, on the same clock, minus due), which adds the socket, the
//! client's HTTP/2 decoding and its own scheduling on the shared cores.
//!
//! Usage: `cargo xtask bench sim [STREAMS ...] [--per-connection N]`
//! (default 100 500 1000, one connection).

use std::{
    collections::HashMap,
    time::{Duration, Instant},
};

use bytes::Bytes;
use futures_util::future::join_all;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokenmeter_sim::{engine::EngineParams, SimConfig, SimServer};

/// One token per stream every 20 ms: 50 events/s per stream.
const STEP_MS: f64 = 20.0;
/// Tokens per stream: a 5-second run at 20 ms per step (half a second in the test
/// command's smoke run, `TOKENMETER_BENCH_SMOKE=1`).
fn tokens() -> u64 {
    if std::env::var("TOKENMETER_BENCH_SMOKE").as_deref() == Ok("1") {
        25
    } else {
        250
    }
}

fn main() {
    let mut levels: Vec<usize> = Vec::new();
    let mut per_connection = usize::MAX;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--per-connection" {
            per_connection = args
                .next()
                .and_then(|n| n.parse().ok())
                .filter(|&n| n > 0)
                .expect("--per-connection takes a number of streams");
        } else {
            levels.push(arg.parse().expect("a number of streams"));
        }
    }
    let levels = if levels.is_empty() {
        vec![100, 500, 1000]
    } else {
        levels
    };
    let server_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let client_runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    match per_connection {
        usize::MAX => println!("HTTP/2 (h2c), all streams on one connection"),
        n => println!("HTTP/2 (h2c), {n} streams per connection"),
    }
    println!(
        "{:>8} {:>10} {:>10} {:>11} {:>10} {:>10} {:>11} {:>10} {:>10} {:>7}",
        "streams",
        "events/s",
        "target/s",
        "written p50",
        "p99",
        "max",
        "arrived p50",
        "p99",
        "completed",
        "wall"
    );
    for n_streams in levels {
        let sim = server_runtime.block_on(start_sim(n_streams));
        client_runtime.block_on(run_level(&sim, n_streams, per_connection));
        server_runtime.block_on(async move {
            sim.shutdown().await;
            tokio::time::sleep(Duration::from_millis(200)).await;
        });
    }
    println!(
        "written = the socket write carrying the token started − due, per token, from the simulator's truth record"
    );
    println!("arrived = read by the client (same clock) − due: adds the socket, h2 decoding and the client's own scheduling");
}

async fn start_sim(n_streams: usize) -> SimServer {
    let defaults = SimConfig::default();
    let config = SimConfig {
        port: 0,
        truth_capacity: n_streams,
        engine: EngineParams {
            max_batch: n_streams,
            decode_base_ms: STEP_MS,
            decode_per_seq_ms: 0.0,
            prefill_base_ms: 0.0,
            prefill_per_token_ms: 0.0,
            jitter: 0.0,
            ..defaults.engine
        },
        ..defaults
    };
    SimServer::start(config)
        .await
        .expect("the simulator starts")
}

async fn run_level(sim: &SimServer, n_streams: usize, per_connection: usize) {
    let body = serde_json::json!({
        "model": "tokenmeter-sim",
        "messages": [{"role": "user", "content": "bench"}],
        "max_tokens": tokens(),
        "stream": true,
    })
    .to_string();

    let n_connections = n_streams.div_ceil(per_connection);
    let mut senders = Vec::new();
    for _ in 0..n_connections {
        let tcp = tokio::net::TcpStream::connect(sim.addr).await.unwrap();
        tcp.set_nodelay(true).unwrap();
        let (sender, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
            .initial_stream_window_size(1 << 20)
            .initial_connection_window_size(1 << 24)
            .handshake(TokioIo::new(tcp))
            .await
            .expect("h2c handshake");
        tokio::spawn(conn);
        senders.push(sender);
    }
    let started = Instant::now();
    let streams = (0..n_streams).map(|i| {
        let mut sender = senders[i % n_connections].clone();
        let request = Request::post(format!("http://{}/v1/chat/completions", sim.addr))
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body.clone())))
            .unwrap();
        tokio::spawn(async move {
            let response = sender.send_request(request).await.ok()?;
            let response_id = response
                .headers()
                .get("x-request-id")?
                .to_str()
                .ok()?
                .to_owned();
            let mut body = response.into_body();
            let mut arrivals = Vec::new();
            while let Some(frame) = body.frame().await {
                frame.ok()?;
                arrivals.push(Instant::now());
            }
            Some((response_id, arrivals))
        })
    });
    let results = join_all(streams).await;
    let wall = started.elapsed();
    let arrivals: HashMap<String, Vec<Instant>> = results
        .into_iter()
        .filter_map(|r| r.ok().flatten())
        .collect();
    let completed = arrivals.len();

    let truth = sim.truth.snapshot();
    // Arrival at the client − due: frame 0 is the role chunk, frame k token k − 1.
    let mut arrival_lateness: Vec<u64> = truth
        .iter()
        .filter_map(|r| Some((r, arrivals.get(&r.response_id)?)))
        .flat_map(|(r, frames)| {
            r.tokens
                .iter()
                .zip(frames.iter().skip(1))
                .map(|(t, &at)| sim.truth.us(at).saturating_sub(t.due_us))
        })
        .collect();
    let mut lateness: Vec<u64> = truth.iter().flat_map(|r| r.lateness_us()).collect();
    // Events per second over the span in which tokens were due.
    let dues: Vec<u64> = truth
        .iter()
        .flat_map(|r| r.tokens.iter().map(|t| t.due_us))
        .collect();
    let span_s = match (dues.iter().min(), dues.iter().max()) {
        (Some(a), Some(b)) if b > a => (b - a) as f64 / 1e6,
        _ => f64::NAN,
    };
    let events_per_s = lateness.len() as f64 / span_s;
    let target = n_streams as f64 * 1000.0 / STEP_MS;
    let written = Quantiles::of(&mut lateness);
    let arrived = Quantiles::of(&mut arrival_lateness);
    println!(
        "{n_streams:>8} {events_per_s:>10.0} {target:>10.0} {:>8} µs {:>7} µs {:>7} µs {:>8} µs {:>7} µs {:>6}/{n_streams} {:>6.1}s",
        written.p50,
        written.p99,
        written.max,
        arrived.p50,
        arrived.p99,
        completed,
        wall.as_secs_f64()
    );
    drop(senders);
}

/// p50, p99 and max of a sample (sorted in place).
struct Quantiles {
    p50: u64,
    p99: u64,
    max: u64,
}

impl Quantiles {
    fn of(sample: &mut [u64]) -> Quantiles {
        sample.sort_unstable();
        let pick = |q: f64| {
            sample
                .get(((sample.len().max(1) - 1) as f64 * q) as usize)
                .copied()
                .unwrap_or(0)
        };
        Quantiles {
            p50: pick(0.5),
            p99: pick(0.99),
            max: sample.last().copied().unwrap_or(0),
        }
    }
}
