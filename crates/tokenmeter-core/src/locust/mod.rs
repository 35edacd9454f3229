//! The same plan on Locust's distributed workers, and their records back.
//!
//! [`locustfile`] writes a plan as one self-contained Python file for Locust
//! ([`LOCUST_VERSION`], pinned by [`requirements`]): its stages as a load shape
//! (each level N users until its requests are sent or its time is up, then the
//! next), each request streamed and recorded with the fields and error kinds of a
//! [`RequestRecord`] (the file ports the [`crate::record::RecordBuilder`]'s rules),
//! on each worker's monotonic clock with a wall-clock anchor. The master writes
//! the records, one JSON object per line, after a `run` line (the plan, Locust's
//! version, the worker count) and one `stage` line per finished stage; where the
//! plan reads the server's metrics, the master polls them as the page does and
//! writes each poll's known metrics as a `metrics` line.
//!
//! A plan of prompts from a file exports a second file beside the locustfile,
//! [`PROMPTS_FILE`]: each of the file's prompts as the body the page sends for it
//! (the output length set per request), which the locustfile checks by its
//! SHA-256 before it sends anything and draws from as the page does.
//!
//! [`import`] turns those lines (from one master, or several workers' files put
//! together) back into a [`RunDocument`], so every table, chart, verdict and
//! export works on it unchanged. The key never enters the file: it is read from
//! [`KEY_ENV`] when the test runs.

use serde::Deserialize;
use serde_json::{json, Value};

use crate::{
    condition::RunCondition,
    error::{RequestError, Said},
    plan::{AuthStyle, Bodies, LoadMode, Plan, PromptMode},
    prompts::{self, Prompts},
    record::{token_count, RequestRecord},
    report::{Environment, RunDocument, RunStatus},
    said,
    server_metrics::{self, ServerMetrics, ServerSample, Unreadable},
    stream::{request_body, EndpointKind, ServerTimings, Usage},
};

/// The Locust release the file is written for and tested with.
pub const LOCUST_VERSION: &str = "2.47.0";
/// Where the exported file reads the API key from.
pub const KEY_ENV: &str = "TOKENMETER_API_KEY";
/// The exported file's name.
pub const FILE_NAME: &str = "tokenmeter_locustfile.py";
/// The file of a plan's own prompts, beside the locustfile.
pub const PROMPTS_FILE: &str = "tokenmeter_prompts.json";
/// The version of the record lines (`"tokenmeter_locust": 1`).
pub const FORMAT: u64 = 1;

/// The locustfile's template. The page does not carry it (31 KB its first load
/// need not download): it fetches [`TEMPLATE_FILE`], which the build copies beside
/// it, and hands it to [`locustfile_from`].
pub const TEMPLATE: &str = include_str!("locustfile.template.py");
/// The template's file name beside the page.
pub const TEMPLATE_FILE: &str = "locustfile.template.py";
/// What only the template holds: a file without it is not the template (a host
/// that answers unknown paths with its index page, say).
const TEMPLATE_MARK: &str = "{{SETUP_JSON}}";
/// The template's FNV-1a hash, computed when the core is compiled (the page holds
/// these eight bytes, not the template): a fetched template from another build (a
/// cache that kept an old copy) is told apart from this build's.
const TEMPLATE_HASH: u64 = fnv1a(TEMPLATE.as_bytes());

const fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325_u64;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    hash
}

/// `requirements.txt` for the exported file: Locust pinned.
pub fn requirements() -> String {
    format!("locust=={LOCUST_VERSION}\n")
}

/// A plan for Locust: the locustfile, and, for a plan of prompts from a file, the
/// text of [`PROMPTS_FILE`] to put beside it.
#[derive(Clone, Debug, PartialEq)]
pub struct Export {
    /// The locustfile's text.
    pub locustfile: String,
    /// The text of [`PROMPTS_FILE`], for a plan of a file's prompts.
    pub prompts: Option<String>,
}

/// The plan as a locustfile (see the module docs), `Err` with what to do for a
/// plan Locust cannot run as it is. The plan never holds the key, so neither does
/// the file.
pub fn locustfile(plan: &Plan) -> Result<String, Said> {
    export(TEMPLATE, plan, None).map(|e| e.locustfile)
}

/// The plan for Locust from a `template` read elsewhere (the page fetches it),
/// with the file's `prompts` when the plan sends a file's: `Err` when the template
/// is not tokenmeter's, or the prompts are not the file the plan names.
pub fn export(template: &str, plan: &Plan, prompts: Option<&Prompts>) -> Result<Export, Said> {
    if !template.contains(TEMPLATE_MARK) {
        return Err(said!(
            "./{TEMPLATE_FILE} is not tokenmeter's Locust template (the host answered with something else): publish every file of the build's dist/ folder beside the page",
            "./{TEMPLATE_FILE} 不是 tokenmeter 的 Locust 模板（托管方返回了别的内容）：请把构建的 dist/ 文件夹中的所有文件与页面放在一起发布",
        ));
    }
    if fnv1a(template.as_bytes()) != TEMPLATE_HASH {
        return Err(said!(
            "./{TEMPLATE_FILE} is from another build of tokenmeter than this page (a cache kept an old copy): publish the build's dist/ folder whole, and reload the page without its cache",
            "./{TEMPLATE_FILE} 来自与本页不同的 tokenmeter 构建（缓存保留了旧副本）：请完整发布构建的 dist/ 文件夹，并绕过缓存重新加载页面",
        ));
    }
    let stages = stages(plan)?;
    let prompts = file_prompts(plan, prompts)?;
    // The bodies as the page makes them: the text around each request's header
    // (`unique`), or one body for all. The seed is chosen when the file runs (on
    // the master) unless the plan has one.
    let bodies = Bodies::new(plan, plan.seed.unwrap_or(0));
    let (head, tail, unique, prefixes) = bodies.parts();
    let setup = json!({
        "generated_by": format!("tokenmeter {}", env!("CARGO_PKG_VERSION")),
        "url": plan.endpoint_url(),
        "name": plan.endpoint.path(),
        "headers": plan.request_headers(None),
        "auth": match plan.auth {
            AuthStyle::Bearer => "bearer",
            AuthStyle::ApiKeyHeader => "api_key_header",
            AuthStyle::XApiKey => "x_api_key",
        },
        "body": request_body(&plan.body_spec()),
        "bodies": {"unique": unique.is_some(), "head": head, "tail": tail, "seed": plan.seed, "prefixes": prefixes, "varying": varying(plan)},
        "timeout_s": plan.timeout_s,
        // The page's rule for an answer far past what was asked, one place for both.
        "max_token_events": crate::record::ResponseLimits::default()
            .for_asked(bodies.asked_tokens(0))
            .max_token_events,
        "token_events_per_asked": crate::record::TOKEN_EVENTS_PER_ASKED,
        "token_events_slack": crate::record::TOKEN_EVENTS_SLACK,
        "stages": stages,
        "prompts": prompts.as_ref().map(|(setup, _)| setup),
        // The server's own metrics, polled by the master as the page polls them.
        "metrics": plan.metrics_url().map(|url| json!({
            "url": url,
            "every_ms": server_metrics::POLL_EVERY_MS,
            "max_bytes": server_metrics::MAX_EXPOSITION_BYTES,
            "names": server_metrics::names().collect::<Vec<_>>(),
        })),
        "plan": plan,
    });
    // A JSON string holding the JSON: also a Python string literal (serde_json
    // writes only escapes Python reads the same way, and UTF-8 as is).
    let literal = serde_json::to_string(&setup.to_string()).expect("a string serialises");
    let locustfile = template
        .replace("{{VERSION}}", env!("CARGO_PKG_VERSION"))
        .replace("{{SUMMARY}}", &one_line(&summary(plan)))
        .replace(
            "{{AUTH}}",
            match plan.auth {
                AuthStyle::Bearer => "Authorization: Bearer",
                AuthStyle::ApiKeyHeader => "the api-key header",
                AuthStyle::XApiKey => "the x-api-key header",
            },
        )
        .replace("{{FILE}}", FILE_NAME)
        .replace("{{SETUP_JSON}}", &literal);
    Ok(Export {
        locustfile,
        prompts: prompts.map(|(_, text)| text),
    })
}

/// For a plan of prompts from a file: what the locustfile's setup says of them
/// (where they are, their SHA-256, how requests draw from them and ask for their
/// lengths) and the text of [`PROMPTS_FILE`]; `None` for any other plan.
fn file_prompts(plan: &Plan, prompts: Option<&Prompts>) -> Result<Option<(Value, String)>, Said> {
    if plan.prompt_mode != PromptMode::File {
        return Ok(None);
    }
    let Some(file) = plan.prompt_file.as_ref() else {
        return Err(crate::plan::no_prompt_file());
    };
    let Some(prompts) = prompts.filter(|p| p.file.sha256 == file.sha256) else {
        return Err(prompts::missing(file));
    };
    // Each prompt's body as the page sends it; the file sets each request's
    // output length (and min_tokens, when forced) as `Bodies` does.
    let bodies: Vec<Value> = prompts
        .prompts
        .iter()
        .map(|prompt| request_body(&plan.file_request_spec(0, 0, prompt)))
        .collect();
    let text = json!({
        "about": format!("The prompts of {} as the bodies tokenmeter sends, for {FILE_NAME} beside this file: it checks this file by its SHA-256 and sends nothing without it.", file.name),
        "generated_by": format!("tokenmeter {}", env!("CARGO_PKG_VERSION")),
        "source": file,
        "bodies": bodies,
    })
    .to_string();
    let lengths = plan
        .output_lengths
        .map(|l| json!({"min": l.min, "max": l.max, "mean": l.mean, "stdev": l.stdev}));
    let setup = json!({
        "file": PROMPTS_FILE,
        "sha256": prompts::sha256_hex(text.as_bytes()),
        "count": bodies.len(),
        "source": file,
        "order": file.order,
        "output": lengths,
        "output_salt": crate::plan::OUTPUT_SALT,
        "max_tokens": plan.max_tokens,
        "max_key": if plan.endpoint == EndpointKind::Responses { "max_output_tokens" } else { "max_tokens" },
        "min_tokens": plan.force_output_lengths
            && plan.endpoint.is_openai_chunks()
            && !plan.extra_body.contains_key("min_tokens"),
    });
    Ok(Some((setup, text)))
}

/// How the file makes each body of a plan whose lengths are drawn per request, as
/// `Bodies` does (`null` for a plan whose lengths do not vary): the lengths and
/// their salts, where the body keeps its output length and its prompt, and what
/// a generated prompt leaves room for.
fn varying(plan: &Plan) -> Value {
    if !plan.lengths_vary() {
        return Value::Null;
    }
    let lengths = |l: Option<crate::plan::Lengths>| {
        l.map(|l| json!({"min": l.min, "max": l.max, "mean": l.mean, "stdev": l.stdev}))
    };
    let prompt_at = match plan.endpoint {
        EndpointKind::Chat | EndpointKind::Anthropic => json!(["messages", 0, "content"]),
        EndpointKind::Completions => json!(["prompt"]),
        EndpointKind::Responses => json!(["input"]),
    };
    json!({
        "output": lengths(plan.output_lengths),
        "input": lengths(plan.input_lengths),
        "output_salt": crate::plan::OUTPUT_SALT,
        "input_salt": crate::plan::INPUT_SALT,
        "max_tokens": plan.max_tokens,
        "max_key": if plan.endpoint == EndpointKind::Responses { "max_output_tokens" } else { "max_tokens" },
        "prompt_at": prompt_at,
        "generated": matches!(plan.prompt, crate::plan::PromptSpec::Tokens(_)),
        "header_tokens": if plan.prompt_mode == PromptMode::Same { 0 } else { crate::plan::UNIQUE_HEADER_TOKENS },
        "max_prompt_tokens": crate::plan::MAX_PROMPT_TOKENS,
        // What goes in front of the prompt: nothing (one prompt for all), the
        // request's header, or its group's shared prefix and then its header
        // (the prefixes made from the plan's seed, as the fixed bodies' are).
        "header": plan.prompt_mode != PromptMode::Same,
        "prefixes": match plan.prompt_mode {
            PromptMode::SharedPrefix => (0..plan.prefix_groups.clamp(1, crate::plan::MAX_PREFIX_GROUPS))
                .map(|g| crate::plan::shared_prefix(plan.seed.unwrap_or(0), g, plan.prefix_tokens))
                .collect(),
            _ => Vec::new(),
        },
        // Forcing the length asks for it again as min_tokens, unless the plan's
        // own body fields say otherwise.
        "min_tokens": plan.force_output_lengths
            && plan.endpoint.is_openai_chunks()
            && !plan.extra_body.contains_key("min_tokens"),
    })
}

/// The stages a plan runs: the warm-up (one request at a time), then each level.
/// An SLO search decides its levels as it goes, which a load shape written
/// beforehand cannot.
fn stages(plan: &Plan) -> Result<Vec<Value>, Said> {
    if let LoadMode::SloSearch { .. } = plan.load {
        return Err(said!(
            "an SLO search runs in the browser only: to run on Locust, choose the ladder mode with the levels to measure",
            "SLO 搜索只能在浏览器中运行：要在 Locust 上运行，请选择阶梯模式并给出要测的档位",
        ));
    }
    if plan.conversation.is_some() {
        return Err(said!(
            "conversations run in the browser only for now: to run on Locust, set turns per conversation to 1",
            "多轮对话目前只能在浏览器中运行：要在 Locust 上运行，请把每段对话的轮数设为 1",
        ));
    }
    if !plan.targets.is_empty() {
        return Err(said!(
            "an A/B plan runs in the browser only: to run on Locust, export each target's plan on its own",
            "A/B 计划只能在浏览器中运行：要在 Locust 上运行，请分别导出每个目标的计划",
        ));
    }
    let mut stages = Vec::new();
    let mut stage = |mut value: Value| {
        value["stage"] = stages.len().into();
        stages.push(value);
    };
    let first = match &plan.load {
        LoadMode::Ladder { levels, .. } => levels.first().copied().unwrap_or(1),
        LoadMode::Duration { concurrency, .. } => *concurrency,
        LoadMode::Arrivals { .. } | LoadMode::SloSearch { .. } => 0,
    };
    if plan.warmup_requests > 0 {
        // The engine's warm-ups: one after another, labelled with the first level.
        stage(
            json!({"concurrency": first.max(1), "warmup": true, "requests": plan.warmup_requests, "users": 1}),
        );
    }
    match &plan.load {
        LoadMode::Ladder {
            levels,
            requests_per_level,
        } => {
            // A repeated ladder: every level, then all again, each pass said.
            for repetition in 0..plan.repeat.max(1) {
                for &c in levels {
                    stage(
                        json!({"concurrency": c, "warmup": false, "requests": requests_per_level, "repetition": repetition}),
                    );
                }
            }
        }
        LoadMode::Duration {
            concurrency,
            seconds,
        } => stage(json!({"concurrency": concurrency, "warmup": false, "seconds": seconds})),
        LoadMode::Arrivals {
            rate_rps,
            poisson,
            n_requests,
            seed,
        } => stage(json!({
            "concurrency": 0,
            "warmup": false,
            "arrivals": {"rate_rps": rate_rps, "poisson": poisson, "n_requests": n_requests, "seed": seed},
        })),
        LoadMode::SloSearch { .. } => unreachable!("refused above"),
    }
    Ok(stages)
}

/// The plan in one line, for the file's header.
fn summary(plan: &Plan) -> String {
    let load = match &plan.load {
        LoadMode::Ladder {
            levels,
            requests_per_level,
        } => {
            let levels: Vec<String> = levels.iter().map(u32::to_string).collect();
            format!(
                "concurrency {} × {requests_per_level} requests",
                levels.join(", ")
            )
        }
        LoadMode::Duration {
            concurrency,
            seconds,
        } => format!("concurrency {concurrency} for {seconds} s"),
        LoadMode::Arrivals {
            rate_rps,
            poisson,
            n_requests,
            ..
        } => format!(
            "{n_requests} requests arriving at {rate_rps}/s ({})",
            if *poisson { "Poisson" } else { "evenly" }
        ),
        LoadMode::SloSearch { .. } => String::new(),
    };
    let warmup = match plan.warmup_requests {
        0 => String::new(),
        n => format!(" after {n} warm-up"),
    };
    format!(
        "{load}{warmup}; POST {} (model {}, max_tokens {}, timeout {} s)",
        plan.endpoint_url(),
        plan.model,
        plan.max_tokens,
        plan.timeout_s
    )
}

/// `text` safe inside the file's docstring: one line, no quote or backslash.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            c if c.is_control() => ' ',
            '"' => '\'',
            '\\' => '/',
            c => c,
        })
        .collect()
}

/// Whether `text` looks like Locust records written by an exported file.
pub fn is_locust_records(text: &str) -> bool {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .and_then(|l| serde_json::from_str::<Value>(l).ok())
        .is_some_and(|v| v.get("tokenmeter_locust").is_some())
}

/// One `request` line.
#[derive(Deserialize)]
struct Line {
    worker: String,
    anchor_wall_us: i64,
    concurrency: u32,
    warmup: bool,
    #[serde(default)]
    repetition: u32,
    wanted_us: u64,
    sent_us: u64,
    headers_us: Option<u64>,
    first_token_us: Option<u64>,
    first_answer_us: Option<u64>,
    last_token_us: Option<u64>,
    end_us: u64,
    status: Option<u16>,
    #[serde(default)]
    response_id: Option<String>,
    n_bytes: u64,
    n_token_events: u64,
    n_reasoning_events: u64,
    #[serde(default)]
    n_tool_call_events: u64,
    usage: Option<Usage>,
    finish_reason: Option<String>,
    saw_done: bool,
    token_times_us: Vec<u64>,
    n_comment_lines: u64,
    error: Option<RequestError>,
    #[serde(default)]
    server_timings: Option<ServerTimings>,
}

/// The `run` line.
#[derive(Deserialize)]
struct RunLine {
    plan: Plan,
    locust: String,
    n_workers: u32,
    started_wall_us: i64,
}

/// A `metrics` line: one poll of the server's metrics by the master, at
/// `at_wall_us` on its wall clock, with the exposition's lines of the metrics
/// tokenmeter reads (`text`), or why the poll failed (`unreadable`, the last).
#[derive(Deserialize)]
struct MetricsLine {
    at_wall_us: i64,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    unreadable: Option<Unreadable>,
}

/// The server's metrics from the master's `metrics` lines, on the run's time
/// line (`origin_wall_us` is its zero), in the order the master polled; `None`
/// when the plan did not read them, or the master did not (a file from before it
/// polled).
fn server_metrics_of(
    plan: &Plan,
    polls: Vec<MetricsLine>,
    origin_wall_us: i64,
) -> Option<ServerMetrics> {
    if polls.is_empty() {
        return None;
    }
    let mut metrics = ServerMetrics {
        url: plan.metrics_url()?,
        server: None,
        every_ms: server_metrics::POLL_EVERY_MS,
        unreadable: None,
        samples: Vec::new(),
        skipped_at_us: Vec::new(),
    };
    for poll in polls {
        let at_us = poll.at_wall_us.saturating_sub(origin_wall_us).max(0) as u64;
        let read = match (poll.unreadable, poll.text) {
            (Some(why), _) => Err(why),
            (None, Some(text)) => server_metrics::parse(&text),
            (None, None) => Err(Unreadable::NoResponse),
        };
        match read {
            Ok((server, sample)) => {
                metrics.server = Some(server);
                metrics.samples.push(ServerSample { at_us, ..sample });
            }
            Err(why) => {
                metrics.unreadable = Some(why);
                break;
            }
        }
    }
    Some(metrics)
}

/// The run document of Locust records (see the module docs), `Err` with what is
/// wrong (and on which line) when they are not whole.
// Long: Locust's lines read one by one, each kind's checks in place.
pub fn import(text: &str) -> Result<RunDocument, Said> {
    let mut run: Option<RunLine> = None;
    let mut lines: Vec<(usize, Line)> = Vec::new();
    let mut stages_done: Vec<u64> = Vec::new();
    let mut polls: Vec<MetricsLine> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let number = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(raw).map_err(|err| {
            said!(
                "line {number} is not JSON: {err}",
                "第 {number} 行不是 JSON：{err}"
            )
        })?;
        match value.get("tokenmeter_locust").and_then(Value::as_u64) {
            Some(FORMAT) => {}
            Some(other) => {
                return Err(said!(
                    "line {number} is in record format {other}, which this tokenmeter does not read (it reads {FORMAT}); export the locustfile again from this version",
                    "第 {number} 行的记录格式为 {other}，本版本 tokenmeter 不能读取（它读取格式 {FORMAT}）；请用本版本重新导出 locustfile",
                ))
            }
            None => {
                return Err(said!(
                    "line {number} is not a tokenmeter Locust record (no \"tokenmeter_locust\" field)",
                    "第 {number} 行不是 tokenmeter 的 Locust 记录（没有 \"tokenmeter_locust\" 字段）",
                ))
            }
        }
        let damaged = |err: serde_json::Error| {
            said!(
                "line {number} is damaged: {err}",
                "第 {number} 行已损坏：{err}"
            )
        };
        match value.get("kind").and_then(Value::as_str) {
            Some("run") => {
                let line: RunLine = serde_json::from_str(raw).map_err(damaged)?;
                match &run {
                    Some(first) if first.started_wall_us != line.started_wall_us => {
                        return Err(said!(
                            "these records come from more than one Locust run: import one run's file at a time",
                            "这些记录来自不止一次 Locust 运行：请每次导入一次运行的文件",
                        ))
                    }
                    Some(_) => {}
                    None => run = Some(line),
                }
            }
            Some("stage") => {
                if let Some(stage) = value.get("stage").and_then(Value::as_u64) {
                    stages_done.push(stage);
                }
            }
            Some("metrics") => polls.push(serde_json::from_str(raw).map_err(damaged)?),
            Some("request") => {
                let line: Line = serde_json::from_str(raw).map_err(damaged)?;
                if line.token_times_us.len() as u64 != line.n_token_events {
                    let (n_times, n_events) = (line.token_times_us.len(), line.n_token_events);
                    return Err(said!(
                        "line {number} is damaged: {n_times} token times for {n_events} token events",
                        "第 {number} 行已损坏：{n_events} 个 token 事件却有 {n_times} 个 token 时间",
                    ));
                }
                lines.push((number, line));
            }
            _ => {
                return Err(said!(
                    "line {number} has no known \"kind\" (run, stage, request or metrics)",
                    "第 {number} 行没有已知的 \"kind\"（run、stage、request 或 metrics）",
                ))
            }
        }
    }
    let run = run.ok_or_else(|| {
        said!(
            "these records have no \"run\" line: import the file the Locust master wrote (TOKENMETER_OUT), which starts with it",
            "这些记录没有 \"run\" 行：请导入 Locust master 写出的文件（TOKENMETER_OUT），它以这一行开头",
        )
    })?;
    if lines.is_empty() {
        return Err(said!(
            "these Locust records hold no request",
            "这些 Locust 记录中没有请求"
        ));
    }
    // One time line: the run's start on the master's wall clock is zero; each
    // worker's monotonic times move by where its own zero was on its wall clock.
    let origin = run.started_wall_us;
    fn key((number, l): &(usize, Line)) -> (i64, &str, usize) {
        (
            l.anchor_wall_us.saturating_add(l.sent_us as i64),
            &l.worker,
            *number,
        )
    }
    let order = crate::stats::order_with(lines.len(), &|a, b| key(&lines[a]).cmp(&key(&lines[b])));
    let lines = crate::stats::reorder(lines, &order);
    fn host(worker: &str) -> &str {
        worker.rsplit_once(':').map_or(worker, |(host, _)| host)
    }
    let mut hosts: Vec<String> = Vec::new();
    let mut workers: Vec<&str> = Vec::new();
    for (_, l) in &lines {
        if !workers.contains(&l.worker.as_str()) {
            workers.push(&l.worker);
        }
        if !hosts.iter().any(|h| h == host(&l.worker)) {
            hosts.push(host(&l.worker).to_owned());
        }
    }
    let by_name = crate::stats::order_with(hosts.len(), &|a, b| hosts[a].cmp(&hosts[b]));
    let hosts = crate::stats::reorder(hosts, &by_name);
    let n_workers = run.n_workers.max(workers.len() as u32);
    let records: Vec<RequestRecord> = lines
        .iter()
        .enumerate()
        .map(|(id, (_, l))| record(id as u64, l, origin))
        .collect();
    let n_stages = stages(&run.plan).map_or(0, |s| s.len()) as u64;
    let status = if (0..n_stages).all(|s| stages_done.contains(&s)) {
        RunStatus::Done
    } else {
        RunStatus::Cancelled
    };
    let environment = Environment {
        source: Some("locust".into()),
        server_metrics: server_metrics_of(&run.plan, polls, origin),
        conditions: vec![RunCondition::Locust {
            locust_version: run.locust.clone(),
            n_workers,
            hosts,
        }],
        ..Environment::default()
    };
    Ok(RunDocument::build(
        format!("locust-{origin}"),
        iso8601_utc(origin),
        status,
        run.plan,
        environment,
        records,
    ))
}

/// A `request` line as a record on the run's time line.
fn record(id: u64, line: &Line, origin_wall_us: i64) -> RequestRecord {
    let shift = line.anchor_wall_us.saturating_sub(origin_wall_us);
    let at = |t: u64| (t as i64).saturating_add(shift).max(0) as u64;
    let (n_out, token_source, token_mismatch) = token_count(line.usage, line.n_token_events);
    RequestRecord {
        id,
        concurrency: line.concurrency,
        warmup: line.warmup,
        repetition: line.repetition,
        target: 0,
        wanted_us: at(line.wanted_us),
        sent_us: at(line.sent_us),
        headers_us: line.headers_us.map(at),
        first_token_us: line.first_token_us.map(at),
        first_answer_us: line.first_answer_us.map(at),
        last_token_us: line.last_token_us.map(at),
        end_us: at(line.end_us),
        status: line.status,
        response_id: line.response_id.clone(),
        n_bytes: line.n_bytes,
        n_token_events: line.n_token_events,
        n_reasoning_events: line.n_reasoning_events,
        n_tool_call_events: line.n_tool_call_events,
        usage: line.usage,
        n_out,
        token_source,
        token_mismatch,
        finish_reason: line.finish_reason.clone(),
        saw_done: line.saw_done,
        token_times_us: line.token_times_us.iter().map(|&t| at(t)).collect(),
        n_comment_lines: line.n_comment_lines,
        output_text: None,
        error: line.error.clone().map(|mut e| {
            // Details cut to the length the page's own records keep.
            e.redact(&[]);
            e
        }),
        browser: None,
        server_timings: line.server_timings,
        asked_tokens: None,
        turn: None,
    }
}

/// `us` since the Unix epoch as ISO 8601 UTC, to the second (the core has no
/// clock or calendar crate: days to a civil date by Hinnant's algorithm).
fn iso8601_utc(us: i64) -> String {
    let secs = us.div_euclid(1_000_000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests;
