//! A run: warm-up, then the plan's schedule level by level (closed-loop ladder,
//! open-loop arrivals, or a fixed duration: see [`super::schedule`]), progress for
//! the page at most ten times a second (see [`super::live`]), the conditions the
//! engine observed (see [`super::conditions`]), and the run document at the end,
//! cancelled or not.

use std::{rc::Rc, sync::Arc, time::Duration};

use tokenmeter_core::{
    condition::RunCondition,
    error::ErrorKind,
    network::{Network, PROBES_AFTER, PROBES_BEFORE},
    plan::{arrival_offsets_ms, AbOrder, Bodies, LoadMode, Plan, PromptMode, MAX_REQUESTS_PER_RUN},
    prompts::{self, Prompts},
    record::{RecordOptions, RequestStart},
    report::{RunDocument, RunStatus},
    search::SloSearch,
};

use super::{
    cancel::CancelToken,
    clock::Clock,
    conditions::{
        environment, level_conditions, no_response, round_trips, Visibility, ROUND_TRIP_PROBE,
    },
    live::Shared,
    request::{send, Target},
    schedule::Level,
};
use crate::protocol::FromWorker;

/// How often the page hears about progress: ten times a second at most.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// How often the engine checks its own event loop: a finer tick sees shorter
/// stalls, and costs a wake-up each time.
const LAG_TICK: Duration = Duration::from_millis(10);

/// Everything a run needs.
pub struct RunInput {
    pub run_id: String,
    pub started_at: String,
    pub plan: Plan,
    pub api_key: Option<String>,
    /// The keys of an A/B plan's other targets, in order (memory only).
    pub target_keys: Vec<Option<String>>,
    /// A plan of prompts from a file: the file's prompts.
    pub prompts: Option<Arc<Prompts>>,
    /// When the page was hidden, as the page reports it.
    pub visibility: Rc<Visibility>,
}

/// Where and how every request of the run is sent; `seed` makes each request's
/// own prompt, or draws it from a file's `prompts` (see [`Bodies`]).
pub fn target(
    plan: &Plan,
    api_key: Option<&str>,
    seed: u64,
    prompts: Option<&Arc<Prompts>>,
) -> Target {
    let bodies = match prompts {
        Some(prompts) if plan.prompt_mode == PromptMode::File => {
            Bodies::with_prompts(plan, seed, Arc::clone(prompts))
        }
        _ => Bodies::new(plan, seed),
    };
    Target::new(
        plan.endpoint_url(),
        bodies,
        plan.request_headers(api_key),
        api_key
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .map(str::to_owned)
            .into_iter()
            .collect(),
        plan.timeout_s * 1e3,
    )
}

/// A seed no earlier run used, from the browser's random numbers: 53 bits, so
/// that scripts reading the run document in JavaScript read it exactly.
fn fresh_seed() -> u64 {
    (js_sys::Math::random() * (1u64 << 53) as f64) as u64
}

/// Target `index`'s key: its own slot's, or else, for a target on the same origin
/// as A (another model on the same gateway), A's; never A's key to another origin.
fn target_key<'a>(
    plan: &Plan,
    api_key: &'a Option<String>,
    target_keys: &'a [Option<String>],
    index: usize,
) -> Option<&'a str> {
    fn own(key: &Option<String>) -> Option<&str> {
        key.as_deref().map(str::trim).filter(|k| !k.is_empty())
    }
    if index == 0 {
        return own(api_key);
    }
    let slot = target_keys.get(index - 1).and_then(own);
    let same_origin = plan
        .targets
        .get(index - 1)
        .is_some_and(|t| origin(&t.base_url) == origin(&plan.base_url));
    slot.or(own(api_key).filter(|_| same_origin))
}

/// `scheme://host:port` of a URL.
fn origin(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let end = url[after_scheme..]
        .find('/')
        .map_or(url.len(), |i| after_scheme + i);
    &url[..end]
}

/// The levels a plan runs, as `(concurrency, requests planned)`: concurrency 0 is
/// open-loop arrivals, 0 requests a level bounded by time. An SLO search has none
/// beforehand: it adds each probe as it goes.
fn levels(plan: &Plan) -> Vec<(u32, u32)> {
    match &plan.load {
        LoadMode::SloSearch { .. } => Vec::new(),
        // A repeated ladder runs all its levels, then all again; an A/B plan takes
        // each level for every target in turn: each is a level of its own here
        // (see `set_origin`).
        LoadMode::Ladder {
            levels,
            requests_per_level,
        } => {
            // Interleaved A/B: one level for all the targets, each sending its share.
            let (per_level, n_planned) = match plan.ab_order {
                AbOrder::Levels => (plan.n_targets(), *requests_per_level),
                AbOrder::Requests => (1, requests_per_level * plan.n_targets() as u32),
            };
            (0..plan.repeat.max(1))
                .flat_map(|_| {
                    levels
                        .iter()
                        .flat_map(move |&c| std::iter::repeat_n((c, n_planned), per_level))
                })
                .collect()
        }
        LoadMode::Arrivals { n_requests, .. } => vec![(0, *n_requests)],
        LoadMode::Duration { concurrency, .. } => vec![(*concurrency, 0)],
    }
}

/// Runs a plan to the end (or to Cancel), posting progress and then the document.
pub async fn run(input: RunInput, cancel: CancelToken, post: Rc<dyn Fn(FromWorker)>) {
    if let Err(problems) = input.plan.validate() {
        post(FromWorker::Failed { problems });
        return;
    }
    if let Some(file) = input
        .plan
        .prompt_file
        .as_ref()
        .filter(|_| input.plan.prompt_mode == PromptMode::File)
    {
        if input.prompts.as_ref().map(|p| &p.file.sha256) != Some(&file.sha256) {
            post(FromWorker::Failed {
                problems: vec![prompts::missing(file)],
            });
            return;
        }
    }
    let mut plan = input.plan;
    // The run's prompts come from the plan's seed, or from one of its own (kept in
    // the document's plan), so that no run resends an earlier run's prompts.
    let seed = *plan.seed.get_or_insert_with(fresh_seed);
    let targets: Vec<Target> = (0..plan.n_targets())
        .map(|i| {
            let key = target_key(&plan, &input.api_key, &input.target_keys, i);
            target(&plan.for_target(i), key, seed, input.prompts.as_ref())
        })
        .collect();
    let options = RecordOptions::default();
    let clock = Clock::start();
    let resolution_us = clock.resolution_us();
    super::request::reset_resource_timing();
    let levels = levels(&plan);
    let environment = environment(resolution_us);
    let shared = Rc::new(Shared::new(
        clock.clone(),
        environment.engine(),
        plan.warmup_requests,
        &levels,
    ));
    let interleave = plan.ab_order == AbOrder::Requests && !plan.targets.is_empty();
    if let LoadMode::Ladder { levels: ladder, .. } = &plan.load {
        let per_level = if interleave { 1 } else { plan.n_targets() };
        for index in 0..levels.len() {
            let pass = index / (ladder.len() * per_level).max(1);
            shared.set_origin(index, pass as u32, (index % per_level) as u32);
        }
    }

    // Progress, at a bounded rate, until the run ends.
    wasm_bindgen_futures::spawn_local({
        let shared = shared.clone();
        let post = post.clone();
        async move {
            while !shared.is_finished() {
                post(FromWorker::Progress(shared.snapshot()));
                gloo_timers::future::sleep(PROGRESS_EVERY).await;
            }
        }
    });
    // The engine's own event loop, watched: a tick that wakes late says every
    // timestamp waiting behind it was taken late too.
    wasm_bindgen_futures::spawn_local({
        let shared = shared.clone();
        async move {
            let asked_ms = LAG_TICK.as_secs_f64() * 1e3;
            while !shared.is_finished() {
                let before = shared.clock.now_ms();
                gloo_timers::future::sleep(LAG_TICK).await;
                shared.note_lag(shared.clock.now_ms() - before - asked_ms);
            }
        }
    });

    // The network's round trip, before anything else is in flight (target A's).
    let (round_trips_before, timed_by) = round_trips(&plan.base_url, PROBES_BEFORE).await;
    // What the server itself reports, from now to the end (target A's).
    let server_metrics = super::server_metrics::start(
        &plan.base_url,
        clock.clone(),
        shared.clone(),
        cancel.clone(),
    );

    // Warm-up: sequential, never summarised; it pays for connection set-up and the
    // first CORS preflight (of every target of an A/B plan).
    // (An SLO search starts at 1.)
    let warmup_concurrency = levels.first().map_or(1, |l| l.0.max(1));
    for (i, target) in targets.iter().enumerate() {
        for _ in 0..plan.warmup_requests {
            if cancel.is_cancelled() {
                break;
            }
            let now = clock.now_us();
            let start = RequestStart {
                id: shared.next_id(),
                concurrency: warmup_concurrency,
                warmup: true,
                wanted_us: now,
                sent_us: now,
            };
            let (mut record, cost) = send(target, start, &clock, &cancel, options).await;
            record.target = i as u32;
            shared.record_done(None, record, cost);
        }
    }

    let mut conditions = Vec::new();
    let mut engine_load = Vec::new();
    let mut search = match &plan.load {
        LoadMode::SloSearch {
            max_concurrency, ..
        } => Some(SloSearch::new(1, *max_concurrency)),
        _ => None,
    };
    for index in 0.. {
        if cancel.is_cancelled() {
            break;
        }
        let (concurrency, n_planned) = match (&search, &plan.load) {
            (
                Some(search),
                LoadMode::SloSearch {
                    requests_per_probe, ..
                },
            ) => {
                let Some(c) = search.next() else { break };
                let n = tokenmeter_core::plan::requests_per_probe(c, *requests_per_probe);
                shared.push_level(c, n, environment.engine());
                (c, n)
            }
            _ => match levels.get(index) {
                Some(&level) => level,
                None => break,
            },
        };
        shared.start_level(index);
        let level = Level {
            shared: &shared,
            targets: &targets,
            target: if interleave { 0 } else { index % targets.len() },
            interleave,
            cancel: &cancel,
            options,
            index,
        };
        match &plan.load {
            LoadMode::Ladder { .. } | LoadMode::SloSearch { .. } => {
                level.closed_loop(concurrency, n_planned, None).await;
            }
            LoadMode::Duration { seconds, .. } => {
                let n_sent = level
                    .closed_loop(concurrency, MAX_REQUESTS_PER_RUN, Some(seconds * 1e3))
                    .await;
                if n_sent >= MAX_REQUESTS_PER_RUN {
                    conditions.push(RunCondition::RequestCapReached {
                        concurrency,
                        limit: MAX_REQUESTS_PER_RUN,
                    });
                }
            }
            LoadMode::Arrivals {
                rate_rps,
                poisson,
                seed,
                ..
            } => {
                level
                    .open_loop(&arrival_offsets_ms(*rate_rps, *poisson, n_planned, *seed))
                    .await
            }
        }
        let (started_ms, load) = shared.end_level(index);
        let hidden_ms = input.visibility.hidden_ms(
            clock.origin_ms() + started_ms,
            clock.origin_ms() + started_ms + load.wall_ms,
        );
        conditions.extend(level_conditions(concurrency, hidden_ms, &load));
        engine_load.push(load);
        if let Some(search) = &mut search {
            if cancel.is_cancelled() {
                break;
            }
            // The probe judged as the finished run will judge its level: by the
            // verdict, distortions (the engine's lag, the browser's queue) included.
            let mut probe_environment = environment.clone();
            probe_environment
                .conditions
                .extend(conditions.iter().cloned());
            let probe = RunDocument::build(
                String::new(),
                String::new(),
                RunStatus::Done,
                plan.clone(),
                probe_environment,
                shared.level_records(concurrency),
            );
            search.observe(concurrency, probe.verdict.meets_slo_at(concurrency));
        }
    }

    let status = if cancel.is_cancelled() {
        RunStatus::Cancelled
    } else {
        RunStatus::Done
    };
    // The round trip again once nothing is in flight: did the network move?
    // (Timed as those before were, or not counted.)
    let round_trips_after = if cancel.is_cancelled() || round_trips_before.is_empty() {
        Vec::new()
    } else {
        match round_trips(&plan.base_url, PROBES_AFTER).await {
            (times, timed) if timed == timed_by => times,
            _ => Vec::new(),
        }
    };
    post(FromWorker::Progress(shared.snapshot()));
    let records = shared.finish();
    let mut environment = environment;
    environment.conditions.extend(conditions);
    environment.network = Network::estimate(
        round_trips_before,
        round_trips_after,
        ROUND_TRIP_PROBE,
        timed_by,
    );
    // Requests that got no response at all: the browser hides why (CORS, mixed
    // content, an unreachable host); probing once tells the user which.
    let n_no_response = records
        .iter()
        .filter(|r| !r.warmup)
        .filter(|r| {
            r.error
                .as_ref()
                .is_some_and(|e| e.kind == ErrorKind::Network)
        })
        .count() as u64;
    if n_no_response > 0 && !cancel.is_cancelled() {
        let diagnosis = no_response(&plan.base_url, n_no_response, &environment).await;
        environment.conditions.push(diagnosis);
    }
    environment.engine_load = engine_load;
    environment.server_metrics = Some(server_metrics.borrow().clone());
    let mut document = RunDocument::build_ab(
        input.run_id,
        input.started_at,
        status,
        plan,
        environment,
        records,
    );
    if let Some(search) = search {
        document.conclude_search(search.outcome());
    }
    post(FromWorker::Finished {
        document: Box::new(document),
    });
}
