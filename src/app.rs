//! The app shell: header, the plan panel, the results area.

use leptos::prelude::*;
use tokenmeter_core::plan::Plan;

use crate::{config::ConfigPanel, glossary::MetricGlossary, DEFAULT_BASE_URL};

#[component]
pub fn App() -> impl IntoView {
    let plan = Plan::default_for_simulator(DEFAULT_BASE_URL);
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
            <ConfigPanel plan=plan/>
            <section class="panel results" data-testid="results-panel" aria-labelledby="results-title">
                <h2 id="results-title">"Results"</h2>
                <div class="empty-state" data-testid="results-empty">
                    <p class="empty-title">"No run yet"</p>
                    <p>
                        "The default plan targets the built-in simulator on this machine, so a first run needs no key. "
                        "Each concurrency level becomes one row, with the verdict below it: where throughput stops growing, "
                        "and which concurrency is safe."
                    </p>
                </div>
                <MetricGlossary/>
            </section>
        </main>
        <footer class="footer">
            <span>"Statistics are computed in your browser from every sample; the API key never leaves this page except in requests to your endpoint."</span>
        </footer>
    }
}
