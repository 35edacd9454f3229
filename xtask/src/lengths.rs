//! The length rule of `cargo xtask tidy`: no function of the workspace's own code
//! is longer than [`MAX_LINES`] lines unless a comment above it says why
//! (`// Long: …`, among its doc comments and attributes). A long function is
//! usually several steps that want names of their own; where it is one thing (a
//! table written out, a page's markup, a match over every case), the reason says
//! so and a reader knows not to look for the seams.
//!
//! Tests are left out (`#[cfg(test)]` modules, `tests.rs`, a crate's `tests/`):
//! a test reads as one story. The reading is lexical (strings, characters and
//! comments are skipped, braces are counted), which is enough for code that
//! `cargo fmt` keeps.

use std::{fs, path::Path};

use crate::util::{relative, rust_files, Result};

/// The longest a function may be without a reason, counting its signature and
/// its closing brace.
pub const MAX_LINES: usize = 80;

/// The marker of a reason, in a `//` comment above the function.
pub const REASON: &str = "// Long:";

/// Where the workspace's own code is, from its root.
const SOURCES: [&str; 5] = [
    "src",
    "crates/tokenmeter-core/src",
    "crates/tokenmeter-sim/src",
    "crates/tokenmeter-report/src",
    "xtask/src",
];

/// Every function over the limit without a reason, as sentences.
pub fn check_workspace(root: &Path) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    for src in SOURCES {
        for path in rust_files(&root.join(src))? {
            let relative = relative(root, &path)?;
            if relative.ends_with("/tests.rs") {
                continue;
            }
            let text = fs::read_to_string(&path)?;
            for long in long_functions(&text) {
                problems.push(format!(
                    "{relative}:{}: fn {} is {} lines (more than {MAX_LINES}): split it, or say why above it (`{REASON} …`)",
                    long.line, long.name, long.n_lines
                ));
            }
        }
    }
    Ok(problems)
}

/// A function over the limit with no reason above it.
#[derive(Debug, PartialEq, Eq)]
pub struct Long {
    /// Its `fn` line, from 1.
    pub line: usize,
    pub name: String,
    pub n_lines: usize,
}

/// The functions of `text` over the limit with no reason above them, tests left out.
pub fn long_functions(text: &str) -> Vec<Long> {
    let code = code_only(text);
    let lines: Vec<&str> = code.lines().collect();
    let raw: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let trimmed = lines[i].trim_start();
        if is_test_module(&raw, i) {
            // Past the module: its braces close it.
            i = block_end(&lines, i).map_or(lines.len(), |end| end + 1);
            continue;
        }
        if let Some(name) = fn_name(trimmed) {
            if let Some(end) = block_end(&lines, i) {
                let n_lines = end - i + 1;
                if n_lines > MAX_LINES && !has_reason(&raw, i) {
                    out.push(Long {
                        line: i + 1,
                        name,
                        n_lines,
                    });
                }
            }
        }
        i += 1;
    }
    out
}

/// The name of the function a line declares (`pub async fn name(` and the like).
fn fn_name(line: &str) -> Option<String> {
    let mut rest = line;
    for prefix in [
        "pub(crate) ",
        "pub(super) ",
        "pub ",
        "const ",
        "async ",
        "unsafe ",
        "extern \"C\" ",
    ] {
        if let Some(r) = rest.strip_prefix(prefix) {
            rest = r;
        }
    }
    let rest = rest.strip_prefix("fn ")?;
    let name: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// Whether line `i` opens a test module (`mod tests`-like, under `#[cfg(test)]`).
fn is_test_module(raw: &[&str], i: usize) -> bool {
    let line = raw[i].trim_start();
    if !(line.starts_with("mod ") || line.starts_with("pub mod ")) || !line.ends_with('{') {
        return false;
    }
    raw[..i]
        .iter()
        .rev()
        .map(|l| l.trim())
        .take_while(|l| l.starts_with("#[") || l.starts_with("//"))
        .any(|l| l.starts_with("#[cfg(test)]"))
}

/// Whether the comments and attributes right above line `i` give a reason.
fn has_reason(raw: &[&str], i: usize) -> bool {
    raw[..i]
        .iter()
        .rev()
        .map(|l| l.trim())
        .take_while(|l| l.starts_with("//") || l.starts_with("#[") || l.starts_with("#!["))
        .any(|l| l.starts_with(REASON))
}

/// The line of the brace that closes the first block opened on or after line
/// `start` (`None`: a declaration without a body, or a file cut short).
fn block_end(lines: &[&str], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut opened = false;
    for (i, line) in lines.iter().enumerate().skip(start) {
        for c in line.chars() {
            match c {
                '{' => {
                    depth += 1;
                    opened = true;
                }
                '}' => {
                    depth = depth.saturating_sub(1);
                    if opened && depth == 0 {
                        return Some(i);
                    }
                }
                // A trait's method without a body.
                ';' if !opened => return None,
                _ => {}
            }
        }
    }
    None
}

/// `text` with its comments, strings and characters blanked (line breaks kept),
/// so that only the code's own braces are counted.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let keep = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(keep(chars[i]));
                    i += 1;
                }
            }
        } else if c == 'r'
            && matches!(next, Some('"' | '#'))
            && !is_ident(chars.get(i.wrapping_sub(1)))
        {
            // A raw string: r"…", r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                match chars.get(j) {
                    None => break,
                    Some('"') if (1..=hashes).all(|k| chars.get(j + k) == Some(&'#')) => {
                        j += 1 + hashes;
                        break;
                    }
                    _ => j += 1,
                }
            }
            for &k in &chars[i..j.min(chars.len())] {
                out.push(keep(k));
            }
            i = j;
        } else if c == '"' || (c == '\'' && is_char_literal(&chars, i)) {
            i = blank_quoted(&chars, i, &mut out);
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Blanks the string or character literal that opens at `i` (its quote) into
/// `out`, escapes included, line breaks kept; returns where it ends.
fn blank_quoted(chars: &[char], mut i: usize, out: &mut String) -> usize {
    let quote = chars[i];
    out.push(' ');
    i += 1;
    while i < chars.len() && chars[i] != quote {
        if chars[i] == '\\' {
            out.push(' ');
            i += 1;
        }
        if i < chars.len() {
            out.push(if chars[i] == '\n' { '\n' } else { ' ' });
            i += 1;
        }
    }
    out.push(' ');
    i + 1
}

fn is_ident(c: Option<&char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || *c == '_')
}

/// Whether the `'` at `i` opens a character literal (`'{'`, `'\n'`), not a
/// lifetime (`'a`, `'static`).
fn is_char_literal(chars: &[char], i: usize) -> bool {
    matches!(
        (chars.get(i + 1), chars.get(i + 2)),
        (Some('\\'), _) | (Some(_), Some('\''))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn function(name: &str, body_lines: usize, above: &str) -> String {
        let body: String = (0..body_lines)
            .map(|i| format!("    let x{i} = '{{';\n"))
            .collect();
        format!("{above}fn {name}() {{\n{body}    let s = \"}}\";\n}}\n")
    }

    #[test]
    fn a_long_function_without_a_reason_is_found_and_a_short_one_is_not() {
        let text = function("short", 10, "") + &function("long", 90, "/// Docs.\n");
        let found = long_functions(&text);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].name, "long");
        assert_eq!(found[0].n_lines, 93);
        assert_eq!(found[0].line, 15);
    }

    #[test]
    fn a_reason_above_it_or_a_test_module_leaves_it_alone() {
        let reasoned = function(
            "table",
            90,
            "/// Docs.\n// Long: one row per column, written out.\n#[allow(dead_code)]\n",
        );
        assert!(long_functions(&reasoned).is_empty());
        let tests = format!(
            "#[cfg(test)]\nmod tests {{\n{}}}\n{}",
            function("a_test", 100, "#[test]\n"),
            function("after", 85, "")
        );
        let found = long_functions(&tests);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].name, "after");
    }

    #[test]
    fn braces_in_strings_comments_and_characters_are_not_counted() {
        let text = "fn f() {\n    let a = \"{{{\";\n    let b = r#\"}\"#;\n    // }\n    let c = '}';\n    let d: &'static str = \"\";\n}\nfn g() {}\n";
        let code = code_only(text);
        assert_eq!(code.matches('{').count(), 2, "{code}");
        assert_eq!(code.matches('}').count(), 2, "{code}");
        assert_eq!(block_end(&code.lines().collect::<Vec<_>>(), 0), Some(6));
    }

    #[test]
    fn the_workspace_keeps_the_rule() {
        let problems = check_workspace(&crate::util::project_root()).unwrap();
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }
}
