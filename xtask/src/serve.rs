//! `cargo xtask serve` (the app and the simulator, for people) and `cargo xtask build`
//! (the release build, for static hosting).

use std::process::{Child, Command, Stdio};

use crate::{
    procs,
    setup::{self, Needs},
    split,
    util::{exec, project_root, step, Result},
};

/// Where the simulator listens by default; the page's default plan targets it.
pub const DEFAULT_SIM_PORT: u16 = 8000;
pub const DEFAULT_APP_PORT: u16 = 8080;

pub fn run(args: &[String]) -> Result<()> {
    let app_port = flag_value(args, "--port")?.unwrap_or(DEFAULT_APP_PORT);
    let sim_port = flag_value(args, "--sim-port")?.unwrap_or(DEFAULT_SIM_PORT);
    // Before anything starts: a taken port is named, with how to free it.
    for (port, flag) in [(sim_port, "--sim-port"), (app_port, "--port")] {
        if let Some(why) = procs::port_taken(port, flag) {
            return Err(why.into());
        }
    }
    let env = setup::ensure(Needs::default())?;
    let _sim = step("build and start the simulator", || {
        Simulator::start(sim_port, &[])
    })?;
    println!(
        "\ntokenmeter: http://127.0.0.1:{app_port}/  (simulator: http://127.0.0.1:{sim_port}/v1)\n"
    );
    let mut trunk = env.wasm_command("trunk");
    trunk
        .current_dir(project_root())
        .args(["serve", "--address", "127.0.0.1", "--port"])
        .arg(app_port.to_string());
    exec(&mut trunk)
}

/// The release build: LTO, relative asset paths so `dist/` works under any sub-path.
pub fn release_build() -> Result<()> {
    let env = setup::ensure(Needs::default())?;
    step("trunk build --release, split, then wasm-opt -Oz", || {
        let mut trunk = env.wasm_command("trunk");
        trunk
            .current_dir(project_root())
            .args(["build", "--release", "--public-url", "./"])
            .args(split::TRUNK_FEATURES);
        exec(&mut trunk)?;
        split::apply(&project_root().join("dist"), split::Profile::Release)?;
        crate::wasm_opt::apply(&project_root().join("dist"))?;
        crate::csp::apply(&project_root().join("dist"))
    })?;
    println!("\ndist/ is ready: copy it to any static host, at its root or under a sub-path");
    Ok(())
}

fn flag_value(args: &[String], flag: &str) -> Result<Option<u16>> {
    match args.iter().position(|a| a == flag) {
        None => Ok(None),
        Some(i) => args
            .get(i + 1)
            .and_then(|v| v.parse().ok())
            .map(Some)
            .ok_or_else(|| format!("{flag} needs a port number").into()),
    }
}

/// The simulator as a child process, stopped when this value is dropped.
pub struct Simulator {
    child: Child,
    pub port: u16,
}

impl Simulator {
    /// Builds the simulator (debug profile, shared with the tests) and starts it on
    /// 127.0.0.1:`port`, waiting until it accepts connections.
    pub fn start(port: u16, extra_args: &[&str]) -> Result<Simulator> {
        let root = project_root();
        exec(Command::new("cargo").current_dir(&root).args([
            "build",
            "--locked",
            "-p",
            "tokenmeter-sim",
        ]))?;
        if let Some(why) = procs::port_taken(port, "--sim-port") {
            return Err(why.into());
        }
        let child = procs::spawn(
            Command::new(root.join("target/debug/tokenmeter-sim"))
                .args(["--host", "127.0.0.1", "--port", &port.to_string()])
                .args(extra_args)
                .stdin(Stdio::null()),
        )?;
        let mut sim = Simulator { child, port };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = sim.child.try_wait() {
                return Err(format!(
                    "the simulator exited ({status}) before it listened on port {port}"
                )
                .into());
            }
            if std::time::Instant::now() > deadline {
                return Err(
                    format!("the simulator did not listen on port {port} within 20 s").into(),
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        Ok(sim)
    }
}

impl Drop for Simulator {
    fn drop(&mut self) {
        procs::end(&mut self.child);
    }
}
