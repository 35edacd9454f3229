//! Cuts the page's WebAssembly into a main module and modules fetched on first use,
//! at the split points that `split_off!` marks (src/lib.rs of the page). `cargo
//! xtask` runs this between Trunk's cargo build (with the `split` feature, so the
//! link keeps its relocations) and wasm-bindgen: see xtask/src/split.rs.
//!
//! ```text
//! tokenmeter-split <input.wasm> <main-out.wasm> <dist> <bindings-stem>
//! ```
//!
//! Writes the main module, still to go through wasm-bindgen, to `<main-out.wasm>`,
//! and the rest to `<dist>/<stem>-split/`: `__wasm_split.js`, the loader that the
//! main module imports; `split_<name>.wasm` per split point; `chunk_<n>.wasm` for
//! code that several split points share. The loader imports `initSync` from
//! `../<stem>.js`, the bindings wasm-bindgen writes for the main module, so the
//! pieces find the main module's memory and table. The directory carries the
//! bindings' name, and with it their hash: a cache never mixes one build's main
//! module with another's pieces.

use std::{fs, path::Path, process::ExitCode};

/// Where the pieces go, relative to `dist`.
fn pieces_dir(stem: &str) -> String {
    format!("{stem}-split")
}

fn run(args: &[String]) -> Result<(), String> {
    let [input, main_out, dist, stem] = args else {
        return Err(
            "usage: tokenmeter-split <input.wasm> <main-out.wasm> <dist> <bindings-stem>".into(),
        );
    };
    let input_wasm = fs::read(input).map_err(|err| format!("cannot read {input}: {err}"))?;
    // The splitter writes the loader to `<output_dir>/<link_name>` and the pieces
    // beside `output_dir`'s root, while the loader fetches them from beside itself:
    // it works in a directory of its own, and the pieces move in with the loader.
    let main_out = Path::new(main_out);
    let work = main_out.with_extension("pieces");
    let _ = fs::remove_dir_all(&work);
    let pieces = pieces_dir(stem);
    fs::create_dir_all(work.join(&pieces))
        .map_err(|err| format!("cannot create {}: {err}", work.display()))?;
    let link_name = format!("./{pieces}/__wasm_split.js");
    let main_module = format!("../{stem}.js");
    let split = wasm_split_cli_support::transform({
        let mut options = wasm_split_cli_support::Options::new(&input_wasm);
        options.output_dir = &work;
        options.main_out_path = main_out;
        options.link_name = &link_name;
        options.main_module = &main_module;
        options
    })
    .map_err(|err| {
        format!("cannot split {input} (was it built with the `split` feature?): {err:#}")
    })?;
    let destination = Path::new(dist).join(&pieces);
    fs::create_dir_all(&destination)
        .map_err(|err| format!("cannot create {}: {err}", destination.display()))?;
    let mut moved = split.split_modules;
    moved.push(work.join(&pieces).join("__wasm_split.js"));
    moved.sort();
    println!(
        "split {input} ({} bytes): main {} bytes",
        input_wasm.len(),
        fs::metadata(main_out).map_or(0, |m| m.len())
    );
    for from in &moved {
        let name = from.file_name().ok_or("a piece without a file name")?;
        let to = destination.join(name);
        fs::rename(from, &to)
            .map_err(|err| format!("cannot move {} to {}: {err}", from.display(), to.display()))?;
        println!(
            "  {}: {} bytes",
            to.display(),
            fs::metadata(&to).map_or(0, |m| m.len())
        );
    }
    let _ = fs::remove_dir_all(&work);
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("tokenmeter-split: {err}");
            ExitCode::FAILURE
        }
    }
}
