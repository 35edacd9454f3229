//! The results area: live progress while a run goes, then one row per level with
//! the article's columns and more, the verdict, the errors grouped by kind, and the
//! export of the run document. It only reads signals; it never computes a figure.

use std::collections::BTreeMap;

use leptos::prelude::*;
use tokenmeter_core::{
    error::{ErrorKind, Lang},
    report::RunDocument,
    stats::Distribution,
    summary::Summary,
};
use wasm_bindgen::JsCast;

use crate::{
    glossary::MetricGlossary,
    history::Comparison,
    protocol::{LevelState, Progress},
    run::{Phase, RunHandle},
};

fn ms(d: Option<Distribution>, pick: fn(&Distribution) -> f64) -> String {
    d.map_or_else(|| "–".into(), |d| format!("{:.1}", pick(&d)))
}

fn level_name(concurrency: Option<u32>) -> String {
    match concurrency {
        Some(0) => "open loop".into(),
        Some(c) => c.to_string(),
        None => "all".into(),
    }
}

#[component]
pub fn ResultsPanel(run: RunHandle, lang: RwSignal<Lang>) -> impl IntoView {
    view! {
        <section class="panel results" data-testid="results-panel" aria-labelledby="results-title">
            <div class="panel-head">
                <h2 id="results-title">"Results"</h2>
                <div class="lang-switch" role="group" aria-label="language">
                    <button
                        data-testid="lang-en"
                        class:active=move || lang.get() == Lang::En
                        on:click=move |_| lang.set(Lang::En)
                    >
                        "EN"
                    </button>
                    <button
                        data-testid="lang-zh"
                        class:active=move || lang.get() == Lang::Zh
                        on:click=move |_| lang.set(Lang::Zh)
                    >
                        "中文"
                    </button>
                </div>
            </div>
            {move || match (run.phase.get(), run.document.get(), run.progress.get()) {
                (Phase::Idle, None, _) => view! { <EmptyState/> }.into_any(),
                (Phase::Running, _, progress) => view! { <LiveView progress=progress/> }.into_any(),
                (_, Some(document), _) => view! { <Finished document=document lang=lang baseline=run.baseline/> }.into_any(),
                _ => view! { <EmptyState/> }.into_any(),
            }}
            <MetricGlossary/>
        </section>
    }
}

#[component]
fn EmptyState() -> impl IntoView {
    view! {
        <div class="empty-state" data-testid="results-empty">
            <p class="empty-title">"No run yet"</p>
            <p>
                "The default plan targets the built-in simulator on this machine, so a first run needs no key. "
                "Each concurrency level becomes one row, with the verdict below it: where throughput stops growing, "
                "and which concurrency is safe."
            </p>
        </div>
    }
}

#[component]
fn LiveView(progress: Option<Progress>) -> impl IntoView {
    let Some(progress) = progress else {
        return view! { <p class="muted" data-testid="live-starting">"Starting…"</p> }.into_any();
    };
    let warmup = (progress.n_warmup > 0).then(|| {
        format!(
            "warm-up {}/{} · ",
            progress.n_warmup_done, progress.n_warmup
        )
    });
    let notes = (!progress.notes.is_empty()).then(|| {
        view! {
            <ul class="callout warn" data-testid="live-notes">
                {progress
                    .notes
                    .into_iter()
                    .map(|note| view! { <li data-testid="live-note">{note}</li> })
                    .collect_view()}
            </ul>
        }
    });
    view! {
        <div class="live" data-testid="live">
            <p class="muted">
                {warmup}
                {format!("elapsed {:.1} s", progress.elapsed_ms / 1e3)}
            </p>
            {notes}
            <table class="grid">
                <thead>
                    <tr>
                        <th>"concurrency"</th>
                        <th>"state"</th>
                        <th>"done"</th>
                        <th>"in flight"</th>
                        <th>"failed"</th>
                        <th>"elapsed s"</th>
                        <th>"TTFT p50 ms"</th>
                        <th>"TTFT p95 ms"</th>
                        <th>"output tok/s"</th>
                    </tr>
                </thead>
                <tbody>
                    {progress
                        .levels
                        .into_iter()
                        .map(|level| {
                            let state = match level.state {
                                LevelState::Waiting => "waiting",
                                LevelState::Running => "running",
                                LevelState::Done => "done",
                            };
                            let planned = if level.n_planned > 0 {
                                format!("{}/{}", level.n_done, level.n_planned)
                            } else {
                                level.n_done.to_string()
                            };
                            view! {
                                <tr data-testid="live-row" data-concurrency=level.concurrency data-state=state>
                                    <td>{level_name(Some(level.concurrency))}</td>
                                    <td>{state}</td>
                                    <td>{planned}</td>
                                    <td>{level.n_in_flight}</td>
                                    <td>{level.n_failed}</td>
                                    <td>{format!("{:.1}", level.elapsed_ms / 1e3)}</td>
                                    <td>{level.ttft_p50_ms.map_or("–".into(), |v| format!("{v:.1}"))}</td>
                                    <td>{level.ttft_p95_ms.map_or("–".into(), |v| format!("{v:.1}"))}</td>
                                    <td>{format!("{:.1}", level.output_tps)}</td>
                                </tr>
                            }
                        })
                        .collect_view()}
                </tbody>
            </table>
        </div>
    }
    .into_any()
}

#[component]
fn Finished(
    document: RunDocument,
    lang: RwSignal<Lang>,
    baseline: RwSignal<Option<RunDocument>>,
) -> impl IntoView {
    let comparison = {
        let now = document.clone();
        move || {
            baseline
                .get()
                .filter(|then| then.run_id != now.run_id)
                .map(|then| view! { <Comparison now=now.clone() then=then/> })
        }
    };
    let any_reasoning = document.records.iter().any(|r| r.n_reasoning_events > 0);
    let rows = document.levels.clone();
    let verdict = document.verdict.clone();
    let errors = error_groups(&document);
    let notes = document.environment.notes.clone();
    let cancelled = document.status == tokenmeter_core::report::RunStatus::Cancelled;
    let export = document.clone();
    view! {
        <div class="finished">
            <Show when=move || cancelled>
                <p class="callout" data-testid="cancelled-note">
                    "Cancelled: everything measured before Cancel is kept below."
                </p>
            </Show>
            <div class="table-scroll">
                <table class="grid" data-testid="results-table">
                    <thead>
                        <tr>
                            <th>"concurrency"</th>
                            <th>"n_ok"</th>
                            <th>"n_fail"</th>
                            <th>"TTFT p50"</th>
                            <th>"TTFT p95"</th>
                            <th>"TTFT p99"</th>
                            {any_reasoning.then(|| view! { <th title="time to first answer token">"answer p50"</th> })}
                            <th>"TPOT p50"</th>
                            <th>"TPOT p95"</th>
                            <th>"ITL p99"</th>
                            <th>"E2E p95"</th>
                            <th>"TPS mean"</th>
                            <th>"output tok/s"</th>
                            <th>"req/s"</th>
                            <th>"goodput/s"</th>
                            <th>"queue p95"</th>
                            <th title="time in the browser between fetch and the request leaving it">"browser wait p95"</th>
                            <th title="TTFT counted from when the request left the browser">"TTFT after send p50"</th>
                            <th>"HTTP"</th>
                            <th>"tokens"</th>
                        </tr>
                    </thead>
                    <tbody>
                        {rows.into_iter().map(|s| view! { <ResultRow summary=s any_reasoning=any_reasoning/> }).collect_view()}
                    </tbody>
                </table>
            </div>
            {comparison}
            <p class="muted small">
                "Times in ms; rates per second. TTFT is what a user of this browser feels: it includes any time the browser held the request before sending it (browser wait). TTFT after send leaves that out."
            </p>
            <div class="verdict" data-testid="verdict" data-knee=verdict.knee.map(|k| k.to_string()).unwrap_or_default()
                data-safe=verdict.safe_concurrency.map(|k| k.to_string()).unwrap_or_default()>
                <h3>{move || if lang.get() == Lang::Zh { "结论" } else { "Verdict" }}</h3>
                <dl class="verdict-facts">
                    <dt>{move || if lang.get() == Lang::Zh { "拐点" } else { "knee" }}</dt>
                    <dd data-testid="verdict-knee">{verdict.knee.map_or("–".into(), |k| k.to_string())}</dd>
                    <dt>{move || if lang.get() == Lang::Zh { "安全并发" } else { "safe concurrency" }}</dt>
                    <dd data-testid="verdict-safe">{verdict.safe_concurrency.map_or("–".into(), |k| k.to_string())}</dd>
                </dl>
                <p data-testid="verdict-text">
                    {
                        let verdict = verdict.clone();
                        move || if lang.get() == Lang::Zh { verdict.explanation_zh.clone() } else { verdict.explanation_en.clone() }
                    }
                </p>
            </div>
            {(!notes.is_empty()).then(|| view! {
                <ul class="env-notes" data-testid="environment-notes">
                    {notes.into_iter().map(|n| view! { <li>{n}</li> }).collect_view()}
                </ul>
            })}
            {(!errors.is_empty()).then(|| view! {
                <div class="errors" data-testid="errors">
                    <h3>{move || if lang.get() == Lang::Zh { "失败原因" } else { "Why requests failed" }}</h3>
                    {errors.into_iter().map(|group| view! { <ErrorGroup group=group lang=lang/> }).collect_view()}
                </div>
            })}
            <div class="actions">
                <button data-testid="export-json" on:click={
                    let export = export.clone();
                    move |_| download(&format!("tokenmeter-{}.json", export.run_id), "application/json", &export.to_json())
                }>
                    "Export JSON"
                </button>
                <button data-testid="export-csv" on:click={
                    let export = export.clone();
                    move |_| download(&format!("tokenmeter-{}-levels.csv", export.run_id), "text/csv", &export.levels_csv())
                }>
                    "Levels CSV"
                </button>
                <button data-testid="export-requests-csv" on:click={
                    let export = export.clone();
                    move |_| download(&format!("tokenmeter-{}-requests.csv", export.run_id), "text/csv", &export.requests_csv())
                }>
                    "Requests CSV"
                </button>
                <button data-testid="export-md" on:click={
                    let export = export.clone();
                    move |_| download(&format!("tokenmeter-{}.md", export.run_id), "text/markdown", &export.markdown(lang.get_untracked()))
                }>
                    "Markdown"
                </button>
            </div>
        </div>
    }
}

#[component]
fn ResultRow(summary: Summary, any_reasoning: bool) -> impl IntoView {
    let s = summary;
    let tokens = if s.n_ok == 0 {
        "–".to_owned()
    } else if s.n_usage_counted == s.n_ok {
        if s.n_mismatched > 0 {
            format!("usage (chunks differ by {:.1})", s.mean_abs_mismatch)
        } else {
            "usage".into()
        }
    } else if s.n_usage_counted == 0 {
        "chunks".into()
    } else {
        format!("usage {}/{}", s.n_usage_counted, s.n_ok)
    };
    let protocols = if s.protocols.is_empty() {
        "–".to_owned()
    } else {
        s.protocols.keys().cloned().collect::<Vec<_>>().join(" ")
    };
    let fails: String = s
        .fails_by_kind
        .iter()
        .map(|(kind, n)| format!("{} ×{n}", kind.name()))
        .collect::<Vec<_>>()
        .join(", ");
    view! {
        <tr data-testid="results-row" data-concurrency=s.concurrency.unwrap_or_default()>
            <td>{level_name(s.concurrency)}</td>
            <td data-col="n_ok">{s.n_ok}</td>
            <td data-col="n_fail" title=fails>{s.n_fail}</td>
            <td data-col="ttft_p50">{ms(s.ttft_ms, |d| d.p50)}</td>
            <td data-col="ttft_p95">{ms(s.ttft_ms, |d| d.p95)}</td>
            <td data-col="ttft_p99">{ms(s.ttft_ms, |d| d.p99)}</td>
            {any_reasoning.then(|| view! { <td data-col="ttfat_p50">{ms(s.ttfat_ms, |d| d.p50)}</td> })}
            <td data-col="tpot_p50">{ms(s.tpot_ms, |d| d.p50)}</td>
            <td data-col="tpot_p95">{ms(s.tpot_ms, |d| d.p95)}</td>
            <td data-col="itl_p99">{ms(s.itl_ms, |d| d.p99)}</td>
            <td data-col="e2e_p95">{ms(s.e2e_ms, |d| d.p95)}</td>
            <td data-col="tps_mean">{s.decode_tps.map_or("–".into(), |d| format!("{:.1}", d.mean))}</td>
            <td data-col="output_tps">{format!("{:.1}", s.output_tps)}</td>
            <td data-col="request_rps">{format!("{:.2}", s.request_throughput_rps)}</td>
            <td data-col="goodput_rps">{s.goodput_rps.map_or("–".into(), |g| format!("{g:.2}"))}</td>
            <td data-col="queue_p95">{ms(s.queue_ms, |d| d.p95)}</td>
            <td data-col="browser_wait_p95">{ms(s.browser_wait_ms, |d| d.p95)}</td>
            <td data-col="ttft_after_send_p50">{ms(s.ttft_after_send_ms, |d| d.p50)}</td>
            <td data-col="protocol">{protocols}</td>
            <td data-col="tokens">{tokens}</td>
        </tr>
    }
}

/// Failures of one kind, with one sample.
#[derive(Clone)]
struct Group {
    kind: ErrorKind,
    n: usize,
    detail: String,
    sample: Option<String>,
}

fn error_groups(document: &RunDocument) -> Vec<Group> {
    let mut groups: BTreeMap<ErrorKind, Group> = BTreeMap::new();
    for record in document.records.iter().filter(|r| !r.warmup) {
        if let Some(err) = &record.error {
            let group = groups.entry(err.kind).or_insert_with(|| Group {
                kind: err.kind,
                n: 0,
                detail: err.detail.clone(),
                sample: err.body_sample.clone(),
            });
            group.n += 1;
        }
    }
    groups.into_values().collect()
}

#[component]
fn ErrorGroup(group: Group, lang: RwSignal<Lang>) -> impl IntoView {
    let kind = group.kind;
    view! {
        <div class="error-group" data-testid="error-group" data-kind=kind.name()>
            <p class="error-title">
                <strong>{move || kind.title(lang.get())}</strong>
                <span class="count">{format!(" ×{}", group.n)}</span>
                <code class="kind">{kind.name()}</code>
            </p>
            <p class="hint" data-testid="error-hint">{move || kind.hint(lang.get())}</p>
            <p class="detail">{group.detail}</p>
            // A server's body is shown as text, never as HTML.
            {group.sample.map(|sample| view! { <pre class="sample" data-testid="error-sample">{sample}</pre> })}
        </div>
    }
}

/// Offers `text` as a file. Every export is made from the run document, which
/// never holds the key.
fn download(name: &str, mime: &str, text: &str) {
    let parts = js_sys::Array::of1(&wasm_bindgen::JsValue::from_str(text));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type(mime);
    let Ok(blob) = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options) else {
        return;
    };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else {
        return;
    };
    let anchor: web_sys::HtmlAnchorElement = document_element("a");
    anchor.set_href(&url);
    anchor.set_download(name);
    anchor.click();
    let _ = web_sys::Url::revoke_object_url(&url);
}

fn document_element<T: JsCast>(tag: &str) -> T {
    leptos::prelude::document()
        .create_element(tag)
        .expect("an element")
        .unchecked_into()
}
