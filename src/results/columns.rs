//! The results table's columns: the reference article's by default (n_ok, n_fail,
//! TTFT p50/p95, TPOT p50/p95, TPS mean, output tokens/s), the rest shown by
//! choice, remembered in this browser. Every cell stays in the page (hidden ones
//! are not displayed), so the `data-col` hooks read the same whatever is chosen.

use leptos::prelude::*;

const COLUMNS_STORAGE: &str = "tokenmeter.columns.v1";

/// One column after the level's: its `data-col` hook, header, definition (shown
/// on hover), and whether it is shown until the user chooses.
pub struct Column {
    pub col: &'static str,
    pub header: &'static str,
    pub definition: &'static str,
    pub by_default: bool,
}

const fn column(
    col: &'static str,
    header: &'static str,
    definition: &'static str,
    by_default: bool,
) -> Column {
    Column {
        col,
        header,
        definition,
        by_default,
    }
}

pub const COLUMNS: [Column; 21] = [
    column("n_ok", "n_ok", "Requests that finished with an answer", true),
    column("n_fail", "n_fail", "Requests that failed (cancelled ones are not counted); hover the count for the kinds", true),
    column("ttft_p50", "TTFT p50", "Time to first token, median: from sending the request to the first token (reasoning or answer)", true),
    column("ttft_p95", "TTFT p95", "Time to first token, 95th percentile", true),
    column("ttft_p99", "TTFT p99", "Time to first token, 99th percentile", false),
    column("ttfat_p50", "answer p50", "Time to the first answer token (after any reasoning), median", true),
    column("tpot_p50", "TPOT p50", "Time per output token, median: (E2E − TTFT) / (N_out − 1)", true),
    column("tpot_p95", "TPOT p95", "Time per output token, 95th percentile", true),
    column("itl_p99", "ITL p99", "Inter-token latency, 99th percentile over every gap between tokens: stalls TPOT averages away", false),
    column("e2e_p95", "E2E p95", "End-to-end latency, 95th percentile: sending to the end of the answer", false),
    column("tps_mean", "TPS mean", "Per-request decode speed, mean: (N_out − 1) / (last token − first token)", true),
    column("output_tps", "output tok/s", "All output tokens of successful requests / the level's wall time", true),
    column("request_rps", "req/s", "Requests finished per second", false),
    column("goodput_rps", "goodput/s", "Requests per second that met the SLO", false),
    column("queue_p95", "queue p95", "Client queue time, 95th percentile: waiting for a free slot before sending (kept out of TTFT)", false),
    column("browser_wait_p95", "browser wait p95", "Time in the browser between fetch and the request leaving it, 95th percentile", false),
    column("ttft_after_send_p50", "TTFT after send p50", "TTFT counted from when the request left the browser, median", false),
    column("protocol", "HTTP", "The protocol the browser spoke (Resource Timing)", false),
    column("tokens", "tokens", "Where N_out came from: the server's usage, or counted chunks", false),
    column("ttft_p95_spread", "TTFT p95 spread", "How much p95 TTFT differed between the passes of a repeated ladder: (max − min) / mean", true),
    column("output_tps_spread", "tok/s spread", "How much output tokens/s differed between the passes of a repeated ladder: (max − min) / mean; a difference smaller than this is noise", true),
];

/// What a run's table has beyond the usual: reasoning (the answer column), and
/// passes of a repeated ladder (the spread columns).
#[derive(Clone, Copy, Debug, Default)]
pub struct TableKinds {
    pub reasoning: bool,
    pub repeated: bool,
}

/// The columns of a run's table: "answer p50" only when some request reasoned,
/// the spreads only for a repeated ladder.
pub fn columns(kinds: TableKinds) -> impl Iterator<Item = &'static Column> {
    COLUMNS.iter().filter(move |c| match c.col {
        "ttfat_p50" => kinds.reasoning,
        "ttft_p95_spread" | "output_tps_spread" => kinds.repeated,
        _ => true,
    })
}

/// Which columns are shown, as chosen in this browser.
#[derive(Clone, Copy)]
/// The names, sorted (a sorted vector rather than a set: the page has no other
/// `BTreeSet`, and each kind of B-tree is compiled into the page's WebAssembly).
pub struct ShownColumns(RwSignal<Vec<&'static str>>);

impl ShownColumns {
    /// The choice kept in this browser, or the article's columns.
    pub fn load() -> ShownColumns {
        let stored: Option<Vec<String>> = crate::local_storage()
            .and_then(|s| s.get_item(COLUMNS_STORAGE).ok().flatten())
            .and_then(|json| serde_json::from_str(&json).ok());
        let mut shown: Vec<&'static str> = Vec::new();
        for column in COLUMNS.iter().filter(|c| match &stored {
            Some(cols) => cols.iter().any(|s| s == c.col),
            None => c.by_default,
        }) {
            if let Err(at) = shown.binary_search(&column.col) {
                shown.insert(at, column.col);
            }
        }
        ShownColumns(RwSignal::new(shown))
    }

    pub fn is_shown(&self, col: &str) -> bool {
        self.0.with(|shown| shown.contains(&col))
    }

    fn toggle(&self, col: &'static str) {
        self.0.update(|shown| match shown.binary_search(&col) {
            Ok(at) => {
                shown.remove(at);
            }
            Err(at) => shown.insert(at, col),
        });
        let json = self
            .0
            .with_untracked(|shown| serde_json::to_string(shown).unwrap_or_default());
        if let Some(storage) = crate::local_storage() {
            let _ = storage.set_item(COLUMNS_STORAGE, &json);
        }
    }
}

/// The column chooser: a checkbox per column.
#[component]
pub fn ColumnChooser(shown: ShownColumns, kinds: TableKinds) -> impl IntoView {
    view! {
        <details class="column-chooser" data-testid="column-chooser">
            <summary>"Columns"</summary>
            <div class="column-list">
                {columns(kinds)
                    .map(|c| {
                        let col = c.col;
                        view! {
                            <label title=c.definition>
                                <input
                                    type="checkbox"
                                    data-col=col
                                    prop:checked=move || shown.is_shown(col)
                                    on:change=move |_| shown.toggle(col)
                                />
                                {c.header}
                            </label>
                        }
                    })
                    .collect_view()}
            </div>
        </details>
    }
}
