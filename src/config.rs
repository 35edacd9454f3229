//! The plan panel: where the run's endpoint and ladder are entered and checked.

use leptos::prelude::*;
use tokenmeter_core::plan::{normalize_base_url, parse_levels, LoadMode, Plan};

#[component]
pub fn ConfigPanel(plan: Plan) -> impl IntoView {
    let (base_url, set_base_url) = signal(plan.base_url.clone());
    let (model, set_model) = signal(plan.model.clone());
    let initial_levels = match &plan.load {
        LoadMode::Ladder { levels, .. } => levels
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(","),
        _ => "1".into(),
    };
    let (levels, set_levels) = signal(initial_levels);

    let base_url_check = move || {
        match normalize_base_url(&base_url.get()) {
        Ok((url, notes)) if notes.is_empty() => view! {
            <p class="field-note" data-testid="base-url-note">
                "Requests go to " <code>{format!("{url}/chat/completions")}</code>
            </p>
        }
        .into_any(),
        Ok((url, notes)) => view! {
            <p class="field-note warn" data-testid="base-url-note">
                {notes.join("; ")} ": requests go to " <code>{format!("{url}/chat/completions")}</code>
            </p>
        }
        .into_any(),
        Err(problem) => view! {
            <p class="field-error" data-testid="base-url-error">{problem}</p>
        }
        .into_any(),
    }
    };
    let levels_check = move || match parse_levels(&levels.get()) {
        Ok(levels) => view! {
            <p class="field-note" data-testid="levels-note">
                {format!("{} levels: ", levels.len())}
                {levels
                    .iter()
                    .map(|c| view! { <span class="level-chip">{*c}</span> })
                    .collect_view()}
            </p>
        }
        .into_any(),
        Err(problem) => view! {
            <p class="field-error" data-testid="levels-error">{problem}</p>
        }
        .into_any(),
    };

    view! {
        <section class="panel config" data-testid="config-panel" aria-labelledby="config-title">
            <h2 id="config-title">"Plan"</h2>
            <label class="field">
                <span class="field-label">"Base URL"</span>
                <input
                    data-testid="base-url"
                    type="url"
                    spellcheck="false"
                    prop:value=base_url
                    on:input=move |ev| set_base_url.set(event_target_value(&ev))
                />
                {base_url_check}
            </label>
            <label class="field">
                <span class="field-label">"Model"</span>
                <input
                    data-testid="model"
                    type="text"
                    spellcheck="false"
                    prop:value=model
                    on:input=move |ev| set_model.set(event_target_value(&ev))
                />
            </label>
            <label class="field">
                <span class="field-label">"Concurrency levels"</span>
                <input
                    data-testid="levels"
                    type="text"
                    inputmode="numeric"
                    prop:value=levels
                    on:input=move |ev| set_levels.set(event_target_value(&ev))
                />
                {levels_check}
            </label>
            <dl class="plan-facts">
                <dt>"max_tokens"</dt>
                <dd>{plan.max_tokens}</dd>
                <dt>"timeout"</dt>
                <dd>{format!("{} s", plan.timeout_s)}</dd>
                <dt>"SLO"</dt>
                <dd>
                    {format!(
                        "p95 TTFT ≤ {} ms",
                        plan.slo.ttft_p95_ms.map_or("–".into(), |v| v.to_string())
                    )}
                </dd>
            </dl>
        </section>
    }
}
