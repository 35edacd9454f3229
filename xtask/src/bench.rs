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
                // First Chromium in detail, then every engine side by side.
                page_bench(&root, &["e2e/bench/accuracy.mjs", "e2e/bench/engines.mjs"])
            },
        ),
        Some("memory") => step(
            "bench memory: a run of 10,000 requests, kept, reloaded, exported, and its peak memory",
            || page_bench(&root, &["e2e/bench/memory.mjs"]),
        ),
        Some("load") => step(
            "bench load: 1 to 256 streams, tokenmeter against a baseline page and the truth",
            || page_bench(&root, &["e2e/bench/load.mjs"]),
        ),
        Some("size") => step(
            "bench size: what a user downloads, and how soon the page is up",
            || page_bench(&root, &["e2e/bench/size.mjs"]),
        ),
        Some("locust") => step(
            "bench locust: Locust workers running the exported plan, against the truth",
            || locust_bench(&root),
        ),
        _ => Err("usage: cargo xtask bench core|sim|accuracy|load|memory|size|locust".into()),
    }
}

/// Builds the simulator and the report (release), then runs Locust at each level
/// with one and with two worker processes (`e2e/bench/locust.mjs`).
fn locust_bench(root: &std::path::Path) -> Result<()> {
    let env = setup::ensure(Needs {
        locust: true,
        node: true,
        ..Needs::default()
    })?;
    exec(Command::new("cargo").current_dir(root).args([
        "build",
        "--locked",
        "--release",
        "-p",
        "tokenmeter-sim",
        "-p",
        "tokenmeter-report",
    ]))?;
    exec(
        Command::new("node")
            .current_dir(root)
            .arg("e2e/bench/locust.mjs")
            .env(
                "TOKENMETER_LOCUST_PYTHON",
                env.locust_python.as_ref().expect("locust was set up"),
            )
            .env(
                "TOKENMETER_REPORT_BIN",
                root.join("target/release/tokenmeter-report"),
            )
            .env(
                "TOKENMETER_SIM_BIN",
                root.join("target/release/tokenmeter-sim"),
            ),
    )
}

/// Builds the page as users get it (release) and the simulator, then runs the
/// benchmark `scripts` against them.
fn page_bench(root: &std::path::Path, scripts: &[&str]) -> Result<()> {
    let env = setup::ensure(Needs {
        browser: true,
        node: true,
        engines: true,
        locust: false,
    })?;
    let mut trunk = env.wasm_command("trunk");
    trunk.current_dir(root).args([
        "build",
        "--release",
        "--dist",
        BENCH_DIST,
        "--public-url",
        "./",
    ]);
    trunk.args(crate::split::TRUNK_FEATURES);
    exec(&mut trunk)?;
    crate::split::apply(&root.join(BENCH_DIST), crate::split::Profile::Release)?;
    crate::wasm_opt::apply(&root.join(BENCH_DIST))?;
    crate::csp::apply(&root.join(BENCH_DIST))?;
    exec(Command::new("cargo").current_dir(root).args([
        "build",
        "--locked",
        "--release",
        "-p",
        "tokenmeter-sim",
    ]))?;
    // Node 20 and 21 have WebSocket (for the load benchmark's bare DevTools client)
    // only behind a flag; from 22 it is always there.
    let node_major = Command::new("node")
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| {
            let version = String::from_utf8_lossy(&o.stdout).trim().to_owned();
            version
                .trim_start_matches('v')
                .split('.')
                .next()?
                .parse::<u32>()
                .ok()
        })
        .unwrap_or(0);
    let node_flags: &[&str] = if node_major < 22 {
        &["--experimental-websocket"]
    } else {
        &[]
    };
    for script in scripts {
        exec(
            Command::new("node")
                .current_dir(root)
                .args(node_flags)
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
}
