//! Prompts from a file (the `file` prompt mode): the file input, the order requests
//! draw in, and what was read or why not. The file is read in the page and never
//! uploaded; its prompts stay in the page's memory (a reload, or a plan from a
//! link, asks for the file again, and the hash says whether it is the same).

use std::sync::Arc;

use leptos::prelude::*;
use tokenmeter_core::{
    missing_prompt_file, said,
    schema::{Order, PromptFile, Said},
    Prompts,
};

use super::draft::DraftSignals;
use crate::{
    files::read_file_bytes,
    language::{self, w, words, Words},
    widgets::Select,
};

/// How requests draw from the file (`data-testid` interface: `prompt-order`).
const PROMPT_ORDERS: &[(Order, &str, Words)] = &[
    (
        Order::InOrder,
        "in_order",
        w(
            "in order (request n sends prompt n, then round again)",
            "按顺序（第 n 个请求发送第 n 个提示词，用完再从头开始）",
        ),
    ),
    (
        Order::Random,
        "random",
        w(
            "at random, from the run's seed",
            "随机抽取（由本次测试的种子决定）",
        ),
    ),
];

split_off! { prompt_files:
    /// A prompt file read and hashed: a split build fetches the readers when the
    /// first file is chosen.
    fn read_prompts(name: String, bytes: Vec<u8>) -> Result<Prompts, Said> {
        tokenmeter_core::read_prompts(&name, &bytes)
    }
}

/// Whether `loaded` are the prompts of the file the plan names.
pub fn are_the_plans(loaded: Option<&Arc<Prompts>>, named: Option<&PromptFile>) -> bool {
    matches!((loaded, named), (Some(p), Some(f)) if p.file.sha256 == f.sha256)
}

#[component]
// Long: the file input, its reading and its notes share the same signals.
pub fn PromptFileField(
    draft: DraftSignals,
    prompts: RwSignal<Option<Arc<Prompts>>>,
    running: Signal<bool>,
) -> impl IntoView {
    let error = RwSignal::new(None::<Said>);
    // A file chosen that is not the one the plan (from a link) named.
    let other_than = RwSignal::new(None::<PromptFile>);
    let lang = language::current();
    let on_change = move |ev| {
        read_file_bytes(ev, move |name, bytes| {
            leptos::task::spawn_local(async move {
                match read_prompts(name, bytes).await {
                    Ok(Ok(read)) => {
                        // Checked against the file a plan (a link, an import) named,
                        // not against a file chosen here before.
                        let named = draft.prompt_file.get_untracked();
                        let chosen_here =
                            prompts.with_untracked(|p| are_the_plans(p.as_ref(), named.as_ref()));
                        other_than.set(
                            named.filter(|named| !chosen_here && named.sha256 != read.file.sha256),
                        );
                        draft.prompt_file.set(Some(read.file.clone()));
                        prompts.set(Some(Arc::new(read)));
                        error.set(None);
                    }
                    Ok(Err(problem)) => error.set(Some(problem)),
                    Err(missing) => error.set(Some(missing.said())),
                }
            });
        });
    };
    let state = move || {
        let named = draft.prompt_file.get();
        let ready = prompts.with(|p| are_the_plans(p.as_ref(), named.as_ref()));
        (named, ready)
    };
    view! {
        <div class="prompt-file">
            <label class="field">
                <span class="field-label">{words(w("Prompt file", "提示词文件"))}</span>
                <input
                    type="file"
                    data-testid="prompt-file"
                    accept=".jsonl,.json,.txt,application/json,text/plain"
                    prop:disabled=move || running.get()
                    on:change=on_change
                />
                <span class="field-note">
                    {words(w(
                        "One prompt per line; JSON lines of {\"prompt\": …} or {\"messages\": […]}; or ShareGPT JSON (the first human turn). Read here, never uploaded; each prompt is sent as written.",
                        "每行一个提示词；或每行一个 {\"prompt\": …} 或 {\"messages\": […]} 的 JSON；或 ShareGPT JSON（取第一轮人类发言）。只在本页读取，从不上传；每个提示词原样发送。",
                    ))}
                </span>
            </label>
            <Select label=w("Order", "抽取顺序") testid="prompt-order" value=draft.prompt_order options=PROMPT_ORDERS disabled=running/>
            {move || match state() {
                (Some(file), true) => {
                    let said = file.said();
                    view! {
                        <p class="field-note" data-testid="prompt-file-note">{move || said.text(lang.get()).to_owned()}</p>
                    }
                    .into_any()
                }
                (Some(file), false) => {
                    let said = missing_prompt_file(&file);
                    view! {
                        <p class="callout warn" data-testid="prompt-file-needed">{move || said.text(lang.get()).to_owned()}</p>
                    }
                    .into_any()
                }
                (None, _) => ().into_any(),
            }}
            {move || other_than.get().map(|named| {
                let Said { en, zh } = named.said();
                let warning = said!(
                    "this is not the file the plan named ({en}): this file's prompts will be sent",
                    "这不是计划指定的文件（{zh}）：将发送这个文件中的提示词"
                );
                view! {
                    <p class="callout warn" data-testid="prompt-file-warning">{move || warning.text(lang.get()).to_owned()}</p>
                }
            })}
            {move || error.get().map(|problem| view! {
                <p class="field-error" data-testid="prompt-file-error">{move || problem.text(lang.get()).to_owned()}</p>
            })}
        </div>
    }
}
