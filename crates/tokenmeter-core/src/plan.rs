//! The plan of a run: what to call, with what, how hard, and what counts as good.
//!
//! Two formats are read:
//! - the reference article's `config.json` (`base_url`, `api_key`, `model`, `prompt`,
//!   `max_tokens`, `temperature`, `concurrency_levels`, `requests_per_level`,
//!   `timeout` in seconds), as-is;
//! - our own, versioned [`Plan`] (`"schema": 1`), which has everything the article's
//!   has and more.
//!
//! The API key is never part of a plan: [`import_config`] hands it back separately,
//! so nothing that serialises a plan can leak it.
//!
//! (Over 400 lines: the plan's shape, its checks and every way one is read belong
//! together, since a field added to one must be added to the others.)

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{
    error::{Said, Words},
    prompts::{Format, Prompt, PromptFile, Prompts},
    said,
    stream::{request_body, BodySpec, EndpointKind},
    tagged::{need, WireError},
};

/// The plan format version this crate writes.
pub(crate) const PLAN_SCHEMA: u32 = 1;

/// The longest per-request timeout, seconds (a day): browsers' timers stop at
/// 2^31 − 1 ms, and no stream is worth waiting longer for.
pub(crate) const MAX_TIMEOUT_S: f64 = 86_400.0;
/// The longest generated prompt, tokens: a plan from a link must not be able to
/// make the page build gigabytes of text.
pub(crate) const MAX_PROMPT_TOKENS: u32 = 131_072;
/// The longest output a drawn length may ask for.
pub(crate) const MAX_OUTPUT_TOKENS: u32 = 131_072;
/// The most requests in one level (or arrivals in one run): every record is kept.
pub(crate) const MAX_REQUESTS_PER_LEVEL: u32 = 100_000;
/// The most measured requests one run sends: every request is a record the page
/// holds, keeps and exports. A run bounded by time stops at it (and says so).
pub(crate) const MAX_REQUESTS_PER_RUN: u32 = 100_000;
/// The most warm-up requests (sent one after another before the first level).
pub(crate) const MAX_WARMUP_REQUESTS: u32 = 100;
/// The most targets of an A/B plan (A included).
pub const MAX_TARGETS: usize = 4;
/// The most passes of a repeated ladder.
pub(crate) const MAX_REPEAT: u32 = 20;
/// The most engine workers one run spreads a level over (a tab's share of a
/// large machine; each worker holds a copy of the module's memory).
pub const MAX_ENGINE_WORKERS: u32 = 8;
/// Streams one engine worker takes before a level is spread over another, when
/// the plan leaves the count to the run: on a 2-core machine one worker stamped
/// every event of 16 streams on time, and at 64 its loop stalled up to 58 ms
/// (`cargo xtask bench load`, 2026-12-06).
pub(crate) const STREAMS_PER_ENGINE_WORKER: u32 = 32;
/// The highest concurrency an SLO search may reach.
pub(crate) const MAX_SEARCH_CONCURRENCY: u32 = 4_096;

/// The most probes an SLO search (see [`crate::search`]) from `start` to `max`
/// can take: the doublings, then halving the last gap.
pub(crate) fn max_probes(start: u32, max: u32) -> u32 {
    let start = start.max(1);
    let max = max.max(start);
    let mut steps = 1;
    let mut c = start;
    while c < max {
        c = c.saturating_mul(2).min(max);
        steps += 1;
    }
    // The last doubling left a gap of at most half the ceiling to bisect.
    let gap = (max / 2).max(1);
    steps + u32::BITS - gap.leading_zeros()
}

/// The requests a probe at `concurrency` sends: the plan's count, and at least two
/// waves, so that the level holds its concurrency.
pub(crate) fn requests_per_probe(concurrency: u32, requests: u32) -> u32 {
    requests.max(concurrency.saturating_mul(2))
}

/// Latency limits: the verdict's SLO and the goodput's per-request test.
///
/// The verdict checks the p95 of a level against each limit; goodput counts the
/// requests whose own TTFT, TPOT and E2E are within the limits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Slo {
    /// The most p95 TTFT a level may have, ms.
    #[serde(default)]
    pub ttft_p95_ms: Option<f64>,
    /// The most p95 TPOT a level may have, ms.
    #[serde(default)]
    pub tpot_p95_ms: Option<f64>,
    /// The most p95 end-to-end latency a level may have, ms.
    #[serde(default)]
    pub e2e_p95_ms: Option<f64>,
    /// The most failed requests a level may have, percent of its requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_rate_pct: Option<f64>,
}

impl Slo {
    /// Whether any limit is set.
    pub fn is_set(&self) -> bool {
        self.ttft_p95_ms.is_some()
            || self.tpot_p95_ms.is_some()
            || self.e2e_p95_ms.is_some()
            || self.error_rate_pct.is_some()
    }

    /// True when one request's figures (µs) are within every set limit. A request
    /// without a TPOT (a single token) passes the TPOT limit.
    pub fn is_met_by(&self, ttft_us: u64, tpot_us: Option<f64>, e2e_us: u64) -> bool {
        let within = |limit_ms: Option<f64>, value_us: f64| {
            limit_ms.is_none_or(|limit| value_us <= limit * 1e3)
        };
        within(self.ttft_p95_ms, ttft_us as f64)
            && tpot_us.is_none_or(|t| within(self.tpot_p95_ms, t))
            && within(self.e2e_p95_ms, e2e_us as f64)
    }
}

/// How the prompt is made.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptSpec {
    /// This exact text.
    Text(String),
    /// A generated English text of about this many tokens (see [`generated_prompt`]).
    Tokens(u32),
}

/// What each request sends as its prompt.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptMode {
    /// Every request its own prompt: a short header of its own ([`unique_header`],
    /// seeded, counted in a generated prompt's length) in front of the plan's
    /// prompt, so that no request reads another's prompt cache. What a service's
    /// users send, and what prefill costs them.
    #[default]
    Unique,
    /// Every request the same prompt. A server with a prompt cache (vLLM, SGLang,
    /// llama.cpp and hosted APIs keep one by default) answers all but the first
    /// from it: TTFT is then a cache hit's.
    Same,
    /// A prefix of the plan's `prefix_tokens` shared on purpose (by all requests,
    /// or by each of `prefix_groups` groups: request `id` is in group
    /// `id % groups`), then each request's own header and the prompt: what a long
    /// system prompt or a shared document costs once cached.
    SharedPrefix,
    /// The user's own prompts, from a file ([`Plan::prompt_file`] says which; the
    /// prompts themselves go to the engine beside the plan, see
    /// [`crate::prompts`]), each sent as written: what they share, a server may
    /// cache, as it would for their users.
    File,
}

impl PromptMode {
    /// Plans written before the mode existed sent one prompt to every request.
    fn before_it_existed() -> PromptMode {
        PromptMode::Same
    }
}

/// The words of a [`unique_header`]: sixteen, each one token (with its leading
/// space) in the GPT, Llama and Qwen vocabularies.
const HEADER_WORDS: [&str; 16] = [
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "red", "blue",
    "green", "black", "white", "gold",
];

/// About how many tokens a [`unique_header`] is: eight words, a full stop and a
/// line break.
pub(crate) const UNIQUE_HEADER_TOKENS: u32 = 10;

/// The header of request `request_id` of a run with `seed`: eight words chosen by
/// the nibbles of a mix of the id keyed by the seed. For one seed the mix is a
/// bijection of the id's low 32 bits, so two requests of a run never share a
/// header; two seeds, even neighbours, give unrelated headers, so runs do not
/// share them either; and a run's prompts are reproducible from its seed. It
/// leads the prompt: the requests differ from their first tokens on, where a
/// prefix cache would otherwise match.
pub fn unique_header(seed: u64, request_id: u64) -> String {
    let (low, high) = (seed as u32, (seed >> 32) as u32);
    let key_in = mix32(low ^ 0x9e37_79b9) ^ high;
    let key_out = mix32(high ^ 0x85eb_ca6b);
    let mut bits = mix32(request_id as u32 ^ key_in) ^ key_out;
    let mut header = String::with_capacity(48);
    for i in 0..8 {
        if i > 0 {
            header.push(' ');
        }
        header.push_str(HEADER_WORDS[(bits & 15) as usize]);
        bits >>= 4;
    }
    header.push_str(".\n");
    header
}

/// Chris Wellons' `lowbias32`: each step (xor-shift, multiply by an odd number) is
/// a bijection on 32 bits, so the whole is.
fn mix32(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^= x >> 16;
    x
}

/// The body of each request of a plan, made once per run: one text for every
/// request, or, with unique prompts, one text around each request's own header.
#[derive(Clone, Debug, PartialEq)]
pub struct Bodies {
    /// The body up to where a request's header goes (the whole body when shared).
    head: String,
    tail: String,
    /// `Some(seed)` when every request has its own header.
    seed: Option<u64>,
    /// A shared prefix's text per group (escaped for JSON), before the header.
    prefixes: Vec<String>,
    /// With lengths that vary, the plan and the seed: each request's body is made
    /// whole (its own `max_tokens`, its own generated prompt).
    varying: Option<(Box<Plan>, u64)>,
    /// Every request's `max_tokens` when it is one for all (unknown for a body
    /// given as it is).
    max_tokens: Option<u32>,
    /// With prompts from a file: the file's prompts, the plan and the seed (each
    /// request's body is made whole).
    file: Option<(Arc<Prompts>, Box<Plan>, u64)>,
}

/// How a length in tokens is drawn for each request: uniform from `min` to `max`,
/// or, with `mean` and `stdev`, normal around `mean` and clipped to them. Drawn
/// from the run's seed and the request's id, so a run's lengths are reproducible
/// and each request's is its own whatever order the requests go in.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Lengths {
    /// The least, tokens.
    pub min: u32,
    /// The most, tokens.
    pub max: u32,
    /// The mean of a normal draw, tokens; absent: uniform.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean: Option<f64>,
    /// The standard deviation of a normal draw, tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdev: Option<f64>,
}

/// Keeps the output and the input lengths of one request apart.
/// What tells a request's output length's draw from its input length's.
pub(crate) const OUTPUT_SALT: u64 = 0x6f75_7470_7574;
pub(crate) const INPUT_SALT: u64 = 0x0069_6e70_7574;

impl Lengths {
    /// The length of request `request_id` in a run with `seed` (`salt` tells the
    /// output's from the input's). A normal draw sums twelve uniforms (Irwin and
    /// Hall: mean 6, variance 1), which needs nothing but additions, so any client
    /// that draws the same way gets the same lengths.
    pub fn draw(&self, seed: u64, request_id: u64, salt: u64) -> u32 {
        let mut state = seed ^ salt ^ request_id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut uniform = move || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
        };
        let (min, max) = (self.min.min(self.max), self.max.max(self.min));
        let value = match (self.mean, self.stdev) {
            (Some(mean), Some(stdev)) => {
                let z = (0..12).map(|_| uniform()).sum::<f64>() - 6.0;
                (mean + stdev * z + 0.5).floor()
            }
            _ => f64::from(min) + (uniform() * (f64::from(max - min) + 1.0)).floor(),
        };
        value.clamp(f64::from(min), f64::from(max)) as u32
    }

    /// What is wrong with these lengths of `what`, at most `cap` tokens.
    fn problems(&self, what: Words, cap: u32) -> Vec<Said> {
        let mut problems = Vec::new();
        let (min, max, what_en, what_zh) = (self.min, self.max, what.en, what.zh);
        if min == 0 || min > max || max > cap {
            problems.push(said!(
                "{what_en} lengths need 1 ≤ min ≤ max ≤ {cap} (min {min}, max {max})",
                "{what_zh}长度需满足 1 ≤ min ≤ max ≤ {cap}（min {min}，max {max}）",
            ));
        }
        match (self.mean, self.stdev) {
            (None, None) => {}
            (Some(mean), Some(stdev)) if mean.is_finite() && stdev.is_finite() && stdev >= 0.0 => {
            }
            _ => problems.push(said!(
                "a normal distribution of {what_en} lengths needs a mean and a standard deviation of 0 or more",
                "{what_zh}长度的正态分布需要均值和不小于 0 的标准差",
            )),
        }
        problems
    }
}

/// The most groups a shared prefix may have.
pub(crate) const MAX_PREFIX_GROUPS: u32 = 1_000;

/// The shared prefix of `group` in a run with `seed`: a header of its own (so
/// groups, and runs, share nothing) then generated words, about `n_tokens` in all,
/// ending in a blank line before the request's own header.
pub(crate) fn shared_prefix(seed: u64, group: u32, n_tokens: u32) -> String {
    // Another key than the requests' headers: a group's header is no request's.
    let header = unique_header(seed ^ 0x5eed_0f9c_u64.rotate_left(29), u64::from(group));
    let words = generated_prompt(n_tokens.saturating_sub(UNIQUE_HEADER_TOKENS + 1).max(1));
    format!("{header}{words}\n\n")
}

/// Where a request's header goes, while the body is serialised: a text no prompt
/// holds, written by JSON as `\u0001tm-header\u0001`.
const HEADER_MARK: &str = "\u{1}tm-header\u{1}";
const HEADER_MARK_JSON: &str = "\\u0001tm-header\\u0001";

impl Bodies {
    /// The bodies of `plan`'s requests in a run whose seed is `seed`.
    pub fn new(plan: &Plan, seed: u64) -> Bodies {
        if plan.lengths_vary() {
            return Bodies {
                head: String::new(),
                tail: String::new(),
                seed: Some(seed),
                prefixes: Vec::new(),
                varying: Some((Box::new(plan.clone()), seed)),
                max_tokens: None,
                file: None,
            };
        }
        let mut spec = plan.body_spec();
        if plan.prompt_mode == PromptMode::Same {
            return Bodies {
                head: request_body(&spec).to_string(),
                tail: String::new(),
                seed: None,
                prefixes: Vec::new(),
                varying: None,
                max_tokens: Some(plan.max_tokens),
                file: None,
            };
        }
        let prefixes = match plan.prompt_mode {
            PromptMode::SharedPrefix => (0..plan.prefix_groups.clamp(1, MAX_PREFIX_GROUPS))
                .map(|g| json_escaped(&shared_prefix(seed, g, plan.prefix_tokens)))
                .collect(),
            _ => Vec::new(),
        };
        spec.prompt.insert_str(0, HEADER_MARK);
        let json = request_body(&spec).to_string();
        let at = json
            .find(HEADER_MARK_JSON)
            .expect("the mark is in the body, escaped as serde_json escapes it");
        Bodies {
            head: json[..at].to_owned(),
            tail: json[at + HEADER_MARK_JSON.len()..].to_owned(),
            seed: Some(seed),
            prefixes,
            varying: None,
            max_tokens: Some(plan.max_tokens),
            file: None,
        }
    }

    /// The bodies of `plan`'s requests sending the prompts of a file (the plan's
    /// mode is `file`), in a run whose seed is `seed`.
    pub fn with_prompts(plan: &Plan, seed: u64, prompts: Arc<Prompts>) -> Bodies {
        Bodies {
            head: String::new(),
            tail: String::new(),
            seed: Some(seed),
            prefixes: Vec::new(),
            varying: None,
            max_tokens: None,
            file: Some((prompts, Box::new(plan.clone()), seed)),
        }
    }

    /// One body for every request, as it is (a client's own, or a test's).
    pub fn fixed(body: String) -> Bodies {
        Bodies {
            head: body,
            tail: String::new(),
            seed: None,
            prefixes: Vec::new(),
            varying: None,
            max_tokens: None,
            file: None,
        }
    }

    /// The output length request `request_id` asks for, when known.
    pub fn asked_tokens(&self, request_id: u64) -> Option<u32> {
        if let Some((_, plan, seed)) = &self.file {
            return Some(plan.asked_output_tokens(*seed, request_id));
        }
        match &self.varying {
            Some((plan, seed)) => Some(plan.asked_output_tokens(*seed, request_id)),
            None => self.max_tokens,
        }
    }

    /// The one body every request sends, when they all send the same.
    pub fn shared(&self) -> Option<&str> {
        self.seed.is_none().then_some(self.head.as_str())
    }

    /// The body of request `request_id`. (The header is plain ASCII words: it
    /// needs no JSON escaping.)
    pub fn body(&self, request_id: u64) -> String {
        if let Some((prompts, plan, seed)) = &self.file {
            let order = plan
                .prompt_file
                .as_ref()
                .map(|f| f.order)
                .unwrap_or_default();
            let prompt = prompts.for_request(order, *seed, request_id);
            return request_body(&plan.file_request_spec(*seed, request_id, prompt)).to_string();
        }
        if let Some((plan, seed)) = &self.varying {
            let front = match plan.prompt_mode {
                PromptMode::Same | PromptMode::File => String::new(),
                PromptMode::Unique => unique_header(*seed, request_id),
                PromptMode::SharedPrefix => {
                    let groups = u64::from(plan.prefix_groups.clamp(1, MAX_PREFIX_GROUPS));
                    let group = (request_id % groups) as u32;
                    shared_prefix(*seed, group, plan.prefix_tokens)
                        + &unique_header(*seed, request_id)
                }
            };
            return request_body(&plan.request_spec(*seed, request_id, &front)).to_string();
        }
        match self.seed {
            None => self.head.clone(),
            Some(seed) => {
                let header = unique_header(seed, request_id);
                let prefix = match self.prefixes.len() {
                    0 => "",
                    n => &self.prefixes[(request_id % n as u64) as usize],
                };
                let mut body = String::with_capacity(
                    self.head.len() + prefix.len() + header.len() + self.tail.len(),
                );
                body.push_str(&self.head);
                body.push_str(prefix);
                body.push_str(&json_escaped(&header));
                body.push_str(&self.tail);
                body
            }
        }
    }

    /// The text around each request's header, for a client that makes the bodies
    /// itself (the Locust file): `(head, tail)`, the seed when there is a header,
    /// and the shared prefixes by group (escaped for JSON; empty for none).
    pub fn parts(&self) -> (&str, &str, Option<u64>, &[String]) {
        (&self.head, &self.tail, self.seed, &self.prefixes)
    }
}

/// `text` as it stands inside a JSON string (without the quotes).
fn json_escaped(text: &str) -> String {
    let quoted = serde_json::to_string(text).expect("a string serialises");
    quoted[1..quoted.len() - 1].to_owned()
}

/// A plan of prompts from a file that names none.
pub(crate) fn no_prompt_file() -> Said {
    said!(
        "prompts from a file: choose the file (a prompt per line, JSON lines of prompt or messages, or ShareGPT JSON)",
        "来自文件的提示词：请选择文件（每行一个提示词、包含 prompt 或 messages 的 JSON 行，或 ShareGPT JSON）",
    )
}

/// How load is applied.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "mode", try_from = "LoadModeWire")]
pub enum LoadMode {
    /// Closed loop: for each level, keep `concurrency` requests in flight until
    /// `requests_per_level` have been sent.
    Ladder {
        /// The concurrency of each level, in order.
        levels: Vec<u32>,
        /// Requests each level sends.
        requests_per_level: u32,
    },
    /// Open loop: requests arrive at `rate_rps` (evenly, or as a Poisson process)
    /// whatever the server's speed, until `n_requests` have been sent.
    Arrivals {
        /// Arrivals per second.
        rate_rps: f64,
        /// A Poisson process; else evenly spaced.
        poisson: bool,
        /// Requests sent in all.
        n_requests: u32,
        /// Seed of the Poisson arrivals, so a plan is reproducible.
        seed: u64,
    },
    /// Closed loop at one concurrency for a fixed time.
    Duration {
        /// Requests kept in flight.
        concurrency: u32,
        /// How long, seconds.
        seconds: f64,
    },
    /// The highest concurrency within the SLO, searched for (see
    /// [`crate::search`]): closed-loop probes from 1, doubling up to
    /// `max_concurrency`, then bisecting; each probe sends `requests_per_probe`
    /// (at least two waves).
    SloSearch {
        /// The highest concurrency a probe may have.
        max_concurrency: u32,
        /// Requests each probe sends.
        requests_per_probe: u32,
    },
}

/// Every field of every [`LoadMode`], read in one pass (see [`crate::tagged`]).
#[derive(Deserialize)]
struct LoadModeWire {
    mode: String,
    levels: Option<Vec<u32>>,
    requests_per_level: Option<u32>,
    rate_rps: Option<f64>,
    poisson: Option<bool>,
    n_requests: Option<u32>,
    seed: Option<u64>,
    concurrency: Option<u32>,
    seconds: Option<f64>,
    max_concurrency: Option<u32>,
    requests_per_probe: Option<u32>,
}

impl TryFrom<LoadModeWire> for LoadMode {
    type Error = WireError;

    fn try_from(w: LoadModeWire) -> Result<Self, WireError> {
        let m = w.mode.as_str();
        Ok(match m {
            "ladder" => LoadMode::Ladder {
                levels: need(w.levels, m, "levels")?,
                requests_per_level: need(w.requests_per_level, m, "requests_per_level")?,
            },
            "arrivals" => LoadMode::Arrivals {
                rate_rps: need(w.rate_rps, m, "rate_rps")?,
                poisson: need(w.poisson, m, "poisson")?,
                n_requests: need(w.n_requests, m, "n_requests")?,
                seed: need(w.seed, m, "seed")?,
            },
            "duration" => LoadMode::Duration {
                concurrency: need(w.concurrency, m, "concurrency")?,
                seconds: need(w.seconds, m, "seconds")?,
            },
            "slo_search" => LoadMode::SloSearch {
                max_concurrency: need(w.max_concurrency, m, "max_concurrency")?,
                requests_per_probe: need(w.requests_per_probe, m, "requests_per_probe")?,
            },
            _ => return Err(WireError::UnknownTag { tag: w.mode }),
        })
    }
}

/// Another endpoint of an A/B plan: the plan with this base URL, model and extra
/// body fields (over the plan's). Its key is kept apart, like the plan's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TargetSpec {
    /// The target's base URL, normalised.
    pub base_url: String,
    /// The target's model.
    pub model: String,
    /// Body fields of this target's, over the plan's.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extra_body: Map<String, Value>,
}

/// How an A/B plan shares each level between its targets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AbOrder {
    /// Each level runs for every target in turn: A1, B1, A2, B2, …
    #[default]
    Levels,
    /// Each level runs every target at once, their requests interleaved: each
    /// target keeps the level's concurrency and sends the level's requests.
    Requests,
}

impl AbOrder {
    fn is_levels(&self) -> bool {
        *self == AbOrder::Levels
    }
}

/// How the key is sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthStyle {
    /// `Authorization: Bearer <key>` (OpenAI and most servers).
    #[default]
    Bearer,
    /// `api-key: <key>` (Azure OpenAI and some gateways).
    ApiKeyHeader,
    /// `x-api-key: <key>` (Anthropic).
    XApiKey,
}

/// Conversations of several turns, as a chat's users have them: each of a level's
/// lanes holds one conversation at a time; each turn sends the conversation so
/// far (the user's messages and the model's real answers) and the next user
/// message, `think_ms` after the answer before it ended. Each conversation's first
/// message is its own (a header of its own, so conversations share no cache), and
/// so is each later one; what a turn shares with the turns before it is the
/// conversation itself, which a server's prompt cache holds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    /// Requests per conversation (2 or more).
    pub turns: u32,
    /// Between an answer's end and the next turn's request, ms: the user reading
    /// and typing.
    #[serde(default)]
    pub think_ms: f64,
}

/// The most turns a conversation may have.
pub(crate) const MAX_TURNS: u32 = 64;
/// The longest think time, ms (ten minutes).
pub(crate) const MAX_THINK_MS: f64 = 600_000.0;
/// Salts the headers of conversations' messages apart from requests' own.
const TURN_SALT: u64 = 0x7075_726e_5f73_616c;

/// The Messages API version tokenmeter speaks (its `anthropic-version` header).
pub(crate) const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Everything about a run except the key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The plan's format ([`PLAN_SCHEMA`]).
    pub schema: u32,
    /// Normalised: no trailing slash, no endpoint path.
    pub base_url: String,
    /// The model each request names.
    pub model: String,
    /// Which streaming API the requests call.
    #[serde(default)]
    pub endpoint: EndpointKind,
    /// The prompt: a text, or a generated one of a length.
    pub prompt: PromptSpec,
    /// Whether each request sends a prompt of its own (absent in plans written
    /// before it existed, which sent one prompt to every request).
    #[serde(default = "PromptMode::before_it_existed")]
    pub prompt_mode: PromptMode,
    /// What a run's unique prompts are made from: the run's own seed when absent
    /// (each run then sends prompts no earlier run sent), the one used kept in the
    /// run document's plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// With `prompt_mode` `shared_prefix`: the prefix's length, about, in tokens.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub prefix_tokens: u32,
    /// With `prompt_mode` `shared_prefix`: how many groups share a prefix each.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub prefix_groups: u32,
    /// With `prompt_mode` `file`: which file, and how requests draw from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_file: Option<PromptFile>,
    /// Output tokens each request asks for (`max_tokens`), when lengths are not drawn.
    pub max_tokens: u32,
    /// Each request's output length drawn from these (its `max_tokens`); absent:
    /// `max_tokens` for every request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_lengths: Option<Lengths>,
    /// Each request's generated prompt of a length drawn from these; absent: the
    /// prompt's own. Only for a generated prompt (`prompt.tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_lengths: Option<Lengths>,
    /// Ask the server for exactly the output length asked, not less: `min_tokens`
    /// and `ignore_eos` in the body (vLLM and SGLang read them; other servers
    /// ignore them or refuse them).
    #[serde(default, skip_serializing_if = "is_false")]
    pub force_output_lengths: bool,
    /// The sampling temperature; absent: the server's default.
    #[serde(default)]
    pub temperature: Option<f64>,
    /// Ask for the usage chunk (`stream_options.include_usage`).
    #[serde(default = "yes")]
    pub include_usage: bool,
    /// Extra top-level fields of the request body.
    #[serde(default)]
    pub extra_body: Map<String, Value>,
    /// Extra request headers (gateways need them). Never the key.
    #[serde(default)]
    pub extra_headers: Vec<(String, String)>,
    /// How the key is sent.
    #[serde(default)]
    pub auth: AuthStyle,
    /// The load shape: a ladder, arrivals, a duration or an SLO search.
    pub load: LoadMode,
    /// How many times a ladder runs, one pass after another (1: once). The levels
    /// pool their passes' requests, and the spread between passes is the noise
    /// floor the knee and comparisons allow for.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub repeat: u32,
    /// Other endpoints measured with the same load, side by side (A/B): the plan
    /// itself is target A, these are B, C, …; the runner takes each level for every
    /// target in turn (A1, B1, A2, B2, …), so drift in the network hits them alike.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<TargetSpec>,
    /// How an A/B plan shares a level between its targets.
    #[serde(default, skip_serializing_if = "AbOrder::is_levels")]
    pub ab_order: AbOrder,
    /// Requests sent before the first level and left out of every figure: they pay
    /// for connection set-up and the CORS preflight.
    #[serde(default)]
    pub warmup_requests: u32,
    /// How many engine workers a level's streams are spread over; 0 leaves it to
    /// the run, level by level (see [`Plan::engine_workers_for`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub engine_workers: u32,
    /// Per-request timeout, seconds.
    pub timeout_s: f64,
    /// Multi-turn conversations instead of single requests (see [`Conversation`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<Conversation>,
    /// Read the server's Prometheus metrics while the run goes (see
    /// [`Plan::metrics_url`]).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub poll_metrics: bool,
    /// Where they are, when not at `{origin}/metrics` of the base URL (a gateway
    /// that publishes them elsewhere, a server's separate metrics port).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics_url: Option<String>,
    /// The limits a level must meet.
    #[serde(default)]
    pub slo: Slo,
    /// The knee and safe-concurrency rules' settings.
    #[serde(default)]
    pub analysis: AnalysisParams,
}

fn yes() -> bool {
    true
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_true(b: &bool) -> bool {
    *b
}

/// Why an extra header cannot be kept, in words that do not repeat its value.
pub(crate) fn secret_header_problem(name: &str) -> Said {
    if KEY_HEADERS.contains(&name.trim().to_ascii_lowercase().as_str()) {
        said!(
            "put the key in the API key field (and pick how it is sent), not in the `{name}` header: extra headers are saved with the plan, the key never is",
            "请把密钥填在 API 密钥栏（并选择发送方式），不要放在 `{name}` 请求头里：附加请求头会随计划保存，密钥永远不会",
        )
    } else {
        said!(
            "the `{name}` header looks like a secret (by its name or its value): extra headers are saved with the plan and travel in links, history and exports, so none may hold one; put the key in the API key field, or add such a header in a gateway in front of the server",
            "`{name}` 请求头看起来是机密（从名字或值判断）：附加请求头会随计划保存，并出现在链接、历史和导出中，所以不能包含机密；请把密钥填在 API 密钥栏，或在服务前面的网关里加上这个请求头",
        )
    }
}

/// A finite number above zero (NaN and infinity are not).
fn positive(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

/// Parameters of the capacity analysis.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnalysisParams {
    /// The knee is where doubling concurrency adds less than this share of the
    /// proportional throughput gain (0.25: doubling adds less than 25%).
    pub knee_gain_share: f64,
    /// The safe concurrency is this fraction of the knee (the article's 70%).
    pub safe_fraction: f64,
}

impl Default for AnalysisParams {
    fn default() -> Self {
        AnalysisParams {
            knee_gain_share: 0.25,
            safe_fraction: 0.7,
        }
    }
}

impl Plan {
    /// The engine workers a level of `lanes` streams at once is spread over, in
    /// a browser that reports `cores`: the plan's count, or one per
    /// [`STREAMS_PER_ENGINE_WORKER`] streams up to one per core; never more than
    /// the streams, at least one, at most [`MAX_ENGINE_WORKERS`]. Open-loop
    /// arrivals (`lanes` 0: how many overlap is the server's doing) take the
    /// plan's count, or one.
    pub fn engine_workers_for(&self, lanes: u32, cores: u32) -> u32 {
        let wanted = match (self.engine_workers, lanes) {
            (0, 0) => 1,
            (0, lanes) => lanes.div_ceil(STREAMS_PER_ENGINE_WORKER).min(cores),
            (chosen, 0) => chosen,
            (chosen, lanes) => chosen.min(lanes),
        };
        wanted.clamp(1, MAX_ENGINE_WORKERS)
    }

    /// Targets measured: A (this plan) and one per [`Plan::targets`].
    pub fn n_targets(&self) -> usize {
        1 + self.targets.len()
    }

    /// A target's name: A, B, C, …
    pub fn target_label(index: usize) -> String {
        char::from(b'A' + (index % 26) as u8).to_string()
    }

    /// Target `index`'s own plan: this one (without its other targets) with the
    /// target's base URL, model and extra body fields. 0 is this plan's own.
    pub fn for_target(&self, index: usize) -> Plan {
        let mut plan = self.clone();
        plan.targets = Vec::new();
        if let Some(target) = index.checked_sub(1).and_then(|i| self.targets.get(i)) {
            plan.base_url = target.base_url.clone();
            plan.model = target.model.clone();
            plan.extra_body.extend(
                target
                    .extra_body
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone())),
            );
        }
        plan
    }

    /// The default plan: the local simulator, a short ladder, done in well under a minute.
    pub fn default_for_simulator(base_url: &str) -> Plan {
        Plan {
            schema: PLAN_SCHEMA,
            base_url: base_url.to_owned(),
            model: "tokenmeter-sim".into(),
            endpoint: EndpointKind::Chat,
            prompt: PromptSpec::Text("请用300字介绍大模型推理中的prefill和decode两个阶段".into()),
            prompt_mode: PromptMode::Unique,
            seed: None,
            prefix_tokens: 0,
            prefix_groups: 1,
            prompt_file: None,
            output_lengths: None,
            input_lengths: None,
            force_output_lengths: false,
            // Short answers keep the default ladder under half a minute on the
            // simulator.
            max_tokens: 64,
            temperature: Some(0.7),
            include_usage: true,
            extra_body: Map::new(),
            extra_headers: Vec::new(),
            auth: AuthStyle::Bearer,
            // Within the six requests a browser sends at once over plain http://
            // (HTTP/1.1), so a first run shows the server, not the browser: against
            // the simulator (four sequences decoded at once) throughput levels off
            // at 4, a knee inside the ladder. Over https:// go further.
            load: LoadMode::Ladder {
                levels: vec![1, 2, 4, 6],
                requests_per_level: 8,
            },
            repeat: 1,
            targets: Vec::new(),
            ab_order: AbOrder::Levels,
            warmup_requests: 1,
            engine_workers: 0,
            timeout_s: 60.0,
            conversation: None,
            poll_metrics: true,
            metrics_url: None,
            slo: Slo {
                ttft_p95_ms: Some(1000.0),
                tpot_p95_ms: Some(100.0),
                e2e_p95_ms: None,
                error_rate_pct: None,
            },
            analysis: AnalysisParams::default(),
        }
    }

    /// Where the engine reads the server's metrics while the run goes: the plan's
    /// `metrics_url`, else `{origin}/metrics` of the base URL; `None` when the plan
    /// does not read them.
    pub fn metrics_url(&self) -> Option<String> {
        if !self.poll_metrics {
            return None;
        }
        Some(match &self.metrics_url {
            Some(url) => url.clone(),
            None => crate::server_metrics::url_of(&self.base_url),
        })
    }

    /// The full URL requests go to.
    pub fn endpoint_url(&self) -> String {
        format!("{}{}", self.base_url, self.endpoint.path())
    }

    /// The prompt text of every request, without a unique prompt's header (which
    /// a generated prompt of N tokens leaves room for).
    pub fn prompt_text(&self) -> String {
        match (&self.prompt, self.prompt_mode) {
            (PromptSpec::Text(text), _) => text.clone(),
            (PromptSpec::Tokens(n), PromptMode::Same) => generated_prompt(*n),
            (
                PromptSpec::Tokens(n),
                PromptMode::Unique | PromptMode::SharedPrefix | PromptMode::File,
            ) => generated_prompt(n.saturating_sub(UNIQUE_HEADER_TOKENS).max(1)),
        }
    }

    /// The headers of every request of this plan, with the key sent the way `auth`
    /// says: the one place where a plan and a key meet (and never stay together).
    pub fn request_headers(&self, api_key: Option<&str>) -> Vec<(String, String)> {
        let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
        if let Some(key) = api_key.map(str::trim).filter(|k| !k.is_empty()) {
            headers.push(match self.auth {
                AuthStyle::Bearer => ("authorization".into(), format!("Bearer {key}")),
                AuthStyle::ApiKeyHeader => ("api-key".into(), key.to_owned()),
                AuthStyle::XApiKey => ("x-api-key".into(), key.to_owned()),
            });
        }
        if self.endpoint == EndpointKind::Anthropic {
            // The API's version, and its permission to be called from a page
            // (without it Anthropic refuses a browser's request), unless the
            // plan's own headers say otherwise.
            let has = |name: &str| {
                self.extra_headers
                    .iter()
                    .any(|(n, _)| n.eq_ignore_ascii_case(name))
            };
            for (name, value) in [
                ("anthropic-version", ANTHROPIC_VERSION),
                ("anthropic-dangerous-direct-browser-access", "true"),
            ] {
                if !has(name) {
                    headers.push((name.into(), value.into()));
                }
            }
        }
        headers.extend(self.extra_headers.iter().cloned());
        headers
    }

    /// What goes into each request's body, before its own prompt and lengths.
    pub fn body_spec(&self) -> BodySpec {
        let mut spec = BodySpec {
            kind: self.endpoint,
            model: self.model.clone(),
            prompt: self.prompt_text(),
            max_tokens: self.max_tokens,
            temperature: self.temperature,
            include_usage: self.include_usage,
            extra: self.extra_body.clone(),
            messages: None,
        };
        self.force(&mut spec);
        spec
    }

    /// The body spec of request `request_id` sending `prompt` from a file: as
    /// written (a chat's messages as they are), with its own output length.
    pub(crate) fn file_request_spec(
        &self,
        seed: u64,
        request_id: u64,
        prompt: &Prompt,
    ) -> BodySpec {
        let mut spec = BodySpec {
            max_tokens: self.asked_output_tokens(seed, request_id),
            ..self.body_spec()
        };
        spec.extra = self.extra_body.clone();
        self.force(&mut spec);
        match spec.kind {
            EndpointKind::Completions => spec.prompt = prompt.text(),
            EndpointKind::Chat | EndpointKind::Responses | EndpointKind::Anthropic => {
                spec.messages = Some(prompt.messages())
            }
        }
        spec
    }

    /// With `force_output_lengths`: `min_tokens` as `max_tokens` and `ignore_eos`,
    /// unless the plan's extra body fields say otherwise.
    fn force(&self, spec: &mut BodySpec) {
        if self.force_output_lengths && self.endpoint.is_openai_chunks() {
            let asked = spec.max_tokens;
            let extra = &mut spec.extra;
            if !self.extra_body.contains_key("min_tokens") {
                extra.insert("min_tokens".into(), asked.into());
            }
            if !self.extra_body.contains_key("ignore_eos") {
                extra.insert("ignore_eos".into(), true.into());
            }
        }
    }

    /// Why conversations cannot run with the rest of this plan, if they cannot.
    fn conversation_problems(&self, conversation: Conversation) -> Vec<Said> {
        let mut problems = Vec::new();
        if !(2..=MAX_TURNS).contains(&conversation.turns) {
            problems.push(said!(
                "a conversation has 2 to {MAX_TURNS} turns (1 is a single request: leave conversations off)",
                "一段对话有 2 到 {MAX_TURNS} 轮（1 轮就是单个请求：请关闭多轮对话）",
            ));
        }
        if !(conversation.think_ms.is_finite()
            && (0.0..=MAX_THINK_MS).contains(&conversation.think_ms))
        {
            problems.push(said!(
                "the think time between turns must be 0 to {MAX_THINK_MS} ms",
                "轮次之间的思考时间必须在 0 到 {MAX_THINK_MS} 毫秒之间",
            ));
        }
        if self.endpoint == EndpointKind::Completions {
            problems.push(said!(
                "a conversation is a chat's messages: choose the chat, responses or anthropic endpoint",
                "多轮对话由聊天消息组成：请选择 chat、responses 或 anthropic 接口",
            ));
        }
        match (self.prompt_mode, self.prompt_file.as_ref().map(|f| f.format)) {
            (PromptMode::Unique | PromptMode::SharedPrefix, _)
            | (PromptMode::File, Some(Format::Sharegpt) | None) => {}
            (PromptMode::File, Some(Format::Jsonl | Format::Text)) => problems.push(said!(
                "conversations from a file take their turns from a ShareGPT file's human turns: open one, or let tokenmeter make each message",
                "来自文件的多轮对话取 ShareGPT 文件中的人类轮次：请打开这样的文件，或让 tokenmeter 生成每条消息",
            )),
            (PromptMode::Same, _) => problems.push(said!(
                "conversations make each message of their own: choose each request its own prompt, or a shared prefix",
                "多轮对话的每条消息都各不相同：请选择“每个请求各不相同”或“共享前缀”",
            )),
        }
        if self.input_lengths.is_some() {
            problems.push(said!(
                "conversations grow by their answers: give the prompt one length (input lengths drawn per request are for single requests)",
                "多轮对话会随回答变长：请让提示词使用固定长度（按请求抽取的输入长度只用于单个请求）",
            ));
        }
        if !matches!(
            self.load,
            LoadMode::Ladder { .. } | LoadMode::Duration { .. }
        ) {
            problems.push(said!(
                "conversations run in the ladder or fixed-duration modes: each lane holds one conversation at a time",
                "多轮对话只能在阶梯或固定时长模式下运行：每个并发通道同时只进行一段对话",
            ));
        }
        problems
    }

    /// The output length request `request_id` asks for (its `max_tokens`).
    pub fn asked_output_tokens(&self, seed: u64, request_id: u64) -> u32 {
        self.output_lengths
            .map_or(self.max_tokens, |l| l.draw(seed, request_id, OUTPUT_SALT))
    }

    /// Whether requests differ in their lengths (each body made on its own).
    pub fn lengths_vary(&self) -> bool {
        self.output_lengths.is_some() || self.input_lengths.is_some()
    }

    /// The body spec of request `request_id`: its own lengths, and its prompt text
    /// after what goes in front of it (a shared prefix, its header).
    fn request_spec(&self, seed: u64, request_id: u64, front: &str) -> BodySpec {
        let mut spec = BodySpec {
            max_tokens: self.asked_output_tokens(seed, request_id),
            ..self.body_spec()
        };
        if let (Some(lengths), PromptSpec::Tokens(_)) = (self.input_lengths, &self.prompt) {
            let n = lengths.draw(seed, request_id, INPUT_SALT);
            let header = if self.prompt_mode == PromptMode::Same {
                0
            } else {
                UNIQUE_HEADER_TOKENS
            };
            spec.prompt = generated_prompt(n.saturating_sub(header).max(1));
        }
        spec.extra = self.extra_body.clone();
        self.force(&mut spec);
        spec.prompt.insert_str(0, front);
        spec
    }

    /// The user's message of `turn` (0: the first) of conversation `session` in
    /// a run with `seed`: a header of its own, then the plan's prompt (the first
    /// turn's after its group's shared prefix, in that mode).
    pub fn turn_prompt(&self, seed: u64, session: u64, turn: u32) -> String {
        let key = session
            .saturating_mul(u64::from(MAX_TURNS))
            .saturating_add(u64::from(turn));
        let header = unique_header(seed ^ TURN_SALT, key);
        let prefix = match self.prompt_mode {
            PromptMode::SharedPrefix if turn == 0 => {
                let groups = u64::from(self.prefix_groups.clamp(1, MAX_PREFIX_GROUPS));
                shared_prefix(seed, (session % groups) as u32, self.prefix_tokens)
            }
            _ => String::new(),
        };
        format!("{prefix}{header}{}", self.prompt_text())
    }

    /// The file's conversation that conversation `session` sends (with prompts
    /// from a file): drawn as a file's prompts are, the session in place of the
    /// request.
    pub fn session_prompt<'p>(&self, prompts: &'p Prompts, seed: u64, session: u64) -> &'p Prompt {
        let order = self
            .prompt_file
            .as_ref()
            .map(|f| f.order)
            .unwrap_or_default();
        prompts.for_request(order, seed, session)
    }

    /// How many turns a conversation has: the plan's, or, sending a file's
    /// conversation (`prompt`), as many of its human turns as the plan allows.
    pub fn session_turns(&self, prompt: Option<&Prompt>) -> u32 {
        let most = self.conversation.map_or(1, |c| c.turns.clamp(1, MAX_TURNS));
        prompt.map_or(most, |p| p.n_turns().min(most))
    }

    /// The body of request `request_id`, turn `turn` of conversation `session`:
    /// the conversation so far (`history`: the user's messages and the model's
    /// answers, in order) then the turn's own messages, which are returned too
    /// (the conversation goes on with them). With a file's conversation
    /// (`prompt`), the turn's messages are the file's: its first turn's (system
    /// turns and the first question) then one human turn each; past its last
    /// turn, its last is asked again (callers stop at [`Plan::session_turns`]).
    pub fn turn_body(
        &self,
        seed: u64,
        session: u64,
        turn: u32,
        request_id: u64,
        history: &[Value],
        prompt: Option<&Prompt>,
    ) -> (String, Vec<Value>) {
        let said = match prompt {
            None => vec![
                serde_json::json!({"role": "user", "content": self.turn_prompt(seed, session, turn)}),
            ],
            Some(prompt) => match turn.checked_sub(1) {
                None => prompt.messages(),
                Some(later) => {
                    let later_turns = prompt.later_turns();
                    match later_turns.get(later as usize).or(later_turns.last()) {
                        Some(text) => vec![serde_json::json!({"role": "user", "content": text})],
                        None => prompt.messages(),
                    }
                }
            },
        };
        let mut messages = Vec::with_capacity(history.len() + said.len());
        messages.extend_from_slice(history);
        messages.extend_from_slice(&said);
        let mut spec = BodySpec {
            max_tokens: self.asked_output_tokens(seed, request_id),
            messages: Some(messages),
            ..self.body_spec()
        };
        spec.extra = self.extra_body.clone();
        self.force(&mut spec);
        (request_body(&spec).to_string(), said)
    }

    /// Checks the plan; every problem is one sentence a user can act on.
    // Long: every rule of a plan, one after another, each a sentence a user can act on.
    pub fn validate(&self) -> Result<(), Vec<Said>> {
        let mut problems = Vec::new();
        if let Err(err) = normalize_base_url(&self.base_url) {
            problems.push(err);
        }
        for (name, value) in &self.extra_headers {
            if is_secret_header(name, value) {
                problems.push(secret_header_problem(name));
            }
        }
        if let Some(problem) = self.metrics_url.as_deref().and_then(metrics_url_problem) {
            problems.push(problem);
        }
        if let Some(conversation) = self.conversation {
            problems.extend(self.conversation_problems(conversation));
        }
        if self.force_output_lengths && !self.endpoint.is_openai_chunks() {
            let kind = self.endpoint.name();
            problems.push(said!(
                "forcing output lengths sends min_tokens and ignore_eos, which only chat and completions endpoints read (vLLM, SGLang): untick it for the {kind} endpoint",
                "强制输出长度会发送 min_tokens 与 ignore_eos，只有 chat 和 completions 接口读取（vLLM、SGLang）：{kind} 接口请取消勾选",
            ));
        }
        if self.model.trim().is_empty() {
            problems.push(said!(
                "the model is empty: enter a model ID, or load the list from the server",
                "模型为空：请输入模型 ID，或从服务端读取模型列表",
            ));
        }
        if self.max_tokens == 0 {
            problems.push(said!(
                "max_tokens must be at least 1",
                "max_tokens 至少为 1"
            ));
        }
        if !positive(self.timeout_s) {
            problems.push(said!(
                "the timeout must be more than 0 seconds",
                "超时必须大于 0 秒"
            ));
        } else if self.timeout_s > MAX_TIMEOUT_S {
            problems.push(said!(
                "the timeout must be at most {MAX_TIMEOUT_S} seconds (a day)",
                "超时最多 {MAX_TIMEOUT_S} 秒（一天）",
            ));
        }
        if let PromptSpec::Tokens(n) = self.prompt {
            if n > MAX_PROMPT_TOKENS {
                problems.push(said!(
                    "a generated prompt can be at most {MAX_PROMPT_TOKENS} tokens",
                    "生成的提示词最多 {MAX_PROMPT_TOKENS} 个 token",
                ));
            }
        }
        if let Some(lengths) = self.output_lengths {
            problems.extend(lengths.problems(
                Words {
                    en: "output",
                    zh: "输出",
                },
                MAX_OUTPUT_TOKENS,
            ));
        }
        if let Some(lengths) = self.input_lengths {
            problems.extend(lengths.problems(
                Words {
                    en: "input",
                    zh: "输入",
                },
                MAX_PROMPT_TOKENS,
            ));
            if !matches!(self.prompt, PromptSpec::Tokens(_)) {
                problems.push(said!("input lengths vary only for a generated prompt (a prompt of N tokens): a typed prompt is the body of every request", "只有生成的提示词（N 个 token 的提示词）才能变化输入长度：手写的提示词是每个请求的正文"));
            }
        }
        if self.prompt_mode == PromptMode::File && self.prompt_file.is_none() {
            problems.push(no_prompt_file());
        }
        if self.prompt_mode == PromptMode::SharedPrefix {
            if !(2 * UNIQUE_HEADER_TOKENS..=MAX_PROMPT_TOKENS).contains(&self.prefix_tokens) {
                let least = 2 * UNIQUE_HEADER_TOKENS;
                problems.push(said!(
                    "a shared prefix must be {least} to {MAX_PROMPT_TOKENS} tokens",
                    "共享前缀应为 {least} 到 {MAX_PROMPT_TOKENS} 个 token",
                ));
            }
            if !(1..=MAX_PREFIX_GROUPS).contains(&self.prefix_groups) {
                problems.push(said!(
                    "requests can share a prefix in 1 to {MAX_PREFIX_GROUPS} groups",
                    "共享前缀的分组数为 1 到 {MAX_PREFIX_GROUPS}",
                ));
            }
        }
        if self.engine_workers > MAX_ENGINE_WORKERS {
            problems.push(said!(
                "engine workers can be at most {MAX_ENGINE_WORKERS} (0: as many as each level needs)",
                "测量引擎 worker 最多 {MAX_ENGINE_WORKERS} 个（0：每档按需）",
            ));
        }
        if self.warmup_requests > MAX_WARMUP_REQUESTS {
            problems.push(said!(
                "warm-up requests can be at most {MAX_WARMUP_REQUESTS}",
                "预热请求最多 {MAX_WARMUP_REQUESTS} 个",
            ));
        }
        let too_many = |n: u32| n > MAX_REQUESTS_PER_LEVEL;
        match &self.load {
            LoadMode::Ladder {
                levels,
                requests_per_level,
            } => {
                if levels.is_empty() {
                    problems.push(said!(
                        "give at least one concurrency level, e.g. 1,2,4,8,16",
                        "请至少给出一个并发档位，例如 1,2,4,8,16"
                    ));
                }
                if levels.contains(&0) {
                    problems.push(said!(
                        "a concurrency level must be at least 1",
                        "并发档位至少为 1"
                    ));
                }
                if *requests_per_level == 0 {
                    problems.push(said!(
                        "requests per level must be at least 1",
                        "每档请求数至少为 1"
                    ));
                }
                let n_run = levels.len() as u64
                    * u64::from(*requests_per_level)
                    * u64::from(self.repeat.max(1))
                    * self.n_targets() as u64;
                if too_many(*requests_per_level) {
                    problems.push(said!(
                        "requests per level can be at most {MAX_REQUESTS_PER_LEVEL}",
                        "每档请求数最多 {MAX_REQUESTS_PER_LEVEL}",
                    ));
                } else if n_run > u64::from(MAX_REQUESTS_PER_RUN) {
                    problems.push(said!(
                    "this ladder sends {n_run} requests; one run sends at most {MAX_REQUESTS_PER_RUN}: use fewer levels, fewer requests per level or fewer passes",
                    "这个阶梯要发送 {n_run} 个请求；一次测试最多发送 {MAX_REQUESTS_PER_RUN} 个：请减少档位、每档请求数或轮数",
                ));
                }
            }
            LoadMode::Arrivals {
                rate_rps,
                n_requests,
                ..
            } => {
                if !positive(*rate_rps) {
                    problems.push(said!(
                        "the arrival rate must be more than 0 requests/s",
                        "到达速率必须大于 0 个请求/秒"
                    ));
                }
                if *n_requests == 0 {
                    problems.push(said!("send at least one request", "至少发送一个请求"));
                }
                if too_many(*n_requests) {
                    problems.push(said!(
                        "an arrivals run can send at most {MAX_REQUESTS_PER_LEVEL} requests",
                        "到达模式最多发送 {MAX_REQUESTS_PER_LEVEL} 个请求",
                    ));
                }
            }
            LoadMode::Duration {
                concurrency,
                seconds,
            } => {
                if *concurrency == 0 {
                    problems.push(said!("the concurrency must be at least 1", "并发至少为 1"));
                }
                if !positive(*seconds) {
                    problems.push(said!(
                        "the duration must be more than 0 seconds",
                        "持续时间必须大于 0 秒"
                    ));
                }
            }
            LoadMode::SloSearch {
                max_concurrency,
                requests_per_probe,
            } => {
                if !self.slo.is_set() {
                    problems.push(said!("an SLO search needs a limit to search for: set a p95 TTFT or TPOT limit (or an error rate) under Advanced", "SLO 搜索需要一个限值：请在“高级”中设置 p95 TTFT 或 TPOT 上限（或错误率）"));
                }
                if !(1..=MAX_SEARCH_CONCURRENCY).contains(max_concurrency) {
                    problems.push(said!(
                        "search up to a concurrency between 1 and {MAX_SEARCH_CONCURRENCY}",
                        "搜索的最高并发应在 1 到 {MAX_SEARCH_CONCURRENCY} 之间",
                    ));
                } else if *requests_per_probe == 0 || too_many(*requests_per_probe) {
                    problems.push(said!(
                        "requests per probe must be between 1 and {MAX_REQUESTS_PER_LEVEL}",
                        "每次探测的请求数应在 1 到 {MAX_REQUESTS_PER_LEVEL} 之间",
                    ));
                } else {
                    let most = u64::from(max_probes(1, *max_concurrency))
                        * u64::from(self::requests_per_probe(
                            *max_concurrency,
                            *requests_per_probe,
                        ));
                    if most > u64::from(MAX_REQUESTS_PER_RUN) {
                        problems.push(said!(
                    "this search may send up to {most} requests; one run sends at most {MAX_REQUESTS_PER_RUN}: search up to a lower concurrency or send fewer requests per probe",
                    "这次搜索可能发送多达 {most} 个请求；一次测试最多发送 {MAX_REQUESTS_PER_RUN} 个：请降低搜索的最高并发，或减少每次探测的请求数",
                ));
                    }
                }
            }
        }
        if !self.targets.is_empty() {
            if !matches!(self.load, LoadMode::Ladder { .. }) {
                problems.push(said!(
                    "A/B targets run as a ladder: choose the ladder mode",
                    "A/B 目标按阶梯运行：请选择阶梯模式"
                ));
            }
            if self.n_targets() > MAX_TARGETS {
                problems.push(said!(
                    "an A/B plan holds at most {MAX_TARGETS} targets",
                    "A/B 计划最多 {MAX_TARGETS} 个目标",
                ));
            }
            for (i, target) in self.targets.iter().enumerate() {
                let label = Plan::target_label(i + 1);
                if let Err(err) = normalize_base_url(&target.base_url) {
                    let (en, zh) = (err.en, err.zh);
                    problems.push(said!("target {label}: {en}", "目标 {label}：{zh}"));
                }
                if target.model.trim().is_empty() {
                    problems.push(said!(
                        "target {label}: the model is empty",
                        "目标 {label}：模型为空"
                    ));
                }
            }
        }
        if !(1..=MAX_REPEAT).contains(&self.repeat) {
            problems.push(said!(
                "repeat the ladder 1 to {MAX_REPEAT} times",
                "阶梯可重复 1 到 {MAX_REPEAT} 次",
            ));
        } else if self.repeat > 1 && !matches!(self.load, LoadMode::Ladder { .. }) {
            problems.push(said!(
                "only a ladder repeats: choose the ladder mode, or repeat 1",
                "只有阶梯可以重复：请选择阶梯模式，或重复 1 次"
            ));
        }
        if let Some(pct) = self.slo.error_rate_pct {
            if !(pct.is_finite() && (0.0..=100.0).contains(&pct)) {
                problems.push(said!(
                    "the error-rate limit is a percentage between 0 and 100",
                    "错误率上限是 0 到 100 之间的百分比"
                ));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems)
        }
    }
}

/// The open-loop schedule: when each of `n_requests` arrivals is due, in ms after
/// the level starts. Evenly spaced at `rate_rps`, or a Poisson process of that rate
/// (exponential gaps from a seeded generator, so a plan always gives the same
/// schedule). The first arrival is at 0.
pub(crate) fn arrival_offsets_ms(
    rate_rps: f64,
    poisson: bool,
    n_requests: u32,
    seed: u64,
) -> Vec<f64> {
    let mean_gap_ms = 1e3 / rate_rps;
    let mut state = seed;
    let mut next_uniform = move || {
        // SplitMix64: small, seeded, the same on every platform.
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut at = 0.0;
    (0..n_requests)
        .map(|i| {
            if i > 0 {
                at += if poisson {
                    // 1 − u is in (0, 1]: the logarithm is finite.
                    -(1.0 - next_uniform()).ln() * mean_gap_ms
                } else {
                    mean_gap_ms
                };
            }
            at
        })
        .collect()
}

/// A prompt of about `n_tokens` tokens for BPE tokenizers: each word below is one
/// token, with its leading space, in the GPT, Llama and Qwen vocabularies.
pub(crate) fn generated_prompt(n_tokens: u32) -> String {
    const WORDS: [&str; 16] = [
        " the", " time", " of", " first", " token", " is", " what", " a", " user", " feels",
        " when", " the", " model", " starts", " to", " answer",
    ];
    let mut text = String::from("Repeat");
    // Capped: the plan may not have been checked yet (a link being opened).
    for i in 1..n_tokens.clamp(1, MAX_PROMPT_TOKENS) as usize {
        text.push_str(WORDS[i % WORDS.len()]);
    }
    text
}

/// A base URL as typed, normalised: surrounding space and trailing slashes removed,
/// and an endpoint path the user pasted by mistake removed. The `Ok` side carries
/// notes that explain what was changed.
pub fn normalize_base_url(input: &str) -> Result<(String, Vec<Said>), Said> {
    let mut url = input.trim().to_owned();
    let mut notes = Vec::new();
    if url.is_empty() {
        return Err(said!(
            "the base URL is empty: e.g. http://127.0.0.1:8000/v1",
            "接口地址为空：例如 http://127.0.0.1:8000/v1",
        ));
    }
    let lower = url.to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Err(said!(
            "the base URL must start with http:// or https://, e.g. https://{url}",
            "接口地址必须以 http:// 或 https:// 开头，例如 https://{url}",
        ));
    }
    let authority = url
        .split("://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_default();
    if authority.contains('@') {
        // Said without repeating them: the URL is shown, saved and shared.
        return Err(said!(
            "the base URL holds credentials (user:password@host): remove them, and put a key in the API key field, which is never saved or shared",
            "接口地址里含有凭据（user:password@host）：请删除，并把密钥填在 API 密钥栏，那里的内容从不保存或分享",
        ));
    }
    if url.contains('?') || url.contains('#') {
        return Err(said!(
            "the base URL must not have a query (?) or fragment (#)",
            "接口地址不能带查询（?）或片段（#）",
        ));
    }
    while url.ends_with('/') {
        url.pop();
        if !notes.iter().any(|n: &Said| n.en.contains("trailing")) {
            notes.push(said!("removed the trailing slash", "去掉了末尾的斜杠"));
        }
    }
    for suffix in EndpointKind::ALL.map(EndpointKind::path) {
        if url.to_ascii_lowercase().ends_with(suffix) {
            url.truncate(url.len() - suffix.len());
            notes.push(said!(
                "removed {suffix} from the end: the base URL stops before the endpoint path, which tokenmeter adds",
                "去掉了末尾的 {suffix}：接口地址止于接口路径之前，路径由 tokenmeter 添加",
            ));
            break;
        }
    }
    if url.split("://").nth(1).is_none_or(|rest| rest.is_empty()) {
        return Err(said!("the base URL has no host", "接口地址没有主机名"));
    }
    Ok((url, notes))
}

/// The origin (`scheme://host[:port]`, lowercase) a base URL sends to: what a
/// remembered key is bound to. `None` for what is not an http(s) URL.
pub fn origin(base_url: &str) -> Option<String> {
    let url = base_url.trim();
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next()?.to_ascii_lowercase();
    // Credentials are refused elsewhere; an origin never includes them.
    let host = authority.rsplit('@').next()?;
    (!host.is_empty()).then(|| format!("{scheme}://{host}"))
}

/// Why `url` cannot be where the server's metrics are read, if it cannot: it
/// must be an http(s) address without credentials.
pub(crate) fn metrics_url_problem(url: &str) -> Option<Said> {
    (origin(url).is_none() || url.contains('@') || url.trim() != url).then(|| {
        said!(
            "the metrics URL must be an http:// or https:// address without credentials, such as http://host:8000/metrics (or empty for the base URL's /metrics)",
            "指标地址必须是不含账号密码的 http:// 或 https:// 地址，例如 http://host:8000/metrics（留空则用接口地址的 /metrics）",
        )
    })
}

/// True when a page served over HTTPS would call `base_url` over plain HTTP: browsers
/// block such mixed content (the request fails as a network error), except for
/// loopback hosts, which they treat as trustworthy.
pub fn is_mixed_content(page_is_https: bool, base_url: &str) -> bool {
    let lower = base_url.trim().to_ascii_lowercase();
    let Some(rest) = lower.strip_prefix("http://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.split(':').next().unwrap_or_default(),
    };
    let loopback = host == "localhost"
        || host.ends_with(".localhost")
        || host.starts_with("127.")
        || host == "::1";
    page_is_https && !loopback
}

/// Header names that carry the key itself: the key field sends it this way.
pub(crate) const KEY_HEADERS: [&str; 4] = [
    "authorization",
    "api-key",
    "x-api-key",
    "proxy-authorization",
];

/// Whether an extra header looks like a secret, by its name (a word such as `key`,
/// `token`, `secret`, `cookie`, `auth…`: `Ocp-Apim-Subscription-Key`,
/// `x-goog-api-key`, `cf-aig-authorization`, `Cookie`) or by its value (`Bearer …`,
/// `Basic …`, `sk-…`, a JWT, or a long run of letters and digits). Extra headers
/// are saved with the plan and travel in links, history and exports, so none of
/// them may hold one.
pub(crate) fn is_secret_header(name: &str, value: &str) -> bool {
    const WORDS: [&str; 13] = [
        "key",
        "apikey",
        "token",
        "secret",
        "password",
        "passwd",
        "pwd",
        "cookie",
        "session",
        "signature",
        "credential",
        "credentials",
        "bearer",
    ];
    let name = name.trim().to_ascii_lowercase();
    let secret_name = name
        .split(['-', '_'])
        .any(|word| WORDS.contains(&word) || word.starts_with("auth"));
    let value = value.trim();
    let lower = value.to_ascii_lowercase();
    let jwt = value.starts_with("eyJ") && value.matches('.').count() == 2;
    let long_token = value.len() >= 32
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_+/=.".contains(c))
        && value.chars().any(|c| c.is_ascii_digit())
        && value.chars().any(|c| c.is_ascii_alphabetic());
    secret_name
        || lower.starts_with("bearer ")
        || lower.starts_with("basic ")
        || lower.starts_with("sk-")
        || lower.starts_with("sk_")
        || jwt
        || long_token
}

/// Parses concurrency levels typed as `1,2,4,8,16` (commas and/or spaces): sorted,
/// without duplicates.
pub fn parse_levels(input: &str) -> Result<Vec<u32>, Said> {
    let mut levels = Vec::new();
    for part in input
        .split([',', ' ', '\t', '，'])
        .filter(|p| !p.is_empty())
    {
        let level: u32 = part.parse().map_err(|_| {
            said!(
                "`{part}` is not a whole number: write levels like 1,2,4,8,16",
                "`{part}` 不是整数：档位请写成 1,2,4,8,16 这样",
            )
        })?;
        if level == 0 {
            return Err(said!(
                "a concurrency level must be at least 1",
                "并发档位至少为 1"
            ));
        }
        if level > 10_000 {
            return Err(said!(
                "{level} is more concurrency than a browser can drive",
                "{level} 超出了一个浏览器能驱动的并发",
            ));
        }
        levels.push(level);
    }
    if levels.is_empty() {
        return Err(said!(
            "give at least one concurrency level, e.g. 1,2,4,8,16",
            "请至少给出一个并发档位，例如 1,2,4,8,16",
        ));
    }
    Ok(crate::stats::sorted_unique(levels))
}

/// The reference article's `config.json`, field for field.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ArticleConfig {
    pub base_url: String,
    #[serde(default)]
    pub api_key: Option<String>,
    pub model: String,
    pub prompt: String,
    pub max_tokens: u32,
    #[serde(default)]
    pub temperature: Option<f64>,
    pub concurrency_levels: Vec<u32>,
    pub requests_per_level: u32,
    /// Seconds.
    pub timeout: f64,
}

/// A configuration read from a file or a paste: the plan, the key if the file had
/// one (kept apart), and notes on what was adjusted.
#[derive(Clone, Debug, PartialEq)]
pub struct Imported {
    /// The plan read.
    pub plan: Plan,
    /// The key the file held, kept apart from the plan.
    pub api_key: Option<String>,
    /// What was adjusted on the way in.
    pub notes: Vec<Said>,
}

/// Reads the article's `config.json` or our own plan format.
// Long: the article's config.json, field by field.
pub fn import_config(json: &str) -> Result<Imported, Said> {
    let value: Value = serde_json::from_str(json)
        .map_err(|err| said!("this is not valid JSON: {err}", "这不是有效的 JSON：{err}"))?;
    let Value::Object(map) = &value else {
        return Err(said!(
            "expected a JSON object like the article's config.json",
            "需要一个 JSON 对象，像文章中的 config.json 那样",
        ));
    };
    if map.contains_key("schema") {
        let mut plan: Plan = serde_json::from_str(json).map_err(|err| {
            said!(
                "this tokenmeter plan is not valid: {err}",
                "这个 tokenmeter 计划无效：{err}"
            )
        })?;
        if plan.schema > PLAN_SCHEMA {
            let schema = plan.schema;
            return Err(said!(
                "this plan was written by a newer tokenmeter (schema {schema}); this one reads up to {PLAN_SCHEMA}",
                "这个计划由更新版本的 tokenmeter 写出（schema {schema}）；当前版本最多读取 {PLAN_SCHEMA}",
            ));
        }
        let (base_url, notes) = normalize_base_url(&plan.base_url)?;
        plan.base_url = base_url;
        return Ok(Imported {
            plan,
            api_key: None,
            notes,
        });
    }
    let config: ArticleConfig = serde_json::from_str(json).map_err(|err| {
        said!(
            "this is not the article's config.json format: {err}",
            "这不是文章中 config.json 的格式：{err}"
        )
    })?;
    let (base_url, notes) = normalize_base_url(&config.base_url)?;
    let levels = crate::stats::sorted_unique(config.concurrency_levels.iter().copied());
    let plan = Plan {
        schema: PLAN_SCHEMA,
        base_url,
        model: config.model,
        endpoint: EndpointKind::Chat,
        // The article sends its one prompt to every request; here it is the body
        // of each request's own prompt, as for any plan.
        prompt: PromptSpec::Text(config.prompt),
        prompt_mode: PromptMode::Unique,
        seed: None,
        prefix_tokens: 0,
        prefix_groups: 1,
        prompt_file: None,
        max_tokens: config.max_tokens,
        output_lengths: None,
        input_lengths: None,
        force_output_lengths: false,
        temperature: config.temperature,
        include_usage: true,
        extra_body: Map::new(),
        extra_headers: Vec::new(),
        auth: AuthStyle::Bearer,
        load: LoadMode::Ladder {
            levels,
            requests_per_level: config.requests_per_level,
        },
        repeat: 1,
        targets: Vec::new(),
        ab_order: AbOrder::Levels,
        warmup_requests: 0,
        engine_workers: 0,
        timeout_s: config.timeout,
        conversation: None,
        poll_metrics: true,
        metrics_url: None,
        slo: Slo::default(),
        analysis: AnalysisParams::default(),
    };
    let api_key = config
        .api_key
        .map(|k| k.trim().to_owned())
        .filter(|k| !k.is_empty());
    Ok(Imported {
        plan,
        api_key,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_load_mode_reads_back_as_written() {
        let all = vec![
            LoadMode::Ladder {
                levels: vec![1, 2, 4],
                requests_per_level: 20,
            },
            LoadMode::Arrivals {
                rate_rps: 2.5,
                poisson: true,
                n_requests: 100,
                seed: u64::MAX,
            },
            LoadMode::Duration {
                concurrency: 8,
                seconds: 30.0,
            },
            LoadMode::SloSearch {
                max_concurrency: 64,
                requests_per_probe: 32,
            },
        ];
        let json = serde_json::to_string(&all).unwrap();
        assert!(
            json.starts_with(r#"[{"mode":"ladder","levels":[1,2,4]"#),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<Vec<LoadMode>>(&json).unwrap(), all);
        let error = |json: &str| {
            serde_json::from_str::<LoadMode>(json)
                .unwrap_err()
                .to_string()
        };
        assert!(error(r#"{"mode":"ladder","levels":[1]}"#).contains("requests_per_level"));
        assert!(error(r#"{"mode":"soak"}"#).contains("soak"));
    }

    #[test]
    fn a_conversation_s_turns_send_what_was_said_so_far_and_a_message_of_their_own() {
        let mut plan = Plan::default_for_simulator("http://127.0.0.1:8000/v1");
        plan.conversation = Some(Conversation {
            turns: 3,
            think_ms: 500.0,
        });
        assert!(plan.validate().is_ok());
        assert_eq!(plan.session_turns(None), 3);
        let (first, said) = plan.turn_body(7, 4, 0, 20, &[], None);
        let first: Value = serde_json::from_str(&first).unwrap();
        assert_eq!(first["messages"].as_array().unwrap().len(), 1);
        assert_eq!(first["messages"][0], said[0]);
        let history = vec![
            said[0].clone(),
            serde_json::json!({"role": "assistant", "content": "答一"}),
        ];
        let (second, asked) = plan.turn_body(7, 4, 1, 21, &history, None);
        let second: Value = serde_json::from_str(&second).unwrap();
        let messages = second["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[..2], history[..]);
        assert_eq!(messages[2], asked[0]);
        // Every message its own: across turns, conversations and runs.
        let text = |seed, session, turn| plan.turn_prompt(seed, session, turn);
        assert_ne!(text(7, 4, 0), text(7, 4, 1));
        assert_ne!(text(7, 4, 0), text(7, 5, 0));
        assert_ne!(text(7, 4, 0), text(8, 4, 0));
        assert_eq!(text(7, 4, 1), text(7, 4, 1), "reproducible from the seed");
        assert!(text(7, 4, 0).ends_with(&plan.prompt_text()));
        // A shared prefix leads a conversation's first message only.
        plan.prompt_mode = PromptMode::SharedPrefix;
        plan.prefix_tokens = 200;
        assert!(plan
            .turn_prompt(7, 4, 0)
            .starts_with(&shared_prefix(7, 0, 200)));
        assert!(!plan
            .turn_prompt(7, 4, 1)
            .starts_with(&shared_prefix(7, 0, 200)));
    }

    #[test]
    fn a_file_s_conversations_send_their_own_human_turns_after_the_model_s_answers() {
        let prompts = crate::prompts::read(
            "chats.json",
            r#"[{"conversations": [{"from": "system", "value": "简短"}, {"from": "human", "value": "q1"}, {"from": "gpt", "value": "the file's answer"}, {"from": "human", "value": "q2"}, {"from": "gpt", "value": "x"}, {"from": "human", "value": "q3"}]},
                {"conversations": [{"from": "human", "value": "only"}]}]"#
                .as_bytes(),
        )
        .unwrap();
        let mut plan = Plan::default_for_simulator("http://127.0.0.1:8000/v1");
        plan.prompt_mode = PromptMode::File;
        plan.prompt_file = Some(prompts.file.clone());
        plan.conversation = Some(Conversation {
            turns: 2,
            think_ms: 0.0,
        });
        assert!(plan.validate().is_ok(), "{:?}", plan.validate());
        // Sessions draw the file's conversations in order; the plan's turns cap
        // each, and a conversation of one question is one turn.
        let (a, b) = (
            plan.session_prompt(&prompts, 7, 0),
            plan.session_prompt(&prompts, 7, 1),
        );
        assert_eq!(plan.session_prompt(&prompts, 7, 2), a);
        assert_eq!(
            (plan.session_turns(Some(a)), plan.session_turns(Some(b))),
            (2, 1)
        );
        plan.conversation.as_mut().unwrap().turns = 5;
        assert_eq!(plan.session_turns(Some(a)), 3, "as many as the file has");

        let (first, said) = plan.turn_body(7, 0, 0, 10, &[], Some(a));
        let first: Value = serde_json::from_str(&first).unwrap();
        assert_eq!(said, a.messages(), "the system turn and the first question");
        assert_eq!(first["messages"].as_array().unwrap()[..], said[..]);
        let mut history = said;
        history.push(serde_json::json!({"role": "assistant", "content": "the model's answer"}));
        let (second, asked) = plan.turn_body(7, 0, 1, 11, &history, Some(a));
        assert_eq!(
            asked,
            [serde_json::json!({"role": "user", "content": "q2"})]
        );
        let second: Value = serde_json::from_str(&second).unwrap();
        let messages = second["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 4);
        assert_eq!(
            messages[2]["content"], "the model's answer",
            "never the file's"
        );
        let (_, third) = plan.turn_body(7, 0, 2, 12, &history, Some(a));
        assert_eq!(third[0]["content"], "q3");

        // Only a ShareGPT file holds turns.
        let mut lines = plan.clone();
        lines.prompt_file.as_mut().unwrap().format = Format::Jsonl;
        let problems = lines.validate().unwrap_err();
        assert!(
            problems
                .iter()
                .any(|p| p.en.contains("ShareGPT file's human turns")),
            "{problems:?}"
        );
    }

    #[test]
    fn conversations_are_refused_where_they_cannot_run() {
        let base = {
            let mut plan = Plan::default_for_simulator("http://127.0.0.1:8000/v1");
            plan.conversation = Some(Conversation {
                turns: 3,
                think_ms: 0.0,
            });
            plan
        };
        let refused = |change: &dyn Fn(&mut Plan), needle: &str| {
            let mut plan = base.clone();
            change(&mut plan);
            let problems = plan.validate().unwrap_err();
            assert!(
                problems.iter().any(|p| p.en.contains(needle)),
                "{needle}: {problems:?}"
            );
            assert!(problems.iter().all(|p| !p.zh.is_empty()));
        };
        refused(
            &|p| p.conversation.as_mut().unwrap().turns = 1,
            "2 to 64 turns",
        );
        refused(
            &|p| p.conversation.as_mut().unwrap().think_ms = f64::NAN,
            "think time",
        );
        refused(
            &|p| p.endpoint = EndpointKind::Completions,
            "a chat's messages",
        );
        refused(
            &|p| p.prompt_mode = PromptMode::Same,
            "each message of their own",
        );
        refused(
            &|p| {
                p.input_lengths = Some(Lengths {
                    min: 10,
                    max: 20,
                    mean: None,
                    stdev: None,
                })
            },
            "one length",
        );
        refused(
            &|p| {
                p.load = LoadMode::Arrivals {
                    rate_rps: 1.0,
                    poisson: false,
                    n_requests: 3,
                    seed: 1,
                }
            },
            "ladder or fixed-duration",
        );
        for kind in [
            EndpointKind::Chat,
            EndpointKind::Responses,
            EndpointKind::Anthropic,
        ] {
            let mut plan = base.clone();
            plan.endpoint = kind;
            assert!(plan.validate().is_ok(), "{kind:?}");
        }
    }

    #[test]
    fn the_anthropic_kind_sends_its_version_and_browser_permission_and_no_other_does() {
        let pairs = |plan: &Plan| -> Vec<String> {
            plan.request_headers(Some("sk-ant-1"))
                .into_iter()
                .map(|(n, v)| format!("{n}: {v}"))
                .collect()
        };
        let mut plan = Plan::default_for_simulator("https://api.anthropic.com/v1");
        plan.endpoint = EndpointKind::Anthropic;
        plan.auth = AuthStyle::XApiKey;
        assert_eq!(
            pairs(&plan),
            [
                "content-type: application/json",
                "x-api-key: sk-ant-1",
                "anthropic-version: 2023-06-01",
                "anthropic-dangerous-direct-browser-access: true",
            ]
        );
        assert_eq!(plan.endpoint_url(), "https://api.anthropic.com/v1/messages");
        // The plan's own version wins, once.
        plan.extra_headers = vec![("Anthropic-Version".into(), "2024-01-01".into())];
        let headers = pairs(&plan);
        assert!(headers.contains(&"Anthropic-Version: 2024-01-01".to_owned()));
        assert_eq!(
            headers
                .iter()
                .filter(|h| h.to_lowercase().starts_with("anthropic-version"))
                .count(),
            1
        );
        for kind in [
            EndpointKind::Chat,
            EndpointKind::Completions,
            EndpointKind::Responses,
        ] {
            plan.endpoint = kind;
            assert!(
                !pairs(&plan)
                    .iter()
                    .any(|h| h.starts_with("anthropic-dangerous")),
                "{kind:?}"
            );
        }
        // Forcing lengths is for OpenAI's chunk endpoints.
        plan.extra_headers.clear();
        plan.force_output_lengths = true;
        plan.endpoint = EndpointKind::Anthropic;
        let problems = plan.validate().unwrap_err();
        assert!(problems[0].en.contains("min_tokens"), "{problems:?}");
        plan.endpoint = EndpointKind::Chat;
        assert!(plan.validate().is_ok());
        // A base URL typed with the endpoint's path loses it, whatever the kind.
        for path in ["/messages", "/responses"] {
            let (url, notes) = normalize_base_url(&format!("https://h/v1{path}")).unwrap();
            assert_eq!(url, "https://h/v1");
            assert!(notes[0].en.contains(path));
        }
    }

    #[test]
    fn request_headers_carry_the_key_as_the_plan_says() {
        let mut plan = Plan::default_for_simulator("http://127.0.0.1:8000/v1");
        plan.extra_headers = vec![("X-Route".into(), "east".into())];
        let pairs = |headers: Vec<(String, String)>| -> Vec<String> {
            headers
                .into_iter()
                .map(|(n, v)| format!("{n}: {v}"))
                .collect()
        };
        assert_eq!(
            pairs(plan.request_headers(Some(" sk-1 "))),
            [
                "content-type: application/json",
                "authorization: Bearer sk-1",
                "X-Route: east"
            ]
        );
        plan.auth = AuthStyle::ApiKeyHeader;
        assert_eq!(
            pairs(plan.request_headers(Some("sk-1"))),
            [
                "content-type: application/json",
                "api-key: sk-1",
                "X-Route: east"
            ]
        );
        for none in [None, Some(""), Some("  ")] {
            assert_eq!(
                pairs(plan.request_headers(none)),
                ["content-type: application/json", "X-Route: east"]
            );
        }
    }

    /// Section 3 of the reference article, verbatim.
    const ARTICLE_CONFIG: &str = r#"{ "base_url": "https://taotoken.net/api", "api_key": "sk-你的Key填这里", "model": "你的模型ID", "prompt": "请用300字介绍大模型推理中的prefill和decode两个阶段", "max_tokens": 300, "temperature": 0.7, "concurrency_levels": [1, 2, 4, 8, 16], "requests_per_level": 8, "timeout": 60 }"#;

    #[test]
    fn reads_the_article_config_as_is() {
        let imported = import_config(ARTICLE_CONFIG).unwrap();
        let plan = &imported.plan;
        assert_eq!(plan.base_url, "https://taotoken.net/api");
        assert_eq!(plan.model, "你的模型ID");
        assert_eq!(
            plan.prompt,
            PromptSpec::Text("请用300字介绍大模型推理中的prefill和decode两个阶段".into())
        );
        assert_eq!(plan.max_tokens, 300);
        assert_eq!(plan.temperature, Some(0.7));
        assert_eq!(
            plan.load,
            LoadMode::Ladder {
                levels: vec![1, 2, 4, 8, 16],
                requests_per_level: 8
            }
        );
        assert_eq!(plan.timeout_s, 60.0);
        assert_eq!(imported.api_key.as_deref(), Some("sk-你的Key填这里"));
        assert_eq!(
            plan.endpoint_url(),
            "https://taotoken.net/api/chat/completions"
        );
        assert!(plan.validate().is_ok());
    }

    #[test]
    fn plan_round_trips_and_never_holds_the_key() {
        let plan = import_config(ARTICLE_CONFIG).unwrap().plan;
        let json = serde_json::to_string(&plan).unwrap();
        assert!(!json.contains("sk-"), "{json}");
        let again = import_config(&json).unwrap();
        assert_eq!(again.plan, plan);
        assert_eq!(again.api_key, None);
    }

    #[test]
    fn newer_schema_is_refused_clearly() {
        let mut plan = Plan::default_for_simulator("http://127.0.0.1:8000/v1");
        plan.schema = 99;
        let err = import_config(&serde_json::to_string(&plan).unwrap()).unwrap_err();
        assert!(err.contains("newer tokenmeter"), "{err}");
    }

    #[test]
    fn unknown_article_field_is_an_error_that_says_so() {
        let err = import_config(r#"{"base_url":"http://x/v1","model":"m","prompt":"p","max_tokens":1,"concurrency_levels":[1],"requests_per_level":1,"timeout":1,"concurrency":3}"#).unwrap_err();
        assert!(err.contains("concurrency"), "{err}");
    }

    #[test]
    fn origins_of_base_urls() {
        assert_eq!(
            origin("HTTPS://API.Example.com/v1/").as_deref(),
            Some("https://api.example.com")
        );
        assert_eq!(
            origin(" http://127.0.0.1:8000/v1").as_deref(),
            Some("http://127.0.0.1:8000")
        );
        assert_eq!(origin("ftp://x/v1"), None);
        assert_eq!(origin("api.example.com"), None);
        assert_ne!(
            origin("https://a.example.com/v1"),
            origin("https://b.example.com/v1")
        );
    }

    #[test]
    fn sizes_a_browser_cannot_hold_are_refused() {
        let ok = Plan::default_for_simulator("http://127.0.0.1:8000/v1");
        let mut plan = ok.clone();
        plan.timeout_s = 2_147_484.0;
        plan.prompt = PromptSpec::Tokens(4_000_000_000);
        plan.load = LoadMode::Arrivals {
            rate_rps: 1.0,
            poisson: true,
            n_requests: 4_000_000_000,
            seed: 1,
        };
        let problems = plan.validate().unwrap_err();
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].contains("at most 86400 seconds"));
        // Opening such a plan (from a link) builds no giant prompt.
        assert!(plan.prompt_text().len() < 1 << 20);
        plan.load = LoadMode::Ladder {
            levels: vec![1],
            requests_per_level: MAX_REQUESTS_PER_LEVEL + 1,
        };
        assert!(plan
            .validate()
            .unwrap_err()
            .iter()
            .any(|p| p.contains("requests per level")));
        // Each level within bounds, the run as a whole not.
        plan.load = LoadMode::Ladder {
            levels: vec![1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
            requests_per_level: 10_000,
        };
        let problems = plan.validate().unwrap_err();
        assert!(
            problems.iter().any(|p| p.contains("sends 110000 requests")),
            "{problems:?}"
        );
        plan.load = LoadMode::Ladder {
            levels: vec![1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
            requests_per_level: 10_000,
        };
        plan.warmup_requests = MAX_WARMUP_REQUESTS;
        assert_eq!(
            plan.validate().unwrap_err().len(),
            2,
            "the timeout and the prompt only"
        );
        plan.warmup_requests = 4_000_000_000;
        assert!(plan
            .validate()
            .unwrap_err()
            .iter()
            .any(|p| p.contains("warm-up requests can be at most")));
    }

    #[test]
    fn engine_workers_follow_the_streams_the_cores_and_the_users_choice() {
        let mut plan = Plan::default_for_simulator("http://127.0.0.1:8787/v1");
        // Left to the run: one per 32 streams, up to one per core.
        assert_eq!(plan.engine_workers_for(1, 8), 1);
        assert_eq!(plan.engine_workers_for(32, 8), 1);
        assert_eq!(plan.engine_workers_for(33, 8), 2);
        assert_eq!(plan.engine_workers_for(256, 8), 8);
        assert_eq!(plan.engine_workers_for(256, 2), 2);
        assert_eq!(plan.engine_workers_for(4096, 64), MAX_ENGINE_WORKERS);
        // A browser that reports no cores still measures.
        assert_eq!(plan.engine_workers_for(256, 0), 1);
        // Open-loop arrivals: one, unless chosen.
        assert_eq!(plan.engine_workers_for(0, 8), 1);
        // Chosen: as chosen, never more than the streams.
        plan.engine_workers = 2;
        assert_eq!(plan.engine_workers_for(1, 8), 1);
        assert_eq!(plan.engine_workers_for(16, 1), 2);
        assert_eq!(plan.engine_workers_for(0, 1), 2);
        plan.engine_workers = MAX_ENGINE_WORKERS + 1;
        assert!(plan
            .validate()
            .unwrap_err()
            .iter()
            .any(|p| p.contains("engine workers can be at most")));
        // Left out of a plan's JSON when left to the run, so older readers agree.
        let json =
            serde_json::to_value(Plan::default_for_simulator("http://127.0.0.1:8787/v1")).unwrap();
        assert!(json.get("engine_workers").is_none());
    }

    #[test]
    fn secret_looking_headers_are_told_by_name_and_by_value() {
        for (name, value) in [
            ("Authorization", "whatever"),
            ("Ocp-Apim-Subscription-Key", "0123"),
            ("x-goog-api-key", "abc"),
            ("cf-aig-authorization", "x"),
            ("Cookie", "a=b"),
            ("X-Amz-Security-Token", "t"),
            ("X-Custom", "Bearer abc"),
            ("X-Custom", "sk-ant-api03-xyz"),
            ("X-Custom", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig"),
            ("X-Custom", "AKIAIOSFODNN7EXAMPLE0123456789abcdef"),
        ] {
            assert!(is_secret_header(name, value), "{name}: {value}");
        }
        for (name, value) in [
            ("X-Gateway-Route", "east"),
            ("x-tokenmeter-fault", "cut"),
            ("X-Priority", "high"),
            ("Accept-Language", "zh-CN"),
        ] {
            assert!(!is_secret_header(name, value), "{name}: {value}");
        }
        let mut plan = Plan::default_for_simulator("http://127.0.0.1:8000/v1");
        plan.extra_headers = vec![("x-goog-api-key".into(), "AIzaSy-secret".into())];
        let problems = plan.validate().unwrap_err();
        assert!(problems[0].contains("looks like a secret"), "{problems:?}");
        assert!(!problems[0].contains("AIzaSy"));
    }

    #[test]
    fn credentials_in_a_base_url_are_refused_without_repeating_them() {
        let err = normalize_base_url("https://alice:s3cret-pass@api.example.com/v1").unwrap_err();
        assert!(err.contains("credentials"), "{err}");
        assert!(!err.contains("s3cret") && !err.contains("alice"), "{err}");
        // An @ further on (a path) is not a credential.
        assert!(normalize_base_url("https://api.example.com/@team/v1").is_ok());
    }

    #[test]
    fn base_url_normalisation_explains_itself() {
        let (url, notes) =
            normalize_base_url(" https://api.example.com/v1/chat/completions/ ").unwrap();
        assert_eq!(url, "https://api.example.com/v1");
        assert_eq!(notes.len(), 2);
        assert!(notes[1].contains("/chat/completions"));
        assert_eq!(
            normalize_base_url("http://127.0.0.1:8000/v1").unwrap(),
            ("http://127.0.0.1:8000/v1".into(), vec![])
        );
        assert!(normalize_base_url("api.example.com/v1").is_err());
        assert!(normalize_base_url("https://").is_err());
        assert!(normalize_base_url("").is_err());
        let (url, _) = normalize_base_url("http://h/v1/completions").unwrap();
        assert_eq!(url, "http://h/v1");
    }

    #[test]
    fn mixed_content_spares_loopback() {
        assert!(is_mixed_content(true, "http://gpu-box.lan:8000/v1"));
        assert!(!is_mixed_content(false, "http://gpu-box.lan:8000/v1"));
        assert!(!is_mixed_content(true, "https://api.example.com/v1"));
        assert!(!is_mixed_content(true, "http://127.0.0.1:8000/v1"));
        assert!(!is_mixed_content(true, "http://localhost:8000/v1"));
        assert!(!is_mixed_content(true, "http://[::1]:8000/v1"));
        assert!(is_mixed_content(true, "HTTP://10.0.0.5/v1"));
    }

    #[test]
    fn levels_parse_sort_and_explain() {
        assert_eq!(parse_levels("1,2,4,8,16").unwrap(), [1, 2, 4, 8, 16]);
        assert_eq!(parse_levels(" 8 2, 4，1 2").unwrap(), [1, 2, 4, 8]);
        assert!(parse_levels("1,two").unwrap_err().contains("two"));
        assert!(parse_levels("0,1").is_err());
        assert!(parse_levels(" , ").is_err());
    }

    #[test]
    fn generated_prompt_has_the_asked_number_of_words() {
        let p = generated_prompt(64);
        assert_eq!(p.split(' ').count(), 64);
        assert_eq!(generated_prompt(0), "Repeat");
    }

    #[test]
    fn arrivals_even_and_poisson() {
        assert_eq!(
            arrival_offsets_ms(4.0, false, 4, 0),
            [0.0, 250.0, 500.0, 750.0]
        );
        let poisson = arrival_offsets_ms(10.0, true, 20_001, 7);
        assert_eq!(poisson, arrival_offsets_ms(10.0, true, 20_001, 7), "seeded");
        assert!(poisson.windows(2).all(|w| w[1] >= w[0]));
        // 20,000 gaps of mean 100 ms: the mean is within 3% (about 4 standard errors).
        let mean_gap = poisson[20_000] / 20_000.0;
        assert!((mean_gap - 100.0).abs() < 3.0, "{mean_gap}");
        assert_ne!(
            arrival_offsets_ms(10.0, true, 3, 8),
            arrival_offsets_ms(10.0, true, 3, 7)
        );
    }

    #[test]
    fn slo_per_request() {
        let slo = Slo {
            ttft_p95_ms: Some(100.0),
            tpot_p95_ms: Some(10.0),
            e2e_p95_ms: None,
            error_rate_pct: None,
        };
        assert!(slo.is_met_by(100_000, Some(10_000.0), 9_999_999));
        assert!(!slo.is_met_by(100_001, Some(1.0), 0));
        assert!(!slo.is_met_by(1, Some(10_001.0), 0));
        assert!(slo.is_met_by(1, None, 0));
        assert!(Slo::default().is_met_by(u64::MAX, Some(f64::MAX), u64::MAX));
    }

    #[test]
    fn an_slo_search_is_bounded_by_the_run_cap() {
        let mut plan = Plan::default_for_simulator("http://127.0.0.1:8000/v1");
        plan.load = LoadMode::SloSearch {
            max_concurrency: 64,
            requests_per_probe: 40,
        };
        assert_eq!(plan.validate(), Ok(()));
        plan.load = LoadMode::SloSearch {
            max_concurrency: 4_096,
            requests_per_probe: 10_000,
        };
        let problems = plan.validate().unwrap_err();
        assert!(
            problems[0].contains("this search may send up to"),
            "{problems:?}"
        );
        plan.load = LoadMode::SloSearch {
            max_concurrency: 0,
            requests_per_probe: 10,
        };
        assert!(plan.validate().unwrap_err()[0].contains("between 1 and 4096"));
        plan.slo.error_rate_pct = Some(f64::NAN);
        assert!(plan
            .validate()
            .unwrap_err()
            .iter()
            .any(|p| p.contains("error-rate limit")));
    }

    #[test]
    fn a_file_s_prompts_are_sent_as_written_with_each_request_s_length() {
        let prompts = Arc::new(
            crate::prompts::read(
                "p.jsonl",
                br#"{"prompt": "first"}
{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "second"}]}
"#,
            )
            .unwrap(),
        );
        let mut plan = Plan::default_for_simulator("http://127.0.0.1:8000/v1");
        plan.prompt_mode = PromptMode::File;
        assert!(plan
            .validate()
            .unwrap_err()
            .iter()
            .any(|p| p.contains("choose the file")));
        plan.prompt_file = Some(prompts.file.clone());
        plan.validate().unwrap();
        plan.output_lengths = Some(Lengths {
            min: 5,
            max: 50,
            mean: None,
            stdev: None,
        });
        let bodies = Bodies::with_prompts(&plan, 3, Arc::clone(&prompts));
        assert_eq!(bodies.shared(), None);
        let body = |id| serde_json::from_str::<Value>(&bodies.body(id)).unwrap();
        assert_eq!(
            body(0)["messages"],
            serde_json::json!([{"role": "user", "content": "first"}])
        );
        assert_eq!(
            body(1)["messages"][0],
            serde_json::json!({"role": "system", "content": "be brief"})
        );
        assert_eq!(
            body(2)["messages"],
            body(0)["messages"],
            "in order, round again"
        );
        for id in 0..20 {
            assert_eq!(body(id)["max_tokens"], bodies.asked_tokens(id).unwrap());
        }
        // A completions endpoint gets the text.
        plan.endpoint = EndpointKind::Completions;
        let bodies = Bodies::with_prompts(&plan, 3, prompts);
        let body: Value = serde_json::from_str(&bodies.body(1)).unwrap();
        assert_eq!(body["prompt"], "be brief\n\nsecond");
        assert!(body.get("messages").is_none());
        // The plan keeps the file's identity, never its prompts.
        let json = serde_json::to_string(&plan).unwrap();
        assert!(
            json.contains(r#""prompt_mode":"file""#)
                && json.contains("sha256")
                && !json.contains("be brief")
        );
    }

    #[test]
    fn unique_headers_differ_for_every_request_and_repeat_with_the_seed() {
        let mut seen = std::collections::HashSet::new();
        for id in 0..100_000u64 {
            let header = unique_header(0xdead_beef_1234, id);
            assert!(seen.insert(header.clone()), "request {id}: {header}");
        }
        assert_eq!(unique_header(7, 3), unique_header(7, 3));
        assert_ne!(unique_header(7, 3), unique_header(8, 3));
        // Neighbouring seeds (a user's seed 7, then 8) share no header: no run reads
        // another's cache.
        let seven: std::collections::HashSet<String> =
            (0..2_000).map(|id| unique_header(7, id)).collect();
        assert!((0..2_000).all(|id| !seven.contains(&unique_header(8, id))));
        let header = unique_header(7, 3);
        assert_eq!(header.split(' ').count(), 8);
        assert!(header.ends_with(".\n") && header.is_ascii());
        // The first words differ for most pairs: two requests share a first word
        // about once in sixteen, never the whole header.
        let firsts: std::collections::HashSet<&str> = (0..64u64)
            .map(|id| unique_header(7, id))
            .collect::<Vec<_>>()
            .iter()
            .map(|h| {
                HEADER_WORDS
                    .iter()
                    .find(|w| h.starts_with(*w))
                    .copied()
                    .unwrap()
            })
            .collect();
        assert!(firsts.len() >= 12, "{firsts:?}");
    }

    #[test]
    fn bodies_put_each_request_s_header_in_front_of_the_prompt() {
        let mut plan = Plan::default_for_simulator("http://127.0.0.1:8000/v1");
        plan.prompt = PromptSpec::Text("say \"hi\"\n你好".into());
        let bodies = Bodies::new(&plan, 42);
        assert_eq!(bodies.shared(), None);
        for id in [0, 1, 9_999] {
            let body: Value = serde_json::from_str(&bodies.body(id)).unwrap();
            let content = body["messages"][0]["content"].as_str().unwrap();
            assert_eq!(
                content,
                format!("{}say \"hi\"\n你好", unique_header(42, id))
            );
            assert_eq!(body["model"], "tokenmeter-sim");
            assert_eq!(body["stream"], true);
        }
        assert_ne!(bodies.body(1), bodies.body(2));
        // Completions: the header leads `prompt`.
        plan.endpoint = EndpointKind::Completions;
        let body: Value = serde_json::from_str(&Bodies::new(&plan, 1).body(5)).unwrap();
        assert!(body["prompt"]
            .as_str()
            .unwrap()
            .starts_with(&unique_header(1, 5)));
        // The same prompt for every request: one body, exactly the plan's.
        plan.prompt_mode = PromptMode::Same;
        let bodies = Bodies::new(&plan, 42);
        let expected = request_body(&plan.body_spec()).to_string();
        assert_eq!(bodies.shared(), Some(expected.as_str()));
        assert_eq!(bodies.body(3), expected);
    }

    #[test]
    fn a_generated_prompt_leaves_room_for_the_header_and_old_plans_sent_one_prompt() {
        let mut plan = Plan::default_for_simulator("http://x/v1");
        plan.prompt = PromptSpec::Tokens(800);
        let unique = plan.prompt_text();
        plan.prompt_mode = PromptMode::Same;
        let same = plan.prompt_text();
        assert_eq!(
            same.split(' ').count() - unique.split(' ').count(),
            UNIQUE_HEADER_TOKENS as usize
        );
        let mut old = serde_json::to_value(Plan::default_for_simulator("http://x/v1")).unwrap();
        assert_eq!(old["prompt_mode"], "unique");
        old.as_object_mut().unwrap().remove("prompt_mode");
        let old: Plan = serde_json::from_value(old).unwrap();
        assert_eq!(
            old.prompt_mode,
            PromptMode::Same,
            "written before the mode existed"
        );
        assert_eq!(old.seed, None);
    }

    #[test]
    fn a_shared_prefix_leads_each_group_s_requests_then_their_own_header() {
        let mut plan = Plan::default_for_simulator("http://127.0.0.1:8000/v1");
        plan.prompt_mode = PromptMode::SharedPrefix;
        plan.prefix_tokens = 300;
        plan.prefix_groups = 2;
        assert_eq!(plan.validate(), Ok(()));
        let bodies = Bodies::new(&plan, 9);
        let content = |id: u64| {
            let body: Value = serde_json::from_str(&bodies.body(id)).unwrap();
            body["messages"][0]["content"].as_str().unwrap().to_owned()
        };
        let prefix = |group: u32| shared_prefix(9, group, 300);
        for id in 0..6u64 {
            let expected = format!(
                "{}{}{}",
                prefix((id % 2) as u32),
                unique_header(9, id),
                plan.prompt_text()
            );
            assert_eq!(content(id), expected, "request {id}");
        }
        // About the asked length, in words of one token each.
        let words = prefix(0).split_whitespace().count();
        assert!((295..=305).contains(&words), "{words}");
        assert_ne!(prefix(0), prefix(1), "groups share nothing");
        assert_ne!(prefix(0), shared_prefix(10, 0, 300), "nor do runs");
        // Checked.
        plan.prefix_tokens = 5;
        assert!(plan.validate().unwrap_err()[0].contains("shared prefix"));
        plan.prefix_tokens = 300;
        plan.prefix_groups = 0;
        assert!(plan.validate().unwrap_err()[0].contains("groups"));
    }

    #[test]
    fn lengths_are_drawn_per_request_as_their_distribution_says() {
        let stats = |l: Lengths, salt: u64| {
            let draws: Vec<f64> = (0..20_000u64)
                .map(|id| f64::from(l.draw(42, id, salt)))
                .collect();
            let mean = draws.iter().sum::<f64>() / draws.len() as f64;
            let var = draws.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / draws.len() as f64;
            let (lo, hi) = draws
                .iter()
                .fold((f64::MAX, f64::MIN), |(a, b), &d| (a.min(d), b.max(d)));
            (mean, var.sqrt(), lo, hi)
        };
        let uniform = Lengths {
            min: 10,
            max: 30,
            mean: None,
            stdev: None,
        };
        let (mean, sd, lo, hi) = stats(uniform, OUTPUT_SALT);
        assert!((mean - 20.0).abs() < 0.2, "{mean}");
        // A discrete uniform over 21 values: sd = sqrt((21² − 1) / 12) ≈ 6.06.
        assert!((sd - 6.06).abs() < 0.1, "{sd}");
        assert_eq!((lo, hi), (10.0, 30.0));
        let normal = Lengths {
            min: 1,
            max: 2_000,
            mean: Some(500.0),
            stdev: Some(100.0),
        };
        let (mean, sd, lo, hi) = stats(normal, INPUT_SALT);
        assert!((mean - 500.0).abs() < 3.0, "{mean}");
        assert!((sd - 100.0).abs() < 3.0, "{sd}");
        assert!(lo >= 1.0 && hi <= 2_000.0);
        // Clipped: a wide normal stays within min and max.
        let clipped = Lengths {
            min: 90,
            max: 110,
            mean: Some(100.0),
            stdev: Some(50.0),
        };
        let (_, _, lo, hi) = stats(clipped, OUTPUT_SALT);
        assert_eq!((lo, hi), (90.0, 110.0));
        // Reproducible from the seed, the output's apart from the input's.
        assert_eq!(
            normal.draw(7, 3, OUTPUT_SALT),
            normal.draw(7, 3, OUTPUT_SALT)
        );
        let differ = (0..100u64)
            .filter(|&id| normal.draw(7, id, OUTPUT_SALT) != normal.draw(7, id, INPUT_SALT));
        assert!(differ.count() > 90);
    }

    #[test]
    fn each_request_asks_its_own_length_and_may_force_it() {
        let mut plan = Plan::default_for_simulator("http://127.0.0.1:8000/v1");
        plan.prompt = PromptSpec::Tokens(400);
        plan.output_lengths = Some(Lengths {
            min: 10,
            max: 30,
            mean: None,
            stdev: None,
        });
        plan.input_lengths = Some(Lengths {
            min: 100,
            max: 900,
            mean: None,
            stdev: None,
        });
        plan.force_output_lengths = true;
        assert_eq!(plan.validate(), Ok(()));
        let bodies = Bodies::new(&plan, 5);
        let mut prompts = std::collections::HashSet::new();
        for id in 0..20u64 {
            let body: Value = serde_json::from_str(&bodies.body(id)).unwrap();
            let asked = plan.asked_output_tokens(5, id);
            assert!((10..=30).contains(&asked));
            assert_eq!(bodies.asked_tokens(id), Some(asked));
            assert_eq!(body["max_tokens"], asked);
            assert_eq!(body["min_tokens"], asked);
            assert_eq!(body["ignore_eos"], true);
            let content = body["messages"][0]["content"].as_str().unwrap();
            assert!(
                content.starts_with(&unique_header(5, id)),
                "its own header first"
            );
            let words = content.split_whitespace().count();
            assert!((100..=900).contains(&words), "{words} words");
            prompts.insert(words);
        }
        assert!(prompts.len() > 10, "input lengths vary: {prompts:?}");
        // Fixed lengths: one max_tokens, and forcing adds the two fields to it.
        plan.output_lengths = None;
        plan.input_lengths = None;
        let bodies = Bodies::new(&plan, 5);
        let body: Value = serde_json::from_str(&bodies.body(3)).unwrap();
        assert_eq!(
            (body["max_tokens"].clone(), body["min_tokens"].clone()),
            (64.into(), 64.into())
        );
        assert_eq!(bodies.asked_tokens(3), Some(64));
        // Checked: input lengths need a generated prompt; lengths need min ≤ max.
        plan.prompt = PromptSpec::Text("hi".into());
        plan.input_lengths = Some(Lengths {
            min: 10,
            max: 20,
            mean: None,
            stdev: None,
        });
        assert!(plan
            .validate()
            .unwrap_err()
            .iter()
            .any(|p| p.contains("generated prompt")));
        plan.input_lengths = None;
        plan.output_lengths = Some(Lengths {
            min: 30,
            max: 10,
            mean: None,
            stdev: None,
        });
        assert!(plan.validate().unwrap_err()[0].contains("1 ≤ min ≤ max"));
        plan.output_lengths = Some(Lengths {
            min: 1,
            max: 10,
            mean: Some(5.0),
            stdev: None,
        });
        assert!(plan.validate().unwrap_err()[0].contains("normal distribution"));
    }
}
