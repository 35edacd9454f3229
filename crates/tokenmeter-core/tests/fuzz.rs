//! Every reader of what other people's software writes, fed inputs it was never
//! meant to see: SSE streams (bytes cut anywhere, through the record a request
//! keeps), run documents, vLLM results, Locust records, the article's
//! `config.json` and plan links, prompt files, and servers' Prometheus metrics. Each target starts from real
//! inputs (the stream fixture, documents this crate writes, the article's config)
//! and mutates them (bytes flipped, cut, repeated, spliced with another seed,
//! JSON tokens dropped in) or makes bytes up; the property is that the reader
//! returns (a value or an error), never panics, and that what tokenmeter writes
//! it reads back equal.
//!
//! `TOKENMETER_FUZZ_CASES` sets the cases per target (the test command's small
//! default below); `cargo xtask fuzz N` runs N per target in a release build and
//! prints cases per second and what it found. `TOKENMETER_FUZZ_SEED` picks the
//! run's seed (printed, so a failure can be replayed).

#![cfg(not(target_arch = "wasm32"))]

use std::{
    panic::{catch_unwind, AssertUnwindSafe},
    time::Instant,
};

use serde_json::{json, Value};
use tokenmeter_core::{
    import_config, parse_metrics, read_prompts,
    schema::{
        EndpointKind, Environment, Plan, RunDocument, RunStatus, Server, ServerMetrics,
        ServerSample,
    },
    RecordBuilder, RecordOptions, RequestStart, SseLimits, StreamEnd, POLL_EVERY_MS,
};

/// Cases per target in the test command: enough to reach every reader's error
/// paths from the seeds, within seconds in a debug build.
const DEFAULT_CASES: u64 = 400;

/// SplitMix64: small, fast, and the same everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Fragments that move a JSON or SSE reader to its edges.
const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"",
    "\\",
    "null",
    "true",
    "-0",
    "1e999",
    "-1",
    "18446744073709551616",
    "NaN",
    "\"\\ud800\"",
    "data: ",
    "data:[DONE]\n\n",
    "\n\n",
    "\r\n",
    "\r",
    ": keep-alive\n",
    "event: error\n",
    "\u{feff}",
    "你好",
    "🌏",
    "\u{0}",
    "\"schema\":99",
    "\"kind\":\"request\"",
    "{\"prompt\":",
    "{\"messages\":[",
    "\"conversations\":[",
];

/// One input: a seed mutated a few times, another spliced in, or bytes made up.
fn mutate(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    if seeds.is_empty() || rng.below(10) == 0 {
        return (0..rng.below(256)).map(|_| rng.next() as u8).collect();
    }
    let mut input = seeds[rng.below(seeds.len())].clone();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(input.len() + 1);
        match rng.below(7) {
            0 if !input.is_empty() => {
                let i = rng.below(input.len());
                input[i] ^= 1 << rng.below(8);
            }
            1 => input.truncate(at),
            2 => {
                let end = (at + rng.below(64)).min(input.len());
                let piece = input[at..end].to_vec();
                input.splice(
                    at..at,
                    piece
                        .iter()
                        .copied()
                        .cycle()
                        .take(piece.len() * (1 + rng.below(8))),
                );
            }
            3 => {
                let token = TOKENS[rng.below(TOKENS.len())].as_bytes();
                input.splice(at..at, token.iter().copied());
            }
            4 => {
                let other = &seeds[rng.below(seeds.len())];
                let from = rng.below(other.len() + 1);
                input.truncate(at);
                input.extend_from_slice(&other[from..]);
            }
            5 if !input.is_empty() => {
                let end = (at + rng.below(32)).min(input.len());
                input.drain(at..end);
            }
            _ => input.insert(at, rng.next() as u8),
        }
    }
    input
}

/// What a target found: how many cases ran, how fast, and the first input that
/// panicked (with the panic's message).
struct Outcome {
    cases: u64,
    per_s: f64,
    failure: Option<(Vec<u8>, String)>,
}

/// Runs `target` on `cases` inputs made from `seeds`.
fn fuzz(seed: u64, cases: u64, seeds: &[Vec<u8>], target: &dyn Fn(&[u8])) -> Outcome {
    let mut rng = Rng(seed);
    let started = Instant::now();
    // The seeds themselves first, then their mutations.
    let inputs = seeds
        .iter()
        .cloned()
        .chain(std::iter::from_fn(|| Some(mutate(&mut rng, seeds))));
    for (n, input) in (1..=cases).zip(inputs) {
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| target(&input))) {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            return Outcome {
                cases: n,
                per_s: 0.0,
                failure: Some((input, message)),
            };
        }
    }
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    Outcome {
        cases,
        per_s: cases as f64 / secs,
        failure: None,
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The stream fixture's streams, whole, as seeds.
fn stream_seeds() -> Vec<Vec<u8>> {
    let fixture: Value = serde_json::from_str(include_str!("fixtures/stream-cases.json"))
        .expect("the fixture reads");
    fixture["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|case| {
            case["chunks"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|c| c[1].as_str().unwrap_or_default().bytes())
                .collect()
        })
        .collect()
}

/// A stream fed to a request's record, read as the kind of endpoint the input's
/// second byte says and cut where its first says, under small limits: a record
/// comes out, whatever came in.
fn sse_target(input: &[u8]) {
    let kinds = EndpointKind::ALL;
    let options = RecordOptions {
        sse_limits: SseLimits {
            max_line_bytes: 512,
            max_event_bytes: 1024,
        },
        endpoint: kinds[input.get(1).copied().unwrap_or(0) as usize % kinds.len()],
        ..RecordOptions::default()
    };
    let mut b = RecordBuilder::new(
        RequestStart {
            id: 1,
            concurrency: 1,
            warmup: false,
            wanted_us: 0,
            sent_us: 0,
        },
        options,
    );
    b.on_headers(200, Some("text/event-stream"), None, 10);
    let step = 1 + input.first().copied().unwrap_or(7) as usize % 97;
    for (i, chunk) in input.chunks(step).enumerate() {
        b.on_bytes(chunk, 100 + i as u64 * 1_000);
    }
    let record = b.finish(StreamEnd::Complete, 1_000_000);
    assert!(record.token_times_us.len() as u64 <= input.len() as u64 + 1);
}

/// Run documents this crate writes: a ladder's records built into a document.
fn document_seeds() -> Vec<Vec<u8>> {
    let mut records = Vec::new();
    for (i, stream) in stream_seeds().iter().enumerate().take(6) {
        let mut b = RecordBuilder::new(
            RequestStart {
                id: i as u64,
                concurrency: 1 + (i as u32 % 2),
                warmup: i == 0,
                wanted_us: 0,
                sent_us: 5,
            },
            RecordOptions::default(),
        );
        b.on_headers(200, Some("text/event-stream"), None, 50);
        b.on_bytes(stream, 1_000 + i as u64);
        records.push(b.finish(StreamEnd::Complete, 90_000));
    }
    let document = RunDocument::build(
        "run-fuzz".into(),
        "2026-12-06T10:00:00Z".into(),
        RunStatus::Done,
        Plan::default_for_simulator("http://127.0.0.1:8000/v1"),
        Environment {
            server_metrics: Some(ServerMetrics {
                url: "http://127.0.0.1:8000/metrics".into(),
                server: Some(Server::Vllm),
                every_ms: POLL_EVERY_MS,
                unreadable: None,
                skipped_at_us: Vec::new(),
                samples: [100, 900]
                    .map(|at_us| ServerSample {
                        at_us,
                        running: Some(2.0),
                        waiting: Some(1.0),
                        kv_pct: Some(12.5),
                        preemptions: Some(0.0),
                        prefix_queries: Some(100.0),
                        prefix_hits: Some(at_us as f64 / 10.0),
                        prefix_hit_pct: None,
                    })
                    .to_vec(),
            }),
            ..Environment::default()
        },
        records,
    );
    assert!(document.levels.iter().all(|l| l.server.is_some()));
    vec![document.to_json().into_bytes()]
}

/// The article's `config.json` and our own plan format.
fn config_seeds() -> Vec<Vec<u8>> {
    let article = json!({
        "base_url": "https://taotoken.net/api", "api_key": "sk-你的Key填这里", "model": "你的模型ID",
        "prompt": "请用300字介绍大模型推理中的prefill和decode两个阶段", "max_tokens": 300,
        "temperature": 0.7, "concurrency_levels": [1, 2, 4, 8, 16], "requests_per_level": 8, "timeout": 120
    });
    let plan =
        serde_json::to_string(&Plan::default_for_simulator("http://127.0.0.1:8000/v1")).unwrap();
    vec![article.to_string().into_bytes(), plan.into_bytes()]
}

/// Locust records as the exported locustfile writes them.
fn locust_seeds() -> Vec<Vec<u8>> {
    let plan = Plan::default_for_simulator("http://127.0.0.1:8000/v1");
    let mut lines = vec![json!({
        "tokenmeter_locust": 1, "kind": "run", "plan": plan, "generated_by": "tokenmeter",
        "locust": "2.47.0", "python": "3.11.7", "master": "m", "n_workers": 1, "started_wall_us": 1_000_000
    })
    .to_string()];
    for (i, sent) in [0u64, 300_000, 600_000].iter().enumerate() {
        lines.push(json!({"tokenmeter_locust": 1, "kind": "stage", "stage": i}).to_string());
        lines.push(json!({
            "tokenmeter_locust": 1, "kind": "request", "worker": "w", "anchor_wall_us": 1_000_000,
            "stage": i, "concurrency": 1, "warmup": i == 0, "wanted_us": sent, "sent_us": sent,
            "headers_us": sent + 1_000, "first_token_us": sent + 200_000, "first_answer_us": sent + 200_000,
            "last_token_us": sent + 240_000, "end_us": sent + 240_500, "status": 200,
            "response_id": format!("chatcmpl-{sent}"), "n_bytes": 900, "n_token_events": 3,
            "n_reasoning_events": 0, "usage": {"prompt_tokens": 20, "completion_tokens": 3, "reasoning_tokens": null},
            "finish_reason": "stop", "saw_done": true, "token_times_us": [sent + 200_000, sent + 220_000, sent + 240_000],
            "n_comment_lines": 0, "error": null
        })
        .to_string());
    }
    vec![lines.join("\n").into_bytes()]
}

/// Prompt files of each format.
fn prompt_seeds() -> Vec<Vec<u8>> {
    vec![
        b"first prompt\n\xe7\xac\xac\xe4\xba\x8c\xe4\xb8\xaa\n".to_vec(),
        br#"{"prompt": "a"}
{"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": [{"type": "text", "text": "b"}]}]}
"#
        .to_vec(),
        br#"[{"conversations": [{"from": "system", "value": "s"}, {"from": "human", "value": "q"}, {"from": "gpt", "value": "a"}]}]"#.to_vec(),
    ]
}

/// Expositions as vLLM, SGLang, TGI and llama.cpp's server write them.
fn prometheus_seeds() -> Vec<Vec<u8>> {
    vec![
        b"# HELP vllm:num_requests_running Number of requests.\n# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine=\"0\",model_name=\"Qwen/Qwen3-8B\"} 4.0\nvllm:num_requests_waiting{engine=\"0\",model_name=\"a \\\"q\\\" }\"} 2.0\nvllm:kv_cache_usage_perc{engine=\"0\"} 0.5\nvllm:prefix_cache_hits_total 10\nvllm:time_to_first_token_seconds_bucket{le=\"+Inf\"} 3\n".to_vec(),
        b"sglang:num_running_reqs{model_name=\"m\"} 5\nsglang:num_queue_reqs 1\nsglang:token_usage 0.25\nsglang:cache_hit_rate 0.5\n".to_vec(),
        b"tgi_batch_current_size 3\ntgi_queue_size 9 1700000000000\nllamacpp:requests_processing 2\nllamacpp:kv_cache_usage_ratio NaN\n".to_vec(),
    ]
}

struct Target {
    name: &'static str,
    seeds: fn() -> Vec<Vec<u8>>,
    run: fn(&[u8]),
}

const TARGETS: &[Target] = &[
    Target {
        name: "sse + record",
        seeds: stream_seeds,
        run: sse_target,
    },
    Target {
        name: "run document",
        seeds: document_seeds,
        run: |input| {
            let _ = RunDocument::from_json(&text(input));
        },
    },
    Target {
        name: "vllm result",
        seeds: || vec![include_bytes!("fixtures/vllm-detailed.json").to_vec()],
        run: |input| {
            let _ = tokenmeter_core::vllm::import(&text(input));
        },
    },
    Target {
        name: "locust records",
        seeds: locust_seeds,
        run: |input| {
            let text = text(input);
            let _ = tokenmeter_core::locust::is_locust_records(&text);
            let _ = tokenmeter_core::locust::import(&text);
        },
    },
    Target {
        name: "config.json and plan links",
        seeds: config_seeds,
        run: |input| {
            if let Ok(imported) = import_config(&text(input)) {
                // A plan read is a plan that writes and reads back.
                let json = serde_json::to_string(&imported.plan).unwrap();
                let again: Plan = serde_json::from_str(&json).unwrap();
                assert_eq!(again, imported.plan);
            }
        },
    },
    Target {
        name: "prompt files",
        seeds: prompt_seeds,
        run: |input| {
            if let Ok(read) = read_prompts("fuzz.txt", input) {
                assert!(read.file.count as usize == read.prompts.len() && !read.prompts.is_empty());
            }
        },
    },
    Target {
        name: "prometheus metrics",
        seeds: prometheus_seeds,
        run: |input| {
            if let Ok((_, sample)) = parse_metrics(&text(input)) {
                // What is kept is a number (NaN and infinities are left out).
                for value in [sample.running, sample.waiting, sample.kv_pct]
                    .into_iter()
                    .flatten()
                {
                    assert!(value.is_finite());
                }
            }
        },
    },
];

fn cases() -> u64 {
    std::env::var("TOKENMETER_FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(DEFAULT_CASES)
}

#[test]
fn no_reader_panics_on_any_input() {
    let seed = std::env::var("TOKENMETER_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x746f_6b65_6e6d);
    let cases = cases();
    // The targets' own panics are reported below, not printed as they happen.
    let quiet = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let outcomes: Vec<(&str, Outcome)> = TARGETS
        .iter()
        .map(|t| (t.name, fuzz(seed, cases, &(t.seeds)(), &t.run)))
        .collect();
    std::panic::set_hook(quiet);
    println!("fuzz: seed {seed}, {cases} cases per target");
    for (name, o) in &outcomes {
        match &o.failure {
            None => println!(
                "  {name:<28} {:>9} cases  {:>10.0} cases/s  nothing found",
                o.cases, o.per_s
            ),
            Some((_, message)) => println!("  {name:<28} case {:>5}: PANIC {message}", o.cases),
        }
    }
    for (name, o) in &outcomes {
        if let Some((input, message)) = &o.failure {
            panic!(
                "{name} panicked ({message}) on {} bytes: {:?}",
                input.len(),
                text(input)
            );
        }
    }
}

#[test]
fn a_planted_panic_is_found() {
    // A reader that panics on a rare input: a field whose value is `NaN`.
    let planted = |input: &[u8]| {
        let t = text(input);
        if t.contains(":NaN") {
            panic!("planted");
        }
        let _ = RunDocument::from_json(&t);
    };
    std::panic::set_hook(Box::new(|_| {}));
    let outcome = fuzz(1, 20_000, &document_seeds(), &planted);
    let _ = std::panic::take_hook();
    let (input, message) = outcome.failure.expect("the planted panic is found");
    assert_eq!(message, "planted");
    assert!(text(&input).contains(":NaN"));
}

#[test]
fn what_tokenmeter_writes_it_reads_back_equal() {
    for json in document_seeds() {
        let document = RunDocument::from_json(&text(&json)).unwrap();
        let again: Value = serde_json::from_str(&document.to_json()).unwrap();
        let first: Value = serde_json::from_slice(&json).unwrap();
        if let Some(path) = first_difference(&first, &again, String::new()) {
            panic!("written, read and written again, the document differs at {path}");
        }
    }
}

/// Where two JSON values first differ, as a path.
fn first_difference(a: &Value, b: &Value, at: String) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.keys()
                .chain(y.keys())
                .find_map(|k| match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) => first_difference(p, q, format!("{at}.{k}")),
                    _ => Some(format!("{at}.{k}")),
                })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (p, q))| first_difference(p, q, format!("{at}[{i}]"))),
        _ if a == b => None,
        _ => Some(format!("{at}: {a} against {b}")),
    }
}
