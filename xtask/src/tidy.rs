//! `cargo xtask tidy`: the import rules of the core and the page, checked.
//!
//! Each crate's top-level modules are declared in layers, lowest first: a module
//! may use (`crate::…`) only modules of a lower layer, never one of its own layer
//! or above, so the graph is one-way by construction; some modules are kept apart
//! (the engine, which runs in the worker: the page shares only `protocol` with it).
//! Items of the crate root (`crate::local_storage`) are for every module. Tests
//! (`#[cfg(test)] mod tests`, `tests*.rs`) may use anything. A module missing from
//! the table is an error: a new module says where it belongs.
//!
//! ARCHITECTURE.md#layers draws the same tables; this file is what holds. Tidy
//! also holds the core's serialised types to its `schema` ([`crate::schema`]) and
//! functions to a length ([`crate::lengths`]).

use std::{fs, path::Path};

use crate::util::{relative, rust_files, Result};

/// One crate's layering.
pub struct Layering {
    /// The crate's `src/`, from the workspace root.
    pub src: &'static str,
    /// Layers from the lowest: a name and its modules.
    pub layers: &'static [(&'static str, &'static [&'static str])],
    /// Modules no other module may use.
    pub apart: &'static [&'static str],
}

/// The measuring core: its pipeline (what comes in, what is measured, what is
/// concluded, the document, what is made of it) bottom to top.
pub const CORE: Layering = Layering {
    src: "crates/tokenmeter-core/src",
    layers: &[
        (
            "foundations",
            &["error", "json", "stats", "tagged", "vecmap", "lag"],
        ),
        (
            "the wire and the browser",
            &[
                "sse",
                "stream",
                "browser",
                "prompts",
                "network",
                "server_metrics",
            ],
        ),
        ("the plan", &["plan"]),
        (
            "one request, the plan as typed",
            &["record", "draft", "provider"],
        ),
        ("a level", &["summary"]),
        ("what is concluded", &["condition", "verdict", "search"]),
        ("a run's course", &["schedule"]),
        ("the live view", &["live"]),
        ("the run document", &["report"]),
        (
            "analyses of a document",
            &["ab", "compare", "diagnosis", "headline", "columns"],
        ),
        ("renderings", &["render", "chart", "share"]),
        ("the HTML report", &["html"]),
        ("other tools' formats", &["locust", "vllm"]),
        ("what a user brings", &["imports"]),
    ],
    apart: &[],
};

/// The page and the engine. The engine is apart: it runs in the worker and shares
/// only `protocol` with the page; `pieces` owns the lazily loaded pieces, so that
/// `run`, `history` and `results` need not know each other for one.
pub const PAGE: Layering = Layering {
    src: "src",
    layers: &[
        (
            "leaves",
            &["protocol", "files", "screen", "language", "store"],
        ),
        (
            "the form's parts, the pieces",
            &["widgets", "glossary", "pieces"],
        ),
        (
            "the worker and the endpoint",
            &["worker", "engine", "models", "in_progress"],
        ),
        ("a run", &["run"]),
        ("the plan panel, history", &["config", "history"]),
        ("the results area", &["results"]),
        ("the shell", &["app"]),
    ],
    apart: &["engine"],
};

/// The crate-root files, which declare the modules and may use them all.
const ROOTS: [&str; 2] = ["lib", "main"];

pub fn run() -> Result<()> {
    let root = crate::util::project_root();
    let mut problems = Vec::new();
    for layering in [&CORE, &PAGE] {
        problems.extend(check(&root.join(layering.src), layering)?);
    }
    if !problems.is_empty() {
        return Err(format!(
            "imports against the layering (xtask/src/tidy.rs, ARCHITECTURE.md#layers):\n  {}",
            problems.join("\n  ")
        )
        .into());
    }
    let unlisted = crate::schema::check_workspace(&root)?;
    if !unlisted.is_empty() {
        return Err(format!(
            "types serialised outside the run document's schema (xtask/src/schema.rs):\n  {}",
            unlisted.join("\n  ")
        )
        .into());
    }
    let long = crate::lengths::check_workspace(&root)?;
    if !long.is_empty() {
        return Err(format!(
            "functions over {} lines with no reason given (xtask/src/lengths.rs):\n  {}",
            crate::lengths::MAX_LINES,
            long.join("\n  ")
        )
        .into());
    }
    println!(
        "tidy: the core's and the page's imports follow their layers; the core serialises only its schema; no function is over {} lines without a reason",
        crate::lengths::MAX_LINES
    );
    Ok(())
}

/// Every import in `src` against `layering`, as sentences.
pub fn check(src: &Path, layering: &Layering) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    for path in rust_files(src)? {
        let text = fs::read_to_string(&path)?;
        problems.extend(check_file(&relative(src, &path)?, &text, layering));
    }
    Ok(problems)
}

/// The problems of one file, `relative` to its crate's `src/`.
pub fn check_file(relative: &str, text: &str, layering: &Layering) -> Vec<String> {
    let module = relative
        .split('/')
        .next()
        .unwrap_or(relative)
        .trim_end_matches(".rs");
    let file_name = relative.rsplit('/').next().unwrap_or(relative);
    if ROOTS.contains(&module) || file_name.starts_with("tests") {
        return Vec::new();
    }
    let Some(rank) = layer_of(layering, module) else {
        return vec![format!(
            "{}/{relative}: the module `{module}` is in no layer: add it to xtask/src/tidy.rs",
            layering.src
        )];
    };
    let mut problems = Vec::new();
    for (line, used) in imports(text) {
        if used == module {
            continue;
        }
        // Not a module: an item of the crate root, for everyone.
        let Some(used_rank) = layer_of(layering, &used) else {
            continue;
        };
        let why = if layering.apart.contains(&used.as_str()) {
            Some(format!("`{used}` is kept apart"))
        } else if used_rank >= rank {
            Some(format!(
                "`{module}` ({}) may use only lower layers, and `{used}` is in {}",
                layering.layers[rank].0, layering.layers[used_rank].0
            ))
        } else {
            None
        };
        if let Some(why) = why {
            problems.push(format!(
                "{}/{relative}:{line}: uses crate::{used}: {why}",
                layering.src
            ));
        }
    }
    problems
}

fn layer_of(layering: &Layering, module: &str) -> Option<usize> {
    layering
        .layers
        .iter()
        .position(|(_, modules)| modules.contains(&module))
}

/// The top-level modules `text` uses through `crate::`, with their lines; what a
/// test module uses is left out.
pub fn imports(text: &str) -> Vec<(usize, String)> {
    let code = without_comments(text);
    let code = match code.find("#[cfg(test)]\nmod tests") {
        Some(at) => &code[..at],
        None => &code[..],
    };
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut from = 0;
    while let Some(at) = code[from..].find("crate::") {
        let start = from + at;
        from = start + "crate::".len();
        // `$crate::` (a macro's) and `some_crate::` are not this crate's paths.
        let before = code[..start].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let line = code[..start].matches('\n').count() + 1;
        if bytes.get(from) == Some(&b'{') {
            for name in group_heads(&code[from..]) {
                out.push((line, name));
            }
        } else if let Some(name) = ident(&code[from..]) {
            out.push((line, name));
        }
    }
    out
}

/// The first identifier of each item of the `{...}` group `text` starts with.
fn group_heads(text: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut item_start = true;
    for (i, c) in text.char_indices() {
        match c {
            '{' => {
                depth += 1;
                item_start = depth == 1;
            }
            '}' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            ',' if depth == 1 => item_start = true,
            c if item_start && depth == 1 && (c.is_alphabetic() || c == '_') => {
                if let Some(name) = ident(&text[i..]) {
                    heads.push(name);
                }
                item_start = false;
            }
            _ => {}
        }
    }
    heads
}

fn ident(text: &str) -> Option<String> {
    let name: String = text
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// `text` with `//` comments (and so doc comments) blanked, line ends kept; string
/// literals are not parsed: a `//` inside one (a URL) blanks the rest of its line,
/// which holds no import.
fn without_comments(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_are_read_from_paths_and_groups_but_not_comments_tests_or_macros() {
        let text = "//! see [`crate::report`]\n\
            use crate::{\n    error::Lang,\n    summary::{Distortion, Summary},\n    stats,\n};\n\
            fn f() { crate::plan::x(); $crate::PieceMissing; other_crate::y(); }\n\
            /// [`crate::verdict`]\n\
            #[cfg(test)]\nmod tests {\n    use crate::html;\n}\n";
        let names: Vec<(usize, String)> = imports(text);
        assert_eq!(
            names,
            vec![
                (2, "error".to_owned()),
                (2, "summary".to_owned()),
                (2, "stats".to_owned()),
                (7, "plan".to_owned()),
            ]
        );
    }

    #[test]
    fn a_planted_import_against_the_layers_fails() {
        // The plan (inputs) using the run document (above it): refused.
        let problems = check_file("plan.rs", "use crate::report::RunDocument;\n", &CORE);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].contains("may use only lower layers"),
            "{problems:?}"
        );
        // Within one layer too: no two modules of a layer know each other.
        assert_eq!(
            check_file("condition.rs", "use crate::verdict::Verdict;\n", &CORE).len(),
            1
        );
        // Downwards is fine, and so is the crate root.
        assert!(check_file("report.rs", "use crate::{plan::Plan, stats};\n", &CORE).is_empty());
        assert!(check_file("run.rs", "fn f() { crate::local_storage(); }\n", &PAGE).is_empty());
        // The page's run knowing history, or any page module the engine: refused.
        assert_eq!(
            check_file("run.rs", "use crate::history::History;\n", &PAGE).len(),
            1
        );
        let apart = check_file("models.rs", "use crate::engine::request::send;\n", &PAGE);
        assert!(apart[0].contains("kept apart"), "{apart:?}");
        // A test module may use anything.
        assert!(check_file(
            "plan.rs",
            "#[cfg(test)]\nmod tests {\n    use crate::report::RunDocument;\n}\n",
            &CORE
        )
        .is_empty());
    }

    #[test]
    fn a_module_in_no_layer_is_named() {
        let problems = check_file("newthing/mod.rs", "", &CORE);
        assert!(problems[0].contains("in no layer"), "{problems:?}");
    }

    #[test]
    fn the_workspace_follows_its_layers() {
        let root = crate::util::project_root();
        for layering in [&CORE, &PAGE] {
            let problems = check(&root.join(layering.src), layering).unwrap();
            assert!(problems.is_empty(), "{problems:#?}");
        }
    }
}
