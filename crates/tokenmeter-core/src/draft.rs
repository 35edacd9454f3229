//! The plan as a form holds it: [`PlanDraft`] keeps what the user types as typed
//! (strings for numbers and lists, enums for choices), and turns into a [`Plan`]
//! with every problem named, or back from one. The page binds its inputs to a
//! draft; all the checking lives here, where it is tested natively.
//!
//! A draft keeps the values of fields the current load mode does not use (the
//! ladder while arrivals are chosen, and so on), so switching modes loses nothing,
//! and `PlanDraft::from_plan(p).to_plan(&p) == Ok(p)` for every plan.

use std::fmt;

use serde_json::{Map, Value};

use crate::{
    error::{Said, Words},
    plan::{
        is_secret_header, metrics_url_problem, no_prompt_file, normalize_base_url, parse_levels,
        secret_header_problem, AbOrder, AuthStyle, Conversation, Lengths, LoadMode, Plan,
        PromptMode, PromptSpec, TargetSpec, MAX_ENGINE_WORKERS, MAX_PREFIX_GROUPS,
        MAX_PROMPT_TOKENS, MAX_REPEAT, UNIQUE_HEADER_TOKENS,
    },
    prompts::{Order, PromptFile},
    said,
    stream::EndpointKind,
};

/// Which load mode the form shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LoadKind {
    /// A closed-loop concurrency ladder.
    #[default]
    Ladder,
    /// Open-loop arrivals at a rate.
    Arrivals,
    /// The first level for a fixed time.
    Duration,
    /// The highest concurrency within the SLO, searched for.
    SloSearch,
}

/// The form's fields, as typed. Strings are what the user typed; the choices are
/// typed values. See the module docs.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanDraft {
    /// The base URL as typed.
    pub base_url: String,
    /// The model as typed.
    pub model: String,
    /// The prompt as typed.
    pub prompt: String,
    /// Whether each request sends a prompt of its own.
    pub prompt_mode: PromptMode,
    /// A shared prefix's length in tokens, and how many groups share one.
    pub prefix_tokens: String,
    /// How many groups share a prefix each, as typed.
    pub prefix_groups: String,
    /// With prompts from a file: the file loaded, or the one a plan from a link
    /// names (its prompts are loaded apart, see [`crate::prompts`]), and the order
    /// requests draw in.
    pub prompt_file: Option<PromptFile>,
    /// In which order requests draw from the file.
    pub prompt_order: Order,
    /// Lengths drawn per request: of the output, and of a generated prompt.
    pub output_lengths: LengthsDraft,
    /// Each request's generated prompt length.
    pub input_lengths: LengthsDraft,
    /// Ask the server for exactly the output length asked.
    pub force_output_lengths: bool,
    /// Output tokens per request, as typed.
    pub max_tokens: String,
    /// The per-request timeout in seconds, as typed.
    pub timeout_s: String,
    /// Concurrency levels (`1,2,4`); the duration mode uses the first.
    pub levels: String,
    /// Requests per level; the number of arrivals in the arrivals mode.
    pub requests_per_level: String,
    /// Warm-up requests, as typed.
    pub warmup: String,
    /// Engine workers, as typed (0: as each level needs).
    pub engine_workers: String,
    /// Which streaming API.
    pub endpoint: EndpointKind,
    /// How the key is sent.
    pub auth: AuthStyle,
    /// The temperature, as typed (empty: the server's default).
    pub temperature: String,
    /// Ask for the usage chunk.
    pub include_usage: bool,
    /// Turns per conversation (1: single requests), and the think time between
    /// them, ms.
    pub turns: String,
    /// Think time between turns in ms, as typed.
    pub think_ms: String,
    /// Read the server's metrics while the run goes, and where (empty for
    /// `{origin}/metrics` of the base URL).
    pub poll_metrics: bool,
    /// Where the server's metrics are, as typed (empty: beside the base URL).
    pub metrics_url: String,
    /// One `Name: value` per line.
    pub extra_headers: String,
    /// A JSON object.
    pub extra_body: String,
    /// A generated prompt of this many tokens, or empty for the prompt text.
    pub prompt_tokens: String,
    /// Which load shape.
    pub load: LoadKind,
    /// Arrivals per second, as typed.
    pub rate_rps: String,
    /// Arrivals as a Poisson process, not evenly spaced.
    pub poisson: bool,
    /// The Poisson arrivals' seed: not shown, kept from the plan.
    pub seed: u64,
    /// A duration run's seconds, as typed.
    pub duration_s: String,
    /// The SLO search's ceiling (requests per level is per probe).
    pub search_max: String,
    /// How many times the ladder runs.
    pub repeat: String,
    /// An A/B plan's other targets (B, C, …), as typed.
    pub targets: Vec<TargetDraft>,
    /// How an A/B plan shares a level between its targets.
    pub ab_order: AbOrder,
    /// p95 TTFT limit in ms, as typed.
    pub slo_ttft_ms: String,
    /// p95 TPOT limit in ms, as typed.
    pub slo_tpot_ms: String,
    /// The most failed requests a level may have, percent; empty for no limit.
    pub slo_error_pct: String,
}

/// How a length is given on the form.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LengthDist {
    /// One length for every request (the plan's max_tokens, or prompt length).
    #[default]
    Fixed,
    /// Uniform between min and max.
    Uniform,
    /// Normal with a mean and a standard deviation, cut to min and max.
    Normal,
}

/// Lengths drawn per request, as typed (see [`crate::plan::Lengths`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LengthsDraft {
    /// Which distribution.
    pub dist: LengthDist,
    /// The least, as typed.
    pub min: String,
    /// The most, as typed.
    pub max: String,
    /// The mean, as typed (normal only).
    pub mean: String,
    /// The standard deviation, as typed (normal only).
    pub stdev: String,
}

impl LengthsDraft {
    fn of(lengths: Option<Lengths>) -> LengthsDraft {
        match lengths {
            None => LengthsDraft::default(),
            Some(l) => LengthsDraft {
                dist: if l.stdev.is_some() {
                    LengthDist::Normal
                } else {
                    LengthDist::Uniform
                },
                min: l.min.to_string(),
                max: l.max.to_string(),
                mean: optional(l.mean),
                stdev: optional(l.stdev),
            },
        }
    }

    /// The lengths, or why not (each problem about `field`).
    fn read(
        &self,
        what: Words,
        field: DraftField,
        problems: &mut Vec<PlanProblem>,
    ) -> Option<Lengths> {
        let (what_en, what_zh) = (what.en, what.zh);
        if self.dist == LengthDist::Fixed {
            return None;
        }
        let (min, max) = (whole(&self.min), whole(&self.max));
        let (Some(min), Some(max)) = (min, max) else {
            problems.push(PlanProblem::at(
                field,
                said!(
                    "{what_en} lengths need a whole number of tokens for min and max",
                    "{what_zh}长度的 min 和 max 需要是整数个 token",
                ),
            ));
            return None;
        };
        let (mean, stdev) = match self.dist {
            LengthDist::Normal => match (number(&self.mean), number(&self.stdev)) {
                (Some(mean), Some(stdev)) if stdev >= 0.0 => (Some(mean), Some(stdev)),
                _ => {
                    problems.push(PlanProblem::at(
                        field,
                        said!(
                            "normal {what_en} lengths need a mean and a standard deviation of 0 or more",
                            "正态分布的{what_zh}长度需要均值和不小于 0 的标准差",
                        ),
                    ));
                    return None;
                }
            },
            _ => (None, None),
        };
        Some(Lengths {
            min,
            max,
            mean,
            stdev,
        })
    }
}

/// Another target of an A/B plan, as typed (its key is the page's, never here).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TargetDraft {
    /// The target's base URL, as typed.
    pub base_url: String,
    /// The target's model, as typed.
    pub model: String,
}

/// The field a problem is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DraftField {
    BaseUrl,
    Model,
    MaxTokens,
    Timeout,
    Levels,
    RequestsPerLevel,
    Warmup,
    EngineWorkers,
    Temperature,
    ExtraHeaders,
    ExtraBody,
    PromptTokens,
    PrefixTokens,
    PrefixGroups,
    PromptFile,
    OutputLengths,
    InputLengths,
    Rate,
    Duration,
    SearchMax,
    Repeat,
    SloTtft,
    SloTpot,
    SloErrorRate,
    MetricsUrl,
    Turns,
    ThinkTime,
}

/// Why a draft is not a plan yet: one sentence a user can act on.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanProblem {
    /// The field to fix, when it is one field.
    pub field: Option<DraftField>,
    pub message: Said,
}

impl PlanProblem {
    fn at(field: DraftField, message: impl Into<Said>) -> PlanProblem {
        PlanProblem {
            field: Some(field),
            message: message.into(),
        }
    }
}

impl fmt::Display for PlanProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message.en)
    }
}

/// A number as the form shows it, or empty for none.
fn optional(value: Option<f64>) -> String {
    value.map(|v| v.to_string()).unwrap_or_default()
}

impl Default for PlanDraft {
    /// The fields of the simulator's default plan, and a rate and a duration for
    /// the modes it does not use.
    fn default() -> Self {
        let mut draft = PlanDraft {
            base_url: String::new(),
            model: String::new(),
            prompt: String::new(),
            prompt_mode: PromptMode::Unique,
            prefix_tokens: "1000".into(),
            prefix_groups: "1".into(),
            prompt_file: None,
            prompt_order: Order::InOrder,
            output_lengths: LengthsDraft::default(),
            input_lengths: LengthsDraft::default(),
            force_output_lengths: false,
            max_tokens: String::new(),
            timeout_s: String::new(),
            levels: String::new(),
            requests_per_level: String::new(),
            warmup: String::new(),
            engine_workers: "0".into(),
            endpoint: EndpointKind::Chat,
            auth: AuthStyle::Bearer,
            temperature: String::new(),
            include_usage: true,
            turns: "1".into(),
            think_ms: "1000".into(),
            poll_metrics: true,
            metrics_url: String::new(),
            extra_headers: String::new(),
            extra_body: String::new(),
            prompt_tokens: String::new(),
            load: LoadKind::Ladder,
            rate_rps: "2".into(),
            poisson: true,
            seed: 1,
            duration_s: "30".into(),
            search_max: "64".into(),
            repeat: "1".into(),
            targets: Vec::new(),
            ab_order: AbOrder::Levels,
            slo_ttft_ms: String::new(),
            slo_tpot_ms: String::new(),
            slo_error_pct: String::new(),
        };
        draft.fill(&Plan::default_for_simulator(""));
        draft
    }
}

impl PlanDraft {
    /// A draft showing `plan`; fields its load mode does not use keep the defaults.
    pub fn from_plan(plan: &Plan) -> PlanDraft {
        let mut draft = PlanDraft::default();
        draft.fill(plan);
        draft
    }

    /// Shows `plan` in the draft. Fields the plan's load mode does not use keep
    /// what they had (see the module docs).
    // Long: every field of the form filled from a plan, a line each.
    pub fn fill(&mut self, plan: &Plan) {
        self.base_url = plan.base_url.clone();
        self.model = plan.model.clone();
        self.prompt = plan.prompt_text();
        self.prompt_mode = plan.prompt_mode;
        self.output_lengths = LengthsDraft::of(plan.output_lengths);
        self.input_lengths = LengthsDraft::of(plan.input_lengths);
        self.force_output_lengths = plan.force_output_lengths;
        if plan.prompt_mode == PromptMode::SharedPrefix {
            self.prefix_tokens = plan.prefix_tokens.to_string();
            self.prefix_groups = plan.prefix_groups.to_string();
        }
        if let Some(file) = &plan.prompt_file {
            self.prompt_order = file.order;
        }
        self.prompt_file = plan.prompt_file.clone();
        self.prompt_tokens = match plan.prompt {
            PromptSpec::Tokens(n) => n.to_string(),
            PromptSpec::Text(_) => String::new(),
        };
        self.max_tokens = plan.max_tokens.to_string();
        self.timeout_s = plan.timeout_s.to_string();
        self.warmup = plan.warmup_requests.to_string();
        self.engine_workers = plan.engine_workers.to_string();
        self.endpoint = plan.endpoint;
        self.auth = plan.auth;
        self.temperature = optional(plan.temperature);
        self.include_usage = plan.include_usage;
        match plan.conversation {
            Some(c) => {
                self.turns = c.turns.to_string();
                self.think_ms = c.think_ms.to_string();
            }
            None => self.turns = "1".into(),
        }
        self.poll_metrics = plan.poll_metrics;
        self.metrics_url = plan.metrics_url.clone().unwrap_or_default();
        self.extra_headers = plan
            .extra_headers
            .iter()
            .map(|(name, value)| format!("{name}: {value}"))
            .collect::<Vec<_>>()
            .join("\n");
        self.extra_body = if plan.extra_body.is_empty() {
            String::new()
        } else {
            crate::json::pretty(
                &serde_json::to_string(&plan.extra_body).expect("a JSON map serialises"),
            )
        };
        match &plan.load {
            LoadMode::Ladder {
                levels,
                requests_per_level,
            } => {
                self.load = LoadKind::Ladder;
                self.levels = levels
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(",");
                self.requests_per_level = requests_per_level.to_string();
            }
            LoadMode::Arrivals {
                rate_rps,
                poisson,
                n_requests,
                seed,
            } => {
                self.load = LoadKind::Arrivals;
                self.rate_rps = rate_rps.to_string();
                self.poisson = *poisson;
                self.requests_per_level = n_requests.to_string();
                self.seed = *seed;
            }
            LoadMode::Duration {
                concurrency,
                seconds,
            } => {
                self.load = LoadKind::Duration;
                self.levels = concurrency.to_string();
                self.duration_s = seconds.to_string();
            }
            LoadMode::SloSearch {
                max_concurrency,
                requests_per_probe,
            } => {
                self.load = LoadKind::SloSearch;
                self.search_max = max_concurrency.to_string();
                self.requests_per_level = requests_per_probe.to_string();
            }
        }
        self.slo_ttft_ms = optional(plan.slo.ttft_p95_ms);
        self.slo_tpot_ms = optional(plan.slo.tpot_p95_ms);
        self.slo_error_pct = optional(plan.slo.error_rate_pct);
        self.repeat = plan.repeat.to_string();
        self.ab_order = plan.ab_order;
        self.targets = plan
            .targets
            .iter()
            .map(|t| TargetDraft {
                base_url: t.base_url.clone(),
                model: t.model.clone(),
            })
            .collect();
    }

    /// The plan the draft describes, on top of `base` (which gives what the form
    /// does not show: the E2E limit, the analysis parameters); every problem found.
    // Long: every field of the form read into the plan, each with its own refusal.
    pub fn to_plan(&self, base: &Plan) -> Result<Plan, Vec<PlanProblem>> {
        use DraftField as F;
        let mut problems = Vec::new();
        let mut plan = base.clone();
        match normalize_base_url(&self.base_url) {
            Ok((url, _)) => plan.base_url = url,
            Err(problem) => problems.push(PlanProblem::at(F::BaseUrl, problem)),
        }
        plan.model = self.model.trim().to_owned();
        plan.prompt_mode = self.prompt_mode;
        plan.output_lengths = self.output_lengths.read(
            Words {
                en: "output",
                zh: "输出",
            },
            F::OutputLengths,
            &mut problems,
        );
        plan.input_lengths = self.input_lengths.read(
            Words {
                en: "input",
                zh: "输入",
            },
            F::InputLengths,
            &mut problems,
        );
        plan.force_output_lengths = self.force_output_lengths;
        plan.prompt_file = match (self.prompt_mode, &self.prompt_file) {
            (PromptMode::File, Some(file)) => Some(PromptFile {
                order: self.prompt_order,
                ..file.clone()
            }),
            (PromptMode::File, None) => {
                problems.push(PlanProblem::at(F::PromptFile, no_prompt_file()));
                None
            }
            _ => None,
        };
        // Only a shared prefix reads its two fields: the others leave them as they were.
        if self.prompt_mode == PromptMode::SharedPrefix {
            let min = 2 * UNIQUE_HEADER_TOKENS;
            match whole(&self.prefix_tokens) {
                Some(n) if (min..=MAX_PROMPT_TOKENS).contains(&n) => plan.prefix_tokens = n,
                _ => problems.push(PlanProblem::at(
                    F::PrefixTokens,
                    said!(
                        "a shared prefix must be a whole number of {min} to {MAX_PROMPT_TOKENS} tokens",
                        "共享前缀应为 {min} 到 {MAX_PROMPT_TOKENS} 之间的整数个 token",
                    ),
                )),
            }
            match whole(&self.prefix_groups) {
                Some(n) if (1..=MAX_PREFIX_GROUPS).contains(&n) => plan.prefix_groups = n,
                _ => problems.push(PlanProblem::at(
                    F::PrefixGroups,
                    said!(
                        "requests can share a prefix in 1 to {MAX_PREFIX_GROUPS} groups",
                        "共享前缀的分组数为 1 到 {MAX_PREFIX_GROUPS}",
                    ),
                )),
            }
        }
        plan.endpoint = self.endpoint;
        plan.auth = self.auth;
        plan.include_usage = self.include_usage;
        plan.conversation = match whole(&self.turns) {
            Some(0 | 1) => None,
            Some(turns) => match number(&self.think_ms) {
                Some(think_ms) if think_ms >= 0.0 => Some(Conversation { turns, think_ms }),
                _ => {
                    problems.push(PlanProblem::at(
                        F::ThinkTime,
                        said!(
                            "the think time between turns must be a number of ms, 0 or more",
                            "轮次之间的思考时间必须是不小于 0 的毫秒数"
                        ),
                    ));
                    None
                }
            },
            None => {
                problems.push(PlanProblem::at(
                    F::Turns,
                    said!(
                        "turns per conversation must be a whole number (1 for single requests)",
                        "每段对话的轮数必须是整数（1 表示单个请求）"
                    ),
                ));
                None
            }
        };
        plan.poll_metrics = self.poll_metrics;
        plan.metrics_url = match self.metrics_url.trim() {
            "" => None,
            url => match metrics_url_problem(url) {
                None => Some(url.to_owned()),
                Some(problem) => {
                    problems.push(PlanProblem::at(F::MetricsUrl, problem));
                    None
                }
            },
        };
        match whole(&self.max_tokens) {
            Some(n) if n > 0 => plan.max_tokens = n,
            _ => problems.push(PlanProblem::at(
                F::MaxTokens,
                said!(
                    "max_tokens must be a whole number above 0",
                    "max_tokens 必须是大于 0 的整数"
                ),
            )),
        }
        match number(&self.timeout_s) {
            Some(t) if t > 0.0 => plan.timeout_s = t,
            _ => problems.push(PlanProblem::at(
                F::Timeout,
                said!(
                    "the timeout must be a number of seconds above 0",
                    "超时必须是大于 0 的秒数"
                ),
            )),
        }
        match whole(&self.warmup) {
            Some(n) => plan.warmup_requests = n,
            None => problems.push(PlanProblem::at(
                F::Warmup,
                said!(
                    "warm-up requests must be a whole number (0 for none)",
                    "预热请求数必须是整数（0 表示不预热）"
                ),
            )),
        }
        match whole(&self.engine_workers) {
            Some(n) if n <= MAX_ENGINE_WORKERS => plan.engine_workers = n,
            _ => problems.push(PlanProblem::at(
                F::EngineWorkers,
                said!(
                    "engine workers must be a whole number from 0 (as each level needs) to {MAX_ENGINE_WORKERS}",
                    "测量引擎 worker 数必须是 0（每档按需）到 {MAX_ENGINE_WORKERS} 的整数"
                ),
            )),
        }
        plan.prompt = match self.prompt_tokens.trim() {
            "" => PromptSpec::Text(self.prompt.clone()),
            text => match text.parse::<u32>() {
                Ok(n) if n > 0 => PromptSpec::Tokens(n),
                _ => {
                    problems.push(PlanProblem::at(
                        F::PromptTokens,
                        said!(
                            "the generated prompt length must be a whole number of tokens",
                            "生成的提示词长度必须是整数个 token"
                        ),
                    ));
                    PromptSpec::Text(self.prompt.clone())
                }
            },
        };
        plan.temperature = match self.temperature.trim() {
            "" => None,
            text => match text.parse::<f64>() {
                Ok(t) if (0.0..=2.0).contains(&t) => Some(t),
                _ => {
                    problems.push(PlanProblem::at(
                        F::Temperature,
                        said!("temperature must be a number from 0 to 2, or empty for the server's default", "temperature 必须是 0 到 2 之间的数，留空则用服务端默认值"),
                    ));
                    None
                }
            },
        };
        plan.extra_headers = self.headers(&mut problems);
        plan.extra_body = self.body(&mut problems);
        if let Some(load) = self.load_mode(&mut problems) {
            plan.load = load;
        }
        // Targets: what the form shows, with the extra body fields the base had.
        plan.targets = self
            .targets
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let label = Plan::target_label(i + 1);
                let base_url = match normalize_base_url(&t.base_url) {
                    Ok((url, _)) => url,
                    Err(err) => {
                        let (en, zh) = (err.en, err.zh);
                        problems.push(PlanProblem {
                            field: None,
                            message: said!("target {label}: {en}", "目标 {label}：{zh}"),
                        });
                        t.base_url.trim().to_owned()
                    }
                };
                TargetSpec {
                    base_url,
                    model: t.model.trim().to_owned(),
                    extra_body: base
                        .targets
                        .get(i)
                        .map(|b| b.extra_body.clone())
                        .unwrap_or_default(),
                }
            })
            .collect();
        plan.ab_order = self.ab_order;
        // Only a ladder repeats: the other modes leave the field as it was.
        plan.repeat = match (self.load, whole(&self.repeat)) {
            (LoadKind::Ladder, Some(n)) if (1..=MAX_REPEAT).contains(&n) => n,
            (LoadKind::Ladder, _) => {
                problems.push(PlanProblem::at(
                    F::Repeat,
                    said!(
                        "repeat the ladder 1 to {MAX_REPEAT} times",
                        "阶梯可重复 1 到 {MAX_REPEAT} 次",
                    ),
                ));
                1
            }
            _ => 1,
        };
        plan.slo.ttft_p95_ms = limit(&self.slo_ttft_ms, F::SloTtft, "p95 TTFT", &mut problems);
        plan.slo.tpot_p95_ms = limit(&self.slo_tpot_ms, F::SloTpot, "p95 TPOT", &mut problems);
        plan.slo.error_rate_pct = match self.slo_error_pct.trim() {
            "" => None,
            text => match number(text).filter(|p| (0.0..=100.0).contains(p)) {
                Some(pct) => Some(pct),
                None => {
                    problems.push(PlanProblem::at(
                        F::SloErrorRate,
                        said!("the error-rate limit must be a percentage from 0 to 100, or empty for none", "错误率上限必须是 0 到 100 之间的百分比，留空表示不设"),
                    ));
                    None
                }
            },
        };
        if let Err(more) = plan.validate() {
            for message in more {
                if !problems.iter().any(|p| p.message == message) {
                    problems.push(PlanProblem {
                        field: None,
                        message,
                    });
                }
            }
        }
        if problems.is_empty() {
            Ok(plan)
        } else {
            Err(problems)
        }
    }

    /// The load mode chosen, from the fields it uses.
    fn load_mode(&self, problems: &mut Vec<PlanProblem>) -> Option<LoadMode> {
        use DraftField as F;
        let count = whole(&self.requests_per_level).filter(|&n| n > 0);
        let levels = parse_levels(&self.levels);
        let mut problem = |field, message: Said| {
            problems.push(PlanProblem::at(field, message));
            None
        };
        match self.load {
            LoadKind::Ladder => match (levels, count) {
                (Ok(levels), Some(requests_per_level)) => Some(LoadMode::Ladder {
                    levels,
                    requests_per_level,
                }),
                (Err(message), _) => problem(F::Levels, message),
                (_, None) => problem(
                    F::RequestsPerLevel,
                    said!("requests per level must be a whole number above 0", "每档请求数必须是大于 0 的整数"),
                ),
            },
            LoadKind::Arrivals => match (number(&self.rate_rps).filter(|&r| r > 0.0), count) {
                (Some(rate_rps), Some(n_requests)) => Some(LoadMode::Arrivals {
                    rate_rps,
                    poisson: self.poisson,
                    n_requests,
                    seed: self.seed,
                }),
                (None, _) => problem(
                    F::Rate,
                    said!("the arrival rate must be a number of requests per second above 0", "到达速率必须是大于 0 的每秒请求数"),
                ),
                (_, None) => problem(
                    F::RequestsPerLevel,
                    said!(
                        "the number of arrivals (requests per level) must be a whole number above 0",
                        "到达数（每档请求数）必须是大于 0 的整数",
                    ),
                ),
            },
            LoadKind::Duration => match (levels, number(&self.duration_s).filter(|&s| s > 0.0)) {
                (Ok(levels), Some(seconds)) => Some(LoadMode::Duration {
                    concurrency: levels[0],
                    seconds,
                }),
                (Err(message), _) => problem(F::Levels, message),
                (_, None) => problem(
                    F::Duration,
                    said!("the duration must be a number of seconds above 0", "持续时间必须是大于 0 的秒数"),
                ),
            },
            LoadKind::SloSearch => match (whole(&self.search_max).filter(|&n| n > 0), count) {
                (Some(max_concurrency), Some(requests_per_probe)) => Some(LoadMode::SloSearch {
                    max_concurrency,
                    requests_per_probe,
                }),
                (None, _) => problem(
                    F::SearchMax,
                    said!("search up to a whole concurrency above 0", "搜索的最高并发必须是大于 0 的整数"),
                ),
                (_, None) => problem(
                    F::RequestsPerLevel,
                    said!("requests per probe (requests per level) must be a whole number above 0", "每次探测的请求数（每档请求数）必须是大于 0 的整数"),
                ),
            },
        }
    }

    /// The extra headers, never one that carries a key.
    fn headers(&self, problems: &mut Vec<PlanProblem>) -> Vec<(String, String)> {
        let mut headers = Vec::new();
        for line in self.extra_headers.lines().map(str::trim) {
            if line.is_empty() {
                continue;
            }
            let Some((name, value)) = line.split_once(':') else {
                problems.push(PlanProblem::at(
                    DraftField::ExtraHeaders,
                    said!(
                        "extra header `{line}` needs the form `Name: value`",
                        "附加请求头 `{line}` 需要写成 `Name: value` 的形式",
                    ),
                ));
                continue;
            };
            let name = name.trim();
            if is_secret_header(name, value) {
                problems.push(PlanProblem::at(
                    DraftField::ExtraHeaders,
                    secret_header_problem(name),
                ));
                continue;
            }
            headers.push((name.to_owned(), value.trim().to_owned()));
        }
        headers
    }

    fn body(&self, problems: &mut Vec<PlanProblem>) -> Map<String, Value> {
        if self.extra_body.trim().is_empty() {
            return Map::new();
        }
        let problem = match serde_json::from_str::<Value>(&self.extra_body) {
            Ok(Value::Object(map)) => return map,
            Ok(_) => said!(
                "extra body fields must be a JSON object, e.g. {{\"top_p\": 0.9}}",
                "附加请求体字段必须是 JSON 对象，例如 {{\"top_p\": 0.9}}",
            ),
            Err(err) => said!(
                "extra body fields are not valid JSON: {err}",
                "附加请求体字段不是有效的 JSON：{err}",
            ),
        };
        problems.push(PlanProblem::at(DraftField::ExtraBody, problem));
        Map::new()
    }
}

fn whole(text: &str) -> Option<u32> {
    text.trim().parse().ok()
}

/// A finite number.
fn number(text: &str) -> Option<f64> {
    text.trim().parse::<f64>().ok().filter(|x| x.is_finite())
}

/// An SLO limit in ms, or `None` when the field is empty.
fn limit(
    text: &str,
    field: DraftField,
    what: &str,
    problems: &mut Vec<PlanProblem>,
) -> Option<f64> {
    if text.trim().is_empty() {
        return None;
    }
    let ms = number(text).filter(|&ms| ms > 0.0);
    if ms.is_none() {
        problems.push(PlanProblem::at(
            field,
            said!(
                "the {what} limit must be a number of ms above 0, or empty for none",
                "{what} 上限必须是大于 0 的毫秒数，留空表示不设",
            ),
        ));
    }
    ms
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "http://127.0.0.1:8000/v1";

    fn plans() -> Vec<Plan> {
        let ladder = Plan::default_for_simulator(BASE);
        let mut arrivals = ladder.clone();
        arrivals.load = LoadMode::Arrivals {
            rate_rps: 0.35,
            poisson: true,
            n_requests: 40,
            seed: 987_654_321,
        };
        arrivals.prompt = PromptSpec::Tokens(512);
        arrivals.endpoint = EndpointKind::Completions;
        arrivals.auth = AuthStyle::ApiKeyHeader;
        arrivals.temperature = None;
        arrivals.include_usage = false;
        arrivals.extra_headers = vec![("X-Gateway-Route".into(), "east".into())];
        arrivals
            .extra_body
            .insert("top_p".into(), serde_json::json!(0.9));
        arrivals.slo.tpot_p95_ms = None;
        arrivals.slo.e2e_p95_ms = Some(5_000.0);
        let mut duration = ladder.clone();
        duration.load = LoadMode::Duration {
            concurrency: 12,
            seconds: 7.5,
        };
        duration.warmup_requests = 0;
        duration.timeout_s = 0.25;
        vec![ladder, arrivals, duration]
    }

    #[test]
    fn every_load_mode_round_trips_seed_included() {
        for plan in plans() {
            let draft = PlanDraft::from_plan(&plan);
            assert_eq!(draft.to_plan(&plan), Ok(plan.clone()), "{draft:#?}");
            // And on top of a base that differs in everything the form shows.
            let other = Plan::default_for_simulator("https://elsewhere/v1");
            let mut expected = plan.clone();
            expected.slo.e2e_p95_ms = other.slo.e2e_p95_ms;
            assert_eq!(draft.to_plan(&other), Ok(expected));
        }
    }

    #[test]
    fn a_repeated_ladder_round_trips_and_other_modes_run_once() {
        let mut plan = Plan::default_for_simulator(BASE);
        plan.repeat = 3;
        let mut draft = PlanDraft::from_plan(&plan);
        assert_eq!(draft.repeat, "3");
        assert_eq!(draft.to_plan(&plan), Ok(plan.clone()));
        draft.load = LoadKind::Duration;
        assert_eq!(
            draft.to_plan(&plan).unwrap().repeat,
            1,
            "the field is left as typed"
        );
        draft.load = LoadKind::Ladder;
        draft.repeat = "0".into();
        let problems = draft.to_plan(&plan).unwrap_err();
        assert_eq!(problems[0].field, Some(DraftField::Repeat));
    }

    #[test]
    fn an_ab_plan_round_trips_and_a_bad_target_is_named() {
        let mut plan = Plan::default_for_simulator(BASE);
        plan.targets = vec![TargetSpec {
            base_url: "https://other.example/v1".into(),
            model: "qwen3-8b".into(),
            extra_body: [("top_p".to_owned(), serde_json::json!(0.9))]
                .into_iter()
                .collect(),
        }];
        plan.ab_order = AbOrder::Requests;
        let mut draft = PlanDraft::from_plan(&plan);
        assert_eq!(draft.targets[0].model, "qwen3-8b");
        assert_eq!(draft.ab_order, AbOrder::Requests);
        assert_eq!(
            draft.to_plan(&plan),
            Ok(plan.clone()),
            "extra body kept from the base"
        );
        draft.targets[0].base_url = "ftp://nowhere".into();
        draft.targets[0].model = " ".into();
        let messages: Vec<String> = draft
            .to_plan(&plan)
            .unwrap_err()
            .into_iter()
            .map(|p| p.message.en)
            .collect();
        assert!(
            messages.iter().any(|m| m.starts_with("target B: ")),
            "{messages:?}"
        );
        assert!(
            messages.iter().any(|m| m == "target B: the model is empty"),
            "{messages:?}"
        );
    }

    #[test]
    fn an_slo_search_round_trips_with_its_error_rate_limit() {
        let mut plan = Plan::default_for_simulator(BASE);
        plan.load = LoadMode::SloSearch {
            max_concurrency: 48,
            requests_per_probe: 30,
        };
        plan.slo.error_rate_pct = Some(0.5);
        let draft = PlanDraft::from_plan(&plan);
        assert_eq!(draft.repeat, "1");
        assert_eq!(draft.load, LoadKind::SloSearch);
        assert_eq!(draft.search_max, "48");
        assert_eq!(draft.requests_per_level, "30");
        assert_eq!(draft.slo_error_pct, "0.5");
        assert_eq!(draft.to_plan(&plan), Ok(plan.clone()));
        // An SLO search needs a limit; a ceiling must be a whole number.
        let mut no_limit = draft.clone();
        no_limit.slo_ttft_ms = String::new();
        no_limit.slo_tpot_ms = String::new();
        no_limit.slo_error_pct = String::new();
        let problems = no_limit.to_plan(&plan).unwrap_err();
        assert!(problems.iter().any(|p| p.message.contains("needs a limit")));
        let mut bad = draft.clone();
        bad.search_max = "lots".into();
        bad.slo_error_pct = "120".into();
        let fields: Vec<_> = bad
            .to_plan(&plan)
            .unwrap_err()
            .iter()
            .filter_map(|p| p.field)
            .collect();
        assert!(fields.contains(&DraftField::SearchMax));
        assert!(fields.contains(&DraftField::SloErrorRate));
    }

    #[test]
    fn switching_modes_keeps_the_other_modes_fields() {
        let [ladder, arrivals, _] = <[Plan; 3]>::try_from(plans()).unwrap();
        let mut draft = PlanDraft::from_plan(&ladder);
        draft.fill(&arrivals);
        assert_eq!(draft.levels, "1,2,4,6", "the ladder is still there");
        assert_eq!(draft.requests_per_level, "40");
        draft.load = LoadKind::Ladder;
        let back = draft.to_plan(&ladder).unwrap();
        assert_eq!(
            back.load,
            LoadMode::Ladder {
                levels: vec![1, 2, 4, 6],
                requests_per_level: 40
            }
        );
        draft.load = LoadKind::Duration;
        assert_eq!(
            draft.to_plan(&ladder).unwrap().load,
            LoadMode::Duration {
                concurrency: 1,
                seconds: 30.0
            },
            "the default duration, at the first level"
        );
    }

    #[test]
    fn conversations_as_typed() {
        let base = Plan::default_for_simulator(BASE);
        let mut draft = PlanDraft::from_plan(&base);
        assert_eq!(
            (draft.turns.as_str(), draft.think_ms.as_str()),
            ("1", "1000")
        );
        assert_eq!(draft.to_plan(&base).unwrap().conversation, None);
        draft.turns = "3".into();
        draft.think_ms = "250".into();
        let plan = draft.to_plan(&base).unwrap();
        assert_eq!(
            plan.conversation,
            Some(Conversation {
                turns: 3,
                think_ms: 250.0
            })
        );
        let again = PlanDraft::from_plan(&plan);
        assert_eq!(
            (again.turns.as_str(), again.think_ms.as_str()),
            ("3", "250")
        );
        draft.turns = "three".into();
        let problems = draft.to_plan(&base).unwrap_err();
        assert_eq!(problems[0].field, Some(DraftField::Turns));
        draft.turns = "3".into();
        draft.think_ms = "-1".into();
        assert_eq!(
            draft.to_plan(&base).unwrap_err()[0].field,
            Some(DraftField::ThinkTime)
        );
    }

    #[test]
    fn where_the_server_s_metrics_are_read_is_kept() {
        let base = Plan::default_for_simulator(BASE);
        assert_eq!(
            base.metrics_url().as_deref(),
            Some("http://127.0.0.1:8000/metrics")
        );
        let mut draft = PlanDraft::from_plan(&base);
        assert!(draft.poll_metrics && draft.metrics_url.is_empty());
        draft.metrics_url = " http://127.0.0.1:9400/metrics ".into();
        let plan = draft.to_plan(&base).unwrap();
        assert_eq!(
            plan.metrics_url().as_deref(),
            Some("http://127.0.0.1:9400/metrics")
        );
        assert_eq!(
            PlanDraft::from_plan(&plan).metrics_url,
            "http://127.0.0.1:9400/metrics"
        );
        draft.poll_metrics = false;
        let plan = draft.to_plan(&base).unwrap();
        assert_eq!(plan.metrics_url(), None, "not read at all");
        let back: Plan = serde_json::from_str(&serde_json::to_string(&plan).unwrap()).unwrap();
        assert!(!back.poll_metrics);
        // A plan from before the setting reads its server's metrics.
        let old = serde_json::to_string(&base).unwrap();
        assert!(!old.contains("poll_metrics") && !old.contains("metrics_url"));
        assert!(serde_json::from_str::<Plan>(&old).unwrap().poll_metrics);
        // A plan edited by hand is checked as the form checks it.
        let mut bad = base.clone();
        bad.metrics_url = Some("file:///etc/passwd".into());
        assert!(bad.validate().is_err());
    }

    #[test]
    fn every_problem_is_named_with_its_field() {
        let mut draft = PlanDraft::from_plan(&Plan::default_for_simulator(BASE));
        draft.base_url = "ftp://x".into();
        draft.max_tokens = "0".into();
        draft.timeout_s = "soon".into();
        draft.warmup = "-1".into();
        draft.engine_workers = "9".into();
        draft.temperature = "3".into();
        draft.extra_headers = "X-Ok: 1\nAuthorization: Bearer sk-x\nbroken".into();
        draft.extra_body = "[1]".into();
        draft.prompt_tokens = "many".into();
        draft.levels = "1,x".into();
        draft.slo_ttft_ms = "-5".into();
        draft.metrics_url = "http://user:pw@h/metrics".into();
        let problems = draft
            .to_plan(&Plan::default_for_simulator(BASE))
            .unwrap_err();
        let fields: Vec<Option<DraftField>> = problems.iter().map(|p| p.field).collect();
        use DraftField as F;
        for field in [
            F::BaseUrl,
            F::MaxTokens,
            F::Timeout,
            F::Warmup,
            F::EngineWorkers,
            F::Temperature,
            F::ExtraHeaders,
            F::ExtraBody,
            F::PromptTokens,
            F::Levels,
            F::SloTtft,
            F::MetricsUrl,
        ] {
            assert!(fields.contains(&Some(field)), "{field:?} in {problems:#?}");
        }
        let text: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert!(text
            .iter()
            .any(|t| t.contains("put the key in the API key field")));
        assert!(text.iter().any(|t| t.contains("`broken` needs the form")));
        assert!(!text.iter().any(|t| t.contains("sk-x")), "{text:?}");
    }

    #[test]
    fn arrivals_and_duration_check_their_own_fields() {
        let plan = Plan::default_for_simulator(BASE);
        let mut draft = PlanDraft::from_plan(&plan);
        draft.load = LoadKind::Arrivals;
        draft.rate_rps = "0".into();
        let problems = draft.to_plan(&plan).unwrap_err();
        assert_eq!(problems[0].field, Some(DraftField::Rate));
        draft.rate_rps = "inf".into();
        assert!(draft.to_plan(&plan).is_err());
        draft.load = LoadKind::Duration;
        draft.duration_s = "".into();
        let problems = draft.to_plan(&plan).unwrap_err();
        assert_eq!(problems[0].field, Some(DraftField::Duration));
        // A ladder ignores both.
        draft.load = LoadKind::Ladder;
        assert!(draft.to_plan(&plan).is_ok());
    }
}
