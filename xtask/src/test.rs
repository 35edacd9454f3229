//! `cargo xtask test`: every check and test, in layers, cheapest first.
//!
//! 1. `cargo fmt --check`
//! 2. clippy `-D warnings`, native (every crate but the app) and wasm32 (the app and the core)
//! 3. native unit and integration tests (core, simulator, xtask)
//! 4. components and the engine in headless Chromium (wasm-bindgen-test), with the
//!    simulator on loopback as the engine's target
//! 5. `trunk build` of the page, then Playwright specs against it on loopback
//! 6. the core behaviours in Chromium, Firefox ESR and WebKitGTK through W3C
//!    WebDriver (`e2e/engines/`), against the same build
//! 7. a plan exported from the page as a locustfile, run by Locust (pinned, in
//!    `target/locust-venv`) with a master and two workers against the simulator,
//!    read back by `tokenmeter-report` and the page (`e2e/locust/`)
//!
//! It stops at the first failing layer and exits non-zero.

use std::{fs, process::Command, time::Instant};

use crate::{
    serve::Simulator,
    setup::{self, Needs, WASM_TARGET},
    util::{exec, human_secs, project_root, step, Result},
};

/// Where the end-to-end build goes (not `dist/`, which belongs to the user).
pub const E2E_DIST: &str = "target/e2e-dist";
/// Where the specs write screenshots for people to look at.
pub const SCREENSHOTS: &str = "target/screenshots";

// Long: the test command's layers in their order, a step each.
pub fn run(args: &[String]) -> Result<()> {
    let started = Instant::now();
    let skip_browser = args.iter().any(|a| a == "--skip-browser");
    let env = setup::ensure(Needs {
        browser: !skip_browser,
        node: !skip_browser,
        engines: !skip_browser,
        locust: !skip_browser,
        hosts: !skip_browser,
    })?;
    let root = project_root();
    let cargo = || {
        let mut cmd = Command::new("cargo");
        cmd.current_dir(&root);
        cmd
    };
    let wasm_cargo = || {
        let mut cmd = env.wasm_command("cargo");
        cmd.current_dir(&root);
        cmd
    };

    step("tidy: imports follow the layers", crate::tidy::run)?;
    step("cargo fmt --check", || {
        exec(cargo().args(["fmt", "--all", "--check"]))
    })?;
    step("clippy, native", || {
        exec(cargo().args([
            "clippy",
            "--locked",
            "--workspace",
            "--exclude",
            "tokenmeter",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ]))
    })?;
    step("clippy, wasm32", || {
        exec(wasm_cargo().args([
            "clippy",
            "--locked",
            "-p",
            "tokenmeter",
            "-p",
            "tokenmeter-core",
            "--target",
            WASM_TARGET,
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ]))
    })?;
    step("native tests", || {
        exec(cargo().args(["test", "--locked", "--workspace", "--exclude", "tokenmeter"]))
    })?;
    step(
        "`cargo xtask serve` ends everything it started on SIGTERM",
        || serve_ends_its_children_on_sigterm(&root),
    )?;
    if skip_browser {
        println!("\n--skip-browser: browser layers skipped");
        return Ok(());
    }

    let chromedriver = env.chromedriver.clone().expect("browser needs were set up");
    let chromium = env.chromium.clone().expect("browser needs were set up");
    let sim = step("start the simulator on loopback", || {
        let port = free_port()?;
        Simulator::start(port, &[])
    })?;
    let sim_url = format!("http://127.0.0.1:{}/v1", sim.port);
    step(
        "components and the engine in headless Chromium (wasm-bindgen-test)",
        || {
            exec(
                wasm_cargo()
                    .args([
                        "test",
                        "--locked",
                        "-p",
                        "tokenmeter",
                        "--target",
                        WASM_TARGET,
                    ])
                    .env(
                        "CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER",
                        "wasm-bindgen-test-runner",
                    )
                    .env("CHROMEDRIVER", &chromedriver)
                    .env("WASM_BINDGEN_TEST_TIMEOUT", "120")
                    // The engine's browser tests call it (read at compile time by option_env!).
                    .env("TOKENMETER_SIM_URL", &sim_url),
            )
        },
    )?;
    step("trunk build for the end-to-end specs, split", || {
        build_e2e_dist(&env, &root)
    })?;
    step("end-to-end specs (Playwright in headless Chromium)", || {
        let mut specs: Vec<_> = fs::read_dir(root.join("e2e/specs"))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().ends_with(".spec.mjs"))
            .collect();
        specs.sort();
        run_specs(&env, &root, &specs, &chromium, &sim_url)
    })?;
    step(
        "core behaviours in Chromium, Firefox ESR and WebKitGTK (WebDriver)",
        || run_engines(&env, &root),
    )?;
    step("tokenmeter-report, for the Locust layer", || {
        exec(cargo().args(["build", "--locked", "-p", "tokenmeter-report"]))
    })?;
    step(
        "Locust: a plan exported from the page, on a master and two workers",
        || {
            exec(
                Command::new("node")
                    .current_dir(&root)
                    .args(["--test", "e2e/locust/locust.spec.mjs"])
                    .env("TOKENMETER_DIST", root.join(E2E_DIST))
                    .env("TOKENMETER_CHROMIUM", &chromium)
                    .env("TOKENMETER_SCREENSHOTS", root.join(SCREENSHOTS))
                    .env(
                        "TOKENMETER_LOCUST_PYTHON",
                        env.locust_python
                            .as_ref()
                            .expect("locust needs were set up"),
                    )
                    .env(
                        "TOKENMETER_REPORT_BIN",
                        root.join("target/debug/tokenmeter-report"),
                    )
                    .env(
                        "TOKENMETER_SIM_BIN",
                        root.join("target/debug/tokenmeter-sim"),
                    ),
            )
        },
    )?;
    step(
        "every benchmark in its smallest form (cargo xtask bench NAME --smoke)",
        || crate::bench::smoke_all(&env, &root, &root.join(E2E_DIST)),
    )?;
    drop(sim);
    println!(
        "\nall test layers passed in {}; screenshots in {SCREENSHOTS}/",
        human_secs(started.elapsed().as_secs_f64())
    );
    Ok(())
}

/// `cargo xtask specs NAME...`: the page built for the specs, and the named ones
/// (`run` for `e2e/specs/run.spec.mjs`) run against it; every one without names.
/// The edit-and-check loop of one spec, without the layers before it.
pub fn specs(args: &[String]) -> Result<()> {
    // `engines`: the core behaviours in every engine (e2e/engines/), through WebDriver.
    let engines = args.iter().any(|a| a == "engines");
    let args: Vec<String> = args.iter().filter(|a| *a != "engines").cloned().collect();
    let env = setup::ensure(Needs {
        browser: true,
        node: true,
        engines,
        locust: false,
        hosts: true,
    })?;
    let root = project_root();
    let chromium = env.chromium.clone().expect("browser needs were set up");
    let mut specs: Vec<_> = fs::read_dir(root.join("e2e/specs"))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            name.strip_suffix(".spec.mjs")
                .is_some_and(|n| (args.is_empty() && !engines) || args.iter().any(|a| a == n))
        })
        .collect();
    specs.sort();
    if specs.len() < args.len() {
        return Err(format!("no spec for some of {args:?} in e2e/specs").into());
    }
    step("build the simulator", || {
        exec(Command::new("cargo").current_dir(&root).args([
            "build",
            "--locked",
            "-p",
            "tokenmeter-sim",
        ]))
    })?;
    let sim = step("start the simulator on loopback", || {
        Simulator::start(free_port()?, &[])
    })?;
    let sim_url = format!("http://127.0.0.1:{}/v1", sim.port);
    step("trunk build for the end-to-end specs, split", || {
        build_e2e_dist(&env, &root)
    })?;
    if !specs.is_empty() {
        step("the named specs (Playwright in headless Chromium)", || {
            run_specs(&env, &root, &specs, &chromium, &sim_url)
        })?;
    }
    if engines {
        step("core behaviours in every engine (WebDriver)", || {
            run_engines(&env, &root)
        })?;
    }
    Ok(())
}

/// The core behaviours in Chromium, Firefox ESR and WebKitGTK, through WebDriver.
fn run_engines(env: &setup::Env, root: &std::path::Path) -> Result<()> {
    exec(
        Command::new("node")
            .current_dir(root)
            .args(["--test", "e2e/engines/core.spec.mjs"])
            .env("TOKENMETER_DIST", root.join(E2E_DIST))
            .envs(env.browser_vars())
            .env(
                "TOKENMETER_SIM_BIN",
                root.join("target/debug/tokenmeter-sim"),
            ),
    )
}

/// Runs `specs` with node's test runner against the built page.
fn run_specs(
    env: &setup::Env,
    root: &std::path::Path,
    specs: &[std::path::PathBuf],
    chromium: &std::path::Path,
    sim_url: &str,
) -> Result<()> {
    fs::create_dir_all(root.join(SCREENSHOTS))?;
    exec(
        Command::new("node")
            .current_dir(root)
            .arg("--test")
            .args(specs)
            .env("TOKENMETER_DIST", root.join(E2E_DIST))
            .env("TOKENMETER_CHROMIUM", chromium)
            .env("TOKENMETER_SCREENSHOTS", root.join(SCREENSHOTS))
            .env("TOKENMETER_SIM_URL", sim_url)
            .env(
                "TOKENMETER_SIM_BIN",
                root.join("target/debug/tokenmeter-sim"),
            )
            .envs(env.hosts.iter().flat_map(|h| {
                [
                    ("TOKENMETER_NGINX", h.nginx.clone()),
                    ("TOKENMETER_CADDY", h.caddy.clone()),
                ]
            })),
    )
}

/// The page for the end-to-end specs (and the benchmarks' smoke runs): a debug
/// build, split as users get it (the engine a piece of its own), under its
/// Content-Security-Policy.
pub fn build_e2e_dist(env: &setup::Env, root: &std::path::Path) -> Result<()> {
    let mut trunk = env.wasm_command("trunk");
    trunk
        .current_dir(root)
        .args(["build", "--dist", E2E_DIST, "--public-url", "./"])
        .args(crate::split::TRUNK_FEATURES);
    exec(&mut trunk)?;
    crate::split::apply(&root.join(E2E_DIST), crate::split::Profile::Debug)?;
    crate::csp::apply(&root.join(E2E_DIST))
}

/// Starts `cargo xtask serve` (this binary) on free ports, waits until the
/// simulator answers and trunk runs, ends it with SIGTERM alone (as an IDE's stop
/// button or a process manager does, not to its group), and checks that every
/// process it had started is gone and both ports are free again.
fn serve_ends_its_children_on_sigterm(root: &std::path::Path) -> Result<()> {
    let (app_port, sim_port) = (free_port()?, free_port()?);
    let mut serve = crate::procs::spawn(
        Command::new(std::env::current_exe()?)
            .current_dir(root)
            .args(["serve", "--port", &app_port.to_string()])
            .args(["--sim-port", &sim_port.to_string()])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null()),
    )?;
    let deadline = Instant::now() + std::time::Duration::from_secs(180);
    let started = loop {
        let children = crate::procs::descendants(serve.id());
        let sim_up = std::net::TcpStream::connect(("127.0.0.1", sim_port)).is_ok();
        if sim_up && children.iter().any(|p| p.command.contains("trunk")) {
            // A moment for trunk to start its own children (cargo, rustc).
            std::thread::sleep(std::time::Duration::from_secs(2));
            break crate::procs::descendants(serve.id());
        }
        if let Ok(Some(status)) = serve.try_wait() {
            return Err(format!("`cargo xtask serve` exited ({status}) before trunk ran").into());
        }
        if Instant::now() > deadline {
            crate::procs::end(&mut serve);
            return Err(
                "`cargo xtask serve` did not start the simulator and trunk within 180 s".into(),
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    exec(Command::new("kill").args(["-TERM", &serve.id().to_string()]))?;
    let status = serve.wait()?;
    let deadline = Instant::now() + std::time::Duration::from_secs(5);
    let left = loop {
        let left: Vec<String> = started
            .iter()
            .filter(|p| crate::procs::alive(p.pid))
            .map(|p| format!("pid {} `{}`", p.pid, p.command))
            .collect();
        if left.is_empty() || Instant::now() > deadline {
            break left;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    crate::procs::end_group(serve.id());
    if !left.is_empty() {
        return Err(format!(
            "after SIGTERM, `cargo xtask serve` left running: {}",
            left.join("; ")
        )
        .into());
    }
    for (port, flag) in [(sim_port, "--sim-port"), (app_port, "--port")] {
        if let Some(why) = crate::procs::port_taken(port, flag) {
            return Err(format!("after SIGTERM: {why}").into());
        }
    }
    if status.code() != Some(143) {
        return Err(
            format!("`cargo xtask serve` ended by SIGTERM exited {status}, not 143").into(),
        );
    }
    println!(
        "SIGTERM ended `cargo xtask serve` (exit 143) and the {} processes it had started: {}",
        started.len(),
        started
            .iter()
            .map(|p| p
                .command
                .split_whitespace()
                .next()
                .unwrap_or("?")
                .rsplit('/')
                .next()
                .unwrap_or("?"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}

/// A port that was free a moment ago (bind to port 0, read it, release it).
fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}
