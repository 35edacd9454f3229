//! `tokenmeter-report`: a run document (the page's JSON export, a vLLM `bench
//! serve` result, or the records of a plan run on Locust) read on the command
//! line. It prints
//! the levels table, the verdict, the diagnosis and the notes, writes the exports
//! (JSON, CSV, Markdown, HTML), and exits 1 when the SLO is broken where asked, so
//! CI can gate a deployment on a measured run. Every figure comes from the core,
//! as on the page.
//!
//! With `--export-locust DIR` it writes a plan (a tokenmeter plan, the article's
//! `config.json`, or a run document's plan) as a locustfile and its pinned
//! `requirements.txt` instead; a plan of a file's prompts needs the file
//! (`--prompts`), and writes `tokenmeter_prompts.json` beside them.
//!
//! Exit codes: 0 the SLO holds (or there is none), 1 it is broken, 2 the input or
//! the arguments are wrong.

use std::{fs, path::PathBuf, process::ExitCode};

use clap::Parser;
use tokenmeter_core::{
    analyse, article_table, diagnose, import_config, locust, read_run, render,
    schema::{Lang, RunDocument, Slo},
};

#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// The run document (tokenmeter's JSON export), a vLLM bench serve result, or
    /// the JSON lines a Locust run of an exported plan wrote; with
    /// --export-locust, the plan.
    input: PathBuf,
    /// Write the plan in INPUT as a locustfile and its requirements.txt into this
    /// directory, and nothing else.
    #[arg(long, value_name = "DIR")]
    export_locust: Option<PathBuf>,
    /// With --export-locust, for a plan of prompts from a file: that file (the
    /// plan names it by its SHA-256).
    #[arg(long, value_name = "FILE", requires = "export_locust")]
    prompts: Option<PathBuf>,
    /// The language of the printed report and the Markdown and HTML files.
    #[arg(long, default_value = "en", value_parser = ["en", "zh"])]
    lang: String,
    /// Check the SLO at this concurrency only (default: at every level the tool
    /// measured cleanly).
    #[arg(long)]
    at: Option<u32>,
    /// Override the plan's p95 TTFT limit, ms.
    #[arg(long)]
    slo_ttft_p95_ms: Option<f64>,
    /// Override the plan's p95 TPOT limit, ms.
    #[arg(long)]
    slo_tpot_p95_ms: Option<f64>,
    /// Override the plan's p95 end-to-end limit, ms.
    #[arg(long)]
    slo_e2e_p95_ms: Option<f64>,
    /// Override the plan's error-rate limit, percent of a level's requests.
    #[arg(long)]
    slo_error_rate_pct: Option<f64>,
    /// Write the run document (JSON) here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write the levels CSV here.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Write the requests CSV here.
    #[arg(long)]
    requests_csv: Option<PathBuf>,
    /// Write the Markdown report here.
    #[arg(long)]
    md: Option<PathBuf>,
    /// Write the HTML report (charts inline) here.
    #[arg(long)]
    html: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(problem) => {
            eprintln!("tokenmeter-report: {problem}");
            ExitCode::from(2)
        }
    }
}

/// Reads, prints and writes; `Ok(false)` when the SLO is broken where checked.
fn run(args: &Args) -> Result<bool, String> {
    let text = fs::read_to_string(&args.input)
        .map_err(|err| format!("cannot read {}: {err}", args.input.display()))?;
    if let Some(dir) = &args.export_locust {
        export_locust(&text, dir, args.prompts.as_deref())?;
        return Ok(true);
    }
    let lang = if args.lang == "zh" {
        Lang::Zh
    } else {
        Lang::En
    };
    // A file that is no run is said in the report's language.
    let mut document = read_run(&text).map_err(|why| why.text(lang).to_owned())?;
    let overridden = [
        args.slo_ttft_p95_ms,
        args.slo_tpot_p95_ms,
        args.slo_e2e_p95_ms,
        args.slo_error_rate_pct,
    ]
    .iter()
    .any(Option::is_some);
    if overridden {
        let slo = Slo {
            ttft_p95_ms: args.slo_ttft_p95_ms.or(document.plan.slo.ttft_p95_ms),
            tpot_p95_ms: args.slo_tpot_p95_ms.or(document.plan.slo.tpot_p95_ms),
            e2e_p95_ms: args.slo_e2e_p95_ms.or(document.plan.slo.e2e_p95_ms),
            error_rate_pct: args.slo_error_rate_pct.or(document.plan.slo.error_rate_pct),
        };
        document.verdict = analyse(&document.levels, &slo, &document.plan.analysis);
        document.plan.slo = slo;
        for other in &mut document.ab {
            other.verdict = analyse(&other.levels, &slo, &other.plan.analysis);
            other.plan.slo = slo;
        }
    }
    print!("{}", printed(&document, lang));
    for (path, contents) in [
        (&args.json, document.to_json()),
        (&args.csv, render::levels_csv(&document)),
        (&args.requests_csv, render::requests_csv(&document)),
        (&args.md, render::markdown(&document, lang)),
        (&args.html, document.html(lang)),
    ] {
        if let Some(path) = path {
            fs::write(path, contents)
                .map_err(|err| format!("cannot write {}: {err}", path.display()))?;
        }
    }
    // Every target of an A/B run is held to the SLO.
    let mut holds = slo_holds(&document, args.at)?;
    for other in &document.ab {
        holds &= slo_holds(other, args.at)?;
    }
    Ok(holds)
}

/// Writes the plan in `text` (a plan, a `config.json`, or a run document's) as a
/// locustfile and its requirements into `dir`.
fn export_locust(
    text: &str,
    dir: &std::path::Path,
    prompts: Option<&std::path::Path>,
) -> Result<(), String> {
    let plan = match RunDocument::from_json(text) {
        Ok(document) => document.plan,
        Err(_) => {
            let imported = import_config(text)?;
            if imported.api_key.is_some() {
                eprintln!(
                    "tokenmeter-report: the key in this file is not written to the locustfile; set {} where it runs",
                    locust::KEY_ENV
                );
            }
            imported.plan
        }
    };
    plan.validate().map_err(|problems| {
        problems
            .iter()
            .map(|p| p.en.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    let prompts = prompts
        .map(|path| {
            let bytes =
                fs::read(path).map_err(|err| format!("cannot read {}: {err}", path.display()))?;
            let name = path.file_name().map_or_else(
                || path.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            tokenmeter_core::read_prompts(&name, &bytes).map_err(|why| why.en)
        })
        .transpose()?;
    let made = locust::export(locust::TEMPLATE, &plan, prompts.as_ref())?;
    fs::create_dir_all(dir).map_err(|err| format!("cannot create {}: {err}", dir.display()))?;
    let mut written = vec![
        (locust::FILE_NAME, made.locustfile),
        ("requirements.txt", locust::requirements()),
    ];
    written.extend(made.prompts.map(|text| (locust::PROMPTS_FILE, text)));
    for (name, contents) in &written {
        let path = dir.join(name);
        fs::write(&path, contents)
            .map_err(|err| format!("cannot write {}: {err}", path.display()))?;
    }
    let names: Vec<String> = written
        .iter()
        .map(|(name, _)| format!("{}/{name}", dir.display()))
        .collect();
    println!(
        "wrote {names}
run: pip install -r {dir}/requirements.txt && {key}=... locust -f {dir}/{file} --headless --processes 4",
        names = names.join(", "),
        dir = dir.display(),
        file = locust::FILE_NAME,
        key = locust::KEY_ENV
    );
    Ok(())
}

/// The report as printed: the table, the verdict, the diagnosis, the notes.
fn printed(document: &RunDocument, lang: Lang) -> String {
    let (header, rows) = article_table(&document.levels, lang);
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain([header[i].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(cell, &w)| format!("{cell:>w$}"))
            .collect();
        padded.join("  ").trim_end().to_owned() + "\n"
    };
    // An imported run has no endpoint of ours.
    let endpoint = if document.plan.base_url.is_empty() {
        String::new()
    } else {
        format!(" · {}", document.plan.endpoint_url())
    };
    let mut out = format!(
        "{}{endpoint} · {}\n\n",
        document.plan.model, document.started_at
    );
    out += &line(&header.iter().map(|h| (*h).to_owned()).collect::<Vec<_>>());
    for row in &rows {
        out += &line(row);
    }
    out += &format!("\n{}\n", document.verdict.text(lang));
    for finding in diagnose(document) {
        out += &format!("- {}\n", finding.text(lang));
    }
    for note in document.environment.notes_in(lang) {
        out += &format!("note: {note}\n");
    }
    for (_, said) in document.environment.path_lines() {
        out += &format!("{}\n", said.text(lang));
    }
    // An A/B run: each other target's table and verdict, then the two side by side.
    for (i, other) in document.ab.iter().enumerate() {
        out += &format!(
            "\ntarget {}\n{}",
            tokenmeter_core::ab::target_name(document, i + 1),
            printed(other, lang)
        );
    }
    if !document.ab.is_empty() {
        out += "\nA/B:\n";
        for line in tokenmeter_core::ab::said(document, lang) {
            out += &format!("- {line}\n");
        }
    }
    out
}

/// Whether the SLO holds at `at` (or at every level the verdict judged). A level
/// the verdict left out (the browser or the engine shaped it) is not judged; a
/// concurrency the run does not have is an error.
fn slo_holds(document: &RunDocument, at: Option<u32>) -> Result<bool, String> {
    let judged = &document.verdict.levels;
    match at {
        Some(c) => {
            let level = judged.iter().find(|l| l.concurrency == c).ok_or_else(|| {
                format!("the run has no level at concurrency {c} that the verdict judged")
            })?;
            for breach in &level.slo_breaches {
                eprintln!("SLO broken at concurrency {c}: {breach}");
            }
            Ok(level.meets_slo)
        }
        None => {
            for level in judged.iter().filter(|l| !l.meets_slo) {
                eprintln!(
                    "SLO broken at concurrency {}: {}",
                    level.concurrency,
                    level.slo_breaches.join(", ")
                );
            }
            Ok(judged.iter().all(|l| l.meets_slo))
        }
    }
}
