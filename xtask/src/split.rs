//! Code splitting, for the builds `cargo xtask` makes (release, benchmarks, and the
//! build the end-to-end specs load). Trunk builds the page with the `split` feature:
//! the functions marked `split_off!` (src/lib.rs) become split points, and the link
//! keeps its relocations (build.rs). This then cuts the module in pieces
//! (`crates/tokenmeter-split`, from leptos's wasm_split project) and redoes Trunk's
//! wasm-bindgen step on the main piece, under Trunk's own file names, so Trunk's
//! `index.html` loads it unchanged but for the integrity hashes.
//!
//! The pieces are `dist/<bindings>-split/`: the loader `__wasm_split.js`, imported
//! by the bindings, and `split_<name>.wasm` for each split point, fetched the first
//! time one of its functions is called. `cargo xtask serve` (`trunk serve`) builds
//! without the feature: one module, as `trunk` alone would build it.

use std::{fs, path::Path, process::Command};

use crate::{
    util::{exec, project_root, Result},
    wasm_opt,
};

/// What Trunk's build must be told, so that there is something to split.
pub const TRUNK_FEATURES: [&str; 2] = ["--features", "split"];

/// Which of Trunk's cargo builds to split.
#[derive(Clone, Copy, Debug)]
pub enum Profile {
    Debug,
    Release,
}

impl Profile {
    fn dir(self) -> &'static str {
        match self {
            Profile::Debug => "debug",
            Profile::Release => "release",
        }
    }
}

/// Splits the module of the page Trunk just built into `dist` (with
/// [`TRUNK_FEATURES`] and this `profile`).
pub fn apply(dist: &Path, profile: Profile) -> Result<()> {
    let root = project_root();
    let stem = bindings_stem(dist)?;
    let input = root
        .join("target/wasm32-unknown-unknown")
        .join(profile.dir())
        .join("tokenmeter.wasm");
    let work = root.join("target/xtask-split");
    fs::create_dir_all(&work)?;
    let main = work.join(format!("{stem}.wasm"));
    exec(
        Command::new("cargo")
            .current_dir(&root)
            .args(["run", "--locked", "--quiet", "-p", "tokenmeter-split", "--"])
            .arg(&input)
            .arg(&main)
            .arg(dist)
            .arg(&stem),
    )?;
    // The flags Trunk gives wasm-bindgen, and `--keep-lld-exports`: the pieces
    // import the main module's table, stack pointer and functions by those names.
    exec(
        Command::new("wasm-bindgen")
            .args(["--target", "web", "--no-typescript", "--keep-lld-exports"])
            .arg("--out-dir")
            .arg(dist)
            .args(["--out-name", &stem])
            .arg(&main),
    )?;
    wasm_opt::refresh_integrity(
        dist,
        &[
            dist.join(format!("{stem}.js")),
            dist.join(format!("{stem}_bg.wasm")),
        ],
    )
}

/// The name Trunk gave the page's bindings (`tokenmeter-<hash>`, for
/// `tokenmeter-<hash>.js` and `tokenmeter-<hash>_bg.wasm`).
fn bindings_stem(dist: &Path) -> Result<String> {
    let mut stems: Vec<String> = fs::read_dir(dist)?
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let stem = name.strip_suffix("_bg.wasm")?.to_owned();
            dist.join(format!("{stem}.js")).is_file().then_some(stem)
        })
        .collect();
    match stems.len() {
        1 => Ok(stems.remove(0)),
        n => Err(format!(
            "{} holds {n} pairs of wasm-bindgen files (<name>.js, <name>_bg.wasm); Trunk writes one",
            dist.display()
        )
        .into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bindings_are_the_one_pair_of_js_and_bg_wasm() {
        let dir = std::env::temp_dir().join(format!("tokenmeter-split-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        for file in [
            "tokenmeter-ab12_bg.wasm",
            "tokenmeter-ab12.js",
            "engine-worker.js",
            "boot-1.js",
        ] {
            fs::write(dir.join(file), "").unwrap();
        }
        assert_eq!(bindings_stem(&dir).unwrap(), "tokenmeter-ab12");
        fs::write(dir.join("other_bg.wasm"), "").unwrap();
        fs::write(dir.join("other.js"), "").unwrap();
        assert!(bindings_stem(&dir).unwrap_err().0.contains("2 pairs"));
        fs::remove_dir_all(&dir).unwrap();
    }
}
