//! `cargo xtask`: tokenmeter's automation, written in Rust instead of shell scripts
//! so that it runs the same on every machine (see ARCHITECTURE.md).
//!
//! - `cargo xtask serve`: set up what is missing, start the simulator and `trunk serve`.
//! - `cargo xtask test`: set up what is missing, then every check and test, in layers.
//! - `cargo xtask build`: the release build of the page into `dist/` (relative asset paths).
//! - `cargo xtask setup`: only the setup (toolchain, trunk, wasm-bindgen, the three
//!   browser engines and their drivers, node).
//! - `cargo xtask bench core|sim|accuracy|load|memory|size`: benchmarks that print figures.
//! - `cargo xtask tidy`: the import layering of the core and the page, checked.
//! - `cargo xtask fuzz [N]`: every reader fed N made-up and mutated inputs.

mod bench;
mod csp;
mod fuzz;
mod lengths;
mod procs;
mod schema;
mod serve;
mod setup;
mod split;
mod test;
mod tidy;
mod util;
mod wasm_opt;

use std::process::ExitCode;

const HELP: &str = "\
usage: cargo xtask <command>

  serve [--port N] [--sim-port N]   the app on http://127.0.0.1:8080 and the simulator beside it
  test [--skip-browser]             fmt, clippy (native + wasm32), unit tests, browser tests
  specs [NAME...]                   the page built for the specs, and the named e2e/specs/NAME.spec.mjs run (`engines`: e2e/engines/ in every engine)
  build                             release build into dist/ (works from any sub-path)
  setup                             install what is missing, print what was found
  bench core|sim|accuracy|load|memory|size  benchmarks; they print figures, they assert nothing
  tidy                              the core's and the page's imports against their layers
  fuzz [N]                          every reader fed N made-up and mutated inputs (100,000 by default)
";

fn main() -> ExitCode {
    procs::end_children_on_signals();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest = args.get(1..).unwrap_or_default();
    let result = match args.first().map(String::as_str) {
        Some("serve") => serve::run(rest),
        Some("test") => test::run(rest),
        Some("specs") => test::specs(rest),
        Some("build") => serve::release_build(),
        Some("setup") => setup::ensure(setup::Needs {
            browser: true,
            node: true,
            engines: true,
            locust: true,
            hosts: true,
        })
        .map(drop),
        Some("bench") => bench::run(rest),
        Some("tidy") => tidy::run(),
        Some("fuzz") => fuzz::run(rest),
        Some("help" | "--help" | "-h") | None => {
            print!("{HELP}");
            Ok(())
        }
        Some(other) => Err(format!("unknown command `{other}`\n\n{HELP}").into()),
    };
    // Whatever still runs (a simulator, trunk) ends with xtask, success or not.
    procs::end_all();
    if let Some(signum) = procs::signalled() {
        // The signal thread reports it and exits with its code.
        std::thread::sleep(std::time::Duration::from_secs(5));
        return ExitCode::from(128 + signum as u8);
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("\nxtask: error: {}", err.0);
            ExitCode::FAILURE
        }
    }
}
