//! `cargo xtask fuzz [N]`: every reader's fuzz target
//! (crates/tokenmeter-core/tests/fuzz.rs), N cases each (100,000 by default), in a
//! release build; it prints cases per second per target and what it found, and
//! fails on a panic. The test command runs the same targets with a few hundred
//! cases each, in its unit tests. `TOKENMETER_FUZZ_SEED` replays a run's seed.

use std::process::Command;

use crate::util::{exec, project_root, Result};

/// Cases per target when none are asked for.
const DEFAULT_CASES: u64 = 100_000;

pub fn run(args: &[String]) -> Result<()> {
    let cases =
        match args.first() {
            None => DEFAULT_CASES,
            Some(n) => n.parse::<u64>().ok().filter(|&n| n > 0).ok_or_else(|| {
                format!("usage: cargo xtask fuzz [N]: N cases per target, not `{n}`")
            })?,
        };
    let mut cargo = Command::new("cargo");
    cargo
        .current_dir(project_root())
        .args(["test", "--locked", "--release", "-p", "tokenmeter-core"])
        .args(["--test", "fuzz", "--", "--nocapture", "no_reader_panics"])
        .env("TOKENMETER_FUZZ_CASES", cases.to_string());
    exec(&mut cargo)
}
