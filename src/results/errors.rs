//! The errors panel: failures grouped by kind, each with its hint (in the page's
//! language), its detail and one sample of what the server said.

use leptos::prelude::*;
use tokenmeter_core::schema::{ErrorKind, Lang, RunCondition, RunDocument, VecMap};

/// Failures of one kind, with one sample.
#[derive(Clone)]
pub struct Group {
    kind: ErrorKind,
    n: usize,
    detail: String,
    sample: Option<String>,
    /// What the run found out about these failures (why there was no response).
    diagnosis: Option<RunCondition>,
}

/// The failures of a run (warm-ups excluded), by kind.
pub fn error_groups(document: &RunDocument) -> Vec<Group> {
    let mut groups: VecMap<ErrorKind, Group> = VecMap::new();
    for record in document.records.iter().filter(|r| !r.warmup) {
        if let Some(err) = &record.error {
            let group = groups.entry_or_insert_with(err.kind, || Group {
                kind: err.kind,
                n: 0,
                detail: err.detail.clone(),
                sample: err.body_sample.clone(),
                diagnosis: (err.kind == ErrorKind::Network)
                    .then(|| {
                        document
                            .environment
                            .conditions
                            .iter()
                            .find(|c| matches!(c, RunCondition::NoResponse { .. }))
                            .cloned()
                    })
                    .flatten(),
            });
            group.n += 1;
        }
    }
    groups.into_values().collect()
}

#[component]
pub fn ErrorGroup(group: Group, lang: RwSignal<Lang>) -> impl IntoView {
    let kind = group.kind;
    view! {
        <div class="error-group" data-testid="error-group" data-kind=kind.name()>
            <p class="error-title">
                <strong>{move || kind.title(lang.get())}</strong>
                <span class="count">{format!(" ×{}", group.n)}</span>
                <code class="kind">{kind.name()}</code>
            </p>
            <p class="hint" data-testid="error-hint">{move || kind.hint(lang.get())}</p>
            {group.diagnosis.map(|diagnosis| view! {
                <p class="diagnosis" data-testid="error-diagnosis">{move || diagnosis.text(lang.get())}</p>
            })}
            <p class="detail">{group.detail}</p>
            // A server's body is shown as text, never as HTML.
            {group.sample.map(|sample| view! { <pre class="sample" data-testid="error-sample">{sample}</pre> })}
        </div>
    }
}
