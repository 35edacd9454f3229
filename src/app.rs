//! The app shell: header, the plan panel, the results area, history; and the
//! wiring between them (a finished run goes to history before it is shown).

use leptos::prelude::*;
use tokenmeter_core::{error::Lang, plan::Plan};

use crate::{
    config::ConfigPanel,
    history::History,
    history::HistoryPanel,
    language::{self, w, words},
    results::ResultsPanel,
    run::RunController,
    DEFAULT_BASE_URL,
};

#[component]
pub fn App() -> impl IntoView {
    let plan = Plan::default_for_simulator(DEFAULT_BASE_URL);
    let history = History::load();
    // A run the last page load did not see end: kept, saying it was interrupted.
    leptos::task::spawn_local(async move {
        if let Some(interrupted) = crate::run::take_interrupted().await {
            history.keep(std::sync::Arc::new(interrupted));
        }
    });
    let run = RunController::new(
        move |document| history.keep(std::sync::Arc::clone(document)),
        crate::results::finished_view_ready,
    );
    let lang = RwSignal::new(language::initial());
    language::provide(lang);
    // The document's own language follows (screen readers, CJK glyphs, the
    // browser's offer to translate).
    Effect::new(move |_| {
        if let Some(root) = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.document_element())
        {
            let _ = root.set_attribute("lang", language::tag(lang.get()));
        }
    });
    crate::screen::Screen::watch();
    view! {
        <header class="topbar">
            <div class="brand">
                <span class="brand-mark" aria-hidden="true">"▮▮▮"</span>
                <h1 data-testid="app-title">"tokenmeter"</h1>
            </div>
            <p class="tagline">
                {words(w(
                    "Load-test an OpenAI-compatible streaming endpoint from your own browser: TTFT, TPOT, ITL and tokens/s across a concurrency ladder, measured where your users are.",
                    "在你自己的浏览器里压测兼容 OpenAI 的流式接口：在一组并发阶梯上测量 TTFT、TPOT、ITL 和 tokens/s，测的就是用户所在之处的体验。",
                ))}
            </p>
            <LanguageSwitch lang=lang/>
        </header>
        <main class="layout">
            <ConfigPanel plan=plan run=run/>
            <ResultsPanel run=run history=history lang=lang/>
            <HistoryPanel history=history run=run/>
        </main>
        <footer class="footer">
            <span>{words(w(
                "Requests are sent and timed by a Web Worker, off the page's thread; statistics are computed in your browser from every sample. The API key never leaves this page except in requests to your endpoint.",
                "请求由 Web Worker 在页面主线程之外发送和计时；统计量在你的浏览器中由全部样本算出。API 密钥只随发往你的接口的请求离开本页。",
            ))}</span>
        </footer>
    }
}

/// The page's language: English or Chinese, each button in its own language; the
/// choice is remembered on this device.
#[component]
fn LanguageSwitch(lang: RwSignal<Lang>) -> impl IntoView {
    view! {
        <div class="lang-switch" role="group" aria-label=words(w("language", "语言"))>
            {[(Lang::En, "lang-en", "EN"), (Lang::Zh, "lang-zh", "中文")]
                .into_iter()
                .map(|(choice, testid, text)| view! {
                    <button
                        data-testid=testid
                        lang=language::tag(choice)
                        aria-pressed=move || if lang.get() == choice { "true" } else { "false" }
                        on:click=move |_| {
                            lang.set(choice);
                            language::remember(choice);
                        }
                    >
                        {text}
                    </button>
                })
                .collect_view()}
        </div>
    }
}
