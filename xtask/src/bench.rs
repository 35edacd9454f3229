//! `cargo xtask bench ...`: benchmarks print figures and assert nothing, because
//! these machines are shared and noisy. Each compares against ground truth or a
//! ratio measured in the same run.
//!
//! `--smoke` runs a benchmark in its smallest form (`TOKENMETER_BENCH_SMOKE=1`:
//! the fewest levels and requests) on debug builds. The test command runs every
//! benchmark so ([`smoke_all`]) and checks only that each ran to its end, printed
//! its table and left no process behind: a benchmark never rots silently.

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use crate::{
    procs,
    setup::{self, Env, Needs},
    util::{describe, exec, human_secs, project_root, step, Result},
};

/// The release build the page benchmarks load (LTO, as users get it).
const BENCH_DIST: &str = "target/bench-dist";

/// Every benchmark, and a line of the table it prints (what the smoke run looks for).
const BENCHES: [(&str, &str); 8] = [
    ("core", "ns per event"),
    ("sim", "events/s"),
    ("accuracy", "Per engine"),
    ("cache", "| streams | prompts |"),
    ("load", "ΔTTFT p50"),
    ("memory", "peak in the page"),
    ("size", "cold loads from loopback"),
    ("locust", "| processes | streams |"),
];

/// What a benchmark runs against: the page's build and the binaries.
struct Builds {
    dist: PathBuf,
    sim_bin: PathBuf,
    report_bin: PathBuf,
    smoke: bool,
}

pub fn run(args: &[String]) -> Result<()> {
    let root = project_root();
    let smoke = args.iter().any(|a| a == "--smoke");
    let rest: Vec<String> = args[1.min(args.len())..]
        .iter()
        .filter(|a| *a != "--smoke")
        .cloned()
        .collect();
    let Some(name) = args
        .first()
        .map(String::as_str)
        .filter(|n| BENCHES.iter().any(|(b, _)| b == n))
    else {
        return Err(format!(
            "usage: cargo xtask bench {} [--smoke]",
            BENCHES.map(|(b, _)| b).join("|")
        )
        .into());
    };
    let env = setup::ensure(needs(name))?;
    let builds = if smoke {
        debug_builds(&env, &root, name)?
    } else {
        release_builds(&env, &root, name)?
    };
    step(
        &format!("bench {name}{}", if smoke { " (smoke)" } else { "" }),
        || exec(&mut command(&env, &root, &builds, name, &rest)),
    )
}

/// Every benchmark in its smallest form against the test command's builds (`dist`,
/// the debug simulator and report): each must end well, print its table and leave
/// no process running.
pub fn smoke_all(env: &Env, root: &Path, dist: &Path) -> Result<()> {
    let builds = Builds {
        dist: dist.to_owned(),
        sim_bin: root.join("target/debug/tokenmeter-sim"),
        report_bin: root.join("target/debug/tokenmeter-report"),
        smoke: true,
    };
    for (name, table) in BENCHES {
        let started = Instant::now();
        let mut cmd = command(env, root, &builds, name, &[]);
        println!("$ {}", describe(&cmd));
        let child = procs::spawn(cmd.stdout(Stdio::piped()).stderr(Stdio::piped()))?;
        let group = child.id();
        let out = child.wait_with_output()?;
        // Before the group is ended: whatever the benchmark left running in it.
        let left = left_behind(group);
        procs::end_group(group);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let failure = if !out.status.success() {
            Some(format!("it failed ({})", out.status))
        } else if !stdout.contains(table) {
            Some(format!("it printed no table (no line with `{table}`)"))
        } else if !left.is_empty() {
            Some(format!("it left running: {}", left.join("; ")))
        } else {
            None
        };
        if let Some(why) = failure {
            return Err(format!(
                "bench {name} (smoke): {why}\n--- its output ---\n{stdout}\n--- its errors ---\n{stderr}"
            )
            .into());
        }
        println!(
            "bench {name} (smoke): ran to its end and printed its table, nothing left running, in {}",
            human_secs(started.elapsed().as_secs_f64())
        );
    }
    Ok(())
}

/// Live processes of `group` other than its leader (which has exited), once those
/// ending on their own have had a moment.
fn left_behind(group: u32) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let left: Vec<String> = procs::table()
            .into_iter()
            .filter(|p| p.group == group && p.pid != group && !p.zombie)
            .map(|p| format!("pid {} `{}`", p.pid, p.command))
            .collect();
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn needs(name: &str) -> Needs {
    match name {
        "core" | "sim" => Needs::default(),
        "locust" => Needs {
            locust: true,
            node: true,
            ..Needs::default()
        },
        _ => Needs {
            browser: true,
            node: true,
            engines: true,
            locust: false,
            hosts: false,
        },
    }
}

/// The page as users get it (release, split, wasm-opt, CSP) and release binaries.
fn release_builds(env: &Env, root: &Path, name: &str) -> Result<Builds> {
    let dist = root.join(BENCH_DIST);
    if !matches!(name, "core" | "sim" | "locust") {
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
        crate::split::apply(&dist, crate::split::Profile::Release)?;
        crate::wasm_opt::apply(&dist)?;
        crate::csp::apply(&dist)?;
    }
    if name != "core" {
        build_binaries(root, "release")?;
    }
    Ok(Builds {
        dist,
        sim_bin: root.join("target/release/tokenmeter-sim"),
        report_bin: root.join("target/release/tokenmeter-report"),
        smoke: false,
    })
}

/// The simulator and the report in `profile` (`release` or `dev`).
fn build_binaries(root: &Path, profile: &str) -> Result<()> {
    exec(Command::new("cargo").current_dir(root).args([
        "build",
        "--locked",
        "--profile",
        profile,
        "-p",
        "tokenmeter-sim",
        "-p",
        "tokenmeter-report",
    ]))
}

/// The test command's builds: the split debug page and debug binaries.
fn debug_builds(env: &Env, root: &Path, name: &str) -> Result<Builds> {
    if !matches!(name, "core" | "sim" | "locust") {
        crate::test::build_e2e_dist(env, root)?;
    }
    build_binaries(root, "dev")?;
    if name == "sim" {
        exec(Command::new("cargo").current_dir(root).args([
            "build",
            "--locked",
            "--workspace",
            "--exclude",
            "tokenmeter",
            "--examples",
        ]))?;
    }
    Ok(Builds {
        dist: root.join(crate::test::E2E_DIST),
        sim_bin: root.join("target/debug/tokenmeter-sim"),
        report_bin: root.join("target/debug/tokenmeter-report"),
        smoke: true,
    })
}

/// The command that runs benchmark `name` (`args` passed on where it takes any).
fn command(env: &Env, root: &Path, builds: &Builds, name: &str, args: &[String]) -> Command {
    let mut cmd = match name {
        "core" if builds.smoke => {
            // Debug, in the test profile: the benchmark's `main` runs once. With the
            // workspace's features (as the test command built them), so that no
            // dependency is built again for it.
            let mut c = Command::new("cargo");
            c.args(["test", "--locked", "--workspace", "--exclude", "tokenmeter"])
                .args(["--bench", "core"]);
            c
        }
        "core" => {
            let mut c = Command::new("cargo");
            c.args(["bench", "--locked", "-p", "tokenmeter-core"])
                .args(["--bench", "core"]);
            c
        }
        "sim" if builds.smoke => {
            // The example as the test command's native layer built it (with the
            // workspace's features; `debug_builds` builds it for a lone smoke run).
            let mut c = Command::new(root.join("target/debug/examples/bench_sim"));
            c.arg("10").args(args);
            c
        }
        "sim" => {
            let mut c = Command::new("cargo");
            c.args(["run", "--locked", "--release", "-p", "tokenmeter-sim"])
                .args(["--example", "bench_sim", "--"])
                .args(args);
            c
        }
        "locust" => {
            let mut c = Command::new("node");
            c.arg("e2e/bench/locust.mjs")
                .env(
                    "TOKENMETER_LOCUST_PYTHON",
                    env.locust_python.as_ref().expect("locust was set up"),
                )
                .env("TOKENMETER_REPORT_BIN", &builds.report_bin);
            c
        }
        page => {
            let mut c = Command::new("node");
            c.args(node_flags()).arg(format!("e2e/bench/{page}.mjs"));
            if page == "accuracy" {
                // Chromium in detail first; the engines side by side run after it.
                c = Command::new("sh");
                c.args([
                    "-c",
                    &format!(
                        "node {flags} e2e/bench/accuracy.mjs && node {flags} e2e/bench/engines.mjs",
                        flags = node_flags().join(" ")
                    ),
                ]);
                if builds.smoke {
                    c.env("TOKENMETER_ENGINES", "chromium");
                }
            }
            c.env("TOKENMETER_DIST", &builds.dist)
                .envs(env.browser_vars());
            c
        }
    };
    cmd.current_dir(root)
        .env("TOKENMETER_SIM_BIN", &builds.sim_bin);
    if builds.smoke {
        cmd.env("TOKENMETER_BENCH_SMOKE", "1");
    }
    cmd
}

/// Node 20 and 21 have WebSocket (for the benchmarks' bare DevTools client) only
/// behind a flag; from 22 it is always there.
fn node_flags() -> Vec<&'static str> {
    let major = Command::new("node")
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
    if major < 22 {
        vec!["--experimental-websocket"]
    } else {
        Vec::new()
    }
}
