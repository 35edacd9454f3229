//! Components in a real browser (headless Chromium through wasm-bindgen-test):
//! `cargo xtask test` runs these with chromedriver.

#![cfg(target_arch = "wasm32")]

use leptos::{mount::mount_to, prelude::*};
use wasm_bindgen::JsCast;
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};
use web_sys::{Element, Event, EventInit, HtmlElement, HtmlInputElement};

wasm_bindgen_test_configure!(run_in_browser);

/// Mounts the app into a fresh element and returns that element.
fn mount_app() -> Element {
    let document = document();
    let root = document.create_element("div").unwrap();
    document.body().unwrap().append_child(&root).unwrap();
    mount_to(
        root.clone().unchecked_into::<HtmlElement>(),
        tokenmeter::App,
    )
    .forget();
    root
}

fn by_testid(root: &Element, id: &str) -> Option<Element> {
    root.query_selector(&format!("[data-testid=\"{id}\"]"))
        .unwrap()
}

/// Types into an input as a person would: set the value, fire `input`.
fn type_into(root: &Element, id: &str, text: &str) {
    let input: HtmlInputElement = by_testid(root, id).unwrap().unchecked_into();
    input.set_value(text);
    let init = EventInit::new();
    init.set_bubbles(true);
    input
        .dispatch_event(&Event::new_with_event_init_dict("input", &init).unwrap())
        .unwrap();
}

/// Lets Leptos run the effects that a signal change scheduled: they run as tasks
/// of the executor, so one of its ticks is enough.
async fn settle() {
    leptos::task::tick().await;
}

#[wasm_bindgen_test]
async fn the_shell_has_its_title_and_panels() {
    let root = mount_app();
    // `prop:value` is set by an effect, after the first render.
    settle().await;
    assert_eq!(
        by_testid(&root, "app-title")
            .unwrap()
            .text_content()
            .unwrap(),
        "tokenmeter"
    );
    assert!(by_testid(&root, "config-panel").is_some());
    assert!(by_testid(&root, "results-panel").is_some());
    assert!(by_testid(&root, "results-empty").is_some());
    let base_url: HtmlInputElement = by_testid(&root, "base-url").unwrap().unchecked_into();
    assert_eq!(base_url.value(), tokenmeter::DEFAULT_BASE_URL);
}

#[wasm_bindgen_test]
async fn the_ladder_is_parsed_as_typed() {
    let root = mount_app();
    let note = by_testid(&root, "levels-note")
        .unwrap()
        .text_content()
        .unwrap();
    assert!(note.starts_with("4 levels"), "{note}");
    type_into(&root, "levels", "16, 4 1");
    settle().await;
    let note = by_testid(&root, "levels-note")
        .unwrap()
        .text_content()
        .unwrap();
    assert_eq!(note, "3 levels: 1416");
    type_into(&root, "levels", "1,two");
    settle().await;
    assert!(by_testid(&root, "levels-note").is_none());
    let error = by_testid(&root, "levels-error")
        .unwrap()
        .text_content()
        .unwrap();
    assert!(error.contains("`two` is not a whole number"), "{error}");
}

#[wasm_bindgen_test]
async fn a_pasted_endpoint_path_is_explained() {
    let root = mount_app();
    type_into(
        &root,
        "base-url",
        "https://api.example.com/v1/chat/completions",
    );
    settle().await;
    let note = by_testid(&root, "base-url-note")
        .unwrap()
        .text_content()
        .unwrap();
    assert!(note.contains("removed /chat/completions"), "{note}");
    assert!(
        note.contains("https://api.example.com/v1/chat/completions"),
        "{note}"
    );
    type_into(&root, "base-url", "api.example.com");
    settle().await;
    let error = by_testid(&root, "base-url-error")
        .unwrap()
        .text_content()
        .unwrap();
    assert!(error.contains("http:// or https://"), "{error}");
}

fn text_of(root: &Element, id: &str) -> String {
    by_testid(root, id)
        .and_then(|e| e.text_content())
        .unwrap_or_default()
}

/// Waits (up to 10 s) until the status reads `status`.
async fn wait_for_status(root: &Element, status: &str) {
    for _ in 0..200 {
        if text_of(root, "status") == status {
            return;
        }
        gloo_timers::future::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!(
        "status stayed `{}`, never `{status}`",
        text_of(root, "status")
    );
}

#[wasm_bindgen_test]
async fn a_worker_that_fails_to_load_is_replaced_at_the_next_run() {
    // The test page has no worker files: every worker fails to load, as one would
    // after a bad deployment. At first the page names no bindings either (not built
    // by Trunk): the engine cannot even start, and says why.
    let root = mount_app();
    settle().await;
    let document = web_sys::window().unwrap().document().unwrap();
    for attempt in 1..=3 {
        if attempt == 2 {
            let link = document.create_element("link").unwrap();
            link.set_attribute("rel", "modulepreload").unwrap();
            link.set_attribute("href", "./no-such-bindings.js").unwrap();
            document.head().unwrap().append_child(&link).unwrap();
        }
        by_testid(&root, "run")
            .unwrap()
            .unchecked_into::<HtmlElement>()
            .click();
        settle().await;
        // Each Run starts a fresh worker and hears of its failure: none waits forever
        // behind a broken one.
        wait_for_status(&root, "idle").await;
        let problem = text_of(&root, "plan-error");
        let expected = if attempt == 1 {
            "names no bindings"
        } else {
            "failed to load (./engine-worker.js"
        };
        assert!(problem.contains(expected), "attempt {attempt}: {problem}");
    }
}

#[wasm_bindgen_test]
fn a_models_list_is_read_from_the_parsed_json_and_anything_else_is_said() {
    let ids = |json: &str| tokenmeter::models::model_ids(&js_sys::JSON::parse(json).unwrap());
    assert_eq!(
        ids(
            r#"{"object":"list","data":[{"id":"qwen2.5-7b-instruct","object":"model"},{"id":"deepseek-r1"}]}"#
        ),
        Ok(vec![
            "qwen2.5-7b-instruct".to_owned(),
            "deepseek-r1".to_owned()
        ])
    );
    assert_eq!(ids(r#"{"object":"list"}"#), Ok(vec![]));
    assert_eq!(ids(r#"{"data":[]}"#), Ok(vec![]));
    use tokenmeter::models::NotAModelsList;
    assert_eq!(
        ids(r#"{"data":{"id":"m"}}"#),
        Err(NotAModelsList::DataNotAList)
    );
    assert_eq!(
        ids(r#"{"data":[{"name":"m"}]}"#),
        Err(NotAModelsList::EntryWithoutId)
    );
    assert_eq!(
        ids(r#"{"data":[{"id":7}]}"#),
        Err(NotAModelsList::EntryWithoutId)
    );
    assert_eq!(ids(r#""qwen""#), Err(NotAModelsList::NotAnObject));
    // Each said in both languages.
    for error in [
        NotAModelsList::NotAnObject,
        NotAModelsList::DataNotAList,
        NotAModelsList::EntryWithoutId,
    ] {
        let said = error.said();
        assert!(!said.en.is_empty() && said.zh != said.en, "{said:?}");
    }
}

#[wasm_bindgen_test]
fn a_finished_run_says_when_records_did_not_reach_the_page_and_only_then() {
    use tokenmeter::run::records_shortfall;
    assert_eq!(records_shortfall(0, 0), None);
    assert_eq!(records_shortfall(10_000, 10_000), None);
    let said = records_shortfall(9_998, 10_000).expect("a shortfall is said");
    assert!(
        said.en.starts_with("9998 of the run's 10000 requests"),
        "{}",
        said.en
    );
    assert!(said.zh.contains("10000 个请求中有 9998 个"), "{}", said.zh);
}
