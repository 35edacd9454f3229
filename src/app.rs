//! The app shell: header, the plan panel, the results area, history; and the
//! wiring between them (a finished run goes to history before it is shown).

use leptos::prelude::*;
use tokenmeter_core::{
    said,
    schema::{Lang, Plan, Said},
};

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
        <SharedRun run=run history=history/>
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

/// What a page opened with a run's link (`#run=…`, see `tokenmeter_core::share`)
/// shows: the run, read-only, in the results area, and a line saying so, with
/// "Keep in history" (a shared run is not kept unless asked); or why the link
/// holds no run. Hooks: `shared-run` (`data-state`: `reading`, `shown`, `kept`,
/// `refused`), `shared-run-keep`, `shared-run-error`. Its code is the `share`
/// piece's, which reading the link fetches anyway: a first visit carries none.
#[component]
fn SharedRun(run: RunController, history: History) -> impl IntoView {
    let fragment = web_sys::window()
        .and_then(|w| w.location().hash().ok())
        .and_then(|hash| hash.strip_prefix('#').map(str::to_owned))
        .filter(|f| f.starts_with(tokenmeter_core::share::FRAGMENT));
    let fragment = fragment?;
    Some(crate::pieces::split_view(
        move || shared_run(fragment.clone(), run, history),
        fetch_shared_run(),
        || shared_run_callout("reading", || view! { <span>{reading()}</span> }.into_any()),
        |missing| refused(missing.said()),
    ))
}

/// The line a shared run's callout shows while the link is read.
fn reading() -> AnyView {
    words(w(
        "Reading the run this link holds…",
        "正在读取链接中的运行结果…",
    ))
    .into_any()
}

/// The callout, in `state` (a [`SharedState::name`]), holding `inner`.
fn shared_run_callout(
    state: &'static str,
    inner: impl Fn() -> AnyView + Send + Sync + 'static,
) -> AnyView {
    view! {
        <div class="callout shared-run" data-testid="shared-run" data-state=state>{inner}</div>
    }
    .into_any()
}

/// The callout saying why the link holds no run.
fn refused(why: Said) -> AnyView {
    let lang = language::current();
    shared_run_callout("refused", move || {
        let why = why.clone();
        view! { <span class="field-error" data-testid="shared-run-error">{move || why.text(lang.get()).to_owned()}</span> }
            .into_any()
    })
}

split_off! { share, preload fetch_shared_run:
    /// A shared run's callout, from `fragment`: the run read, shown and offered for
    /// keeping.
    fn shared_run(fragment: String, run: RunController, history: History) -> AnyView {
        view! { <SharedRunRead fragment=fragment run=run history=history/> }.into_any()
    }
}

#[component]
fn SharedRunRead(fragment: String, run: RunController, history: History) -> impl IntoView {
    let lang = language::current();
    let state = RwSignal::new(SharedState::Reading);
    leptos::task::spawn_local(async move {
        let read = async {
            let json = crate::pieces::run_json_of_link(fragment)
                .await
                .map_err(|missing| missing.said())??;
            let read = crate::pieces::read_documents(vec![json])
                .await
                .map_err(|missing| missing.said())?;
            read.into_iter().next().flatten().ok_or_else(|| {
                said!(
                    "this link's run cannot be read: it was made by another version of tokenmeter, or changed on its way",
                    "这个链接中的运行结果无法读取：它由另一版本的 tokenmeter 生成，或在传递中被改动了",
                )
            })
        };
        match read.await {
            Ok(document) => {
                let document = std::sync::Arc::new(document);
                run.show(document.clone());
                state.set(SharedState::Shown(document));
            }
            Err(why) => state.set(SharedState::Refused(why)),
        }
    });
    move || {
        let now = state.get();
        let name = now.name();
        match now {
            SharedState::Reading => {
                shared_run_callout(name, || view! { <span>{reading()}</span> }.into_any())
            }
            SharedState::Shown(document) => shared_run_callout(name, move || {
                let document = document.clone();
                let (run_id, started_at) = (document.run_id.clone(), document.started_at.clone());
                view! {
                        <span>
                            {move || if lang.get() == Lang::Zh {
                                format!("这是通过链接分享的运行结果 {run_id}（{started_at}）：只读，不含逐请求记录，不在你的历史记录中。")
                            } else {
                                format!("A run shared as a link, {run_id} ({started_at}): read-only, without its per-request records, and not in your history.")
                            }}
                        </span>
                        <button data-testid="shared-run-keep" on:click=move |_| {
                            history.keep(document.clone());
                            state.set(SharedState::Kept);
                        }>{words(w("Keep in history", "保存到历史记录"))}</button>
                    }
                    .into_any()
            }),
            SharedState::Kept => shared_run_callout(name, || {
                view! { <span>{words(w("Kept in history.", "已保存到历史记录。"))}</span> }
                    .into_any()
            }),
            SharedState::Refused(why) => refused(why),
        }
    }
}

/// Where a shared run's link is.
#[derive(Clone)]
enum SharedState {
    Reading,
    Shown(std::sync::Arc<tokenmeter_core::schema::RunDocument>),
    Kept,
    Refused(tokenmeter_core::schema::Said),
}

impl SharedState {
    fn name(&self) -> &'static str {
        match self {
            SharedState::Reading => "reading",
            SharedState::Shown(_) => "shown",
            SharedState::Kept => "kept",
            SharedState::Refused(_) => "refused",
        }
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
