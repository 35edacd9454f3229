use super::*;
use crate::{error::ErrorKind, plan::PromptSpec};

fn plan() -> Plan {
    let mut plan = Plan::default_for_simulator("http://127.0.0.1:8080/v1");
    plan.prompt = PromptSpec::Text("请用300字介绍\"prefill\"\n和 decode \\ 两个阶段".into());
    plan.load = LoadMode::Ladder {
        levels: vec![1, 4],
        requests_per_level: 8,
    };
    plan.warmup_requests = 2;
    plan.extra_headers = vec![("x-team".into(), "评测".into())];
    plan
}

/// The setup the file embeds, read back as Python would: the literal is a JSON
/// string whose text is the JSON.
fn embedded_setup(file: &str) -> Value {
    let line = file
        .lines()
        .find(|l| l.starts_with("SETUP = json.loads("))
        .expect("the SETUP line");
    let literal = line
        .strip_prefix("SETUP = json.loads(")
        .and_then(|l| l.strip_suffix(')'))
        .unwrap();
    let text: String = serde_json::from_str(literal).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn the_file_carries_the_plan_exactly_and_no_key() {
    let plan = plan();
    let file = locustfile(&plan).unwrap();
    let setup = embedded_setup(&file);
    assert_eq!(setup["url"], "http://127.0.0.1:8080/v1/chat/completions");
    assert_eq!(setup["body"], request_body(&plan.body_spec()));
    assert_eq!(
        setup["body"]["messages"][0]["content"], "请用300字介绍\"prefill\"\n和 decode \\ 两个阶段",
        "CJK, quotes, a newline and a backslash arrive exactly"
    );
    assert_eq!(setup["timeout_s"], plan.timeout_s);
    assert_eq!(setup["auth"], "bearer");
    let headers = setup["headers"].as_array().unwrap();
    assert!(headers.iter().any(|h| h == &json!(["x-team", "评测"])));
    assert!(
        !headers
            .iter()
            .any(|h| h[0] == "authorization" || h[0] == "api-key"),
        "the key is added from {KEY_ENV} when the file runs"
    );
    assert!(file.contains("os.environ.get(KEY_ENV"));
    assert!(file.contains(&format!("KEY_ENV = \"{KEY_ENV}\"")));
    let back: Plan = serde_json::from_value(setup["plan"].clone()).unwrap();
    assert_eq!(back, plan);
    // The warm-up, one at a time, then each level with its requests.
    assert_eq!(
        setup["stages"],
        json!([
            {"stage": 0, "concurrency": 1, "warmup": true, "requests": 2, "users": 1},
            {"stage": 1, "concurrency": 1, "warmup": false, "requests": 8, "repetition": 0},
            {"stage": 2, "concurrency": 4, "warmup": false, "requests": 8, "repetition": 0},
        ])
    );
    assert_eq!(requirements(), "locust==2.47.0\n");
    assert!(!file.contains("{{"), "every placeholder is filled");
}

#[test]
fn an_slo_search_is_refused_with_what_to_do() {
    let mut plan = plan();
    plan.load = LoadMode::SloSearch {
        max_concurrency: 64,
        requests_per_probe: 20,
    };
    assert!(locustfile(&plan)
        .unwrap_err()
        .contains("choose the ladder mode"));
}

/// A file of prompts: a ShareGPT conversation with a system turn, a chat, a
/// text in Chinese.
fn prompt_file() -> Prompts {
    crate::prompts::read(
        "mine.json",
        r#"[{"conversations": [{"from": "system", "value": "简短回答"}, {"from": "human", "value": "什么是 prefill？"}]},
            {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}, {"role": "user", "content": "what is TPOT?"}]},
            {"prompt": "第三个 \"prompt\" \\ 带引号"}]"#
            .as_bytes(),
    )
    .unwrap()
}

fn file_plan(prompts: &Prompts) -> Plan {
    let mut plan = plan();
    plan.prompt_mode = crate::plan::PromptMode::File;
    plan.prompt_file = Some(prompts.file.clone());
    plan
}

#[test]
fn a_file_s_prompts_go_beside_the_locustfile_held_by_their_hash() {
    let prompts = prompt_file();
    let mine = file_plan(&prompts);
    // Without the prompts, or with another file's, the export says what to do.
    let why = export(TEMPLATE, &mine, None).unwrap_err();
    assert!(why.en.contains("choose that file"), "{why}");
    let other = crate::prompts::read("other.txt", b"x\n").unwrap();
    assert!(export(TEMPLATE, &mine, Some(&other)).is_err());
    let mut unnamed = mine.clone();
    unnamed.prompt_file = None;
    assert!(export(TEMPLATE, &unnamed, Some(&prompts)).is_err());

    let made = export(TEMPLATE, &mine, Some(&prompts)).unwrap();
    let text = made.prompts.expect("the prompts file");
    let setup = embedded_setup(&made.locustfile);
    let said = &setup["prompts"];
    assert_eq!(said["file"], PROMPTS_FILE);
    assert_eq!(said["sha256"], crate::prompts::sha256_hex(text.as_bytes()));
    assert_eq!(said["count"], 3);
    assert_eq!(said["source"]["sha256"], prompts.file.sha256.as_str());
    // The locustfile holds no prompt; the prompts file holds each as its body.
    assert!(!made.locustfile.contains("prefill？"));
    let file: Value = serde_json::from_str(&text).unwrap();
    let bodies = file["bodies"].as_array().unwrap();
    assert_eq!(bodies.len(), 3);
    assert_eq!(bodies[0]["messages"][0]["role"], "system");
    assert_eq!(bodies[1]["messages"].as_array().unwrap().len(), 3);
    // A plan of other prompts has none.
    let plain = export(TEMPLATE, &plan(), None).unwrap();
    assert_eq!(plain.prompts, None);
    assert_eq!(embedded_setup(&plain.locustfile)["prompts"], Value::Null);
}

#[test]
fn a_repeated_ladder_runs_each_pass_in_turn() {
    let mut plan = plan();
    plan.warmup_requests = 0;
    plan.repeat = 2;
    let stages = embedded_setup(&locustfile(&plan).unwrap())["stages"].clone();
    let order: Vec<(u64, u64)> = stages
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["concurrency"].as_u64().unwrap(),
                s["repetition"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(order, vec![(1, 0), (4, 0), (1, 1), (4, 1)]);
    // The pass comes back with each record.
    let mut lines = two_workers();
    let mut second: Value = serde_json::from_str(&lines[4]).unwrap();
    second["repetition"] = 1.into();
    lines[4] = second.to_string();
    let document = import(&lines.join("\n")).unwrap();
    assert_eq!(
        document
            .records
            .iter()
            .filter(|r| r.repetition == 1)
            .count(),
        1
    );
}

#[test]
fn the_other_load_modes_become_stages() {
    let mut plan = plan();
    plan.warmup_requests = 0;
    plan.load = LoadMode::Duration {
        concurrency: 6,
        seconds: 30.0,
    };
    assert_eq!(
        embedded_setup(&locustfile(&plan).unwrap())["stages"],
        json!([{"stage": 0, "concurrency": 6, "warmup": false, "seconds": 30.0}])
    );
    plan.load = LoadMode::Arrivals {
        rate_rps: 5.0,
        poisson: true,
        n_requests: 100,
        seed: 7,
    };
    plan.auth = AuthStyle::ApiKeyHeader;
    let setup = embedded_setup(&locustfile(&plan).unwrap());
    assert_eq!(
        setup["stages"][0]["arrivals"],
        json!({"rate_rps": 5.0, "poisson": true, "n_requests": 100, "seed": 7})
    );
    assert_eq!(setup["auth"], "api_key_header");
}

#[test]
fn an_anthropic_plan_sends_its_headers_and_its_key_as_x_api_key() {
    let mut plan = plan();
    plan.endpoint = crate::stream::EndpointKind::Anthropic;
    plan.auth = AuthStyle::XApiKey;
    let file = locustfile(&plan).unwrap();
    let setup = embedded_setup(&file);
    assert_eq!(setup["auth"], "x_api_key");
    assert_eq!(setup["url"], "http://127.0.0.1:8080/v1/messages");
    assert_eq!(
        setup["plan"]["endpoint"], "anthropic",
        "the file reads its streams as that kind"
    );
    let headers = setup["headers"].as_array().unwrap();
    assert!(headers.contains(&json!(["anthropic-version", "2023-06-01"])));
    assert!(headers.contains(&json!([
        "anthropic-dangerous-direct-browser-access",
        "true"
    ])));
    assert_eq!(setup["body"]["max_tokens"], plan.max_tokens);
    assert!(setup["body"].get("stream_options").is_none());
}

#[test]
fn what_a_user_typed_cannot_break_out_of_the_header() {
    let mut plan = plan();
    plan.model = "m\"\"\"\nimport os; os.system('x') \\".into();
    let file = locustfile(&plan).unwrap();
    let docstring_end = file
        .find("\"\"\"\n\nimport hashlib")
        .expect("the docstring ends once");
    let header = &file[..docstring_end];
    assert_eq!(
        header.matches("\"\"\"").count(),
        1,
        "only the opening quotes"
    );
    assert!(!header.contains("\nimport os"));
    assert_eq!(
        embedded_setup(&file)["body"]["model"],
        "m\"\"\"\nimport os; os.system('x') \\"
    );
}

fn run_line(started: i64) -> String {
    json!({
        "tokenmeter_locust": 1, "kind": "run", "plan": plan(), "generated_by": "tokenmeter",
        "locust": "2.47.0", "python": "3.11.7", "master": "m", "n_workers": 2,
        "started_wall_us": started,
    })
    .to_string()
}

fn request_line(worker: &str, anchor: i64, stage: u32, concurrency: u32, sent: u64) -> String {
    json!({
        "tokenmeter_locust": 1, "kind": "request", "worker": worker, "anchor_wall_us": anchor,
        "stage": stage, "concurrency": concurrency, "warmup": stage == 0,
        "wanted_us": sent, "sent_us": sent, "headers_us": sent + 1_000,
        "first_token_us": sent + 200_000, "first_answer_us": sent + 200_000,
        "last_token_us": sent + 240_000, "end_us": sent + 240_500, "status": 200,
        "response_id": format!("chatcmpl-{sent}"), "n_bytes": 900, "n_token_events": 3,
        "n_reasoning_events": 0,
        "usage": {"prompt_tokens": 20, "completion_tokens": 3, "reasoning_tokens": null},
        "finish_reason": "stop", "saw_done": true,
        "token_times_us": [sent + 200_000, sent + 220_000, sent + 240_000],
        "n_comment_lines": 0, "error": null,
    })
    .to_string()
}

fn stage_line(stage: u32) -> String {
    json!({"tokenmeter_locust": 1, "kind": "stage", "stage": stage}).to_string()
}

/// A run on two workers whose monotonic clocks started 5 s apart on the wall clock.
fn two_workers() -> Vec<String> {
    let start = 1_764_720_000_000_000;
    let (a, b) = (start - 10_000_000, start - 5_000_000);
    let mut lines = vec![run_line(start)];
    lines.push(request_line("h1:10", a, 0, 1, 10_100_000));
    lines.push(request_line("h1:10", a, 0, 1, 10_400_000));
    lines.push(stage_line(0));
    for i in 0..8 {
        lines.push(request_line("h1:10", a, 1, 1, 11_000_000 + i * 300_000));
    }
    lines.push(stage_line(1));
    for i in 0..4 {
        lines.push(request_line("h1:10", a, 2, 4, 14_000_000 + i * 300_000));
        lines.push(request_line("h2:11", b, 2, 4, 9_000_000 + i * 300_000));
    }
    lines.push(stage_line(2));
    lines
}

#[test]
fn records_from_two_workers_share_one_time_line() {
    let document = import(&two_workers().join("\n")).unwrap();
    assert_eq!(document.status, RunStatus::Done);
    assert_eq!(document.started_at, "2025-12-03T00:00:00Z");
    assert_eq!(document.environment.source.as_deref(), Some("locust"));
    assert_eq!(
        document.environment.conditions,
        vec![RunCondition::Locust {
            locust_version: "2.47.0".into(),
            n_workers: 2,
            hosts: vec!["h1".into(), "h2".into()],
        }]
    );
    assert_eq!(document.records.len(), 18);
    assert_eq!(document.records.iter().filter(|r| r.warmup).count(), 2);
    // Worker h1's zero was 10 s before the run's start: its 10.1 s is the run's 0.1 s.
    assert_eq!(document.records[0].sent_us, 100_000);
    // The two workers' requests of the last level interleave on the run's clock:
    // h2's 9.0 s and h1's 14.0 s are both the run's 4.0 s.
    let level_4: Vec<&RequestRecord> = document
        .records
        .iter()
        .filter(|r| r.concurrency == 4)
        .collect();
    assert_eq!(level_4.len(), 8);
    assert_eq!(level_4[0].sent_us, 4_000_000);
    assert_eq!(level_4[1].sent_us, 4_000_000);
    assert!(document
        .records
        .windows(2)
        .all(|w| w[0].sent_us <= w[1].sent_us));
    assert!(document
        .records
        .iter()
        .enumerate()
        .all(|(i, r)| r.id == i as u64));
    let r = &document.records[5];
    assert_eq!(r.ttft_us(), Some(200_000));
    assert_eq!(r.n_out, Some(3));
    assert_eq!(r.token_mismatch, Some(0));
    assert_eq!(r.token_times_us[0], r.first_token_us.unwrap());
    // Levels as the page shows them, and the verdict over them.
    let levels: Vec<Option<u32>> = document.levels.iter().map(|l| l.concurrency).collect();
    assert_eq!(levels, vec![Some(1), Some(4)]);
    assert_eq!(document.levels[0].n_ok, 8);
    assert_eq!(document.levels[1].n_ok, 8);
    assert_eq!(document.plan, plan());
    // The document reads back as any other.
    let json = document.to_json();
    assert_eq!(RunDocument::from_json(&json).unwrap().records.len(), 18);
}

#[test]
fn a_run_stopped_early_is_kept_as_cancelled() {
    let mut lines = two_workers();
    lines.retain(|l| l != &stage_line(2));
    assert_eq!(
        import(&lines.join("\n")).unwrap().status,
        RunStatus::Cancelled
    );
}

#[test]
fn failures_keep_their_kind_and_their_detail_is_bounded() {
    let mut lines = two_workers();
    let mut failed: Value = serde_json::from_str(&lines[4]).unwrap();
    failed["status"] = 429.into();
    failed["n_token_events"] = 0.into();
    failed["token_times_us"] = json!([]);
    failed["first_token_us"] = Value::Null;
    failed["error"] =
        json!({"kind": "rate_limited", "detail": "x".repeat(5_000), "retry_after_s": 2.0});
    lines[4] = failed.to_string();
    let document = import(&lines.join("\n")).unwrap();
    let error = document
        .records
        .iter()
        .find_map(|r| r.error.as_ref())
        .unwrap();
    assert_eq!(error.kind, ErrorKind::RateLimited);
    assert_eq!(error.retry_after_s, Some(2.0));
    assert!(error.detail.len() <= crate::error::DETAIL_BYTES + 4);
}

#[test]
fn what_is_not_whole_is_refused_with_the_line() {
    let lines = two_workers();
    let refused = |text: &str| import(text).unwrap_err();
    assert!(refused(&lines[1..].join("\n")).contains("no \"run\" line"));
    assert!(refused(&[lines[0].clone(), "{not json".into()].join("\n")).contains("line 2"));
    assert!(refused(&[lines[0].clone(), "{\"a\":1}".into()].join("\n"))
        .contains("not a tokenmeter Locust record"));
    let future = lines[1].replace("\"tokenmeter_locust\":1", "\"tokenmeter_locust\":2");
    assert!(refused(&[lines[0].clone(), future].join("\n")).contains("format 2"));
    let mut damaged: Value = serde_json::from_str(&lines[1]).unwrap();
    damaged["n_token_events"] = 7.into();
    assert!(refused(&[lines[0].clone(), damaged.to_string()].join("\n"))
        .contains("line 2 is damaged: 3 token times for 7 token events"));
    let mut unknown: Value = serde_json::from_str(&lines[1]).unwrap();
    unknown["error"] = json!({"kind": "gremlins", "detail": ""});
    assert!(
        refused(&[lines[0].clone(), unknown.to_string()].join("\n")).contains("line 2 is damaged")
    );
    let other_run = run_line(1);
    assert!(
        refused(&[lines[0].clone(), other_run, lines[1].clone()].join("\n"))
            .contains("more than one Locust run")
    );
    assert!(refused(&lines[0]).contains("no request"));
}

#[test]
fn locust_records_are_told_from_other_documents() {
    assert!(is_locust_records(&two_workers().join("\n")));
    assert!(is_locust_records(&format!("\n\n{}", two_workers()[0])));
    assert!(!is_locust_records("{\"schema\": 2}"));
    assert!(!is_locust_records("not json"));
}

#[test]
fn wall_clock_dates() {
    assert_eq!(iso8601_utc(0), "1970-01-01T00:00:00Z");
    assert_eq!(iso8601_utc(951_782_400_000_000), "2000-02-29T00:00:00Z");
    assert_eq!(iso8601_utc(1_764_720_000_500_000), "2025-12-03T00:00:00Z");
    assert_eq!(iso8601_utc(-1_000_000), "1969-12-31T23:59:59Z");
}

#[test]
fn the_pins_the_tests_install_hold_this_locust() {
    let pins = include_str!("../../../../e2e/locust/requirements.txt");
    assert!(pins
        .lines()
        .any(|l| l == format!("locust=={LOCUST_VERSION}")));
}

#[test]
fn a_page_served_instead_of_the_template_is_refused_with_what_to_do() {
    let index = "<!DOCTYPE html><html><body>tokenmeter</body></html>";
    let why = export(index, &plan(), None).unwrap_err();
    assert!(why.contains("locustfile.template.py"), "{why}");
    assert!(why.contains("dist/"), "{why}");
    assert_eq!(
        export(TEMPLATE, &plan(), None).map(|e| e.locustfile),
        locustfile(&plan())
    );
}

#[test]
fn a_template_from_another_build_is_refused() {
    let older = TEMPLATE.replacen("import", "import  ", 1);
    let why = export(&older, &plan(), None).unwrap_err();
    assert!(why.contains("from another build"), "{why}");
    assert!(export(TEMPLATE, &plan(), None).is_ok());
}

#[test]
fn the_file_makes_each_request_s_body_as_the_page_does() {
    let mut plan = plan();
    plan.seed = Some(77);
    let setup = embedded_setup(&locustfile(&plan).unwrap());
    let bodies = &setup["bodies"];
    assert_eq!(bodies["unique"], true);
    assert_eq!(bodies["seed"], 77);
    // What the file does: head + the header (its line break escaped) + tail.
    let page = Bodies::new(&plan, 77);
    for id in [0u64, 1, 41, 100_000] {
        let header = crate::plan::unique_header(77, id).replace('\n', "\\n");
        let made = format!(
            "{}{header}{}",
            bodies["head"].as_str().unwrap(),
            bodies["tail"].as_str().unwrap()
        );
        assert_eq!(made, page.body(id), "request {id}");
    }
    // A shared prefix in three groups: the group's prefix before the header.
    plan.prompt_mode = crate::plan::PromptMode::SharedPrefix;
    plan.prefix_tokens = 200;
    plan.prefix_groups = 3;
    let setup = embedded_setup(&locustfile(&plan).unwrap());
    let bodies = &setup["bodies"];
    let prefixes = bodies["prefixes"].as_array().unwrap();
    assert_eq!(prefixes.len(), 3);
    let page = Bodies::new(&plan, 77);
    for id in [0u64, 1, 2, 3, 41] {
        let header = crate::plan::unique_header(77, id).replace('\n', "\\n");
        let made = format!(
            "{}{}{header}{}",
            bodies["head"].as_str().unwrap(),
            prefixes[(id % 3) as usize].as_str().unwrap(),
            bodies["tail"].as_str().unwrap()
        );
        assert_eq!(made, page.body(id), "request {id}");
    }
    // The same prompt for all: no header, the one body.
    plan.prompt_mode = crate::plan::PromptMode::Same;
    let setup = embedded_setup(&locustfile(&plan).unwrap());
    assert_eq!(setup["bodies"]["unique"], false);
    assert_eq!(setup["body"], request_body(&plan.body_spec()));
}

/// A `metrics` line of the master's, `ms` after the run started.
fn metrics_line(ms: i64, fields: Value) -> String {
    let mut line = json!({
        "tokenmeter_locust": 1, "kind": "metrics",
        "at_wall_us": 1_764_720_000_000_000 + ms * 1_000,
    });
    for (k, v) in fields.as_object().unwrap() {
        line[k] = v.clone();
    }
    line.to_string()
}

#[test]
fn the_master_s_polls_of_the_server_s_metrics_are_read_as_the_page_reads_them() {
    let file = locustfile(&plan()).unwrap();
    let setup = embedded_setup(&file);
    assert_eq!(setup["metrics"]["url"], "http://127.0.0.1:8080/metrics");
    assert_eq!(setup["metrics"]["every_ms"], server_metrics::POLL_EVERY_MS);
    let names = setup["metrics"]["names"].as_array().unwrap();
    assert!(names.iter().any(|n| n == "vllm:num_requests_waiting"));
    assert_eq!(names.len(), server_metrics::names().count());
    let mut off = plan();
    off.poll_metrics = false;
    assert_eq!(
        embedded_setup(&locustfile(&off).unwrap())["metrics"],
        Value::Null
    );

    // Polls through the last level (4 s in), then one the server refused.
    let mut lines = two_workers();
    for (ms, running, waiting) in [(3_900, 1, 0), (4_100, 4, 2), (4_200, 4, 3)] {
        lines.push(metrics_line(
            ms,
            json!({"text": format!("vllm:num_requests_running{{engine=\"0\"}} {running}\nvllm:num_requests_waiting {waiting}")}),
        ));
    }
    lines.push(metrics_line(
        4_300,
        json!({"unreadable": {"why": "status", "status": 503}}),
    ));
    lines.push(metrics_line(
        4_400,
        json!({"text": "vllm:num_requests_waiting 9"}),
    ));
    let document = import(&lines.join("\n")).unwrap();
    let metrics = document.environment.server_metrics.as_ref().unwrap();
    assert_eq!(metrics.url, "http://127.0.0.1:8080/metrics");
    assert_eq!(metrics.server, Some(server_metrics::Server::Vllm));
    assert_eq!(
        metrics.samples.iter().map(|s| s.at_us).collect::<Vec<_>>(),
        [3_900_000, 4_100_000, 4_200_000]
    );
    assert_eq!(
        metrics.unreadable,
        Some(Unreadable::Status { status: 503 }),
        "the last"
    );
    let top = document.levels.last().unwrap().server.unwrap();
    assert_eq!((top.n_samples, top.waiting_max), (2, Some(3.0)));

    // A plan that reads none, and a file from before the master polled: none.
    assert_eq!(
        import(&two_workers().join("\n"))
            .unwrap()
            .environment
            .server_metrics,
        None
    );
    let mut quiet = lines.clone();
    let mut run: Value = serde_json::from_str(&quiet[0]).unwrap();
    run["plan"]["poll_metrics"] = false.into();
    quiet[0] = run.to_string();
    assert_eq!(
        import(&quiet.join("\n"))
            .unwrap()
            .environment
            .server_metrics,
        None
    );
}

/// Plans whose lengths are drawn per request, one of each shape: every endpoint
/// kind, both distributions, a generated prompt, a shared prefix, forcing.
fn varying_plans() -> Vec<Plan> {
    use crate::{
        plan::{Lengths, PromptMode},
        stream::EndpointKind,
    };
    let uniform = Lengths {
        min: 8,
        max: 64,
        mean: None,
        stdev: None,
    };
    let normal = Lengths {
        min: 100,
        max: 900,
        mean: Some(400.0),
        stdev: Some(150.0),
    };
    let mut plans = Vec::new();
    for (endpoint, mode, output, input, force) in [
        (
            EndpointKind::Chat,
            PromptMode::Unique,
            Some(uniform),
            None,
            false,
        ),
        (
            EndpointKind::Completions,
            PromptMode::Same,
            None,
            Some(normal),
            false,
        ),
        (
            EndpointKind::Responses,
            PromptMode::Unique,
            Some(normal),
            Some(uniform),
            false,
        ),
        (
            EndpointKind::Anthropic,
            PromptMode::SharedPrefix,
            Some(uniform),
            None,
            false,
        ),
        (
            EndpointKind::Chat,
            PromptMode::SharedPrefix,
            Some(normal),
            Some(normal),
            true,
        ),
    ] {
        let mut plan = plan();
        plan.seed = Some(1234);
        plan.endpoint = endpoint;
        plan.prompt_mode = mode;
        plan.prefix_tokens = 120;
        plan.prefix_groups = 2;
        plan.output_lengths = output;
        plan.input_lengths = input;
        if input.is_some() {
            plan.prompt = PromptSpec::Tokens(300);
        }
        plan.force_output_lengths = force;
        plans.push(plan);
    }
    plans
}

/// The cases of `fixtures/varying-bodies.json`: what the exported file is given
/// (its setup's bodies and body) and what the page sends for each request.
fn varying_cases() -> Value {
    let mut cases = Vec::new();
    for plan in varying_plans() {
        let setup = embedded_setup(&locustfile(&plan).unwrap());
        let bodies = Bodies::new(&plan, 1234);
        let requests: Vec<Value> = [0u64, 1, 7, 1000]
            .into_iter()
            .map(|id| {
                let expect: Value = serde_json::from_str(&bodies.body(id)).unwrap();
                json!({"id": id, "asked": bodies.asked_tokens(id), "expect": expect})
            })
            .collect();
        cases.push(json!({
            "bodies": setup["bodies"],
            "body": setup["body"],
            "seed": 1234,
            "requests": requests,
        }));
    }
    json!({
        "about": "Bodies of requests whose lengths are drawn per request, and of requests sending a file's prompts (tokenmeter_core::Bodies): the core writes them (src/locust/tests.rs holds this file to them; TOKENMETER_WRITE_FIXTURES=1 rewrites it) and the exported locustfile (e2e/locust/parity.py) must make each from its setup (and, for a file's, from the prompts file it checks by its SHA-256).",
        "cases": cases,
        "files": file_cases(),
    })
}

/// The fixture as what it says: a prompts file's text is its JSON read (the
/// order of its keys is serde_json's, which a build's features change), and its
/// SHA-256 is checked to be the text's, then left out.
fn as_read(fixture: &Value) -> Value {
    let mut read = fixture.clone();
    for case in read["files"].as_array_mut().unwrap() {
        let text = case["file"].as_str().unwrap().to_owned();
        assert_eq!(
            case["prompts"]["sha256"],
            crate::prompts::sha256_hex(text.as_bytes()),
            "the setup holds the prompts file's own hash"
        );
        case["file"] = serde_json::from_str(&text).unwrap();
        case["prompts"]["sha256"] = Value::Null;
    }
    read
}

#[test]
fn the_file_makes_each_body_of_lengths_drawn_per_request_as_the_page_does() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/varying-bodies.json"
    );
    let want = varying_cases();
    if std::env::var_os("TOKENMETER_WRITE_FIXTURES").is_some() {
        std::fs::write(path, serde_json::to_string_pretty(&want).unwrap() + "\n").unwrap();
    }
    let have: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(
        as_read(&have),
        as_read(&want),
        "the fixture is what the core makes: rewrite it with TOKENMETER_WRITE_FIXTURES=1"
    );
    // Lengths vary as asked, and the file knows where each kind keeps them.
    let asked: Vec<u64> = want["cases"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["requests"].as_array().unwrap())
        .filter_map(|r| r["asked"].as_u64())
        .collect();
    assert!(
        asked
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len()
            > 5,
        "{asked:?}"
    );
    let keys: Vec<&str> = want["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["bodies"]["varying"]["max_key"].as_str().unwrap())
        .collect();
    assert!(keys.contains(&"max_output_tokens") && keys.contains(&"max_tokens"));
}

/// Plans of a file's prompts, one of each shape: every endpoint kind but
/// completions' plain text too, both orders, lengths drawn and forced.
fn file_cases() -> Vec<Value> {
    use crate::{plan::Lengths, prompts::Order, stream::EndpointKind};
    let prompts = prompt_file();
    let normal = Lengths {
        min: 10,
        max: 90,
        mean: Some(40.0),
        stdev: Some(20.0),
    };
    [
        (EndpointKind::Chat, Order::InOrder, None, false),
        (
            EndpointKind::Completions,
            Order::Random,
            Some(normal),
            false,
        ),
        (EndpointKind::Responses, Order::InOrder, Some(normal), false),
        (EndpointKind::Anthropic, Order::Random, None, false),
        (EndpointKind::Chat, Order::Random, Some(normal), true),
    ]
    .into_iter()
    .map(|(endpoint, order, output, force)| {
        let mut plan = file_plan(&prompts);
        plan.seed = Some(99);
        plan.endpoint = endpoint;
        plan.prompt_file.as_mut().unwrap().order = order;
        plan.output_lengths = output;
        plan.force_output_lengths = force;
        let made = export(TEMPLATE, &plan, Some(&prompts)).unwrap();
        let setup = embedded_setup(&made.locustfile);
        let bodies = Bodies::with_prompts(&plan, 99, std::sync::Arc::new(prompts.clone()));
        let requests: Vec<Value> = [0u64, 1, 2, 5, 1000]
            .into_iter()
            .map(|id| {
                let expect: Value = serde_json::from_str(&bodies.body(id)).unwrap();
                json!({"id": id, "asked": bodies.asked_tokens(id), "expect": expect})
            })
            .collect();
        json!({
            "prompts": setup["prompts"],
            "file": made.prompts,
            "seed": 99,
            "requests": requests,
        })
    })
    .collect()
}
