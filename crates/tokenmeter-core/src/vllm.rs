//! vLLM `bench serve` results (`--save-result --save-detailed`) as run documents,
//! so that what a client on the server measured sits in history next to what this
//! browser measured, with the same figures, charts and comparison.
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
    error::{ErrorKind, RequestError},
    plan::{LoadMode, Plan},
    record::{RequestRecord, TokenSource},
    report::{Environment, RunDocument, RunStatus},
    stream::Usage,
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
pub fn import(json: &str) -> Result<RunDocument, String> {
    let value: Value =
        serde_json::from_str(json).map_err(|err| format!("this is not valid JSON: {err}"))?;
    if !is_vllm_result(&value) {
        return Err(
            "this is neither a tokenmeter run document nor a vLLM bench serve result".into(),
        );
    }
    let list = |key: &str| value.get(key).and_then(Value::as_array);
    let (Some(ttfts), Some(itls), Some(output_lens)) =
        (list("ttfts"), list("itls"), list("output_lens"))
    else {
        return Err("this vLLM bench serve result has no per-request data: run it with --save-result --save-detailed to import it".into());
    };
    let n = ttfts.len();
    if itls.len() != n || output_lens.len() != n {
        return Err(
            "this vLLM bench serve result is damaged: its per-request lists differ in length"
                .into(),
        );
    }
    let number = |key: &str| value.get(key).and_then(Value::as_f64);
    let errors = list("errors");
    let start_times = list("start_times").filter(|s| s.len() == n);
    let first_start = start_times
        .and_then(|s| s.iter().filter_map(Value::as_f64).reduce(f64::min))
        .unwrap_or(0.0);
    let rate = match value.get("request_rate") {
        Some(Value::Number(r)) => r.as_f64().filter(|r| r.is_finite()),
        _ => None,
    };
    let max_concurrency = value
        .get("max_concurrency")
        .and_then(Value::as_u64)
        .map(|c| c as u32);
    // Closed loop at --max-concurrency; open loop at a finite --request-rate; else
    // every prompt at once.
    let (concurrency, load) = match (max_concurrency, rate) {
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
    };
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
            usage: Some(Usage {
                prompt_tokens: list("input_lens")
                    .and_then(|l| l.get(i))
                    .and_then(Value::as_u64),
                completion_tokens: Some(n_out),
                reasoning_tokens: None,
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
        });
    }
    let model = value
        .get("model_id")
        .and_then(Value::as_str)
        .unwrap_or("(unknown model)")
        .to_owned();
    let date = value.get("date").and_then(Value::as_str).unwrap_or("");
    let mut plan = Plan::default_for_simulator("");
    plan.model = model;
    plan.load = load;
    plan.max_tokens = output_lens
        .iter()
        .filter_map(Value::as_u64)
        .max()
        .unwrap_or(0) as u32;
    plan.warmup_requests = 0;
    plan.slo = Default::default();
    let mut missing = vec![
        "browser wait and TTFT after send (it ran on the server side, not in a browser)".to_owned(),
        "time to first answer token (reasoning is not told apart)".to_owned(),
    ];
    if start_times.is_none() {
        missing.push("when each request started (the timeline and tokens over time assume they all started together)".into());
    }
    let environment = Environment {
        conditions: vec![RunCondition::Imported {
            tool: TOOL.into(),
            missing,
        }],
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
    pub const DETAILED: &str = include_str!("../tests/fixtures/vllm-detailed.json");

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
    fn a_summary_only_result_says_how_to_get_one_that_imports() {
        let summary = r#"{"date":"20261203-101500","model_id":"m","max_concurrency":4,"duration":10.0,"completed":8,"mean_ttft_ms":100.0,"median_ttft_ms":90.0,"p99_ttft_ms":200.0}"#;
        let err = import(summary).unwrap_err();
        assert!(err.contains("--save-detailed"), "{err}");
        assert!(import(r#"{"schema": 1}"#).unwrap_err().contains("neither"));
        assert!(import("not json").unwrap_err().contains("not valid JSON"));
    }
}
