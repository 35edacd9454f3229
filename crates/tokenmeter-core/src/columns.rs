//! The levels table's columns, each in one place: its id (the page's `data-col`
//! hook), its header and definition in English and Chinese, how its value is read
//! from a level's [`Summary`], its unit and decimals, and where it is shown (the
//! page's table and whether by default, the article's table of the Markdown, HTML
//! and command-line reports, the levels CSV under its own name). Every table of
//! levels renders from [`COLUMNS`]; [`column`] finds one by id and panics on an
//! unknown one, which the tests of every caller reach.

use crate::{
    error::{Lang, Words},
    stats::Distribution,
    summary::{Distortion, Summary},
};

/// What a column's value is measured in: how a number is written after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Milliseconds: `12.3 ms` in a report, `12.3` in the page's cell.
    Ms,
    /// A count or a rate written bare.
    Plain,
    /// A percentage: `4.2%`.
    Pct,
}

/// How a column's value is read from a level.
#[derive(Clone, Copy)]
pub enum Value {
    /// A figure (`None`: not measured, or not finite), and whether it is a gap
    /// between tokens, which a gateway's bursts make its own (see [`Distortion::Buffered`]).
    Number(fn(&Summary) -> Option<f64>),
    /// A text (`lang` for columns that say something in words).
    Text(fn(&Summary, Lang) -> String),
}

/// Which runs have a column: every run, only runs where some request reasoned,
/// only runs that repeated their ladder, only runs where the server's metrics
/// were read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    Always,
    Reasoning,
    Repeated,
    Server,
}

/// Where a column is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Page {
    /// Not on the page (the CSV has it).
    No,
    /// In the page's table, hidden until the user chooses it.
    Chosen,
    /// In the page's table from the start (the article's columns).
    Shown,
}

/// One column of the levels table.
pub struct Column {
    /// The page's `data-col` hook and the column chooser's key: stable.
    pub id: &'static str,
    pub header: Words,
    /// What the figure is, shown when the header is hovered.
    pub definition: Words,
    pub value: Value,
    pub unit: Unit,
    /// Decimals in the page and the reports (the CSV writes up to three).
    pub decimals: usize,
    /// A gap between tokens: where a gateway released the stream in bursts, the
    /// gaps are its releases, and the page and the reports show a dash.
    pub token_gaps: bool,
    pub when: When,
    pub page: Page,
    /// In the article's table (Markdown, HTML, `tokenmeter-report`).
    pub article: bool,
    /// Its header in the levels CSV (`None`: not in the CSV).
    pub csv: Option<&'static str>,
}

const fn words(en: &'static str, zh: &'static str) -> Words {
    Words { en, zh }
}

fn p50(d: Option<Distribution>) -> Option<f64> {
    d.map(|d| d.p50)
}
fn p95(d: Option<Distribution>) -> Option<f64> {
    d.map(|d| d.p95)
}
fn p99(d: Option<Distribution>) -> Option<f64> {
    d.map(|d| d.p99)
}
fn mean(d: Option<Distribution>) -> Option<f64> {
    d.map(|d| d.mean)
}

/// A column of milliseconds.
const fn ms(
    id: &'static str,
    header: Words,
    definition: Words,
    value: fn(&Summary) -> Option<f64>,
) -> Column {
    Column {
        id,
        header,
        definition,
        value: Value::Number(value),
        unit: Unit::Ms,
        decimals: 1,
        token_gaps: false,
        when: When::Always,
        page: Page::Chosen,
        article: false,
        csv: None,
    }
}

/// A column of a count or rate.
const fn plain(
    id: &'static str,
    header: Words,
    definition: Words,
    decimals: usize,
    value: fn(&Summary) -> Option<f64>,
) -> Column {
    Column {
        unit: Unit::Plain,
        decimals,
        ..ms(id, header, definition, value)
    }
}

/// A column of words.
const fn text(
    id: &'static str,
    header: Words,
    definition: Words,
    value: fn(&Summary, Lang) -> String,
) -> Column {
    Column {
        value: Value::Text(value),
        unit: Unit::Plain,
        decimals: 0,
        ..ms(id, header, definition, |_| None)
    }
}

impl Column {
    const fn shown(self) -> Column {
        Column {
            page: Page::Shown,
            ..self
        }
    }
    const fn not_on_page(self) -> Column {
        Column {
            page: Page::No,
            ..self
        }
    }
    const fn in_article(self) -> Column {
        Column {
            article: true,
            ..self
        }
    }
    const fn gaps(self) -> Column {
        Column {
            token_gaps: true,
            ..self
        }
    }
    const fn only(self, when: When) -> Column {
        Column { when, ..self }
    }
    const fn csv(self, name: &'static str) -> Column {
        Column {
            csv: Some(name),
            ..self
        }
    }

    /// Whether a run with these kinds has this column.
    pub fn is_in(&self, kinds: TableKinds) -> bool {
        match self.when {
            When::Always => true,
            When::Reasoning => kinds.reasoning,
            When::Repeated => kinds.repeated,
            When::Server => kinds.server,
        }
    }

    /// The figure, `None` when not measured (or not finite), or when a gateway's
    /// bursts made this gap between tokens its own.
    pub fn number(&self, s: &Summary) -> Option<f64> {
        match self.value {
            Value::Number(read) if !(self.token_gaps && is_buffered(s)) => {
                read(s).filter(|v| v.is_finite())
            }
            _ => None,
        }
    }

    /// The header with its unit when it is ms (`TTFT p50 ms`), for tables whose
    /// cells are bare figures.
    pub fn header_with_unit(&self, lang: Lang) -> String {
        match self.unit {
            Unit::Ms => format!("{} {}", self.header.text(lang), lang.pick("ms", "毫秒")),
            Unit::Plain | Unit::Pct => self.header.text(lang).to_owned(),
        }
    }

    /// The page's cell: the figure with the column's decimals, no unit (the header
    /// names it), a dash for none.
    pub fn cell(&self, s: &Summary, lang: Lang) -> String {
        match self.value {
            Value::Text(say) => say(s, lang),
            Value::Number(_) => self.number(s).map_or_else(
                || "–".into(),
                |v| match self.unit {
                    Unit::Pct => format!("{v:.*}%", self.decimals),
                    Unit::Ms | Unit::Plain => format!("{v:.*}", self.decimals),
                },
            ),
        }
    }

    /// A report's cell: as the page's, with the unit when it is ms.
    pub fn report_cell(&self, s: &Summary, lang: Lang) -> String {
        let cell = self.cell(s, lang);
        match (self.unit, self.number(s)) {
            (Unit::Ms, Some(_)) => format!("{cell} ms"),
            _ => cell,
        }
    }

    /// The CSV's cell: up to three decimals without trailing zeros, as measured
    /// (a buffered level's gaps too: the CSV is data), empty for none.
    pub fn csv_cell(&self, s: &Summary) -> String {
        match self.value {
            Value::Text(say) => say(s, Lang::En),
            Value::Number(read) => read(s).map(csv_number).unwrap_or_default(),
        }
    }
}

/// Numbers in CSV: three decimals, no trailing zeros; empty when not finite.
pub(crate) fn csv_number(x: f64) -> String {
    if !x.is_finite() {
        return String::new();
    }
    let s = format!("{x:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_owned()
    }
}

fn is_buffered(s: &Summary) -> bool {
    matches!(s.distorted, Some(Distortion::Buffered { .. }))
}

/// What a run's table has beyond the usual: reasoning (the answer column), and
/// passes of a repeated ladder (the spread columns).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TableKinds {
    /// Some request streamed reasoning: the time-to-first-answer columns.
    pub reasoning: bool,
    /// The ladder ran more than once: the spread between passes.
    pub repeated: bool,
    /// Some level has what the server reported (its `/metrics`).
    pub server: bool,
}

/// The level's own column, first in every table.
pub const LEVEL: Words = words("concurrency", "并发");

/// Every column, in the order every table shows them.
pub const COLUMNS: &[Column] = &[
    plain("n_requests", words("requests", "请求数"), words("Requests sent at this level", "本档发出的请求数"), 0, |s| Some(s.n_requests as f64))
        .not_on_page()
        .csv("n_requests"),
    plain("n_ok", words("n_ok", "成功"), words("Requests that finished with an answer", "得到完整回答的请求数"), 0, |s| Some(s.n_ok as f64))
        .shown()
        .in_article()
        .csv("n_ok"),
    plain("n_fail", words("n_fail", "失败"), words("Requests that failed (cancelled ones are not counted); hover the count for the kinds", "失败的请求数（取消的不计）；悬停可看失败类型"), 0, |s| Some(s.n_fail as f64))
        .shown()
        .in_article()
        .csv("n_fail"),
    plain("n_cancelled", words("cancelled", "已取消"), words("Requests cancelled before they ended", "结束前被取消的请求数"), 0, |s| Some(s.n_cancelled as f64))
        .not_on_page()
        .csv("n_cancelled"),
    ms("ttft_p50", words("TTFT p50", "TTFT p50"), words("Time to first token, median: from sending the request to the first token (reasoning or answer)", "首 token 时间中位数：从发出请求到第一个 token（推理或回答）"), |s| p50(s.ttft_ms))
        .shown()
        .in_article()
        .csv("ttft_p50_ms"),
    ms("ttft_p95", words("TTFT p95", "TTFT p95"), words("Time to first token, 95th percentile", "首 token 时间的第 95 百分位"), |s| p95(s.ttft_ms))
        .shown()
        .in_article()
        .csv("ttft_p95_ms"),
    ms("ttft_p99", words("TTFT p99", "TTFT p99"), words("Time to first token, 99th percentile", "首 token 时间的第 99 百分位"), |s| p99(s.ttft_ms))
        .in_article()
        .csv("ttft_p99_ms"),
    ms("ttfat_p50", words("answer p50", "回答 p50"), words("Time to the first answer token (after any reasoning), median", "到第一个回答 token（推理之后）的时间中位数"), |s| p50(s.ttfat_ms))
        .shown()
        .only(When::Reasoning)
        .csv("ttfat_p50_ms"),
    ms("ttfat_p95", words("answer p95", "回答 p95"), words("Time to the first answer token (after any reasoning), 95th percentile", "到第一个回答 token 的时间的第 95 百分位"), |s| p95(s.ttfat_ms))
        .not_on_page()
        .csv("ttfat_p95_ms"),
    ms("tpot_p50", words("TPOT p50", "TPOT p50"), words("Time per output token, median: (E2E − TTFT) / (N_out − 1)", "每个输出 token 的时间中位数：(E2E − TTFT) / (N_out − 1)"), |s| p50(s.tpot_ms))
        .gaps()
        .shown()
        .in_article()
        .csv("tpot_p50_ms"),
    ms("tpot_p95", words("TPOT p95", "TPOT p95"), words("Time per output token, 95th percentile", "每个输出 token 时间的第 95 百分位"), |s| p95(s.tpot_ms))
        .gaps()
        .shown()
        .in_article()
        .csv("tpot_p95_ms"),
    ms("itl_p99", words("ITL p99", "ITL p99"), words("Inter-token latency, 99th percentile over every gap between tokens: stalls TPOT averages away", "token 间延迟的第 99 百分位，取自每个 token 间隔：TPOT 平均掉的卡顿在这里可见"), |s| p99(s.itl_ms))
        .gaps()
        .in_article()
        .csv("itl_p99_ms"),
    ms("e2e_p95", words("E2E p95", "E2E p95"), words("End-to-end latency, 95th percentile: sending to the end of the answer", "端到端延迟的第 95 百分位：从发出到回答结束"), |s| p95(s.e2e_ms))
        .in_article()
        .csv("e2e_p95_ms"),
    ms("queue_p95", words("queue p95", "排队 p95"), words("Client queue time, 95th percentile: waiting for a free slot before sending (kept out of TTFT)", "客户端排队时间的第 95 百分位：发出前等待空位的时间（不计入 TTFT）"), |s| p95(s.queue_ms))
        .csv("queue_p95_ms"),
    plain("tps_mean", words("TPS mean", "单请求 TPS 均值"), words("Per-request decode speed, mean: (N_out − 1) / (last token − first token)", "单请求解码速度均值：(N_out − 1) / (最后一个 token − 第一个 token)"), 1, |s| mean(s.decode_tps))
        .shown()
        .in_article()
        .csv("decode_tps_mean"),
    plain("output_tps", words("output tok/s", "总输出 tok/s"), words("All output tokens of successful requests / the level's wall time", "成功请求的全部输出 token / 本档总耗时"), 1, |s| Some(s.output_tps))
        .shown()
        .in_article()
        .csv("output_tps"),
    plain("request_rps", words("req/s", "请求/s"), words("Requests finished per second", "每秒完成的请求数"), 2, |s| Some(s.request_throughput_rps))
        .in_article()
        .csv("request_rps"),
    plain("goodput_rps", words("goodput/s", "goodput/s"), words("Requests per second that met the SLO", "每秒满足 SLO 的请求数"), 2, |s| s.goodput_rps)
        .in_article()
        .csv("goodput_rps"),
    plain("tps_sum_article", words("TPS sum", "TPS 之和"), words("The article's total: the sum of the requests' decode speeds", "文章的算法：各请求解码速度之和"), 1, |s| Some(s.tps_sum_article))
        .not_on_page()
        .csv("tps_sum_article"),
    plain("peak_output_tps", words("peak tok/s", "峰值 tok/s"), words("Output tokens/s in the level's busiest second", "本档最忙一秒的输出 token/s"), 1, |s| Some(s.peak_output_tps))
        .not_on_page()
        .csv("peak_output_tps"),
    plain("peak_concurrency", words("peak in flight", "峰值并发"), words("The most requests in flight at once", "同时在途请求数的最大值"), 0, |s| Some(f64::from(s.peak_concurrency)))
        .not_on_page()
        .csv("peak_concurrency"),
    plain("n_usage_counted", words("usage counted", "usage 计数"), words("Successes whose tokens the server's usage counted", "输出 token 数取自服务端 usage 的成功请求数"), 0, |s| Some(s.n_usage_counted as f64))
        .not_on_page()
        .csv("n_usage_counted"),
    plain("n_mismatched", words("mismatched", "计数不符"), words("Successes whose usage and counted chunks differ", "usage 与分块计数不一致的成功请求数"), 0, |s| Some(s.n_mismatched as f64))
        .not_on_page()
        .csv("n_mismatched"),
    text("fails", words("failures", "失败类型"), words("Failures by kind", "按类型统计的失败"), |s, _| fails_text(s))
        .not_on_page()
        .csv("fails"),
    ms("browser_wait_p95", words("browser wait p95", "浏览器等待 p95"), words("Time in the browser between fetch and the request leaving it, 95th percentile", "请求在浏览器内从 fetch 到发出的时间的第 95 百分位"), |s| p95(s.browser_wait_ms))
        .csv("browser_wait_p95_ms"),
    ms("ttft_after_send_p50", words("TTFT after send p50", "发出后 TTFT p50"), words("TTFT counted from when the request left the browser, median", "从请求离开浏览器起计的 TTFT 中位数"), |s| p50(s.ttft_after_send_ms))
        .csv("ttft_after_send_p50_ms"),
    ms("ttft_after_send_p95", words("TTFT after send p95", "发出后 TTFT p95"), words("TTFT counted from when the request left the browser, 95th percentile", "从请求离开浏览器起计的 TTFT 的第 95 百分位"), |s| p95(s.ttft_after_send_ms))
        .not_on_page()
        .csv("ttft_after_send_p95_ms"),
    text("protocols", words("protocols", "协议"), words("Requests per protocol the browser spoke", "浏览器使用各协议的请求数"), |s, _| protocols_counted(s))
        .not_on_page()
        .csv("protocols"),
    text("protocol", words("HTTP", "HTTP"), words("The protocol the browser spoke (Resource Timing)", "浏览器使用的协议（Resource Timing）"), |s, _| protocols(s)),
    text("tokens", words("tokens", "token 来源"), words("Where N_out came from: the server's usage, or counted chunks", "N_out 的来源：服务端的 usage，或计数的分块"), token_source),
    plain("input_tokens_mean", words("input tokens", "输入 token"), words("Input tokens of a successful request as the server counted them (usage.prompt_tokens), mean", "服务端计数的成功请求输入 token 数（usage.prompt_tokens）的均值"), 0, |s| mean(s.input_tokens))
        .csv("input_tokens_mean"),
    plain("cached_input", words("cached input", "缓存输入"), words("Share of the input tokens the server read from its prompt cache (usage.prompt_tokens_details.cached_tokens, or llama.cpp's timings): a high share is a cache hit, not prefill", "服务端从提示词缓存读取的输入 token 占比（usage.prompt_tokens_details.cached_tokens，或 llama.cpp 的 timings）：占比高说明命中缓存，而非真正的 prefill"), 1, |s| s.cached_input_pct)
        .percent()
        .csv("cached_input_pct"),
    plain("output_tokens_mean", words("output tokens", "输出 token"), words("Output tokens of a successful request, mean: the lengths actually produced", "成功请求输出 token 数的均值：实际生成的长度"), 0, |s| mean(s.output_tokens))
        .csv("output_tokens_mean"),
    ms("ttft_per_1k_input", words("TTFT per 1k input", "每千输入 token 的 TTFT"), words("How much TTFT grew per 1,000 input tokens the server computed (cached ones left out): the slope over this level's requests when their input lengths vary; at a level without queueing, the prefill cost", "服务端每多计算 1000 个输入 token（不含缓存命中的）TTFT 增加多少：输入长度有变化时，对本档请求拟合的斜率；在没有排队的档位上即 prefill 成本"), |s| s.ttft_ms_per_1k_input)
        .csv("ttft_ms_per_1k_input"),
    plain("ttft_p95_spread", words("TTFT p95 spread", "TTFT p95 波动"), words("How much p95 TTFT differed between the passes of a repeated ladder: (max − min) / mean", "重复阶梯各轮之间 p95 TTFT 的差异：(最大 − 最小) / 均值"), 1, |s| s.spread_pct(|p| p.ttft_p95_ms))
        .percent()
        .shown()
        .only(When::Repeated),
    plain("output_tps_spread", words("tok/s spread", "tok/s 波动"), words("How much output tokens/s differed between the passes of a repeated ladder: (max − min) / mean; a difference smaller than this is noise", "重复阶梯各轮之间输出 tok/s 的差异：(最大 − 最小) / 均值；小于它的差别是噪声"), 1, |s| s.spread_pct(|p| Some(p.output_tps)))
        .percent()
        .shown()
        .only(When::Repeated),
    plain("server_running", words("running (server)", "运行中（服务端）"), words("Requests the server was computing, mean of its /metrics samples while this level ran (vLLM num_requests_running, SGLang num_running_reqs, TGI tgi_batch_current_size, llama.cpp requests_processing)", "本档运行期间服务端 /metrics 采样中正在计算的请求数均值（vLLM num_requests_running、SGLang num_running_reqs、TGI tgi_batch_current_size、llama.cpp requests_processing）"), 1, |s| s.server.and_then(|m| m.running_mean))
        .only(When::Server)
        .csv("server_running_mean"),
    plain("server_waiting", words("waiting (server)", "排队（服务端）"), words("Requests waiting in the server's own queue, the most of its /metrics samples while this level ran: above zero, the server queued requests (its batch was full)", "本档运行期间服务端 /metrics 采样中排队请求数的最大值：大于零说明服务端在排队（批已满）"), 0, |s| s.server.and_then(|m| m.waiting_max))
        .shown()
        .only(When::Server)
        .csv("server_waiting_max"),
    plain("server_kv", words("KV cache (server)", "KV 缓存（服务端）"), words("The server's KV cache in use, the most of its /metrics samples while this level ran: near 100%, requests wait for memory or are preempted", "本档运行期间服务端 /metrics 采样中 KV 缓存占用的最大值：接近 100% 时请求会等显存或被抢占"), 0, |s| s.server.and_then(|m| m.kv_max_pct))
        .percent()
        .shown()
        .only(When::Server)
        .csv("server_kv_max_pct"),
    plain("server_preemptions", words("preemptions (server)", "抢占（服务端）"), words("Requests the server preempted (evicted from memory to make room) while this level ran", "本档运行期间服务端抢占（为腾出显存而换出）的请求数"), 0, |s| s.server.and_then(|m| m.preemptions))
        .only(When::Server)
        .csv("server_preemptions"),
    plain("server_prefix_hits", words("prefix cache hits (server)", "前缀缓存命中（服务端）"), words("Share of the prompt tokens the server found in its prefix cache while this level ran, by its own counters", "本档运行期间服务端按自身计数在前缀缓存中命中的提示词 token 占比"), 0, |s| s.server.and_then(|m| m.prefix_hit_pct))
        .percent()
        .only(When::Server)
        .csv("server_prefix_hit_pct"),
];

impl Column {
    const fn percent(self) -> Column {
        Column {
            unit: Unit::Pct,
            ..self
        }
    }
}

/// The column `id`. Panics for an id no column has: a caller's typo, which its
/// tests reach.
pub fn column(id: &str) -> &'static Column {
    COLUMNS
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no column {id:?}"))
}

/// The page's columns for a run of these kinds, in order.
pub fn page_columns(kinds: TableKinds) -> impl Iterator<Item = &'static Column> {
    COLUMNS
        .iter()
        .filter(move |c| c.page != Page::No && c.is_in(kinds))
}

/// The article's table (Markdown, HTML, `tokenmeter-report`): header and one row
/// per level, the level first, in `lang`.
pub fn article_table(levels: &[Summary], lang: Lang) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let columns: Vec<&Column> = COLUMNS.iter().filter(|c| c.article).collect();
    let header = std::iter::once(LEVEL.text(lang))
        .chain(columns.iter().map(|c| c.header.text(lang)))
        .collect();
    let rows = levels
        .iter()
        .map(|s| {
            std::iter::once(s.concurrency.unwrap_or_default().to_string())
                .chain(columns.iter().map(|c| c.report_cell(s, lang)))
                .collect()
        })
        .collect();
    (header, rows)
}

/// The levels CSV's header and rows (the level first, as `concurrency`).
pub(crate) fn csv_table(levels: &[Summary]) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let columns: Vec<(&str, &Column)> = COLUMNS
        .iter()
        .filter_map(|c| c.csv.map(|name| (name, c)))
        .collect();
    let header = std::iter::once("concurrency")
        .chain(columns.iter().map(|(name, _)| *name))
        .collect();
    let rows = levels
        .iter()
        .map(|s| {
            std::iter::once(s.concurrency.map(|c| c.to_string()).unwrap_or_default())
                .chain(columns.iter().map(|(_, c)| c.csv_cell(s)))
                .collect()
        })
        .collect();
    (header, rows)
}

fn fails_text(s: &Summary) -> String {
    s.fails_by_kind
        .iter()
        .map(|(k, n)| format!("{}:{n}", k.name()))
        .collect::<Vec<_>>()
        .join(" ")
}

fn protocols_counted(s: &Summary) -> String {
    s.protocols
        .iter()
        .map(|(p, n)| format!("{p}:{n}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn protocols(s: &Summary) -> String {
    if s.protocols.is_empty() {
        "–".to_owned()
    } else {
        s.protocols.keys().cloned().collect::<Vec<_>>().join(" ")
    }
}

/// Where a level's output token counts came from, and the hidden reasoning.
fn token_source(s: &Summary, lang: Lang) -> String {
    let source = if s.n_ok == 0 {
        "–".to_owned()
    } else if s.n_usage_counted == s.n_ok {
        if s.n_mismatched > 0 {
            match lang {
                Lang::En => format!("usage (chunks differ by {:.1})", s.mean_abs_mismatch),
                Lang::Zh => format!("usage（分块计数相差 {:.1}）", s.mean_abs_mismatch),
            }
        } else {
            "usage".into()
        }
    } else if s.n_usage_counted == 0 {
        lang.pick("chunks", "分块计数").into()
    } else {
        format!("usage {}/{}", s.n_usage_counted, s.n_ok)
    };
    match (s.n_hidden_reasoning, lang) {
        (0, _) => source,
        (n, Lang::En) => format!("{source}, {n} hidden reasoning"),
        (n, Lang::Zh) => format!("{source}，{n} 个隐藏推理"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        chart::tests_support::record,
        summary::{LevelStats, Summary},
    };

    fn level() -> Summary {
        let mut stats = LevelStats::new(4);
        for id in 0..20 {
            stats.add(&record(id, 4, 100 + id, 20));
        }
        stats.summary(&crate::plan::Slo::default())
    }

    #[test]
    fn ids_are_unique_and_every_column_speaks_both_languages() {
        for (i, c) in COLUMNS.iter().enumerate() {
            assert!(COLUMNS[..i].iter().all(|o| o.id != c.id), "{} twice", c.id);
            for w in [c.header, c.definition] {
                assert!(!w.en.is_empty() && !w.zh.is_empty(), "{}", c.id);
            }
            // Chinese definitions are Chinese, not the English copied.
            assert_ne!(c.definition.en, c.definition.zh, "{}", c.id);
        }
    }

    #[test]
    fn the_csv_keeps_its_header_and_grows_at_its_end() {
        let (header, rows) = csv_table(&[level()]);
        assert_eq!(
            header.join(","),
            "concurrency,n_requests,n_ok,n_fail,n_cancelled,ttft_p50_ms,ttft_p95_ms,ttft_p99_ms,ttfat_p50_ms,ttfat_p95_ms,tpot_p50_ms,tpot_p95_ms,itl_p99_ms,e2e_p95_ms,queue_p95_ms,decode_tps_mean,output_tps,request_rps,goodput_rps,tps_sum_article,peak_output_tps,peak_concurrency,n_usage_counted,n_mismatched,fails,browser_wait_p95_ms,ttft_after_send_p50_ms,ttft_after_send_p95_ms,protocols,input_tokens_mean,cached_input_pct,output_tokens_mean,ttft_ms_per_1k_input,server_running_mean,server_waiting_max,server_kv_max_pct,server_preemptions,server_prefix_hit_pct"
        );
        assert_eq!(rows[0].len(), header.len());
        assert_eq!(rows[0][0], "4");
    }

    #[test]
    fn the_articles_table_is_the_articles() {
        let (en, rows) = article_table(&[level()], Lang::En);
        assert_eq!(
            en,
            [
                "concurrency",
                "n_ok",
                "n_fail",
                "TTFT p50",
                "TTFT p95",
                "TTFT p99",
                "TPOT p50",
                "TPOT p95",
                "ITL p99",
                "E2E p95",
                "TPS mean",
                "output tok/s",
                "req/s",
                "goodput/s"
            ]
        );
        let (zh, _) = article_table(&[level()], Lang::Zh);
        assert_eq!(zh[0], "并发");
        assert_eq!(zh[10], "单请求 TPS 均值");
        assert!(rows[0][3].ends_with(" ms"), "{:?}", rows[0]);
        assert_eq!(rows[0][1], "20");
    }

    #[test]
    fn a_buffered_levels_token_gaps_are_a_dash_in_the_page_and_figures_in_the_csv() {
        let mut s = level();
        let tpot = column("tpot_p50");
        assert_ne!(tpot.cell(&s, Lang::En), "–");
        s.distorted = Some(Distortion::Buffered {
            n_requests: 20,
            share_pct: 100.0,
            largest: 20,
        });
        assert_eq!(tpot.cell(&s, Lang::En), "–");
        assert_eq!(column("itl_p99").report_cell(&s, Lang::Zh), "–");
        assert_ne!(column("ttft_p50").cell(&s, Lang::En), "–", "TTFT is no gap");
        assert_ne!(tpot.csv_cell(&s), "");
    }

    #[test]
    fn the_page_shows_the_articles_columns_first_and_the_rest_by_choice() {
        let plain_run: Vec<&str> = page_columns(TableKinds::default())
            .filter(|c| c.page == Page::Shown)
            .map(|c| c.id)
            .collect();
        assert_eq!(
            plain_run,
            [
                "n_ok",
                "n_fail",
                "ttft_p50",
                "ttft_p95",
                "tpot_p50",
                "tpot_p95",
                "tps_mean",
                "output_tps"
            ]
        );
        let all = TableKinds {
            reasoning: true,
            repeated: true,
            server: true,
        };
        assert_eq!(page_columns(all).count(), 30);
        assert!(page_columns(TableKinds::default()).all(|c| c.id != "ttfat_p50"));
    }

    #[test]
    #[should_panic(expected = "no column")]
    fn an_unknown_id_is_refused() {
        column("ttft_p05");
    }
}
