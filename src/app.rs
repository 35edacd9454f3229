//! The app shell: header, the plan panel, the results area, history; and the
//! wiring between them (a finished run goes to history before it is shown).

use leptos::prelude::*;
use tokenmeter_core::plan::Plan;

use crate::{
    config::ConfigPanel, history::History, history::HistoryPanel, results::ResultsPanel,
    run::RunController, DEFAULT_BASE_URL,
};

#[component]
pub fn App() -> impl IntoView {
    let plan = Plan::default_for_simulator(DEFAULT_BASE_URL);
    let history = History::load();
    // A run the last page load did not see end: kept, saying it was interrupted.
    if let Some(interrupted) = crate::run::take_interrupted() {
        history.keep(std::sync::Arc::new(interrupted));
    }
    let run = RunController::new(
        move |document| history.keep(std::sync::Arc::clone(document)),
        crate::results::finished_view_ready,
    );
    let lang = RwSignal::new(crate::language::initial());
    crate::screen::Screen::watch();
    view! {
        <header class="topbar">
            <div class="brand">
                <span class="brand-mark" aria-hidden="true">"▮▮▮"</span>
                <h1 data-testid="app-title">"tokenmeter"</h1>
            </div>
            <p class="tagline">
                "Load-test an OpenAI-compatible streaming endpoint from your own browser: "
                "TTFT, TPOT, ITL and tokens/s across a concurrency ladder, measured where your users are."
            </p>
        </header>
        <main class="layout">
            <ConfigPanel plan=plan run=run/>
            <ResultsPanel run=run history=history lang=lang/>
            <HistoryPanel history=history run=run/>
        </main>
        <footer class="footer">
            <span>"Requests are sent and timed by a Web Worker, off the page's thread; statistics are computed in your browser from every sample. The API key never leaves this page except in requests to your endpoint."</span>
        </footer>
    }
}
