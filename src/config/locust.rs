//! "Run it on Locust": the plan as a locustfile and its pinned requirements, for
//! more load than one browser sends (see `tokenmeter_core::locust`). The file
//! reads the key from an environment variable when it runs; it never holds it.

use leptos::prelude::*;
use tokenmeter_core::{locust, plan::Plan};

use super::draft::DraftSignals;
use crate::files::download;

#[component]
pub fn LocustExport(
    draft: DraftSignals,
    base: StoredValue<Plan>,
    problems: RwSignal<Vec<String>>,
) -> impl IntoView {
    let on_export = move |_| match draft
        .plan(&base.get_value())
        .and_then(|plan| locust::locustfile(&plan).map_err(|why| vec![why]))
    {
        Ok(file) => download(locust::FILE_NAME, "text/x-python", &file),
        Err(why) => problems.set(why),
    };
    let on_requirements =
        move |_| download("requirements.txt", "text/plain", &locust::requirements());
    view! {
        <div class="share">
            <button data-testid="export-locust" on:click=on_export>"Locustfile"</button>
            <button data-testid="export-locust-requirements" on:click=on_requirements>
                "requirements.txt"
            </button>
            <p class="field-note">
                {format!(
                    "The same plan on Locust {} workers, for more load than one browser: the key is read from {} when it runs. Import the records it writes under History.",
                    locust::LOCUST_VERSION,
                    locust::KEY_ENV,
                )}
            </p>
        </div>
    }
}
