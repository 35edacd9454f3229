//! A finished (or cancelled) run: the headline and the charts, one row per level
//! with the article's columns and more, the comparison with a baseline, the verdict, the run conditions, the
//! errors and the exports. It only reads the run document; it computes nothing.

use std::sync::Arc;

use leptos::prelude::*;
use tokenmeter_core::{
    diagnose, page_columns,
    render::{sessions_said, turns_table, TURN_HEADERS},
    said,
    schema::{Distortion, Lang, RunDocument, RunStatus, Said, Summary},
    TableKinds, LEVEL,
};

use super::{
    ab::AbPanel,
    charts::{DetailCharts, HeadlineCards, LoadCharts},
    columns::{ColumnChooser, ShownColumns},
    errors::{error_groups, ErrorGroup},
    export::Exports,
    level_name,
};
use crate::{
    history::{comparison, History},
    language::say,
};

#[component]
// Long: the finished run's layout: its parts are components, this places them.
pub fn Finished(
    document: Arc<RunDocument>,
    lang: RwSignal<Lang>,
    history: History,
) -> impl IntoView {
    let comparison = {
        let now = document.clone();
        let screen = crate::screen::Screen::current();
        move || {
            let kept: Vec<Arc<RunDocument>> = history
                .compared_documents()
                .into_iter()
                .filter(|then| then.run_id != now.run_id)
                .collect();
            (!kept.is_empty()).then(|| comparison(&now, &kept, screen.look(lang.get())))
        }
    };
    let kinds = TableKinds {
        reasoning: document.records.iter().any(|r| r.n_reasoning_events > 0),
        repeated: document.levels.iter().any(|l| !l.repetitions.is_empty()),
        server: document.levels.iter().any(|l| l.server.is_some()),
    };
    let shown = ShownColumns::load();
    let verdict = &document.verdict;
    // The hooks' attributes are empty where the cells show a dash.
    let attr = |c: Option<u32>| c.map(|c| c.to_string()).unwrap_or_default();
    let cell = |c: Option<u32>| c.map_or_else(|| "–".into(), |c| c.to_string());
    let (knee_attr, safe_attr) = (attr(verdict.knee), attr(verdict.safe_concurrency));
    let (knee, safe) = (cell(verdict.knee), cell(verdict.safe_concurrency));
    let errors = error_groups(&document);
    let findings = diagnose(&document);
    // Which browser measured the run: engines differ (see the README's table).
    // The browser's name and version as it gives them; the timer in words.
    let measured_by = document.environment.browser().map(|browser| {
        let timer_us = document.environment.timer_resolution_us;
        (browser.label(), move || {
            timer_us
                .map(|us| match lang.get() {
                    Lang::En => format!(", timer {us:.0} µs"),
                    Lang::Zh => format!("，计时精度 {us:.0} µs"),
                })
                .unwrap_or_default()
        })
    });
    let network = document
        .environment
        .network
        .as_ref()
        .map(|n| (n.rtt_ms, n.said()));
    let server_metrics = document.environment.server_metrics.as_ref().map(|m| {
        let state = if m.samples.is_empty() {
            "unreadable"
        } else {
            "read"
        };
        (state, m.samples.len(), m.said())
    });
    let has_notes = !document.environment.notes_in(Lang::En).is_empty();
    // The detail charts (every request of a level on a timeline, every TTFT and ITL
    // on a curve) are below the fold and the largest drawing: drawn a task after
    // the rest, so that the view's first drawing is not one long task.
    let detail_drawn = RwSignal::new(false);
    leptos::task::spawn_local(async move {
        crate::yield_to_browser().await;
        detail_drawn.try_set(true);
    });
    let detail_document = document.clone();
    let cancelled = document.status == RunStatus::Cancelled;
    let verdict_text = {
        let document = document.clone();
        move || document.verdict.text(lang.get())
    };
    let notes = {
        let document = document.clone();
        move || {
            document
                .environment
                .notes_in(lang.get())
                .into_iter()
                .map(|n| view! { <li>{n}</li> })
                .collect_view()
        }
    };
    view! {
        <div class="finished">
            {cancelled.then(|| view! {
                <p class="callout" data-testid="cancelled-note">
                    {say(lang, "Cancelled: everything measured before Cancel is kept below.", "已取消：取消之前测得的一切都保留在下面。")}
                </p>
            })}
            <HeadlineCards document=document.clone() lang=lang/>
            <LoadCharts document=document.clone() lang=lang/>
            <ColumnChooser shown=shown kinds=kinds lang=lang/>
            <div class="table-scroll">
                <table class="grid" data-testid="results-table">
                    <thead>
                        <tr>
                            <th>{move || LEVEL.text(lang.get())}</th>
                            {page_columns(kinds)
                                .map(|c| {
                                    let col = c.id;
                                    view! {
                                        <th title=move || c.definition.text(lang.get()) class:col-hidden=move || !shown.is_shown(col)>{move || c.header.text(lang.get())}</th>
                                    }
                                })
                                .collect_view()}
                        </tr>
                    </thead>
                    <tbody>
                        {document.levels.iter().map(|s| result_row(s, kinds, shown, lang)).collect_view()}
                    </tbody>
                </table>
            </div>
            {turns_table(&document).map(|rows| {
                let sessions: Vec<_> = document.levels.iter().filter_map(sessions_said).collect();
                view! {
                    <TurnsTable rows=rows lang=lang/>
                    <ul class="muted small" data-testid="sessions">
                        {sessions.into_iter().map(|said| view! { <li>{move || said.text(lang.get()).to_owned()}</li> }).collect_view()}
                    </ul>
                }
            })}
            {comparison}
            {measured_by.map(|(browser, timer)| view! {
                <p class="muted small" data-testid="measured-by">
                    {say(lang, "Measured in ", "测量浏览器：")}<span lang="en">{browser}</span>{timer}
                </p>
            })}
            {network.map(|(rtt_ms, said)| view! {
                <p class="muted small" data-testid="network-rtt" data-rtt-ms=format!("{rtt_ms:.3}")>
                    {move || said.text(lang.get()).to_owned()}
                </p>
            })}
            {server_metrics.map(|(state, n, said)| view! {
                <p class="muted small" data-testid="server-metrics" data-state=state data-samples=n.to_string()>
                    {move || said.text(lang.get()).to_owned()}
                </p>
            })}
            <p class="muted small">
                {say(
                    lang,
                    "Times in ms; rates per second. TTFT is what a user of this browser feels: it includes any time the browser held the request before sending it (browser wait). TTFT after send leaves that out.",
                    "时间单位为毫秒，速率为每秒。TTFT 是这个浏览器的用户感受到的时间：它包括浏览器在发出请求前扣留的时间（浏览器等待）。“发出后 TTFT”不含这部分。",
                )}
            </p>
            <div
                class="verdict"
                data-testid="verdict"
                data-knee=knee_attr
                data-safe=safe_attr
            >
                <h3>{say(lang, "Verdict", "结论")}</h3>
                <dl class="verdict-facts">
                    <dt>{say(lang, "knee", "拐点")}</dt>
                    <dd data-testid="verdict-knee">{knee}</dd>
                    <dt>{say(lang, "safe concurrency", "安全并发")}</dt>
                    <dd data-testid="verdict-safe">{safe}</dd>
                </dl>
                {document.search.as_ref().map(|outcome| {
                    let found = outcome.highest_met;
                    view! {
                        <p
                            class="search-result"
                            data-testid="slo-search-result"
                            data-concurrency=found.map(|c| c.to_string()).unwrap_or_default()
                            data-probes=outcome.probes.len()
                        >
                            {say(lang, "Highest concurrency within the SLO: ", "满足 SLO 的最高并发：")}
                            <strong>{move || match found {
                                Some(c) => c.to_string(),
                                None => say(lang, "none", "无")().to_owned(),
                            }}</strong>
                        </p>
                    }
                })}
                <p data-testid="verdict-text">{verdict_text}</p>
                {(!findings.is_empty()).then(|| view! {
                    <div class="diagnosis" data-testid="diagnosis">
                        <h4>{say(lang, "Where the bottleneck is", "瓶颈在哪里")}</h4>
                        <ul>
                            {findings.iter().map(|finding| {
                                let cause = finding.cause().name();
                                let finding = finding.clone();
                                view! { <li data-testid="diagnosis-item" data-cause=cause>{move || finding.text(lang.get())}</li> }
                            }).collect_view()}
                        </ul>
                    </div>
                })}
            </div>
            {has_notes.then(|| view! {
                <ul class="env-notes" data-testid="environment-notes">{notes}</ul>
            })}
            {(!document.ab.is_empty()).then(|| view! { <AbPanel document=document.clone() lang=lang/> })}
            {move || detail_drawn.get().then(|| view! { <DetailCharts document=detail_document.clone() lang=lang/> })}
            {(!errors.is_empty()).then(|| view! {
                <div class="errors" data-testid="errors">
                    <h3>{say(lang, "Why requests failed", "失败原因")}</h3>
                    {errors.into_iter().map(|group| view! { <ErrorGroup group=group lang=lang/> }).collect_view()}
                </div>
            })}
            <Exports document=document.clone() lang=lang/>
        </div>
    }
}

/// A run of conversations, turn by turn: the first turn against the later ones
/// is what the conversation's cache is worth. Hooks: `turns-table`, a `turn-row`
/// per level and turn (`data-concurrency`, `data-turn`).
#[component]
fn TurnsTable(rows: Vec<(u32, u32, Vec<String>)>, lang: RwSignal<Lang>) -> impl IntoView {
    const COLS: [&str; 8] = [
        "concurrency",
        "turn",
        "n_ok",
        "n_fail",
        "ttft_p50",
        "ttft_p95",
        "input_tokens_mean",
        "cached_input",
    ];
    view! {
        <h3>{say(lang, "By turn of the conversations", "按对话轮次")}</h3>
        <div class="table-scroll">
            <table class="grid" data-testid="turns-table">
                <thead>
                    <tr>
                        {TURN_HEADERS.iter().map(|h| view! { <th>{move || h.text(lang.get())}</th> }).collect_view()}
                    </tr>
                </thead>
                <tbody>
                    {rows.into_iter().map(|(concurrency, turn, cells)| view! {
                        <tr data-testid="turn-row" data-concurrency=concurrency data-turn=turn>
                            {cells.into_iter().zip(COLS).map(|(cell, col)| view! { <td data-col=col>{cell}</td> }).collect_view()}
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
}

fn result_row(
    s: &Summary,
    kinds: TableKinds,
    shown: ShownColumns,
    lang: RwSignal<Lang>,
) -> impl IntoView {
    let level = Arc::new(s.clone());
    let concurrency = s.concurrency;
    let fails: String = s
        .fails_by_kind
        .iter()
        .map(|(kind, n)| format!("{} ×{n}", kind.name()))
        .collect::<Vec<_>>()
        .join(", ");
    // A level the browser or the engine shaped: flagged, and left out of the verdict.
    let (distorted, why) = match &s.distorted {
        None => (None, Said::default()),
        Some(Distortion::BrowserQueue {
            protocol,
            connections,
        }) => (
            Some("browser_queue"),
            said!(
                "left out of the verdict: the browser sent at most {connections} requests at a time over {protocol}",
                "未计入结论：浏览器经 {protocol} 最多同时发出 {connections} 个请求",
            ),
        ),
        Some(Distortion::Engine { lag_p95_ms }) => (
            Some("engine"),
            said!(
                "left out of the verdict: the measuring engine ran {lag_p95_ms:.0} ms late at p95",
                "未计入结论：测量引擎在 p95 时滞后了 {lag_p95_ms:.0} 毫秒",
            ),
        ),
        Some(Distortion::Buffered {
            share_pct, largest, ..
        }) => (
            Some("buffered"),
            said!(
                "left out of the verdict: {share_pct:.0}% of the tokens arrived in bursts (up to {largest} at once), as a gateway that buffers or compresses the stream releases them: TTFT, TPOT and ITL here are its, not the server's",
                "未计入结论：{share_pct:.0}% 的 token 成批到达（一次最多 {largest} 个），正是缓冲或压缩流的网关放行的方式：这里的 TTFT、TPOT 和 ITL 属于网关，而不是服务端",
            ),
        ),
    };
    let cells = page_columns(kinds)
        .map(|c| {
            let col = c.id;
            let title = (col == "n_fail").then(|| fails.clone());
            let level = Arc::clone(&level);
            view! {
                <td data-col=col title=title class:col-hidden=move || !shown.is_shown(col)>{move || c.cell(&level, lang.get())}</td>
            }
        })
        .collect_view();
    view! {
        <tr
            data-testid="results-row"
            data-concurrency=s.concurrency.unwrap_or_default()
            data-distorted=distorted
            class:distorted=distorted.is_some()
        >
            <td title=move || why.text(lang.get()).to_owned()>
                {move || level_name(concurrency, lang.get())}
                {distorted.map(|_| view! { <span class="distorted-mark" aria-label=move || lang.get().pick("left out of the verdict", "未计入结论")>" †"</span> })}
            </td>
            {cells}
        </tr>
    }
}
