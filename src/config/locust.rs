//! "Run it on Locust": the plan as a locustfile and its pinned requirements, for
//! more load than one browser sends (see `tokenmeter_core::locust`). The file
//! reads the key from an environment variable when it runs; it never holds it.
//!
//! The locustfile's template is not in the page's WebAssembly: it is fetched
//! from beside the page the first time it is needed, and kept. A plan of a
//! file's prompts downloads a second file to put beside the locustfile, the
//! prompts as the bodies the page sends (`locust::PROMPTS_FILE`).

use std::sync::Arc;

use leptos::prelude::*;
use tokenmeter_core::{
    locust, said,
    schema::{Lang, Plan, Said},
    Prompts,
};
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{RequestCache, RequestInit, Response};

use super::draft::DraftSignals;
use crate::{
    describe_js_error,
    files::download,
    language::{self, w, words},
};

split_off! { locust:
    /// The plan as a locustfile (and its prompts file), from its `template`: in
    /// a split build, code fetched on the first export.
    fn export(template: String, plan: Plan, prompts: Option<Arc<Prompts>>) -> Result<locust::Export, Said> {
        locust::export(&template, &plan, prompts.as_deref())
    }
}

#[component]
pub fn LocustExport(
    draft: DraftSignals,
    base: StoredValue<Plan>,
    /// A prompt file's prompts, in the page's memory.
    prompts: RwSignal<Option<Arc<Prompts>>>,
    problems: RwSignal<Vec<Said>>,
) -> impl IntoView {
    let template = StoredValue::new(None::<String>);
    let on_export = move |_| {
        let plan = match draft.plan(&base.get_value()) {
            Ok(plan) => plan,
            Err(why) => return problems.set(why),
        };
        let prompts = prompts.get_untracked();
        leptos::task::spawn_local(async move {
            let fetched = match template.try_get_value().flatten() {
                Some(text) => Ok(text),
                None => fetch_template().await,
            };
            let file = match fetched {
                Ok(text) => {
                    let file = export(text.clone(), plan, prompts)
                        .await
                        .unwrap_or_else(|missing| Err(missing.said()));
                    if file.is_ok() {
                        template.try_set_value(Some(text));
                    }
                    file
                }
                Err(why) => Err(why),
            };
            match file {
                Ok(made) => {
                    problems.try_set(Vec::new());
                    download(locust::FILE_NAME, "text/x-python", &made.locustfile);
                    if let Some(prompts) = &made.prompts {
                        download(locust::PROMPTS_FILE, "application/json", prompts);
                    }
                }
                Err(why) => {
                    problems.try_set(vec![why]);
                }
            }
        });
    };
    let lang = language::current();
    let on_requirements =
        move |_| download("requirements.txt", "text/plain", &locust::requirements());
    view! {
        <div class="share">
            <button data-testid="export-locust" on:click=on_export>{words(w("Locustfile", "Locust 脚本"))}</button>
            <button data-testid="export-locust-requirements" on:click=on_requirements>
                "requirements.txt"
            </button>
            <p class="field-note">
                {move || match lang.get() {
                    Lang::En => format!(
                        "The same plan on Locust {} workers, for more load than one browser: the key is read from {} when it runs. Import the records it writes under History. A plan of your own prompts downloads {} too: put it beside the locustfile on every machine.",
                        locust::LOCUST_VERSION,
                        locust::KEY_ENV,
                        locust::PROMPTS_FILE,
                    ),
                    Lang::Zh => format!(
                        "同一个计划在 Locust {} 的 worker 上运行，负载可超过单个浏览器：运行时从 {} 读取密钥。它写出的记录可在“历史”中导入。使用自己提示词的计划还会下载 {}：请在每台机器上把它和 Locust 脚本放在一起。",
                        locust::LOCUST_VERSION,
                        locust::KEY_ENV,
                        locust::PROMPTS_FILE,
                    ),
                }}
            </p>
        </div>
    }
}

/// The locustfile's template, from beside the page (relative, so a page under a
/// sub-path finds it).
async fn fetch_template() -> Result<String, Said> {
    let file = locust::TEMPLATE_FILE;
    let cannot = |why: String| {
        said!(
            "Could not load the Locust template ./{file}: {why}",
            "无法加载 Locust 模板 ./{file}：{why}"
        )
    };
    let window = web_sys::window().ok_or_else(|| cannot("no window".into()))?;
    // Revalidated with the host each time: the file's name carries no hash, and a
    // copy from an earlier build would not fit this page (the core checks).
    let init = RequestInit::new();
    init.set_cache(RequestCache::NoCache);
    let response: Response = JsFuture::from(window.fetch_with_str_and_init(file, &init))
        .await
        .map_err(|e| cannot(describe_js_error(&e)))?
        .unchecked_into();
    if !response.ok() {
        let status = response.status();
        return Err(said!(
            "Could not load the Locust template ./{file}: HTTP {status}; publish every file of the build's dist/ folder beside the page",
            "无法加载 Locust 模板 ./{file}：HTTP {status}；请把构建的 dist/ 文件夹中的所有文件与页面放在一起发布"
        ));
    }
    let text = response.text().map_err(|e| cannot(describe_js_error(&e)))?;
    JsFuture::from(text)
        .await
        .map_err(|e| cannot(describe_js_error(&e)))?
        .as_string()
        .ok_or_else(|| cannot("the answer was not text".into()))
}
