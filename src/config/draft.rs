//! The plan draft as signals, one per field, so each input re-renders alone. All
//! checking and conversion is `tokenmeter_core::draft`'s; this only moves values
//! between the signals and a [`PlanDraft`].

use leptos::prelude::*;
use tokenmeter_core::{
    schema::{AbOrder, AuthStyle, EndpointKind, Order, Plan, PromptFile, PromptMode, Said},
    LengthDist, LengthsDraft, LoadKind, PlanDraft, TargetDraft,
};

/// One more target of an A/B plan on the form.
#[derive(Clone, Copy)]
pub struct TargetRow {
    pub id: u64,
    pub base_url: RwSignal<String>,
    pub model: RwSignal<String>,
    pub key: RwSignal<String>,
}

impl TargetRow {
    pub fn new(draft: TargetDraft) -> TargetRow {
        thread_local! {
            static NEXT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
        }
        TargetRow {
            id: NEXT.with(|n| {
                n.set(n.get() + 1);
                n.get()
            }),
            base_url: RwSignal::new(draft.base_url),
            model: RwSignal::new(draft.model),
            key: RwSignal::new(String::new()),
        }
    }

    fn draft(&self) -> TargetDraft {
        TargetDraft {
            base_url: self.base_url.get_untracked(),
            model: self.model.get_untracked(),
        }
    }

    /// The key typed for this target, if any.
    pub fn key(&self) -> Option<String> {
        Some(self.key.get_untracked().trim().to_owned()).filter(|k| !k.is_empty())
    }
}

/// The fields of lengths drawn per request (see [`LengthsDraft`]).
#[derive(Clone, Copy)]
pub struct LengthSignals {
    pub dist: RwSignal<LengthDist>,
    pub min: RwSignal<String>,
    pub max: RwSignal<String>,
    pub mean: RwSignal<String>,
    pub stdev: RwSignal<String>,
}

impl LengthSignals {
    fn new() -> LengthSignals {
        LengthSignals {
            dist: RwSignal::default(),
            min: RwSignal::default(),
            max: RwSignal::default(),
            mean: RwSignal::default(),
            stdev: RwSignal::default(),
        }
    }

    fn get_untracked(&self) -> LengthsDraft {
        LengthsDraft {
            dist: self.dist.get_untracked(),
            min: self.min.get_untracked(),
            max: self.max.get_untracked(),
            mean: self.mean.get_untracked(),
            stdev: self.stdev.get_untracked(),
        }
    }

    fn set(&self, draft: LengthsDraft) {
        let LengthsDraft {
            dist,
            min,
            max,
            mean,
            stdev,
        } = draft;
        self.dist.set(dist);
        self.min.set(min);
        self.max.set(max);
        self.mean.set(mean);
        self.stdev.set(stdev);
    }
}

/// The plan panel's fields.
#[derive(Clone, Copy)]
pub struct DraftSignals {
    pub base_url: RwSignal<String>,
    pub model: RwSignal<String>,
    pub prompt: RwSignal<String>,
    pub prompt_mode: RwSignal<PromptMode>,
    pub prefix_tokens: RwSignal<String>,
    pub prefix_groups: RwSignal<String>,
    /// The prompt file loaded (or named by a link's plan), and the order of drawing.
    pub prompt_file: RwSignal<Option<PromptFile>>,
    pub prompt_order: RwSignal<Order>,
    pub output_lengths: LengthSignals,
    pub input_lengths: LengthSignals,
    pub force_output_lengths: RwSignal<bool>,
    pub max_tokens: RwSignal<String>,
    pub timeout_s: RwSignal<String>,
    pub levels: RwSignal<String>,
    pub requests_per_level: RwSignal<String>,
    pub warmup: RwSignal<String>,
    pub engine_workers: RwSignal<String>,
    pub endpoint: RwSignal<EndpointKind>,
    pub auth: RwSignal<AuthStyle>,
    pub temperature: RwSignal<String>,
    pub include_usage: RwSignal<bool>,
    pub turns: RwSignal<String>,
    pub think_ms: RwSignal<String>,
    pub poll_metrics: RwSignal<bool>,
    pub metrics_url: RwSignal<String>,
    pub extra_headers: RwSignal<String>,
    pub extra_body: RwSignal<String>,
    pub prompt_tokens: RwSignal<String>,
    pub load: RwSignal<LoadKind>,
    pub rate_rps: RwSignal<String>,
    pub poisson: RwSignal<bool>,
    /// Not shown: kept from the plan so that an imported schedule stays the same.
    seed: StoredValue<u64>,
    pub duration_s: RwSignal<String>,
    pub search_max: RwSignal<String>,
    pub repeat: RwSignal<String>,
    /// An A/B plan's other targets, a row each (keys included: the page's memory
    /// only, never the plan's).
    pub targets: RwSignal<Vec<TargetRow>>,
    pub ab_order: RwSignal<AbOrder>,
    pub slo_ttft_ms: RwSignal<String>,
    pub slo_tpot_ms: RwSignal<String>,
    pub slo_error_pct: RwSignal<String>,
}

impl DraftSignals {
    pub fn new(draft: PlanDraft) -> DraftSignals {
        let signals = DraftSignals {
            base_url: RwSignal::default(),
            model: RwSignal::default(),
            prompt: RwSignal::default(),
            prompt_mode: RwSignal::default(),
            prefix_tokens: RwSignal::default(),
            prefix_groups: RwSignal::default(),
            prompt_file: RwSignal::default(),
            prompt_order: RwSignal::default(),
            output_lengths: LengthSignals::new(),
            input_lengths: LengthSignals::new(),
            force_output_lengths: RwSignal::default(),
            max_tokens: RwSignal::default(),
            timeout_s: RwSignal::default(),
            levels: RwSignal::default(),
            requests_per_level: RwSignal::default(),
            warmup: RwSignal::default(),
            engine_workers: RwSignal::default(),
            endpoint: RwSignal::default(),
            auth: RwSignal::default(),
            temperature: RwSignal::default(),
            include_usage: RwSignal::default(),
            turns: RwSignal::default(),
            think_ms: RwSignal::default(),
            poll_metrics: RwSignal::default(),
            metrics_url: RwSignal::default(),
            extra_headers: RwSignal::default(),
            extra_body: RwSignal::default(),
            prompt_tokens: RwSignal::default(),
            load: RwSignal::default(),
            rate_rps: RwSignal::default(),
            poisson: RwSignal::default(),
            seed: StoredValue::default(),
            duration_s: RwSignal::default(),
            search_max: RwSignal::default(),
            repeat: RwSignal::default(),
            targets: RwSignal::default(),
            ab_order: RwSignal::default(),
            slo_ttft_ms: RwSignal::default(),
            slo_tpot_ms: RwSignal::default(),
            slo_error_pct: RwSignal::default(),
        };
        signals.set(draft);
        signals
    }

    /// The draft as the fields hold it now (not tracked).
    pub fn get_untracked(&self) -> PlanDraft {
        PlanDraft {
            base_url: self.base_url.get_untracked(),
            model: self.model.get_untracked(),
            prompt: self.prompt.get_untracked(),
            prompt_mode: self.prompt_mode.get_untracked(),
            prefix_tokens: self.prefix_tokens.get_untracked(),
            prefix_groups: self.prefix_groups.get_untracked(),
            prompt_file: self.prompt_file.get_untracked(),
            prompt_order: self.prompt_order.get_untracked(),
            output_lengths: self.output_lengths.get_untracked(),
            input_lengths: self.input_lengths.get_untracked(),
            force_output_lengths: self.force_output_lengths.get_untracked(),
            max_tokens: self.max_tokens.get_untracked(),
            timeout_s: self.timeout_s.get_untracked(),
            levels: self.levels.get_untracked(),
            requests_per_level: self.requests_per_level.get_untracked(),
            warmup: self.warmup.get_untracked(),
            engine_workers: self.engine_workers.get_untracked(),
            endpoint: self.endpoint.get_untracked(),
            auth: self.auth.get_untracked(),
            temperature: self.temperature.get_untracked(),
            include_usage: self.include_usage.get_untracked(),
            turns: self.turns.get_untracked(),
            think_ms: self.think_ms.get_untracked(),
            poll_metrics: self.poll_metrics.get_untracked(),
            metrics_url: self.metrics_url.get_untracked(),
            extra_headers: self.extra_headers.get_untracked(),
            extra_body: self.extra_body.get_untracked(),
            prompt_tokens: self.prompt_tokens.get_untracked(),
            load: self.load.get_untracked(),
            rate_rps: self.rate_rps.get_untracked(),
            poisson: self.poisson.get_untracked(),
            seed: self.seed.get_value(),
            duration_s: self.duration_s.get_untracked(),
            search_max: self.search_max.get_untracked(),
            repeat: self.repeat.get_untracked(),
            targets: self
                .targets
                .with_untracked(|rows| rows.iter().map(TargetRow::draft).collect()),
            ab_order: self.ab_order.get_untracked(),
            slo_ttft_ms: self.slo_ttft_ms.get_untracked(),
            slo_tpot_ms: self.slo_tpot_ms.get_untracked(),
            slo_error_pct: self.slo_error_pct.get_untracked(),
        }
    }

    /// Shows a plan (an import, a shared link); the fields its load mode does not
    /// use keep what they had.
    pub fn fill(&self, plan: &Plan) {
        let mut draft = self.get_untracked();
        draft.fill(plan);
        self.set(draft);
    }

    /// Puts every field of `draft` into its signal. (Destructured, so that a field
    /// added to the draft cannot be forgotten here.)
    // Long: every field of the form set from a plan, a line each.
    fn set(&self, draft: PlanDraft) {
        let PlanDraft {
            base_url,
            model,
            prompt,
            prompt_mode,
            prefix_tokens,
            prefix_groups,
            prompt_file,
            prompt_order,
            output_lengths,
            input_lengths,
            force_output_lengths,
            max_tokens,
            timeout_s,
            levels,
            requests_per_level,
            warmup,
            engine_workers,
            endpoint,
            auth,
            temperature,
            include_usage,
            turns,
            think_ms,
            poll_metrics,
            metrics_url,
            extra_headers,
            extra_body,
            prompt_tokens,
            load,
            rate_rps,
            poisson,
            seed,
            duration_s,
            search_max,
            repeat,
            targets,
            ab_order,
            slo_ttft_ms,
            slo_tpot_ms,
            slo_error_pct,
        } = draft;
        self.base_url.set(base_url);
        self.model.set(model);
        self.prompt.set(prompt);
        self.prompt_mode.set(prompt_mode);
        self.prefix_tokens.set(prefix_tokens);
        self.prefix_groups.set(prefix_groups);
        self.prompt_file.set(prompt_file);
        self.prompt_order.set(prompt_order);
        self.output_lengths.set(output_lengths);
        self.input_lengths.set(input_lengths);
        self.force_output_lengths.set(force_output_lengths);
        self.max_tokens.set(max_tokens);
        self.timeout_s.set(timeout_s);
        self.levels.set(levels);
        self.requests_per_level.set(requests_per_level);
        self.warmup.set(warmup);
        self.engine_workers.set(engine_workers);
        self.endpoint.set(endpoint);
        self.auth.set(auth);
        self.temperature.set(temperature);
        self.include_usage.set(include_usage);
        self.turns.set(turns);
        self.think_ms.set(think_ms);
        self.poll_metrics.set(poll_metrics);
        self.metrics_url.set(metrics_url);
        self.extra_headers.set(extra_headers);
        self.extra_body.set(extra_body);
        self.prompt_tokens.set(prompt_tokens);
        self.load.set(load);
        self.rate_rps.set(rate_rps);
        self.poisson.set(poisson);
        self.seed.set_value(seed);
        self.duration_s.set(duration_s);
        self.search_max.set(search_max);
        self.repeat.set(repeat);
        self.targets
            .set(targets.into_iter().map(TargetRow::new).collect());
        self.ab_order.set(ab_order);
        self.slo_ttft_ms.set(slo_ttft_ms);
        self.slo_tpot_ms.set(slo_tpot_ms);
        self.slo_error_pct.set(slo_error_pct);
    }

    /// The plan the fields describe, on top of `base`; every problem as a sentence.
    pub fn plan(&self, base: &Plan) -> Result<Plan, Vec<Said>> {
        self.get_untracked()
            .to_plan(base)
            .map_err(|problems| problems.into_iter().map(|p| p.message).collect())
    }
}
