//! Finds, or installs, everything the build and the tests need.
//!
//! The order for the WebAssembly toolchain is the one a person would follow:
//! 1. rustup's `wasm32-unknown-unknown` target, when it is installed;
//! 2. `rustup target add`, when rustup can reach its server;
//! 3. otherwise Debian's `rustc-web` 1.96 with its standard library source, std
//!    rebuilt for wasm32 with `-Zbuild-std` (allowed by `RUSTC_BOOTSTRAP=1`) and
//!    linked by LLVM's `wasm-ld` (see `shared/TOOLCHAIN.md`). That environment is
//!    applied to wasm builds only: native crates keep the normal toolchain.
//!
//! Everything here is idempotent: a second run only probes versions and prints
//! what it found. Pinned tools are installed from the package registries only
//! (crates.io, Debian, npm); nothing downloads a browser or a prebuilt binary.

use std::{
    fs,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use crate::util::{
    exec, exec_at_terminal, human_secs, probe, project_root, step, which, Error, Result,
};

/// trunk 0.22 needs rustc >= 1.96.1, which these machines do not have.
pub const TRUNK_VERSION: &str = "0.21.14";
pub const WASM_TARGET: &str = "wasm32-unknown-unknown";
/// Debian packages of the fallback toolchain (`rust-web-clippy` lets clippy lint wasm32 too).
const DEBIAN_RUST_PACKAGES: &[&str] = &[
    "rustc-web",
    "cargo-web",
    "rust-web-src",
    "rust-web-clippy",
    "lld-22",
];
/// geckodriver, Firefox's WebDriver, built from crates.io (its lock file resolves here).
pub const GECKODRIVER_VERSION: &str = "0.37.1";
/// Debian's packages of the other engines: Firefox ESR, WebKitGTK's WebDriver (which
/// brings MiniBrowser) and a virtual X display for it (WebKitGTK has no headless mode).
const ENGINE_PACKAGES: &[&str] = &["firefox-esr", "webkit2gtk-driver", "xvfb"];
/// Where Debian puts WebKitGTK's MiniBrowser.
pub const MINIBROWSER: &str = "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser";
/// The name under which `/usr` (Debian's rustc-web) is linked into rustup.
const DEBIAN_TOOLCHAIN: &str = "debweb";
/// Remembers that `rustup target add` failed, so later runs do not wait for it again.
const FALLBACK_MARKER: &str = "target/xtask-wasm-fallback";
/// Overrides the choice: `rustup` or `debian` (to exercise the fallback anywhere).
const FORCE_VAR: &str = "TOKENMETER_WASM_TOOLCHAIN";

/// What a command needs beyond the WebAssembly toolchain and trunk.
#[derive(Clone, Copy, Debug, Default)]
pub struct Needs {
    /// Headless Chromium and chromedriver, plus wasm-bindgen-test-runner.
    pub browser: bool,
    /// Node.js and the committed `node_modules` (playwright-core, selenium-webdriver).
    pub node: bool,
    /// Firefox ESR with geckodriver, and WebKitGTK with its WebDriver and Xvfb.
    pub engines: bool,
    /// Locust (pinned, in a Python virtual environment under `target/`), for the
    /// exported locustfile's end-to-end test.
    pub locust: bool,
    /// Debian's nginx and Caddy, for the hosting recipes' spec.
    pub hosts: bool,
}

/// How this machine compiles for wasm32.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WasmToolchain {
    /// The active toolchain already has the target (rustup's, or a system rustc).
    Native,
    /// Debian's rustc-web with std rebuilt for wasm32.
    DebianBuildStd,
}

/// The result of setup: how to run wasm builds and where the tools are.
#[derive(Clone, Debug)]
pub struct Env {
    pub wasm: WasmToolchain,
    pub chromium: Option<PathBuf>,
    pub chromedriver: Option<PathBuf>,
    pub engines: Option<Engines>,
    /// The Python of the virtual environment that has Locust.
    pub locust_python: Option<PathBuf>,
    /// nginx and Caddy, to serve the page as the hosting recipes say.
    pub hosts: Option<Hosts>,
}

/// The static servers of the hosting recipes (`hosting/`).
#[derive(Clone, Debug)]
pub struct Hosts {
    pub nginx: PathBuf,
    pub caddy: PathBuf,
}

/// The other engines' drivers and browsers.
#[derive(Clone, Debug)]
pub struct Engines {
    pub firefox: PathBuf,
    pub geckodriver: PathBuf,
    pub webkit_webdriver: PathBuf,
    pub minibrowser: PathBuf,
}

impl Env {
    /// Environment variables for every command that compiles for wasm32.
    pub fn wasm_vars(&self) -> Vec<(&'static str, String)> {
        match self.wasm {
            WasmToolchain::Native => Vec::new(),
            WasmToolchain::DebianBuildStd => {
                let mut vars = vec![
                    ("RUSTC_BOOTSTRAP", "1".to_owned()),
                    ("CARGO_UNSTABLE_BUILD_STD", "std,panic_abort".to_owned()),
                    (
                        "CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER",
                        "wasm-ld-22".to_owned(),
                    ),
                ];
                if which("rustup").is_some() {
                    vars.push(("RUSTUP_TOOLCHAIN", DEBIAN_TOOLCHAIN.to_owned()));
                }
                vars
            }
        }
    }

    /// Where the browsers and their drivers are, as the e2e helpers read it
    /// (`e2e/lib/browser.mjs`, `e2e/engines/drivers.mjs`).
    pub fn browser_vars(&self) -> Vec<(&'static str, PathBuf)> {
        let mut vars = Vec::new();
        if let (Some(chromium), Some(driver)) = (&self.chromium, &self.chromedriver) {
            vars.push(("TOKENMETER_CHROMIUM", chromium.clone()));
            vars.push(("CHROMEDRIVER", driver.clone()));
        }
        if let Some(engines) = &self.engines {
            vars.push(("TOKENMETER_FIREFOX", engines.firefox.clone()));
            vars.push(("GECKODRIVER", engines.geckodriver.clone()));
            vars.push(("WEBKIT_WEBDRIVER", engines.webkit_webdriver.clone()));
            vars.push(("TOKENMETER_MINIBROWSER", engines.minibrowser.clone()));
        }
        vars
    }

    /// A command that compiles for wasm32 (cargo, trunk), with the right environment.
    pub fn wasm_command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.envs(self.wasm_vars());
        cmd
    }
}

/// Makes sure everything in `needs` is present, installing what is missing.
pub fn ensure(needs: Needs) -> Result<Env> {
    let started = Instant::now();
    let wasm = step("setup: WebAssembly toolchain", ensure_wasm_toolchain)?;
    let wasm_bindgen_version = locked_wasm_bindgen_version()?;
    check_trunk_toml(&wasm_bindgen_version)?;
    step("setup: trunk", ensure_trunk)?;
    step("setup: wasm-bindgen-cli", || {
        ensure_wasm_bindgen(&wasm_bindgen_version)
    })?;
    let (mut chromium, mut chromedriver) = (None, None);
    if needs.browser {
        let found = step("setup: Chromium and chromedriver", ensure_browser)?;
        chromium = Some(found.0);
        chromedriver = Some(found.1);
    }
    let mut engines = None;
    if needs.engines {
        engines = Some(step(
            "setup: Firefox ESR, geckodriver, WebKitGTK and Xvfb",
            ensure_engines,
        )?);
    }
    if needs.node {
        step("setup: Node.js and node_modules", ensure_node)?;
    }
    let mut hosts = None;
    if needs.hosts {
        hosts = Some(step(
            "setup: nginx and Caddy (the hosting recipes)",
            ensure_hosts,
        )?);
    }
    let mut locust_python = None;
    if needs.locust {
        locust_python = Some(step(
            "setup: Locust (Python virtual environment)",
            ensure_locust,
        )?);
    }
    println!(
        "\nsetup: everything present ({} in all)",
        human_secs(started.elapsed().as_secs_f64())
    );
    Ok(Env {
        wasm,
        chromium,
        chromedriver,
        engines,
        locust_python,
        hosts,
    })
}

fn ensure_wasm_toolchain() -> Result<WasmToolchain> {
    let forced = std::env::var(FORCE_VAR).ok();
    match forced.as_deref() {
        Some("debian") => {
            println!("{FORCE_VAR}=debian: using the Debian fallback");
            return ensure_debian_toolchain();
        }
        Some("rustup") | None => {}
        Some(other) => {
            return Err(format!("{FORCE_VAR} must be `rustup` or `debian`, not `{other}`").into())
        }
    }
    if native_has_wasm_target() {
        println!("wasm32: the active Rust toolchain has the {WASM_TARGET} target");
        return Ok(WasmToolchain::Native);
    }
    let marker = project_root().join(FALLBACK_MARKER);
    if which("rustup").is_some() && (!marker.exists() || forced.is_some()) {
        println!("wasm32: target missing; trying `rustup target add {WASM_TARGET}` (up to 3 min)");
        let mut cmd = Command::new("rustup");
        cmd.args(["target", "add", WASM_TARGET]);
        if run_with_timeout(&mut cmd, Duration::from_secs(180)) && native_has_wasm_target() {
            println!("wasm32: rustup installed the target");
            return Ok(WasmToolchain::Native);
        }
        if forced.is_some() {
            return Err("rustup could not add the wasm32 target".into());
        }
        println!("wasm32: rustup could not add the target; falling back to Debian's rustc-web");
        if let Some(dir) = marker.parent() {
            fs::create_dir_all(dir)?;
        }
        fs::write(
            &marker,
            "rustup target add failed; delete this file to try again\n",
        )?;
    } else if marker.exists() {
        println!(
            "wasm32: using the Debian fallback (rustup failed earlier; delete {FALLBACK_MARKER} to retry)"
        );
    }
    ensure_debian_toolchain()
}

/// True when the toolchain `cargo` would use can already link wasm32 binaries.
fn native_has_wasm_target() -> bool {
    if which("rustup").is_some() {
        return probe("rustup", &["target", "list", "--installed"])
            .is_some_and(|out| out.lines().any(|line| line.trim() == WASM_TARGET));
    }
    probe(
        "rustc",
        &["--print", "target-libdir", "--target", WASM_TARGET],
    )
    .is_some_and(|dir| Path::new(&dir).join("libcore.rlib").exists() || has_rlib(&dir))
}

fn has_rlib(dir: &str) -> bool {
    fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("libcore-"))
    })
}

fn ensure_debian_toolchain() -> Result<WasmToolchain> {
    apt_install(
        DEBIAN_RUST_PACKAGES,
        "Debian's rustc-web toolchain (about 1-2 min)",
    )?;
    let version = probe("/usr/bin/rustc", &["--version"]).unwrap_or_default();
    println!("wasm32: Debian {version} + -Zbuild-std, linked by wasm-ld-22");
    if which("rustup").is_some() {
        let linked = probe("rustup", &["toolchain", "list"])
            .is_some_and(|out| out.lines().any(|l| l.starts_with(DEBIAN_TOOLCHAIN)));
        if !linked {
            exec(Command::new("rustup").args(["toolchain", "link", DEBIAN_TOOLCHAIN, "/usr"]))?;
        }
    }
    Ok(WasmToolchain::DebianBuildStd)
}

/// The exact `wasm-bindgen` version in `Cargo.lock`: wasm-bindgen-cli must equal it.
pub fn locked_wasm_bindgen_version() -> Result<String> {
    let lock = fs::read_to_string(project_root().join("Cargo.lock"))
        .map_err(|err| format!("cannot read Cargo.lock: {err}"))?;
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line.trim() == "name = \"wasm-bindgen\"" {
            if let Some(version) = lines
                .next()
                .and_then(|l| l.trim().strip_prefix("version = \""))
                .and_then(|v| v.strip_suffix('"'))
            {
                return Ok(version.to_owned());
            }
        }
    }
    Err("Cargo.lock has no wasm-bindgen package".into())
}

/// Trunk must use the installed wasm-bindgen and never try to download one.
fn check_trunk_toml(version: &str) -> Result<()> {
    let trunk_toml = fs::read_to_string(project_root().join("Trunk.toml"))?;
    let expected = format!("wasm_bindgen = \"{version}\"");
    if trunk_toml.lines().any(|l| l.trim() == expected) {
        Ok(())
    } else {
        Err(format!(
            "Trunk.toml's [tools] must say `{expected}` to match Cargo.lock's wasm-bindgen"
        )
        .into())
    }
}

fn ensure_trunk() -> Result<()> {
    let want = format!("trunk {TRUNK_VERSION}");
    match probe("trunk", &["--version"]) {
        Some(found) if found == want => {
            println!("found {found}");
            return Ok(());
        }
        Some(found) => println!("found {found}, need {want}"),
        None => println!("trunk not found"),
    }
    println!("installing trunk {TRUNK_VERSION} from crates.io (about 10 min on 2 cores, once)");
    exec(Command::new("cargo").args([
        "install",
        "--locked",
        "--force",
        &format!("trunk@{TRUNK_VERSION}"),
    ]))
}

fn ensure_wasm_bindgen(version: &str) -> Result<()> {
    let want = format!("wasm-bindgen {version}");
    let found = probe("wasm-bindgen", &["--version"]);
    let runner = which("wasm-bindgen-test-runner").is_some();
    if found.as_deref() == Some(want.as_str()) && runner {
        println!("found {want} and wasm-bindgen-test-runner");
        return Ok(());
    }
    println!(
        "found {}, need {want}; installing wasm-bindgen-cli {version} from crates.io (about 3 min on 2 cores, once)",
        found.as_deref().unwrap_or("no wasm-bindgen")
    );
    // No `--locked`: a crate pinned in its lock file is missing from the registry
    // index these machines reach (see shared/TOOLCHAIN.md).
    exec(Command::new("cargo").args(["install", "--force", &format!("wasm-bindgen-cli@{version}")]))
}

fn ensure_browser() -> Result<(PathBuf, PathBuf)> {
    let chromium = std::env::var_os("TOKENMETER_CHROMIUM").map(PathBuf::from);
    let chromedriver = std::env::var_os("CHROMEDRIVER").map(PathBuf::from);
    if let (Some(c), Some(d)) = (&chromium, &chromedriver) {
        println!(
            "using TOKENMETER_CHROMIUM={} and CHROMEDRIVER={}",
            c.display(),
            d.display()
        );
        return Ok((c.clone(), d.clone()));
    }
    let (browser, driver) = (
        PathBuf::from("/usr/bin/chromium"),
        PathBuf::from("/usr/bin/chromedriver"),
    );
    // A CJK font too: Chromium brings none, and screenshots show Chinese text.
    apt_install(
        &["chromium", "chromium-driver", "fonts-noto-cjk"],
        "Chromium, chromedriver and a CJK font (about 1-2 min)",
    )?;
    let version = probe(browser.to_str().unwrap_or_default(), &["--version"]).unwrap_or_default();
    println!("found {version} and {}", driver.display());
    Ok((chromium.unwrap_or(browser), chromedriver.unwrap_or(driver)))
}

fn ensure_engines() -> Result<Engines> {
    apt_install(
        ENGINE_PACKAGES,
        "Firefox ESR, WebKitGTK's WebDriver and Xvfb (about 1 min)",
    )?;
    let want = format!("geckodriver {GECKODRIVER_VERSION}");
    let found =
        probe("geckodriver", &["--version"]).and_then(|out| out.lines().next().map(str::to_owned));
    if found.as_deref().is_some_and(|f| f.starts_with(&want)) {
        println!("found {want}");
    } else {
        println!(
            "found {}, need {want}; installing it from crates.io (about 3 min on 2 cores, once)",
            found.as_deref().unwrap_or("no geckodriver")
        );
        exec(Command::new("cargo").args([
            "install",
            "--locked",
            "--force",
            &format!("geckodriver@{GECKODRIVER_VERSION}"),
        ]))?;
    }
    let engines = Engines {
        firefox: PathBuf::from("/usr/bin/firefox-esr"),
        geckodriver: which("geckodriver")
            .ok_or("geckodriver is not on PATH after installing it")?,
        webkit_webdriver: PathBuf::from("/usr/bin/WebKitWebDriver"),
        minibrowser: PathBuf::from(MINIBROWSER),
    };
    println!(
        "found {} and WebKitGTK's MiniBrowser",
        probe("/usr/bin/firefox-esr", &["--version"]).unwrap_or_default()
    );
    Ok(engines)
}

/// Debian's nginx and Caddy. Installing them must not start them: their packages
/// start a service on port 80 unless `policy-rc.d` says no (this machine kind's
/// images say no; a machine without one gets it for the install).
fn ensure_hosts() -> Result<Hosts> {
    let (nginx, caddy) = (
        PathBuf::from("/usr/sbin/nginx"),
        PathBuf::from("/usr/bin/caddy"),
    );
    if !(nginx.exists() && caddy.exists()) {
        let policy = Path::new("/usr/sbin/policy-rc.d");
        let ours = !policy.exists() && fs::write(policy, "#!/bin/sh\nexit 101\n").is_ok();
        if ours {
            use std::os::unix::fs::PermissionsExt;
            let _ = fs::set_permissions(policy, fs::Permissions::from_mode(0o755));
        }
        let installed = apt_install(&["nginx-light", "caddy"], "nginx and Caddy (seconds)");
        if ours {
            let _ = fs::remove_file(policy);
        }
        installed?;
    }
    println!(
        "found {} and caddy {}",
        probe("/usr/sbin/nginx", &["-v"]).unwrap_or_else(|| "nginx".into()),
        probe("/usr/bin/caddy", &["version"]).unwrap_or_default()
    );
    Ok(Hosts { nginx, caddy })
}

fn ensure_node() -> Result<()> {
    if which("node").is_none() || which("npm").is_none() {
        apt_install(&["nodejs", "npm"], "Node.js and npm (about 1 min)")?;
    }
    println!(
        "found node {}",
        probe("node", &["--version"]).unwrap_or_default()
    );
    let root = project_root();
    let lock = fs::read(root.join("package-lock.json"))?;
    let stamp = root.join("node_modules/.tokenmeter-lock");
    if fs::read(&stamp).ok().as_deref() == Some(lock.as_slice()) {
        println!("node_modules matches package-lock.json");
        return Ok(());
    }
    println!("installing node_modules from package-lock.json (seconds)");
    exec(
        Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&root),
    )?;
    fs::write(stamp, lock)?;
    Ok(())
}

/// Where the Locust environment lives, and the pins it is made from.
const LOCUST_VENV: &str = "target/locust-venv";
const LOCUST_REQUIREMENTS: &str = "e2e/locust/requirements.txt";

/// A virtual environment with exactly the pinned Locust and its dependencies
/// (`--no-deps`: nothing resolved at install time), made once and remade when
/// the pins change. Returns its `python`.
fn ensure_locust() -> Result<PathBuf> {
    let root = project_root();
    let venv = root.join(LOCUST_VENV);
    let python = venv.join("bin/python");
    let pins = fs::read(root.join(LOCUST_REQUIREMENTS))?;
    let stamp = venv.join(".tokenmeter-requirements");
    if python.exists() && fs::read(&stamp).ok().as_deref() == Some(pins.as_slice()) {
        println!(
            "{LOCUST_VENV} matches {LOCUST_REQUIREMENTS} ({})",
            probe(
                python.to_str().unwrap_or_default(),
                &["-m", "locust", "--version"]
            )
            .unwrap_or_default()
        );
        return Ok(python);
    }
    if which("python3").is_none() {
        apt_install(&["python3", "python3-venv"], "Python 3 (about 1 min)")?;
    }
    let _ = fs::remove_dir_all(&venv);
    let make_venv = || {
        Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !make_venv() {
        // Debian's python3 leaves venv (ensurepip) to a package of its own.
        apt_install(&["python3-venv"], "Python's venv module")?;
        let _ = fs::remove_dir_all(&venv);
        if !make_venv() {
            return Err("python3 -m venv failed: install Python 3 with its venv module".into());
        }
    }
    println!("installing Locust and its pinned dependencies from PyPI (about 1 min)");
    exec(
        Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--no-deps",
                "-r",
            ])
            .arg(root.join(LOCUST_REQUIREMENTS)),
    )?;
    fs::write(stamp, pins)?;
    Ok(python)
}

/// Installs Debian packages that are not installed yet (as root, or through sudo).
fn apt_install(packages: &[&str], what: &str) -> Result<()> {
    let missing: Vec<&str> = packages
        .iter()
        .copied()
        .filter(|p| {
            !probe("dpkg-query", &["-W", "-f=${Status}", p])
                .is_some_and(|s| s.contains("install ok installed"))
        })
        .collect();
    if missing.is_empty() {
        println!("Debian packages present: {}", packages.join(" "));
        return Ok(());
    }
    if which("apt-get").is_none() {
        return Err(format!(
            "missing {}; this is not a Debian machine: install {what} yourself, or use rustup",
            missing.join(" ")
        )
        .into());
    }
    println!("installing {what}: {}", missing.join(" "));
    let is_root = probe("id", &["-u"]).as_deref() == Some("0");
    let sudo = |args: &[&str]| {
        let mut cmd = if is_root {
            Command::new(args[0])
        } else {
            let mut c = Command::new("sudo");
            c.arg(args[0]);
            c
        };
        cmd.args(&args[1..])
            .env("DEBIAN_FRONTEND", "noninteractive");
        cmd
    };
    // Through sudo, it may ask for a password at the terminal.
    let run = if is_root { exec } else { exec_at_terminal };
    run(&mut sudo(&["apt-get", "update", "-qq"]))?;
    let mut install = vec!["apt-get", "install", "-y", "-qq"];
    install.extend(&missing);
    run(&mut sudo(&install)).map_err(|err| {
        Error(format!(
            "{}: could not install {}; install them yourself and run again",
            err.0,
            missing.join(" ")
        ))
    })
}

/// Runs a command, killing it if it has not finished within `limit`. True on success.
fn run_with_timeout(cmd: &mut Command, limit: Duration) -> bool {
    let Ok(mut child) = crate::procs::spawn(cmd.stdin(Stdio::null())) else {
        return false;
    };
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                crate::procs::end(&mut child);
                return status.success();
            }
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(200)),
            _ => {
                crate::procs::end(&mut child);
                return false;
            }
        }
    }
}
