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

use leptos::prelude::*;
use send_wrapper::SendWrapper;
use tokenmeter_core::{error::Lang, report::RunDocument};

use crate::{
    glossary::MetricGlossary,
    history::History,
    run::{RunController, Shown},
};

/// A level's name in the tables: its concurrency, "open loop", or "all".
fn level_name(concurrency: Option<u32>) -> String {
    match concurrency {
        Some(0) => "open loop".into(),
        Some(c) => c.to_string(),
        None => "all".into(),
    }
}

split_off! { finished, preload fetch_finished_view:
    /// A finished run: headline, charts, table, verdict, errors, exports. A first
    /// visit shows none of it: a split build fetches this code while the first run
    /// goes (or when a kept run is viewed).
    fn finished_view(document: Arc<RunDocument>, lang: RwSignal<Lang>, history: History) -> AnyView {
        view! { <finished::Finished document=document lang=lang history=history/> }.into_any()
    }
}

/// The finished run's view, once its code is there: at once when it is (the
/// usual case, fetched while the run went), else when it arrives.
fn finished_or_missing(
    document: Arc<RunDocument>,
    lang: RwSignal<Lang>,
    history: History,
) -> AnyView {
    // Suspend wants a `Send` future; this one never leaves the page's thread.
    let shown = SendWrapper::new(async move {
        finished_view(document, lang, history).await.unwrap_or_else(|missing| {
            view! { <p class="callout warn" data-testid="results-missing">{missing.to_string()}</p> }
                .into_any()
        })
    });
    Suspend::new(shown).into_any()
}

#[component]
pub fn ResultsPanel(run: RunController, history: History, lang: RwSignal<Lang>) -> impl IntoView {
    // Re-rendered when what is shown changes, not with every progress update.
    let shown = Memo::new(move |_| run.view.with(|view| view.shown()));
    view! {
        <section class="panel results" data-testid="results-panel" aria-labelledby="results-title">
            <div class="panel-head">
                <h2 id="results-title">"Results"</h2>
                <div class="lang-switch" role="group" aria-label="language">
                    {[(Lang::En, "lang-en", "EN"), (Lang::Zh, "lang-zh", "中文")]
                        .into_iter()
                        .map(|(choice, testid, text)| view! {
                            <button
                                data-testid=testid
                                class:active=move || lang.get() == choice
                                on:click=move |_| lang.set(choice)
                            >
                                {text}
                            </button>
                        })
                        .collect_view()}
                </div>
            </div>
            {move || match shown.get() {
                Shown::Idle => view! { <EmptyState/> }.into_any(),
                Shown::Running => {
                    // Its end will want the finished view's code: fetched meanwhile.
                    leptos::task::spawn_local(async {
                        let _ = fetch_finished_view().await;
                    });
                    view! { <live::LiveView run=run lang=lang/> }.into_any()
                }
                Shown::Finished(document) => finished_or_missing(document.0, lang, history),
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
