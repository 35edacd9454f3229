//! `cargo xtask bench ...`: benchmarks print figures and assert nothing, because
//! these machines are shared and noisy. Each compares against ground truth or a
//! ratio measured in the same run.

use std::process::Command;

use crate::util::{exec, project_root, step, Result};

pub fn run(args: &[String]) -> Result<()> {
    let root = project_root();
    match args.first().map(String::as_str) {
        Some("core") => step("bench core: parse + account cost per event", || {
            exec(Command::new("cargo").current_dir(&root).args([
                "bench",
                "--locked",
                "-p",
                "tokenmeter-core",
                "--bench",
                "core",
            ]))
        }),
        Some("sim") => step("bench sim: capacity and lateness of the simulator", || {
            exec(
                Command::new("cargo")
                    .current_dir(&root)
                    .args([
                        "run",
                        "--locked",
                        "--release",
                        "-p",
                        "tokenmeter-sim",
                        "--example",
                        "bench_sim",
                        "--",
                    ])
                    .args(&args[1..]),
            )
        }),
        _ => Err("usage: cargo xtask bench core|sim".into()),
    }
}
