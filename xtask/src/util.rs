//! Small helpers shared by the xtask commands: errors, running commands, timing steps.

use std::{
    fmt,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Instant,
};

/// The one error type of the xtask binary: a message for a person.
pub struct Error(pub String);

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<std::io::Error> for Error {
    fn from(err: std::io::Error) -> Self {
        Error(err.to_string())
    }
}

impl From<String> for Error {
    fn from(msg: String) -> Self {
        Error(msg)
    }
}

impl From<&str> for Error {
    fn from(msg: &str) -> Self {
        Error(msg.to_owned())
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// The workspace root (the folder holding the top-level `Cargo.toml`).
pub fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the workspace root")
        .to_path_buf()
}

/// Runs a command to completion, printing it first, and fails on a non-zero exit.
/// It runs in a process group of its own, ended (with all it started) when it
/// exits or when xtask ends (see `procs`).
pub fn exec(cmd: &mut Command) -> Result<()> {
    println!("$ {}", describe(cmd));
    let status = crate::procs::spawn(cmd)
        .and_then(crate::procs::wait)
        .map_err(|err| format!("could not start `{}`: {err}", describe(cmd)))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{}` failed ({status})", describe(cmd)).into())
    }
}

/// [`exec`] for a command that may ask at the terminal (sudo's password): it stays
/// in xtask's process group, the terminal's foreground one (a command in a group of
/// its own would be stopped when it reads the terminal), and Ctrl+C reaches it.
pub fn exec_at_terminal(cmd: &mut Command) -> Result<()> {
    println!("$ {}", describe(cmd));
    let status = cmd
        .status()
        .map_err(|err| format!("could not start `{}`: {err}", describe(cmd)))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{}` failed ({status})", describe(cmd)).into())
    }
}

/// Runs a command quietly and returns its trimmed standard output, or `None` when
/// it cannot start or exits non-zero. Used to probe for tools and versions.
pub fn probe(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Finds an executable on `PATH`.
pub fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// A command line as a person would type it (program and arguments, no environment).
pub fn describe(cmd: &Command) -> String {
    let mut line = cmd.get_program().to_string_lossy().into_owned();
    for arg in cmd.get_args() {
        line.push(' ');
        line.push_str(&arg.to_string_lossy());
    }
    line
}

/// Runs one named step of a longer job and reports how long it took, so that a
/// slow first run always says what it is doing.
pub fn step<T>(name: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    println!("\n==> {name}");
    let started = Instant::now();
    let result = f();
    let secs = started.elapsed().as_secs_f64();
    match &result {
        Ok(_) => println!("<== {name}: ok in {}", human_secs(secs)),
        Err(err) => println!("<== {name}: FAILED after {}: {}", human_secs(secs), err.0),
    }
    result
}

pub fn human_secs(secs: f64) -> String {
    if secs < 60.0 {
        format!("{secs:.1} s")
    } else {
        let whole = secs.round() as u64;
        format!("{} min {:02} s", whole / 60, whole % 60)
    }
}

/// Every `.rs` file under `dir`, in path order (tidy's rules read them all).
pub fn rust_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<std::io::Result<_>>()?;
    entries.sort_by_key(|e| e.path());
    for entry in entries {
        let path = entry.path();
        if path.is_dir() {
            out.extend(rust_files(&path)?);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(out)
}

/// `path` from `base`, with forward slashes (as tidy's messages name files).
pub fn relative(base: &Path, path: &Path) -> Result<String> {
    Ok(path
        .strip_prefix(base)
        .map_err(|e| e.to_string())?
        .to_string_lossy()
        .replace('\\', "/"))
}
