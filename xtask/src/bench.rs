//! `cargo xtask bench ...`: benchmarks print figures and assert nothing, because
//! these machines are shared and noisy. Each compares against ground truth or a
//! ratio measured in the same run.

use std::process::Command;

use crate::{
    setup::{self, Needs},
    util::{exec, project_root, step, Result},
};

/// The release build the accuracy benchmark loads (LTO, as users get it).
const BENCH_DIST: &str = "target/bench-dist";

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
        Some("accuracy") => step(
            "bench accuracy: the page's figures against the truth",
            || {
                let env = setup::ensure(Needs {
                    browser: true,
                    node: true,
                    engines: true,
                })?;
                let mut trunk = env.wasm_command("trunk");
                trunk.current_dir(&root).args([
                    "build",
                    "--release",
                    "--dist",
                    BENCH_DIST,
                    "--public-url",
                    "./",
                ]);
                exec(&mut trunk)?;
                exec(Command::new("cargo").current_dir(&root).args([
                    "build",
                    "--locked",
                    "--release",
                    "-p",
                    "tokenmeter-sim",
                ]))?;
                // First Chromium in detail, then every engine side by side.
                for script in ["e2e/bench/accuracy.mjs", "e2e/bench/engines.mjs"] {
                    exec(
                        Command::new("node")
                            .current_dir(&root)
                            .arg(script)
                            .env("TOKENMETER_DIST", root.join(BENCH_DIST))
                            .envs(env.browser_vars())
                            .env(
                                "TOKENMETER_SIM_BIN",
                                root.join("target/release/tokenmeter-sim"),
                            ),
                    )?;
                }
                Ok(())
            },
        ),
        _ => Err("usage: cargo xtask bench core|sim|accuracy".into()),
    }
}
