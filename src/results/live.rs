//! The live view while a run goes: one row per level, updated in place from the
//! progress the worker posts (at most ten times a second), the conditions found so
//! far, and two charts redrawn with each progress: TTFT and output tokens/s per
//! level, and output tokens/s over time (grown by the requests each progress
//! brings, never per token).

use leptos::prelude::*;
use tokenmeter_core::{
    chart::{self, LivePoint},
    column,
    schema::{Lang, Plan},
};

use super::level_name;
use crate::{
    language::say,
    protocol::{LevelProgress, LevelState, Progress},
    run::RunController,
};

fn ms(value: Option<f64>) -> String {
    value.map_or("–".into(), |v| format!("{v:.1}"))
}

/// The live table's own headings, in English and Chinese; its figures' follow
/// ([`FIGURES`]).
const HEADINGS: [(&str, &str); 6] = [
    ("concurrency", "并发"),
    ("state", "状态"),
    ("done", "完成"),
    ("in flight", "进行中"),
    ("failed", "失败"),
    ("elapsed s", "耗时 秒"),
];

/// The figures the live table shows, by their ids in the core's table of columns.
const FIGURES: [&str; 3] = ["ttft_p50", "ttft_p95", "output_tps"];

#[component]
// Long: the live view's markup.
pub fn LiveView(run: RunController, lang: RwSignal<Lang>) -> impl IntoView {
    let progress: Memo<Option<Progress>> =
        Memo::new(move |_| run.view.with(|view| view.progress().cloned()));
    let started = Memo::new(move |_| progress.with(Option::is_some));
    let with_progress = move |f: fn(&Progress, Lang) -> String| {
        move || progress.with(|p| p.as_ref().map(|p| f(p, lang.get())).unwrap_or_default())
    };
    let notes = move || {
        progress.with(|p| {
            p.as_ref()
                .map(|p| {
                    p.conditions
                        .iter()
                        .map(|c| c.text(lang.get()))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        })
    };
    // Rows are keyed by level: each keeps its element and updates its cells.
    let level_keys = move || {
        progress.with(|p| {
            p.as_ref()
                .map(|p| {
                    (0..p.levels.len())
                        .map(|i| (i, p.levels[i].concurrency))
                        .collect()
                })
                .unwrap_or_else(Vec::new)
        })
    };
    let screen = crate::screen::Screen::current();
    let live_chart = move || {
        progress.with(|p| {
            let points: Vec<LivePoint> = p
                .as_ref()?
                .levels
                .iter()
                .map(|l| LivePoint {
                    concurrency: l.concurrency,
                    ttft_p50_ms: l.ttft_p50_ms,
                    ttft_p95_ms: l.ttft_p95_ms,
                    output_tps: (l.n_done > l.n_failed).then_some(l.output_tps),
                })
                .collect();
            chart::live(&points, screen.look(lang.get()))
        })
    };
    let over_time = move || {
        progress.track();
        run.with_over_time(|o| o.draw(screen.look(lang.get())))
            .flatten()
    };
    let figure = |svg: Option<String>| {
        svg.map(|svg| view! { <figure class="chart-figure" inner_html=svg></figure> })
    };
    view! {
        <Show
            when=move || started.get()
            fallback=move || view! { <Starting lang=lang/> }
        >
            <div class="live" data-testid="live">
                <p class="muted">
                    {with_progress(|p, lang| {
                        let elapsed_s = p.elapsed_ms / 1e3;
                        let (warmup, done) = (p.n_warmup, p.n_warmup_done);
                        match (lang, warmup > 0) {
                            (Lang::En, true) => format!("warm-up {done}/{warmup} · elapsed {elapsed_s:.1} s"),
                            (Lang::En, false) => format!("elapsed {elapsed_s:.1} s"),
                            (Lang::Zh, true) => format!("预热 {done}/{warmup} · 已用 {elapsed_s:.1} 秒"),
                            (Lang::Zh, false) => format!("已用 {elapsed_s:.1} 秒"),
                        }
                    })}
                </p>
                <Show when=move || !notes().is_empty()>
                    <ul class="callout warn" data-testid="live-notes">
                        {move || notes().into_iter().map(|note| view! { <li data-testid="live-note">{note}</li> }).collect_view()}
                    </ul>
                </Show>
                <div class="table-scroll">
                <table class="grid">
                    <thead>
                        <tr>
                            {HEADINGS
                                .iter()
                                .map(|&(en, zh)| view! { <th>{say(lang, en, zh)}</th> })
                                .collect_view()}
                            {FIGURES
                                .iter()
                                .map(|&id| {
                                    let c = column(id);
                                    view! { <th title=move || c.definition.text(lang.get())>{move || c.header_with_unit(lang.get())}</th> }
                                })
                                .collect_view()}
                        </tr>
                    </thead>
                    <tbody>
                        <For each=level_keys key=|key| *key let:key>
                            <LiveRow progress=progress index=key.0 lang=lang/>
                        </For>
                    </tbody>
                </table>
                </div>
                <div class="charts live-charts">
                    {move || figure(live_chart())}
                    {move || figure(over_time())}
                </div>
            </div>
        </Show>
    }
}

/// A run that has started and has no progress yet.
#[component]
pub fn Starting(lang: RwSignal<Lang>) -> impl IntoView {
    view! { <p class="muted" data-testid="live-starting">{say(lang, "Starting…", "正在启动…")}</p> }
}

#[component]
fn LiveRow(progress: Memo<Option<Progress>>, index: usize, lang: RwSignal<Lang>) -> impl IntoView {
    let level = Memo::new(move |_| {
        progress.with(|p| {
            p.as_ref()
                .and_then(|p| p.levels.get(index).cloned())
                .unwrap_or_default()
        })
    });
    let cell = move |f: fn(&LevelProgress) -> String| move || level.with(f);
    // The hook (`data-state`) stays English; the cell is in the page's language.
    let state = move || match level.with(|l| l.state) {
        LevelState::Waiting => ("waiting", "等待"),
        LevelState::Running => ("running", "运行中"),
        LevelState::Done => ("done", "完成"),
    };
    view! {
        <tr
            data-testid="live-row"
            data-concurrency=move || level.with(|l| l.concurrency)
            data-repetition=move || level.with(|l| l.repetition)
            data-target=move || level.with(|l| l.target)
            data-state=move || state().0
        >
            <td>{move || level.with(|l| {
                let mut name = level_name(Some(l.concurrency), lang.get());
                if l.target > 0 {
                    // An A/B plan's other target (A is the plan's own).
                    name.push_str(&format!(" · {}", Plan::target_label(l.target as usize)));
                }
                if l.repetition > 0 {
                    let pass = l.repetition + 1;
                    name.push_str(&match lang.get() {
                        Lang::En => format!(" · pass {pass}"),
                        Lang::Zh => format!(" · 第 {pass} 轮"),
                    });
                }
                name
            })}</td>
            <td>{move || lang.get().pick(state().0, state().1)}</td>
            <td>{cell(|l| if l.n_planned > 0 { format!("{}/{}", l.n_done, l.n_planned) } else { l.n_done.to_string() })}</td>
            <td>{cell(|l| l.n_in_flight.to_string())}</td>
            <td>{cell(|l| l.n_failed.to_string())}</td>
            <td>{cell(|l| format!("{:.1}", l.elapsed_ms / 1e3))}</td>
            <td>{cell(|l| ms(l.ttft_p50_ms))}</td>
            <td>{cell(|l| ms(l.ttft_p95_ms))}</td>
            <td>{cell(|l| format!("{:.1}", l.output_tps))}</td>
        </tr>
    }
}
