//! The results area: an empty state, the live view while a run goes ([`live`]),
//! then the finished run ([`finished`]: headline and charts ([`charts`]), table,
//! verdict, conditions, comparison),
//! its errors ([`errors`]) and exports ([`export`]). It only reads the run view and
//! documents; every figure comes from the core.

mod ab;
mod charts;
mod columns;
mod errors;
mod export;
mod finished;
mod live;

use std::sync::Arc;

use futures_util::future::LocalBoxFuture;
use leptos::prelude::*;
use tokenmeter_core::schema::{Lang, RunDocument};

use crate::{
    glossary::MetricGlossary,
    history::History,
    language::say,
    pieces::split_view,
    run::{RunController, Shown},
    PieceMissing,
};

/// A level's name in the tables: its concurrency, "open loop", or "all".
fn level_name(concurrency: Option<u32>, lang: Lang) -> String {
    match concurrency {
        Some(0) => lang.pick("open loop", "开环").into(),
        Some(c) => c.to_string(),
        None => lang.pick("all", "全部").into(),
    }
}

split_off! { finished, preload fetch_finished_view:
    /// A finished run: headline, charts, table, verdict, errors, exports. A first
    /// visit shows none of it: a split build fetches this code while the first run
    /// goes (or when a kept run is viewed).
    pub(crate) fn finished_view(document: Arc<RunDocument>, lang: RwSignal<Lang>, history: History) -> AnyView {
        view! { <finished::Finished document=document lang=lang history=history/> }.into_any()
    }
}

/// Fetches the finished view's code, for the run to wait on before it says a run
/// is done (see [`crate::pieces::ShowWhenReady`]); one that cannot be fetched is
/// said where the results go.
pub fn finished_view_ready() -> LocalBoxFuture<'static, ()> {
    Box::pin(async {
        let _ = fetch_finished_view().await;
    })
}

split_off! { live, preload fetch_live_view:
    /// The run that goes, live. A first visit shows none of it: a split build
    /// fetches this code when the first run starts.
    fn live_view(run: RunController, lang: RwSignal<Lang>) -> AnyView {
        view! { <live::LiveView run=run lang=lang/> }.into_any()
    }
}

/// What the results area says when a view's code could not be fetched.
fn missing(why: PieceMissing) -> AnyView {
    let lang = crate::language::current();
    let said = why.said();
    view! { <p class="callout warn" data-testid="results-missing">{move || said.text(lang.get()).to_owned()}</p> }
        .into_any()
}

#[component]
pub fn ResultsPanel(run: RunController, history: History, lang: RwSignal<Lang>) -> impl IntoView {
    // Re-rendered when what is shown changes, not with every progress update.
    let shown = Memo::new(move |_| run.view.with(|view| view.shown()));
    view! {
        <section
            class="panel results"
            data-testid="results-panel"
            aria-labelledby="results-title"
            lang=move || crate::language::tag(lang.get())
        >
            <div class="panel-head">
                <h2 id="results-title">{say(lang, "Results", "结果")}</h2>
            </div>
            {move || match shown.get() {
                Shown::Idle => view! { <EmptyState lang=lang/> }.into_any(),
                Shown::Running => {
                    // Its end will want the finished view's code: the run fetches
                    // it meanwhile (`pieces::when_run_starts`).
                    split_view(
                        move || live_view(run, lang),
                        fetch_live_view(),
                        move || view! { <live::Starting lang=lang/> }.into_any(),
                        missing,
                    )
                }
                Shown::Finished(document) => {
                    let document = document.0;
                    split_view(
                        move || finished_view(document.clone(), lang, history),
                        fetch_finished_view(),
                        move || {
                            view! { <p class="muted">{say(lang, "Loading the results…", "正在加载结果…")}</p> }
                                .into_any()
                        },
                        missing,
                    )
                }
            }}
            <MetricGlossary/>
        </section>
    }
}

#[component]
fn EmptyState(lang: RwSignal<Lang>) -> impl IntoView {
    view! {
        <div class="empty-state" data-testid="results-empty">
            <p class="empty-title">{say(lang, "No run yet", "还没有运行")}</p>
            <p>
                {say(
                    lang,
                    "The default plan targets the built-in simulator on this machine, so a first run needs no key. \
                     Each concurrency level becomes one row, with the verdict below it: where throughput stops growing, \
                     and which concurrency is safe.",
                    "默认计划指向本机内置的模拟器，第一次运行不需要 Key。每个并发档位是表格中的一行，\
                     下方是结论：吞吐量在哪里不再增长（拐点），以及多大的并发是安全的。",
                )}
            </p>
        </div>
    }
}
