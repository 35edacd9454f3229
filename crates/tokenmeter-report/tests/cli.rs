//! The command as CI runs it: a run document in, a table out, an exit code.

use std::{path::PathBuf, process::Command};

use tokenmeter_core::{
    schema::{Environment, Plan, RequestRecord, RunDocument, RunStatus},
    RecordBuilder, RecordOptions, RequestStart, StreamEnd,
};

/// A request at `concurrency` with its first token after `ttft_ms`, then 9 more
/// every 20 ms.
fn record(id: u64, concurrency: u32, ttft_ms: u64) -> RequestRecord {
    let sent = id * 10_000_000;
    let mut b = RecordBuilder::new(
        RequestStart {
            id,
            concurrency,
            warmup: false,
            wanted_us: sent,
            sent_us: sent,
        },
        RecordOptions::default(),
    );
    b.on_headers(200, Some("text/event-stream"), None, sent + 1_000);
    let mut t = sent + ttft_ms * 1_000;
    for _ in 0..10 {
        b.on_bytes(
            b"data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n",
            t,
        );
        t += 20_000;
    }
    b.on_bytes(b"data: [DONE]\n\n", t);
    b.finish(StreamEnd::Complete, t)
}

/// A two-level run written to a temporary file: TTFT 100 ms at 1, 300 ms at 2.
fn run_file(name: &str) -> PathBuf {
    let records = (0..4)
        .map(|i| record(i, 1, 100))
        .chain((4..8).map(|i| record(i, 2, 300)))
        .collect();
    let doc = RunDocument::build(
        "run-cli".into(),
        "2026-12-03T10:00:00Z".into(),
        RunStatus::Done,
        Plan::default_for_simulator("http://127.0.0.1:8000/v1"),
        Environment::default(),
        records,
    );
    let path = std::env::temp_dir().join(format!(
        "tokenmeter-report-{}-{name}.json",
        std::process::id()
    ));
    std::fs::write(&path, doc.to_json()).unwrap();
    path
}

fn report(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tokenmeter-report"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn prints_the_table_and_passes_within_the_slo() {
    let path = run_file("pass");
    let html = path.with_extension("html");
    let (code, out, err) = report(&[path.to_str().unwrap(), "--html", html.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("concurrency"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.trim_start().starts_with("1 ") && l.contains("100.0 ms")),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.trim_start().starts_with("2 ") && l.contains("300.0 ms")),
        "{out}"
    );
    let written = std::fs::read_to_string(&html).unwrap();
    assert!(written.contains(r#"data-testid="chart-latency""#));
}

#[test]
fn exits_one_where_the_slo_breaks_and_says_where() {
    let path = run_file("fail");
    let (code, _, err) = report(&[path.to_str().unwrap(), "--slo-ttft-p95-ms", "200"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("SLO broken at concurrency 2: p95 TTFT 300 ms > 200 ms"),
        "{err}"
    );
    // Checked at the level CI will run at, it holds.
    let (code, _, _) = report(&[
        path.to_str().unwrap(),
        "--slo-ttft-p95-ms",
        "200",
        "--at",
        "1",
    ]);
    assert_eq!(code, 0);
    let (code, _, err) = report(&[path.to_str().unwrap(), "--at", "64"]);
    assert_eq!(code, 2);
    assert!(err.contains("no level at concurrency 64"), "{err}");
}

#[test]
fn reads_a_vllm_result_and_says_what_is_wrong_with_bad_input() {
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tokenmeter-core/tests/fixtures/vllm-detailed.json"
    );
    let (code, out, err) = report(&[fixture, "--lang", "zh"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("并发"), "{out}");
    assert!(out.contains("vLLM bench serve"), "{out}");
    let (code, _, err) = report(&["/nonexistent/run.json"]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot read /nonexistent/run.json"), "{err}");
    // A file that is no run: said in the report's language.
    let junk = std::env::temp_dir().join(format!("tokenmeter-junk-{}.json", std::process::id()));
    std::fs::write(&junk, r#"{"hello": 1}"#).unwrap();
    let (code, _, err) = report(&[junk.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        err.contains("neither a tokenmeter run document nor a vLLM bench serve result"),
        "{err}"
    );
    let (code, _, err) = report(&[junk.to_str().unwrap(), "--lang", "zh"]);
    assert_eq!(code, 2);
    assert!(err.contains("这既不是 tokenmeter 的运行文档"), "{err}");
    let _ = std::fs::remove_file(junk);
}

#[test]
fn a_config_json_becomes_a_locustfile_without_its_key() {
    let dir = std::env::temp_dir().join(format!("tokenmeter-report-{}-locust", std::process::id()));
    let config = dir.with_extension("config.json");
    std::fs::write(
        &config,
        r#"{"base_url": "http://127.0.0.1:8000/v1", "api_key": "sk-article-key-1234", "model": "qwen",
            "prompt": "你好", "max_tokens": 300, "temperature": 0.7,
            "concurrency_levels": [1, 2, 4], "requests_per_level": 10, "timeout": 60}"#,
    )
    .unwrap();
    let (code, stdout, stderr) = report(&[
        config.to_str().unwrap(),
        "--export-locust",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("tokenmeter_locustfile.py"));
    assert!(stderr.contains("the key in this file is not written to the locustfile"));
    let file = std::fs::read_to_string(dir.join("tokenmeter_locustfile.py")).unwrap();
    assert!(!file.contains("sk-article-key-1234"));
    assert!(file.contains("你好"));
    assert_eq!(
        std::fs::read_to_string(dir.join("requirements.txt")).unwrap(),
        tokenmeter_core::locust::requirements()
    );
    // A plan that cannot run is refused, with what to change.
    std::fs::write(&config, r#"{"base_url": "", "model": "m", "prompt": "p", "max_tokens": 1, "temperature": 0, "concurrency_levels": [1], "requests_per_level": 1, "timeout": 1}"#).unwrap();
    let (code, _, stderr) = report(&[
        config.to_str().unwrap(),
        "--export-locust",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("tokenmeter-report:"), "{stderr}");
}

#[test]
fn a_plan_of_a_file_s_prompts_exports_them_beside_the_locustfile() {
    let dir =
        std::env::temp_dir().join(format!("tokenmeter-report-{}-prompts", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let prompts_path = dir.join("mine.txt");
    std::fs::write(&prompts_path, "第一个提示词\nsecond prompt\n").unwrap();
    let prompts =
        tokenmeter_core::read_prompts("mine.txt", &std::fs::read(&prompts_path).unwrap()).unwrap();
    let mut plan = Plan::default_for_simulator("http://127.0.0.1:8000/v1");
    plan.prompt_mode = tokenmeter_core::schema::PromptMode::File;
    plan.prompt_file = Some(prompts.file.clone());
    let plan_path = dir.join("plan.json");
    std::fs::write(&plan_path, serde_json::to_string(&plan).unwrap()).unwrap();
    let out = dir.join("out");
    let args = [
        plan_path.to_str().unwrap(),
        "--export-locust",
        out.to_str().unwrap(),
    ];
    // Without the file, it says which one the plan needs.
    let (code, _, stderr) = report(&args);
    assert_eq!(code, 2);
    assert!(stderr.contains("mine.txt: 2 prompts"), "{stderr}");
    let mut with = args.to_vec();
    with.extend(["--prompts", prompts_path.to_str().unwrap()]);
    let (code, stdout, stderr) = report(&with);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("tokenmeter_prompts.json"), "{stdout}");
    let written = std::fs::read(out.join("tokenmeter_prompts.json")).unwrap();
    let file = std::fs::read_to_string(out.join("tokenmeter_locustfile.py")).unwrap();
    assert!(file.contains(&tokenmeter_core::sha256_hex(&written)));
    assert!(String::from_utf8(written).unwrap().contains("第一个提示词"));
    // Another file than the plan's is refused.
    std::fs::write(&prompts_path, "other\n").unwrap();
    let (code, _, stderr) = report(&with);
    assert_eq!(code, 2, "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_ab_run_prints_every_target_and_holds_each_to_the_slo() {
    let mut plan = Plan::default_for_simulator("http://127.0.0.1:8000/v1");
    plan.targets = vec![tokenmeter_core::schema::TargetSpec {
        base_url: "http://127.0.0.1:8001/v1".into(),
        model: "slow".into(),
        extra_body: Default::default(),
    }];
    // A answers in 100 ms, B in 900 ms.
    let records = (0..4)
        .map(|i| record(i, 1, 100))
        .chain((4..8).map(|i| {
            let mut r = record(i, 1, 900);
            r.target = 1;
            r
        }))
        .collect();
    let doc = RunDocument::build_ab(
        "run-ab".into(),
        "2026-12-03T10:00:00Z".into(),
        RunStatus::Done,
        plan,
        Environment::default(),
        records,
    );
    let path =
        std::env::temp_dir().join(format!("tokenmeter-report-{}-ab.json", std::process::id()));
    std::fs::write(&path, doc.to_json()).unwrap();
    let (code, stdout, stderr) = report(&[path.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("\ntarget B · slow\n"), "{stdout}");
    assert!(stdout.contains("\nA/B:\n"), "{stdout}");
    // B breaks a 500 ms TTFT limit that A meets: the run fails the gate.
    let (code, _, stderr) = report(&[path.to_str().unwrap(), "--slo-ttft-p95-ms", "500"]);
    assert_eq!(code, 1, "{stderr}");
}
