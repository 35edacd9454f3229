//! Tidy's schema rule: the core serialises only what its `schema` lists.
//!
//! The run document's JSON is an interface (history, exports, links, imports and
//! outside scripts read it), so the types it is made of are named as such: the
//! core's `lib.rs` re-exports each of them in `pub mod schema`. A type that
//! derives `Serialize` anywhere else in the core is either listed there or named
//! below with the format it is written for; otherwise an internal shape would
//! quietly become part of a versioned format. Read lexically, like the rest of
//! tidy: `cargo fmt` keeps derives and the `schema` block in one shape.

use std::{fs, path::Path};

use crate::util::{relative, rust_files, Result};

/// Where the core's sources are, from the workspace root.
const CORE_SRC: &str = "crates/tokenmeter-core/src";

/// Types the core serialises for a format other than the run document, and which.
pub const SERIALISED_ELSEWHERE: &[(&str, &str)] = &[
    ("ArticleConfig", "the article's config.json"),
    (
        "Prompts",
        "a prompt file's prompts, sent to the engine beside the plan",
    ),
    ("Prompt", "one prompt of a file, inside `Prompts`"),
];

/// Every type of the core that derives `Serialize` and is neither in `schema` nor
/// in [`SERIALISED_ELSEWHERE`], as sentences.
pub fn check_workspace(root: &Path) -> Result<Vec<String>> {
    let src = root.join(CORE_SRC);
    let listed = schema_names(&fs::read_to_string(src.join("lib.rs"))?);
    if listed.is_empty() {
        return Ok(vec![format!(
            "{CORE_SRC}/lib.rs: no `pub mod schema` block of `pub use` found"
        )]);
    }
    let mut problems = Vec::new();
    for path in rust_files(&src)? {
        if path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("tests"))
        {
            continue;
        }
        let relative = relative(root, &path)?;
        let text = fs::read_to_string(&path)?;
        problems.extend(check_file(&relative, &text, &listed));
    }
    Ok(problems)
}

/// The problems of one file: its serialised types missing from `listed`.
pub fn check_file(relative: &str, text: &str, listed: &[String]) -> Vec<String> {
    serialised_types(text)
        .into_iter()
        .filter(|(_, name)| {
            !listed.contains(name) && !SERIALISED_ELSEWHERE.iter().any(|(n, _)| n == name)
        })
        .map(|(line, name)| {
            format!(
                "{relative}:{line}: `{name}` derives Serialize but is not in the core's \
                 `schema` (lib.rs): list it there if a run document holds it, else name \
                 its format in xtask/src/schema.rs, or drop the derive"
            )
        })
        .collect()
}

/// The names `pub mod schema { pub use crate::{…}; }` re-exports.
pub fn schema_names(lib: &str) -> Vec<String> {
    let Some(start) = lib.find("pub mod schema {") else {
        return Vec::new();
    };
    let block = &lib[start..];
    // The block ends at the first line that closes the module.
    let end = block.find("\n}").map_or(block.len(), |i| i + 2);
    let body: String = block[..end]
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let after_use = body.split_once("pub use").map_or("", |(_, b)| b);
    after_use
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with(|c: char| c.is_ascii_uppercase()))
        .map(str::to_owned)
        .collect()
}

/// The types of `text` (outside a test module) whose derive names `Serialize`,
/// with their lines.
pub fn serialised_types(text: &str) -> Vec<(usize, String)> {
    let code = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    let mut out = Vec::new();
    let mut derive_serialises = false;
    for (i, line) in code.lines().enumerate() {
        let line = line.trim_start();
        if let Some(derive) = line.strip_prefix("#[derive(") {
            derive_serialises = derive
                .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .any(|d| d == "Serialize" || d.ends_with("::Serialize"));
            continue;
        }
        if line.starts_with("#[") || line.starts_with("///") || line.starts_with("//") {
            continue;
        }
        if derive_serialises {
            let item = line
                .trim_start_matches("pub(crate) ")
                .trim_start_matches("pub ");
            let name = item
                .strip_prefix("struct ")
                .or_else(|| item.strip_prefix("enum "))
                .and_then(|rest| {
                    rest.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .next()
                });
            if let Some(name) = name.filter(|n| !n.is_empty()) {
                out.push((i + 1, name.to_owned()));
            }
        }
        derive_serialises = false;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIB: &str = "mod report;\n\n/// Docs.\npub mod schema {\n    pub use crate::{\n        \
                       report::{RunDocument, RunStatus},\n        stats::Distribution,\n    };\n}\n\n\
                       pub use crate::sse::SseParser;\n";

    #[test]
    fn the_schema_block_is_read_and_nothing_after_it() {
        assert_eq!(
            schema_names(LIB),
            ["RunDocument", "RunStatus", "Distribution"]
        );
        assert!(schema_names("pub use crate::x::Y;\n").is_empty());
    }

    #[test]
    fn a_serialised_type_outside_the_schema_is_named() {
        let text =
            "/// A thing.\n#[derive(Clone, Serialize, Deserialize)]\n#[serde(tag = \"kind\")]\n\
                    pub struct Planted {\n    x: u32,\n}\n";
        let listed = schema_names(LIB);
        let problems = check_file("src/planted.rs", text, &listed);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].starts_with("src/planted.rs:4: `Planted`"));
    }

    #[test]
    fn listed_elsewhere_unserialised_and_test_types_pass() {
        let listed = schema_names(LIB);
        let text = "#[derive(Serialize)]\npub enum RunStatus { Done }\n\
                    #[derive(Serialize, Deserialize)]\npub(crate) struct ArticleConfig {}\n\
                    #[derive(Clone, Debug)]\npub struct Internal;\n\
                    #[derive(Deserialize)]\nstruct Wire {}\n\
                    #[cfg(test)]\nmod tests {\n    #[derive(Serialize)]\n    struct Fixture;\n}\n";
        assert_eq!(check_file("src/x.rs", text, &listed), Vec::<String>::new());
    }

    #[test]
    fn the_core_as_it_is_passes() {
        let root = crate::util::project_root();
        assert_eq!(check_workspace(&root).unwrap(), Vec::<String>::new());
    }
}
