//! The engine in a real browser against the simulator (started on loopback by
//! `cargo xtask test`, which passes its URL at compile time): one request measured
//! end to end, a timeout, and Cancel.

#![cfg(target_arch = "wasm32")]

use std::time::Duration;

use tokenmeter::engine::{
    cancel::CancelToken,
    clock::Clock,
    request::{send, Target},
};
use tokenmeter_core::{schema::ErrorKind, Bodies, RecordOptions, RequestStart};
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

fn sim_url() -> &'static str {
    match option_env!("TOKENMETER_SIM_URL") {
        Some(url) => url,
        None => {
            panic!("TOKENMETER_SIM_URL is set by `cargo xtask test`, which starts the simulator")
        }
    }
}

fn target(max_tokens: u32, fault: Option<&str>, timeout_ms: f64) -> Target {
    let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
    if let Some(fault) = fault {
        headers.push(("x-tokenmeter-fault".into(), fault.into()));
    }
    Target::new(
        format!("{}/chat/completions", sim_url()),
        Bodies::fixed(
            serde_json::json!({
                "model": "tokenmeter-sim",
                "messages": [{"role": "user", "content": "你好"}],
                "max_tokens": max_tokens,
                "stream": true,
                "stream_options": {"include_usage": true},
            })
            .to_string(),
        ),
        headers,
        Vec::new(),
        timeout_ms,
    )
}

fn start(clock: &Clock) -> RequestStart {
    let now = clock.now_us();
    RequestStart {
        id: 1,
        concurrency: 1,
        warmup: false,
        wanted_us: now,
        sent_us: now,
    }
}

#[wasm_bindgen_test]
async fn one_request_is_measured_end_to_end() {
    let clock = Clock::start();
    let options = RecordOptions {
        keep_text: true,
        ..RecordOptions::default()
    };
    let (record, _) = send(
        &target(12, None, 30_000.0),
        start(&clock),
        &clock,
        &CancelToken::default(),
        options,
    )
    .await;
    assert!(record.is_ok(), "{:?}", record.error);
    assert_eq!(record.n_out, Some(12));
    assert_eq!(record.n_token_events, 12);
    assert_eq!(record.token_mismatch, Some(0));
    assert!(record
        .response_id
        .as_deref()
        .unwrap()
        .starts_with("chatcmpl-"));
    assert!(record.ttft_us().unwrap() > 0);
    assert!(record.output_text.unwrap().chars().count() >= 12);
    assert!(
        !record.saw_done,
        "the usage chunk after finish_reason ended the stream; the [DONE] after it is not read"
    );
}

/// Bytes in uneven reads (every write cut in two, so the usage chunk that ends the
/// stream and the start of `[DONE]` share a read), and more after `[DONE]`: the
/// engine stops reading at the stream's end, and nothing it held changes the record.
#[wasm_bindgen_test]
async fn nothing_after_the_stream_s_end_changes_the_record() {
    let clock = Clock::start();
    let options = RecordOptions {
        keep_text: true,
        ..RecordOptions::default()
    };
    for fault in [
        "split-writes",
        "after-done",
        "split-writes,after-done",
        "split-writes,after-done,comments,crlf",
    ] {
        for _ in 0..3 {
            let (record, _) = send(
                &target(12, Some(fault), 30_000.0),
                start(&clock),
                &clock,
                &CancelToken::default(),
                options,
            )
            .await;
            assert!(record.is_ok(), "{fault}: {:?}", record.error);
            assert_eq!(record.n_out, Some(12), "{fault}");
            assert_eq!(record.n_token_events, 12, "{fault}");
            assert!(!record.saw_done, "{fault}");
            // `after-done` writes a token 多余 after `[DONE]`, which the simulator's
            // answers never hold.
            let text = record.output_text.unwrap();
            assert!(!text.contains("多余"), "{fault}: {text}");
        }
    }
}

#[wasm_bindgen_test]
async fn the_timeout_aborts_a_hung_request() {
    let clock = Clock::start();
    let (record, _) = send(
        &target(4, Some("hang"), 300.0),
        start(&clock),
        &clock,
        &CancelToken::default(),
        RecordOptions::default(),
    )
    .await;
    assert_eq!(
        record.error.as_ref().unwrap().kind,
        ErrorKind::TimeoutBeforeHeaders
    );
    assert!(record.e2e_us() >= 300_000);
}

#[wasm_bindgen_test]
async fn cancel_aborts_a_stream_in_flight() {
    let clock = Clock::start();
    let cancel = CancelToken::default();
    let canceller = cancel.clone();
    wasm_bindgen_futures::spawn_local(async move {
        gloo_timers::future::sleep(Duration::from_millis(600)).await;
        canceller.cancel();
    });
    let (record, _) = send(
        &target(2000, None, 30_000.0),
        start(&clock),
        &clock,
        &cancel,
        RecordOptions::default(),
    )
    .await;
    let err = record.error.clone().unwrap();
    assert_eq!(err.kind, ErrorKind::Cancelled);
    assert!(record.n_token_events > 0 && record.n_token_events < 2000);
    assert_eq!(cancel.n_in_flight(), 0, "the request unregistered itself");
}

#[wasm_bindgen_test]
async fn a_run_flags_a_hidden_page_and_its_own_lag() {
    use std::{cell::RefCell, rc::Rc};
    use tokenmeter::{
        engine::{
            conditions::Visibility,
            runner::{run, RunInput},
        },
        protocol::FromWorker,
    };
    use tokenmeter_core::schema::{LoadMode, Plan};

    let mut plan = Plan::default_for_simulator(sim_url());
    plan.load = LoadMode::Ladder {
        levels: vec![1],
        requests_per_level: 2,
    };
    plan.max_tokens = 40;
    plan.warmup_requests = 0;
    let visibility = Rc::new(Visibility::default());
    let messages: Rc<RefCell<Vec<FromWorker>>> = Rc::default();
    let post: Rc<dyn Fn(FromWorker)> = Rc::new({
        let messages = messages.clone();
        move |m| messages.borrow_mut().push(m)
    });
    // During the level: the page is hidden for 200 ms, and the event loop is
    // blocked for 250 ms (as a saturated browser would block it).
    wasm_bindgen_futures::spawn_local({
        let visibility = visibility.clone();
        async move {
            gloo_timers::future::sleep(Duration::from_millis(300)).await;
            visibility.set_hidden(true);
            gloo_timers::future::sleep(Duration::from_millis(200)).await;
            visibility.set_hidden(false);
            let clock = Clock::start();
            while clock.now_ms() < 250.0 {}
        }
    });
    let input = RunInput {
        run_id: "r".into(),
        started_at: "t".into(),
        plan,
        api_key: None,
        target_keys: Vec::new(),
        prompts: None,
        visibility,
    };
    run(input, CancelToken::default(), post).await;
    let messages = messages.borrow();
    let Some(FromWorker::Finished {
        document,
        n_records,
    }) = messages.last()
    else {
        panic!("the run ends with its document");
    };
    assert_eq!(document.levels[0].n_ok, 2);
    // The records went to the page with the progress, each once, and not again.
    let brought: usize = messages
        .iter()
        .map(|m| match m {
            FromWorker::Progress(p) => p.records.len(),
            _ => 0,
        })
        .sum();
    assert_eq!((brought as u64, *n_records), (2, 2));
    assert!(document.records.is_empty());
    let notes = document.environment.notes.join("\n");
    assert!(
        notes.contains("concurrency 1: the page was hidden for 0."),
        "{notes}"
    );
    // One 250 ms block in a level of ten-millisecond ticks: a stall, said as one,
    // with the token events that arrived during it and were stamped when it ended.
    assert!(
        notes.contains("event loop stalled at times, for up to"),
        "{notes}"
    );
    assert!(
        notes.contains("token events") && notes.contains("were stamped during a stall"),
        "{notes}"
    );
    // The same, typed: the page renders these in its language.
    use tokenmeter_core::schema::RunCondition;
    let conditions = &document.environment.conditions;
    assert!(conditions.iter().any(
        |c| matches!(c, RunCondition::HiddenPage { concurrency: 1, hidden_ms } if *hidden_ms > 0.0)
    ));
    assert!(conditions.iter().any(|c| matches!(
        c,
        RunCondition::EngineLag { concurrency: 1, lag_ms, lag_p95_ms: Some(_), stalls: Some(s) }
            if *lag_ms > 200.0 && s.n_late > 0 && s.late_max_ms > 200.0 && s.n_requests == 2
    )));
    let load = &document.environment.engine_load[0];
    assert!(load.lag_max_ms > 200.0, "{load:?}");
    let stalls = load.stalls.expect("the engine counts what its stalls held");
    assert!(
        stalls.n_late > 0 && stalls.n_late < stalls.n_events,
        "{stalls:?}"
    );
    assert!(load.n_chunks > 0 && load.busy_ms > 0.0, "{load:?}");
    let n_progress = messages
        .iter()
        .filter(|m| matches!(m, FromWorker::Progress(_)))
        .count();
    // Over the whole run: the network's probes before and after the level too.
    let elapsed_s = messages
        .iter()
        .filter_map(|m| match m {
            FromWorker::Progress(p) => Some(p.elapsed_ms / 1e3),
            _ => None,
        })
        .fold(0.0, f64::max);
    assert!(
        n_progress as f64 <= elapsed_s * 10.0 + 3.0,
        "progress at most ten times a second: {n_progress} in {elapsed_s} s"
    );
}

/// The other side of the lag note: it says what the engine measured of itself and
/// nothing more. This machine may be busy (a test cannot make it quiet), so the
/// check is that every flag and note follows from the level's measured lag: below
/// the thresholds, silence.
#[wasm_bindgen_test]
async fn the_lag_flags_follow_from_the_measured_lag() {
    use std::{cell::RefCell, rc::Rc};
    use tokenmeter::{
        engine::{
            conditions::Visibility,
            runner::{run, RunInput},
        },
        protocol::FromWorker,
    };
    use tokenmeter_core::schema::{LoadMode, Plan};

    let mut plan = Plan::default_for_simulator(sim_url());
    plan.load = LoadMode::Ladder {
        levels: vec![1, 2],
        requests_per_level: 2,
    };
    plan.max_tokens = 20;
    plan.warmup_requests = 1;
    let messages: Rc<RefCell<Vec<FromWorker>>> = Rc::default();
    let post: Rc<dyn Fn(FromWorker)> = Rc::new({
        let messages = messages.clone();
        move |m| messages.borrow_mut().push(m)
    });
    let input = RunInput {
        run_id: "r".into(),
        started_at: "t".into(),
        plan,
        api_key: None,
        target_keys: Vec::new(),
        prompts: None,
        visibility: Rc::new(Visibility::default()),
    };
    run(input, CancelToken::default(), post).await;
    let messages = messages.borrow();
    let Some(FromWorker::Finished { document, .. }) = messages.last() else {
        panic!("the run ends with its document");
    };
    use tokenmeter_core::{schema::RunCondition, LAG_DISTORTS_P95_MS, LAG_NOTE_MS};
    assert_eq!(document.environment.engine_load.len(), 2);
    for (load, level) in document
        .environment
        .engine_load
        .iter()
        .zip(&document.levels)
    {
        assert_eq!(Some(load.concurrency), level.concurrency);
        assert!(
            load.n_chunks >= 2 * 20,
            "every token's chunk was counted: {load:?}"
        );
        let noted = document.environment.conditions.iter().any(|c| {
            matches!(c, RunCondition::EngineLag { concurrency, .. } if *concurrency == load.concurrency)
        });
        assert_eq!(noted, load.lag_max_ms > LAG_NOTE_MS, "{load:?}");
        assert_eq!(
            level.distorted.is_some(),
            load.lag_p95_ms > LAG_DISTORTS_P95_MS,
            "{load:?}"
        );
    }
    if document.levels.iter().all(|l| l.distorted.is_none()) {
        assert!(!document.verdict.explanation_en.contains("Left out"));
    }
}

#[wasm_bindgen_test]
async fn cancel_between_arrivals_does_not_wait_for_the_next_one() {
    use std::{cell::RefCell, rc::Rc};
    use tokenmeter::{
        engine::{
            conditions::Visibility,
            runner::{run, RunInput},
        },
        protocol::FromWorker,
    };
    use tokenmeter_core::schema::{LoadMode, Plan, RunStatus};

    // One arrival every 20 s: after the first, the scheduler waits for the second.
    let mut plan = Plan::default_for_simulator(sim_url());
    plan.load = LoadMode::Arrivals {
        rate_rps: 0.05,
        poisson: false,
        n_requests: 3,
        seed: 1,
    };
    plan.max_tokens = 4;
    plan.warmup_requests = 0;
    let messages: Rc<RefCell<Vec<FromWorker>>> = Rc::default();
    let post: Rc<dyn Fn(FromWorker)> = Rc::new({
        let messages = messages.clone();
        move |m| messages.borrow_mut().push(m)
    });
    let cancel = CancelToken::default();
    wasm_bindgen_futures::spawn_local({
        let cancel = cancel.clone();
        async move {
            gloo_timers::future::sleep(Duration::from_millis(1_500)).await;
            cancel.cancel();
        }
    });
    let clock = Clock::start();
    let input = RunInput {
        run_id: "r".into(),
        started_at: "t".into(),
        plan,
        api_key: None,
        target_keys: Vec::new(),
        prompts: None,
        visibility: Rc::new(Visibility::default()),
    };
    run(input, cancel, post).await;
    // Not a speed limit: the run must end before the next arrival was even due.
    assert!(
        clock.now_ms() < 20_000.0,
        "the run waited {:.0} ms for an arrival after Cancel",
        clock.now_ms()
    );
    let messages = messages.borrow();
    let Some(FromWorker::Finished { document, .. }) = messages.last() else {
        panic!("the run ends with its document");
    };
    assert_eq!(document.status, RunStatus::Cancelled);
    assert_eq!(document.levels[0].n_ok, 1, "the first arrival is kept");
}
