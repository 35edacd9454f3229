//! vLLM `bench serve` results (`--save-result`, with `--save-detailed` when given)
//! as run documents, so that what a client on the server measured sits in history
//! next to what this browser measured, with the same figures, charts and
//! comparison. A result without per-request data becomes one level of vLLM's own
//! figures, the ones it did not save said as missing.
//!
//! Each request of the result becomes a record: its TTFT and inter-token gaps give
//! the token times, `output_lens` the token count (vLLM's, as usage would), and an
//! error string a failure. Every figure is then computed here, as for a run of our
//! own; the throughputs are vLLM's (over its `duration`), since a result without
//! `start_times` does not say when requests started. What vLLM does not measure is
//! said in the document (a `RunCondition::Imported`).

use serde_json::Value;

use crate::{
    condition::RunCondition,
    error::{ErrorKind, RequestError, Said},
    plan::{LoadMode, Plan},
    record::{RequestRecord, TokenSource},
    report::{Environment, RunDocument, RunStatus},
    said,
    stats::Distribution,
    stream::Usage,
    vecmap::VecMap,
    verdict::analyse,
};

/// The tool named in imported documents.
pub const TOOL: &str = "vLLM bench serve";

/// Whether `value` looks like a `bench serve` result (detailed or not).
fn is_vllm_result(value: &Value) -> bool {
    ["completed", "duration", "mean_ttft_ms"]
        .iter()
        .all(|k| value.get(k).is_some())
}

/// The run document of a `bench serve` result, `Err` with what to do when `json`
/// is not one, or has no per-request data.
// Long: vLLM's result read field by field, each with its check.
pub fn import(json: &str) -> Result<RunDocument, Said> {
    let value: Value = serde_json::from_str(json)
        .map_err(|err| said!("this is not valid JSON: {err}", "这不是有效的 JSON：{err}"))?;
    if !is_vllm_result(&value) {
        return Err(said!(
            "this is neither a tokenmeter run document nor a vLLM bench serve result",
            "这既不是 tokenmeter 的运行文档，也不是 vLLM bench serve 的结果",
        ));
    }
    let list = |key: &str| value.get(key).and_then(Value::as_array);
    let (Some(ttfts), Some(itls), Some(output_lens)) =
        (list("ttfts"), list("itls"), list("output_lens"))
    else {
        return summary_only(&value);
    };
    let n = ttfts.len();
    if itls.len() != n || output_lens.len() != n {
        return Err(said!(
            "this vLLM bench serve result is damaged: its per-request lists differ in length",
            "这个 vLLM bench serve 结果已损坏：它的各请求列表长度不一致",
        ));
    }
    let number = |key: &str| value.get(key).and_then(Value::as_f64);
    let errors = list("errors");
    let start_times = list("start_times").filter(|s| s.len() == n);
    let first_start = start_times
        .and_then(|s| s.iter().filter_map(Value::as_f64).reduce(f64::min))
        .unwrap_or(0.0);
    let (concurrency, load) = load_of(&value, n);
    let us = |s: f64| (s.max(0.0) * 1e6).round() as u64;
    let mut records = Vec::with_capacity(n);
    for i in 0..n {
        let sent_us = start_times
            .and_then(|s| s[i].as_f64())
            .map_or(0, |t| us(t - first_start));
        let error = errors
            .and_then(|e| e.get(i))
            .and_then(Value::as_str)
            .filter(|e| !e.trim().is_empty());
        let ttft_s = ttfts[i].as_f64().unwrap_or(0.0);
        let gaps: Vec<f64> = itls[i]
            .as_array()
            .map(|g| g.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default();
        let n_out = output_lens[i].as_u64().unwrap_or(0);
        let mut token_times_us = Vec::with_capacity(gaps.len() + 1);
        if error.is_none() && ttft_s > 0.0 {
            let mut at = sent_us + us(ttft_s);
            token_times_us.push(at);
            for gap in &gaps {
                at += us(*gap);
                token_times_us.push(at);
            }
        }
        let end_us = token_times_us.last().copied().unwrap_or(sent_us);
        let n_events = token_times_us.len() as u64;
        records.push(RequestRecord {
            id: i as u64,
            concurrency,
            warmup: false,
            repetition: 0,
            target: 0,
            wanted_us: sent_us,
            sent_us,
            headers_us: None,
            first_token_us: token_times_us.first().copied(),
            first_answer_us: token_times_us.first().copied(),
            last_token_us: token_times_us.last().copied(),
            end_us,
            status: error.is_none().then_some(200),
            response_id: None,
            n_bytes: 0,
            n_token_events: n_events,
            n_reasoning_events: 0,
            n_tool_call_events: 0,
            usage: Some(Usage {
                prompt_tokens: list("input_lens")
                    .and_then(|l| l.get(i))
                    .and_then(Value::as_u64),
                completion_tokens: Some(n_out),
                reasoning_tokens: None,
                cached_tokens: None,
            }),
            n_out: (n_events > 0).then_some(n_out),
            token_source: TokenSource::Usage,
            token_mismatch: (n_events > 0).then(|| n_out as i64 - n_events as i64),
            finish_reason: None,
            saw_done: error.is_none(),
            token_times_us,
            n_comment_lines: 0,
            output_text: None,
            error: match error {
                Some(text) => Some(failure(text)),
                None if n_events == 0 => Some(RequestError {
                    kind: ErrorKind::EmptyStream,
                    detail: "vLLM recorded no token for this request".into(),
                    body_sample: None,
                    retry_after_s: None,
                }),
                None => None,
            },
            browser: None,
            server_timings: None,
            asked_tokens: None,
            turn: None,
        });
    }
    let max_tokens = output_lens
        .iter()
        .filter_map(Value::as_u64)
        .max()
        .unwrap_or(0);
    let plan = plan_of(&value, load, max_tokens);
    let date = value.get("date").and_then(Value::as_str).unwrap_or("");
    let mut missing = always_missing();
    if start_times.is_none() {
        missing.push("when each request started (the timeline and tokens over time assume they all started together)".into());
    }
    let environment = Environment {
        conditions: vec![RunCondition::Imported {
            tool: TOOL.into(),
            missing,
        }],
        source: Some("vllm".into()),
        ..Environment::default()
    };
    let mut document = RunDocument::build(
        format!("vllm-{}-{}", date, concurrency),
        started_at(date),
        RunStatus::Done,
        plan,
        environment,
        records,
    );
    // vLLM's own throughputs, over its own duration.
    if let (Some(duration), Some(level)) = (number("duration"), document.levels.first_mut()) {
        level.wall_s = duration;
        if let Some(tps) = number("output_throughput") {
            level.output_tps = tps;
        }
        if let Some(rps) = number("request_throughput") {
            level.request_throughput_rps = rps;
        }
        document.total.wall_s = level.wall_s;
        document.total.output_tps = level.output_tps;
        document.total.request_throughput_rps = level.request_throughput_rps;
    }
    Ok(document)
}

/// What no `bench serve` result measures.
fn always_missing() -> Vec<String> {
    vec![
        "browser wait and TTFT after send (it ran on the server side, not in a browser)".to_owned(),
        "time to first answer token (reasoning is not told apart)".to_owned(),
    ]
}

/// The plan a result ran, as far as it says: the model and the load.
fn plan_of(value: &Value, load: LoadMode, max_tokens: u64) -> Plan {
    let mut plan = Plan::default_for_simulator("");
    plan.model = value
        .get("model_id")
        .and_then(Value::as_str)
        .unwrap_or("(unknown model)")
        .to_owned();
    plan.load = load;
    plan.max_tokens = max_tokens as u32;
    plan.warmup_requests = 0;
    plan.slo = Default::default();
    plan
}

/// A result without per-request data: one level from vLLM's own figures (mean,
/// median, std and the percentiles it was asked for; the others stay missing, and
/// the document says which), no records, so no timeline, CDF or tokens over time.
// Long: a summary-only result's figures, a field each.
fn summary_only(value: &Value) -> Result<RunDocument, Said> {
    let number = |key: &str| value.get(key).and_then(Value::as_f64);
    let count = |key: &str| value.get(key).and_then(Value::as_u64);
    let completed = count("completed").ok_or_else(|| {
        said!(
            "this vLLM bench serve result has no `completed` count",
            "这个 vLLM bench serve 结果没有 `completed` 计数",
        )
    })?;
    let failed = count("failed")
        .unwrap_or_else(|| count("num_prompts").map_or(0, |n| n.saturating_sub(completed)));
    let n = (completed + failed) as usize;
    let (concurrency, load) = load_of(value, n);
    let date = value.get("date").and_then(Value::as_str).unwrap_or("");
    let mut missing = always_missing();
    let mut absent = VecMap::new();
    let distribution = |metric: &str, absent: &mut VecMap<&'static str, ()>| {
        let mean = number(&format!("mean_{metric}_ms"))?;
        let mut figure = |key: String, name: &'static str| {
            number(&key).unwrap_or_else(|| {
                absent.insert(name, ());
                f64::NAN
            })
        };
        let median = number(&format!("median_{metric}_ms"));
        Some(Distribution {
            n: completed,
            mean,
            std: figure(format!("std_{metric}_ms"), "std"),
            min: f64::NAN,
            max: f64::NAN,
            p50: median.unwrap_or_else(|| figure(format!("p50_{metric}_ms"), "p50")),
            p90: figure(format!("p90_{metric}_ms"), "p90"),
            p95: figure(format!("p95_{metric}_ms"), "p95"),
            p99: figure(format!("p99_{metric}_ms"), "p99"),
        })
    };
    let ttft = distribution("ttft", &mut absent);
    let tpot = distribution("tpot", &mut absent);
    let itl = distribution("itl", &mut absent);
    let e2e = distribution("e2el", &mut absent);
    if !absent.is_empty() {
        let names: Vec<&str> = absent.keys().copied().collect();
        missing.push(format!(
            "{} (vLLM saves the percentiles --metric-percentiles asks for: 99 by default)",
            names.join(", ")
        ));
    }
    missing.push("per-request data, so no timeline, no CDF, no tokens over time and no error kinds (save with --save-detailed for those)".into());
    let mut document = RunDocument::build(
        format!("vllm-{date}-{concurrency}"),
        started_at(date),
        RunStatus::Done,
        plan_of(value, load, 0),
        Environment {
            conditions: vec![RunCondition::Imported {
                tool: TOOL.into(),
                missing,
            }],
            source: Some("vllm".into()),
            ..Environment::default()
        },
        Vec::new(),
    );
    let mut level = document.total.clone();
    level.concurrency = Some(concurrency);
    level.n_requests = completed + failed;
    level.n_ok = completed;
    level.n_fail = failed;
    level.ttft_ms = ttft;
    level.tpot_ms = tpot;
    level.itl_ms = itl;
    level.e2e_ms = e2e;
    level.wall_s = number("duration").unwrap_or(0.0);
    level.n_out_total = count("total_output_tokens").unwrap_or(0);
    level.output_tps = number("output_throughput").unwrap_or(0.0);
    level.request_throughput_rps = number("request_throughput").unwrap_or(0.0);
    level.goodput_rps = number("request_goodput");
    document.levels = vec![level.clone()];
    document.total = level;
    document.verdict = analyse(
        &document.levels,
        &document.plan.slo,
        &document.plan.analysis,
    );
    Ok(document)
}

/// The level a result ran (its concurrency: 0 for open loop) and the load that
/// reproduces it: closed loop at --max-concurrency; open loop at a finite
/// --request-rate; else every prompt at once.
fn load_of(value: &Value, n: usize) -> (u32, LoadMode) {
    let number = |key: &str| value.get(key).and_then(Value::as_f64);
    let rate = match value.get("request_rate") {
        Some(Value::Number(r)) => r.as_f64().filter(|r| r.is_finite()),
        _ => None,
    };
    let max_concurrency = value
        .get("max_concurrency")
        .and_then(Value::as_u64)
        .map(|c| c as u32);
    match (max_concurrency, rate) {
        (Some(c), _) => (
            c,
            LoadMode::Ladder {
                levels: vec![c],
                requests_per_level: n as u32,
            },
        ),
        (None, Some(rate_rps)) => (
            0,
            LoadMode::Arrivals {
                rate_rps,
                poisson: number("burstiness").is_none_or(|b| b == 1.0),
                n_requests: n as u32,
                seed: 0,
            },
        ),
        (None, None) => (
            n as u32,
            LoadMode::Ladder {
                levels: vec![n as u32],
                requests_per_level: n as u32,
            },
        ),
    }
}

/// A failed request's kind, from vLLM's error text (an HTTP status where it says one).
fn failure(text: &str) -> RequestError {
    let has = |s: &str| text.contains(s);
    let kind = if has("429") {
        ErrorKind::RateLimited
    } else if has("401") || has("403") {
        ErrorKind::Auth
    } else if has("404") {
        ErrorKind::NotFound
    } else if has("imeout") {
        ErrorKind::TimeoutMidStream
    } else if has("400") || has("422") {
        ErrorKind::BadRequest
    } else {
        ErrorKind::ServerError
    };
    RequestError {
        kind,
        detail: crate::error::cut(text, crate::error::DETAIL_BYTES),
        body_sample: None,
        retry_after_s: None,
    }
}

/// vLLM's `date` (`20251203-164500`) as ISO 8601, or as it was.
fn started_at(date: &str) -> String {
    let digits: String = date.chars().filter(char::is_ascii_digit).collect();
    if digits.len() == 14 {
        format!(
            "{}-{}-{}T{}:{}:{}",
            &digits[0..4],
            &digits[4..6],
            &digits[6..8],
            &digits[8..10],
            &digits[10..12],
            &digits[12..14]
        )
    } else {
        date.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Lang;

    /// A detailed result of four requests at --max-concurrency 2, one failed.
    pub(super) const DETAILED: &str = include_str!("../tests/fixtures/vllm-detailed.json");

    #[test]
    fn a_detailed_result_becomes_a_run() {
        let doc = import(DETAILED).unwrap();
        assert_eq!(doc.plan.model, "Qwen/Qwen2.5-7B-Instruct");
        assert_eq!(doc.started_at, "2026-12-03T10:15:00");
        assert_eq!(doc.levels.len(), 1);
        let level = &doc.levels[0];
        assert_eq!(level.concurrency, Some(2));
        assert_eq!((level.n_ok, level.n_fail), (3, 1));
        // TTFTs 0.1, 0.2, 0.3 s: the median is vLLM's median.
        assert_eq!(level.ttft_ms.unwrap().p50, 200.0);
        // TPOT of the first: gaps of 20, 20, 20 ms.
        assert!((level.tpot_ms.unwrap().min - 20.0).abs() < 1e-9);
        assert_eq!(level.output_tps, 123.4, "vLLM's own throughput");
        assert_eq!(level.fails_by_kind[&ErrorKind::ServerError], 1);
        assert_eq!(doc.records[0].n_out, Some(4));
        assert_eq!(
            doc.records[0].token_times_us,
            [100_000, 120_000, 140_000, 160_000]
        );
        let note = doc.environment.notes_in(Lang::En).join(" ");
        assert!(note.contains("imported from vLLM bench serve"), "{note}");
        assert!(note.contains("browser wait"), "{note}");
        // It reads back as a document, as history keeps it.
        let back = RunDocument::from_json(&doc.to_json()).unwrap();
        assert_eq!(back.records, doc.records);
        assert_eq!(back.environment.conditions, doc.environment.conditions);
    }

    #[test]
    fn a_summary_only_result_is_one_level_of_vllms_own_figures() {
        let summary = r#"{"date":"20261203-101500","model_id":"m","max_concurrency":4,"num_prompts":10,"duration":10.0,"completed":8,"total_output_tokens":800,"output_throughput":80.0,"request_throughput":0.8,"mean_ttft_ms":100.0,"median_ttft_ms":90.0,"std_ttft_ms":5.0,"p99_ttft_ms":200.0,"mean_tpot_ms":20.0,"median_tpot_ms":19.0,"std_tpot_ms":1.0,"p99_tpot_ms":25.0}"#;
        let doc = import(summary).unwrap();
        let level = &doc.levels[0];
        assert_eq!(level.concurrency, Some(4));
        assert_eq!(
            (level.n_ok, level.n_fail),
            (8, 2),
            "num_prompts − completed failed"
        );
        let ttft = level.ttft_ms.unwrap();
        assert_eq!((ttft.p50, ttft.p99), (90.0, 200.0));
        assert!(
            ttft.p95.is_nan(),
            "vLLM did not save p95: missing, not made up"
        );
        assert!(level.itl_ms.is_none());
        assert_eq!(level.output_tps, 80.0);
        assert!(doc.records.is_empty());
        let note = doc.environment.notes_in(Lang::En).join(" ");
        assert!(
            note.contains("p90, p95 (vLLM saves the percentiles"),
            "{note}"
        );
        assert!(note.contains("--save-detailed"), "{note}");
        // Kept and read back (history), the missing figures stay missing.
        let back = RunDocument::from_json(&doc.to_json()).unwrap();
        assert!(back.levels[0].ttft_ms.unwrap().p95.is_nan());
        assert_eq!(back.levels[0].ttft_ms.unwrap().p99, 200.0);
        // Shown as dashes, not NaN.
        let md = crate::render::markdown(&doc, Lang::En);
        assert!(
            md.contains("| 4 | 8 | 2 | 90.0 ms | – | 200.0 ms |"),
            "{md}"
        );
        assert!(!md.contains("NaN") && !crate::render::levels_csv(&doc).contains("NaN"));
        assert!(import(r#"{"schema": 1}"#).unwrap_err().contains("neither"));
        assert!(import("not json").unwrap_err().contains("not valid JSON"));
    }
}
