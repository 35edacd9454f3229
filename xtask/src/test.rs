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
const E2E_DIST: &str = "target/e2e-dist";
/// Where the specs write screenshots for people to look at.
pub const SCREENSHOTS: &str = "target/screenshots";

pub fn run(args: &[String]) -> Result<()> {
    let started = Instant::now();
    let skip_browser = args.iter().any(|a| a == "--skip-browser");
    let env = setup::ensure(Needs {
        browser: !skip_browser,
        node: !skip_browser,
        engines: !skip_browser,
        locust: !skip_browser,
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
        let mut trunk = env.wasm_command("trunk");
        trunk
            .current_dir(&root)
            .args(["build", "--dist", E2E_DIST, "--public-url", "./"])
            .args(crate::split::TRUNK_FEATURES);
        exec(&mut trunk)?;
        // As users get it: the specs load the split build (the engine a piece of its own).
        crate::split::apply(&root.join(E2E_DIST), crate::split::Profile::Debug)?;
        // The specs run the page under its Content-Security-Policy, as users get it.
        crate::csp::apply(&root.join(E2E_DIST))
    })?;
    step("end-to-end specs (Playwright in headless Chromium)", || {
        let mut specs: Vec<_> = fs::read_dir(root.join("e2e/specs"))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().ends_with(".spec.mjs"))
            .collect();
        specs.sort();
        fs::create_dir_all(root.join(SCREENSHOTS))?;
        exec(
            Command::new("node")
                .current_dir(&root)
                .arg("--test")
                .args(&specs)
                .env("TOKENMETER_DIST", root.join(E2E_DIST))
                .env("TOKENMETER_CHROMIUM", &chromium)
                .env("TOKENMETER_SCREENSHOTS", root.join(SCREENSHOTS))
                .env("TOKENMETER_SIM_URL", &sim_url)
                .env(
                    "TOKENMETER_SIM_BIN",
                    root.join("target/debug/tokenmeter-sim"),
                ),
        )
    })?;
    step(
        "core behaviours in Chromium, Firefox ESR and WebKitGTK (WebDriver)",
        || {
            exec(
                Command::new("node")
                    .current_dir(&root)
                    .args(["--test", "e2e/engines/core.spec.mjs"])
                    .env("TOKENMETER_DIST", root.join(E2E_DIST))
                    .envs(env.browser_vars())
                    .env(
                        "TOKENMETER_SIM_BIN",
                        root.join("target/debug/tokenmeter-sim"),
                    ),
            )
        },
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
    drop(sim);
    println!(
        "\nall test layers passed in {}; screenshots in {SCREENSHOTS}/",
        human_secs(started.elapsed().as_secs_f64())
    );
    Ok(())
}

/// A port that was free a moment ago (bind to port 0, read it, release it).
fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}
