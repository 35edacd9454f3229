//! The processes xtask starts, and ending them: every child runs in a process group
//! of its own (so that ending it ends what it started: trunk's cargo and rustc, a
//! benchmark's simulators and browsers), and every group still running is ended
//! when xtask ends: on SIGINT, SIGTERM or SIGHUP (an IDE's stop button, a process
//! manager, `timeout`), on its own failure, and on success. Also: who holds a port,
//! read from `/proc` (Linux), so that a taken port can be named.
//!
//! No crate for the signals: xtask has no dependencies (it is the first thing a
//! fresh clone compiles), and the C library's `signal` and the `kill` command are
//! all this needs.

use std::{
    fs,
    os::unix::process::CommandExt,
    process::{Child, Command},
    sync::{
        atomic::{AtomicI32, Ordering},
        Mutex,
    },
    time::{Duration, Instant},
};

/// Process groups started and not yet known to be over.
static GROUPS: Mutex<Vec<u32>> = Mutex::new(Vec::new());
/// The signal that asked xtask to end, 0 before one came.
static SIGNALLED: AtomicI32 = AtomicI32::new(0);

const SIGHUP: i32 = 1;
const SIGINT: i32 = 2;
const SIGTERM: i32 = 15;

extern "C" fn on_signal(signal: i32) {
    // All a signal handler may safely do: note it. A thread does the rest.
    SIGNALLED.store(signal, Ordering::SeqCst);
}

/// Installs the handlers and the thread that, once a signal came, ends every
/// group still running and exits with 128 + the signal (as a shell reports it).
pub fn end_children_on_signals() {
    extern "C" {
        /// glibc's `signal`: BSD semantics (the handler stays, calls restart).
        fn signal(signum: i32, handler: extern "C" fn(i32)) -> usize;
    }
    for signum in [SIGHUP, SIGINT, SIGTERM] {
        // SAFETY: `on_signal` only stores into an atomic, which is
        // async-signal-safe; the handler is a plain `extern "C" fn`.
        unsafe {
            signal(signum, on_signal);
        }
    }
    std::thread::spawn(|| loop {
        std::thread::sleep(Duration::from_millis(50));
        if let Some(signum) = signalled() {
            end_all();
            eprintln!("\nxtask: ended by signal {signum}; every process it started was ended");
            std::process::exit(128 + signum);
        }
    });
}

/// The signal that asked xtask to end, if one came.
pub fn signalled() -> Option<i32> {
    match SIGNALLED.load(Ordering::SeqCst) {
        0 => None,
        signum => Some(signum),
    }
}

/// Starts `cmd` in a process group of its own, ended with xtask.
pub fn spawn(cmd: &mut Command) -> std::io::Result<Child> {
    let child = cmd.process_group(0).spawn()?;
    GROUPS.lock().expect("groups").push(child.id());
    Ok(child)
}

/// Waits for `child` (started by [`spawn`]) and forgets its group: what it left
/// running in that group is ended.
pub fn wait(mut child: Child) -> std::io::Result<std::process::ExitStatus> {
    let status = child.wait()?;
    end_group(child.id());
    Ok(status)
}

/// Ends the group of `child` (started by [`spawn`]) and waits for `child`.
pub fn end(child: &mut Child) {
    end_group(child.id());
    let _ = child.wait();
}

/// Ends every group still running: SIGTERM, then SIGKILL for what is left after
/// three seconds.
pub fn end_all() {
    let groups = std::mem::take(&mut *GROUPS.lock().expect("groups"));
    for &group in &groups {
        kill_group(group, "TERM");
    }
    let deadline = Instant::now() + Duration::from_secs(3);
    while groups.iter().any(|&g| group_alive(g)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    for &group in &groups {
        if group_alive(group) {
            kill_group(group, "KILL");
        }
    }
}

/// Ends process group `group` (that of a child started by [`spawn`]) and forgets it.
pub fn end_group(group: u32) {
    GROUPS.lock().expect("groups").retain(|&g| g != group);
    if !group_alive(group) {
        return;
    }
    kill_group(group, "TERM");
    let deadline = Instant::now() + Duration::from_secs(3);
    while group_alive(group) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    if group_alive(group) {
        kill_group(group, "KILL");
    }
}

fn kill_group(group: u32, signal: &str) {
    let _ = Command::new("kill")
        .args([&format!("-{signal}"), "--", &format!("-{group}")])
        .stderr(std::process::Stdio::null())
        .status();
}

/// Whether any live (not zombie) process is in process group `group`.
fn group_alive(group: u32) -> bool {
    table().iter().any(|p| p.group == group && !p.zombie)
}

/// One process, from `/proc`.
#[derive(Clone, Debug)]
pub struct Proc {
    pub pid: u32,
    pub parent: u32,
    pub group: u32,
    pub zombie: bool,
    /// The command line, arguments joined by spaces.
    pub command: String,
}

/// Every process this user can see.
pub fn table() -> Vec<Proc> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(read_proc)
        .collect()
}

fn read_proc(pid: u32) -> Option<Proc> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid pgrp ...`: comm may hold spaces and parentheses.
    let after = &stat[stat.rfind(')')? + 2..];
    let mut fields = after.split(' ');
    let state = fields.next()?;
    let parent = fields.next()?.parse().ok()?;
    let group = fields.next()?.parse().ok()?;
    let command = fs::read(format!("/proc/{pid}/cmdline"))
        .map(|raw| {
            String::from_utf8_lossy(&raw)
                .split('\0')
                .filter(|a| !a.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    Some(Proc {
        pid,
        parent,
        group,
        zombie: state == "Z",
        command,
    })
}

/// Every live descendant of `pid`, in any process group.
pub fn descendants(pid: u32) -> Vec<Proc> {
    let all = table();
    let mut found: Vec<Proc> = Vec::new();
    let mut frontier = vec![pid];
    while let Some(parent) = frontier.pop() {
        for p in all.iter().filter(|p| p.parent == parent && !p.zombie) {
            frontier.push(p.pid);
            found.push(p.clone());
        }
    }
    found
}

/// Whether `pid` is a live process.
pub fn alive(pid: u32) -> bool {
    read_proc(pid).is_some_and(|p| !p.zombie)
}

/// The process listening on TCP `port` (any address), when this user can see it.
pub fn listener(port: u16) -> Option<Proc> {
    let inodes: Vec<String> = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|path| fs::read_to_string(path).ok())
        .flat_map(|table| {
            table
                .lines()
                .skip(1)
                .filter_map(|line| {
                    let fields: Vec<&str> = line.split_whitespace().collect();
                    let local_port = fields.get(1)?.rsplit(':').next()?;
                    // State 0A is LISTEN.
                    (u16::from_str_radix(local_port, 16).ok()? == port && fields.get(3)? == &"0A")
                        .then(|| fields.get(9).map(|i| i.to_string()))
                        .flatten()
                })
                .collect::<Vec<_>>()
        })
        .collect();
    if inodes.is_empty() {
        return None;
    }
    let wanted: Vec<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    table().into_iter().find(|p| {
        fs::read_dir(format!("/proc/{}/fd", p.pid))
            .map(|fds| {
                fds.flatten().any(|fd| {
                    fs::read_link(fd.path())
                        .is_ok_and(|target| wanted.iter().any(|w| target.as_os_str() == w.as_str()))
                })
            })
            .unwrap_or(false)
    })
}

/// Why `port` cannot be had, and what to do, when something listens on it;
/// `flag` is the option that picks another port.
pub fn port_taken(port: u16, flag: &str) -> Option<String> {
    if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
        return None;
    }
    let other = format!("or pick another port with `{flag} N`");
    Some(match listener(port) {
        Some(p) if p.command.contains("tokenmeter-sim") => format!(
            "port {port} is taken by tokenmeter's simulator (pid {}: `{}`), left running by an earlier `cargo xtask serve` or benchmark: end it with `kill {}`, {other}",
            p.pid, p.command, p.pid
        ),
        Some(p) if p.command.contains("trunk") => format!(
            "port {port} is taken by trunk (pid {}: `{}`), left running by an earlier `cargo xtask serve`: end it with `kill {}`, {other}",
            p.pid, p.command, p.pid
        ),
        Some(p) => format!(
            "port {port} is taken by pid {} (`{}`): end it, {other}",
            p.pid, p.command
        ),
        None => format!(
            "port {port} is taken by a process this user cannot see (`ss -ltnp` as root names it): {other}"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listener_of_a_port_is_found_and_named() {
        let socket = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = socket.local_addr().unwrap().port();
        let me = listener(port).expect("this test listens there");
        assert_eq!(me.pid, std::process::id());
        let said = port_taken(port, "--port").unwrap();
        assert!(
            said.contains(&format!("port {port} is taken by pid {}", me.pid)),
            "{said}"
        );
        assert!(said.contains("`--port N`"), "{said}");
        drop(socket);
        assert_eq!(port_taken(port, "--port"), None);
    }

    #[test]
    fn a_group_is_ended_with_what_it_started() {
        // A shell that starts a grandchild, in a group of its own.
        let mut child = spawn(Command::new("sh").args(["-c", "sleep 60 & sleep 60"])).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let started: Vec<u32> = descendants(child.id()).iter().map(|p| p.pid).collect();
        assert!(!started.is_empty());
        end(&mut child);
        assert!(!alive(child.id()));
        assert!(started.iter().all(|&pid| !alive(pid)), "{started:?}");
    }
}
