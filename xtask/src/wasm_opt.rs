//! Release builds' WebAssembly, shrunk: `wasm-opt -Oz` from binaryen (the npm
//! package, pinned in `package-lock.json`, so nothing is downloaded but from npm)
//! over every `.wasm` of a built `dist/`, and the Subresource Integrity hashes that
//! Trunk wrote into `index.html` for them brought up to date. Trunk's own wasm-opt
//! step stays off: it would download binaryen from GitHub.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use crate::util::{exec, project_root, Result};

/// The WebAssembly features every browser tokenmeter supports has, and that rustc
/// and wasm-bindgen emit: binaryen must be told, as wasm-bindgen drops the section
/// that would say so.
const FEATURES: [&str; 6] = [
    "--enable-bulk-memory",
    "--enable-mutable-globals",
    "--enable-nontrapping-float-to-int",
    "--enable-sign-ext",
    "--enable-reference-types",
    "--enable-multivalue",
];

/// Optimises every `.wasm` in `dist` for size, then updates `index.html`'s
/// integrity attributes.
pub fn apply(dist: &Path) -> Result<()> {
    let wasm_opt = project_root().join("node_modules/binaryen/bin/wasm-opt");
    if !wasm_opt.exists() {
        return Err(format!(
            "{} is missing: run `cargo xtask setup` (it installs node_modules from package-lock.json)",
            wasm_opt.display()
        )
        .into());
    }
    let mut wasm_files = Vec::new();
    for entry in fs::read_dir(dist)?.flatten() {
        let path = entry.path();
        // The pieces of a split build (src/split.rs) are in a directory of their own.
        if path.is_dir() {
            wasm_files.extend(fs::read_dir(&path)?.flatten().map(|e| e.path()));
        } else {
            wasm_files.push(path);
        }
    }
    wasm_files.retain(|p| p.extension().is_some_and(|e| e == "wasm"));
    wasm_files.sort();
    // `TOKENMETER_KEEP_NAMES=1` keeps the functions' names (a profile of the page
    // then names them; the code is the same, the files larger).
    let names = if std::env::var_os("TOKENMETER_KEEP_NAMES").is_some_and(|v| v == "1") {
        "-g"
    } else {
        "--strip-debug"
    };
    for file in &wasm_files {
        exec(
            Command::new("node")
                .arg(&wasm_opt)
                .arg(file)
                .args(["-Oz", names, "--strip-producers"])
                .args(FEATURES)
                .arg("-o")
                .arg(file),
        )?;
    }
    refresh_integrity(dist, &wasm_files)
}

/// Brings the `integrity` attributes of `dist/index.html` up to date for `files`
/// (those that no tag names are left alone).
pub fn refresh_integrity(dist: &Path, files: &[PathBuf]) -> Result<()> {
    let index = dist.join("index.html");
    let mut html = fs::read_to_string(&index)?;
    for file in files {
        let name = file
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        html = with_integrity(&html, name, &sha384_base64(file)?)?;
    }
    fs::write(index, html)?;
    Ok(())
}

/// `html` with the `integrity` of the tag that loads `./name` set to `sha384-digest`
/// (unchanged when no tag carries one).
fn with_integrity(html: &str, name: &str, digest: &str) -> Result<String> {
    let Some(at) = html.find(&format!("href=\"./{name}\"")) else {
        return Ok(html.to_owned());
    };
    let tag_end = at + html[at..].find('>').ok_or("an unterminated tag")?;
    let Some(attr) = html[at..tag_end].find("integrity=\"") else {
        return Ok(html.to_owned());
    };
    let value_start = at + attr + "integrity=\"".len();
    let value_end = value_start
        + html[value_start..]
            .find('"')
            .ok_or("an unterminated integrity attribute")?;
    Ok(format!(
        "{}sha384-{digest}{}",
        &html[..value_start],
        &html[value_end..]
    ))
}

/// SHA-384 of `file`, base64, by Node (already needed for binaryen): xtask has no
/// dependencies, so that a fresh clone compiles it in seconds.
fn sha384_base64(file: &Path) -> Result<String> {
    let output = Command::new("node")
        .args([
            "-e",
            "process.stdout.write(require('crypto').createHash('sha384').update(require('fs').readFileSync(process.argv[1])).digest('base64'))",
        ])
        .arg(file)
        .output()?;
    if !output.status.success() {
        return Err(format!("hashing {} failed", file.display()).into());
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_integrity_of_the_right_tag_changes() {
        let html = r#"<link rel="modulepreload" href="./app.js" integrity="sha384-js"><link rel="preload" href="./app_bg.wasm" crossorigin="anonymous" integrity="sha384-old" as="fetch">"#;
        let out = with_integrity(html, "app_bg.wasm", "new").unwrap();
        assert_eq!(
            out,
            r#"<link rel="modulepreload" href="./app.js" integrity="sha384-js"><link rel="preload" href="./app_bg.wasm" crossorigin="anonymous" integrity="sha384-new" as="fetch">"#
        );
        assert_eq!(with_integrity(html, "other_bg.wasm", "x").unwrap(), html);
    }
}
