//! The parent's side of the protocol: running a child, reading its
//! complete lines, and what a checker reported.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use shamap::Hash256;

use super::backend::Backend;
use super::child::trace;
use super::oracle::{parse_roots, Roots};
use super::{
    CHILD_PATIENCE, ENV_ACK_FAULT, ENV_BACKEND, ENV_DIR, ENV_HOLD, ENV_READ_ONLY, ENV_WORKER_SEED,
    TAG,
};

/// The lines a child prints, read by a thread: complete lines only (a
/// line cut by a kill is not one).
pub(super) fn line_reader(out: impl std::io::Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut r = BufReader::new(out);
        loop {
            let mut line = String::new();
            match r.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) if !line.ends_with('\n') => return,
                Ok(_) => {
                    // The test harness may have begun the line
                    // (`test torture::... ... ` without a newline).
                    if let Some(l) = line.trim_end().split_once(TAG).map(|(_, l)| l) {
                        if tx.send(l.to_owned()).is_err() {
                            return;
                        }
                    }
                }
            }
        }
    });
    rx
}

pub(super) fn child_command(test: &str, backend: Backend, dir: &Path, stderr: &Path) -> Command {
    let exe = std::env::current_exe().expect("test binary");
    let mut c = Command::new(exe);
    c.args([
        "--exact",
        test,
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(ENV_DIR, dir)
    .env(ENV_BACKEND, backend.name())
    .env_remove(ENV_READ_ONLY)
    .env_remove(ENV_HOLD)
    .env_remove(ENV_ACK_FAULT)
    .stdout(Stdio::piped())
    .stderr(std::fs::File::create(stderr).expect("stderr file"));
    c
}

pub(super) fn stderr_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with("note: run with"))
        .collect();
    // A panic: where, and its message (the line after).
    if let Some(i) = lines.iter().position(|l| l.contains("panicked at")) {
        return lines[i..(i + 2).min(lines.len())].join(" | ");
    }
    lines[lines.len().saturating_sub(3)..].join(" | ")
}

/// A worker process.
pub(super) struct Worker {
    pub(super) child: Child,
    pub(super) stdin: Option<ChildStdin>,
    pub(super) lines: Receiver<String>,
    pub(super) stderr: PathBuf,
    /// Lines read so far (for messages).
    pub(super) seen: u64,
}

impl Worker {
    pub(super) fn spawn(backend: Backend, dir: &Path, seed: u64, stderr: &Path) -> Worker {
        Worker::start(
            child_command("torture::torture_worker", backend, dir, stderr),
            seed,
            stderr,
        )
    }

    /// A worker that holds the store from its opening until it is killed
    /// ([`ENV_HOLD`]): its writer's lock is never free while it lives.
    pub(super) fn spawn_holding(backend: Backend, dir: &Path, seed: u64, stderr: &Path) -> Worker {
        let mut c = child_command("torture::torture_worker", backend, dir, stderr);
        c.env(ENV_HOLD, "1");
        Worker::start(c, seed, stderr)
    }

    /// A worker whose store's acknowledgment record fails as `fault`
    /// (`stage,errno,after`) says ([`ENV_ACK_FAULT`]).
    pub(super) fn spawn_failing_acks(
        backend: Backend,
        dir: &Path,
        seed: u64,
        stderr: &Path,
        fault: &str,
    ) -> Worker {
        let mut c = child_command("torture::torture_worker", backend, dir, stderr);
        c.env(ENV_ACK_FAULT, fault);
        Worker::start(c, seed, stderr)
    }

    pub(super) fn start(mut command: Command, seed: u64, stderr: &Path) -> Worker {
        let mut child = command
            .env(ENV_WORKER_SEED, seed.to_string())
            .stdin(Stdio::piped())
            .spawn()
            .expect("spawn the worker");
        let stdin = child.stdin.take();
        let lines = line_reader(child.stdout.take().expect("stdout"));
        Worker {
            child,
            stdin,
            lines,
            stderr: stderr.to_path_buf(),
            seen: 0,
        }
    }

    /// The next line before `until`; `Err(true)` at the end of the output,
    /// `Err(false)` when the time is up.
    pub(super) fn next(&mut self, until: Instant) -> Result<String, bool> {
        let wait = until.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(wait) {
            Ok(l) => {
                self.seen += 1;
                trace(&format!("worker {}", self.child.id()), &l);
                Ok(l)
            }
            Err(RecvTimeoutError::Timeout) => Err(false),
            Err(RecvTimeoutError::Disconnected) => Err(true),
        }
    }

    /// Sends SIGKILL and does not wait (the worker may be unable to die
    /// until a file system it waits on answers).
    pub(super) fn send_kill(&mut self) {
        let _ = self.child.kill();
    }

    pub(super) fn kill(&mut self) -> Result<(), String> {
        let _ = self.child.kill();
        let status = self.child.wait().map_err(|e| e.to_string())?;
        if status.signal() == Some(libc::SIGKILL) {
            Ok(())
        } else {
            Err(format!(
                "the worker ended on its own before the kill: {status}: {}",
                stderr_tail(&self.stderr)
            ))
        }
    }

    /// Asks the worker to stop (it closes the store cleanly).
    pub(super) fn ask_to_stop(&mut self) {
        if let Some(mut s) = self.stdin.take() {
            let _ = s.write_all(b"stop\n");
        }
    }

    /// Waits for the worker's exit after [`Worker::ask_to_stop`] (its lines
    /// are read by the caller); a worker still running is killed.
    pub(super) fn wait_exit(&mut self, until: Instant) -> Result<(), String> {
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) if status.success() => return Ok(()),
                Ok(Some(status)) => {
                    return Err(format!(
                        "the worker failed: {status}: {}",
                        stderr_tail(&self.stderr)
                    ))
                }
                Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(10)),
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return Err(format!(
                        "a hang: the worker did not close within {} s",
                        CHILD_PATIENCE.as_secs()
                    ));
                }
            }
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The check of one root: leaves verified, items read and the rebuilt
/// root; or the error.
pub(super) type RootCheck = Result<(u64, u64, Hash256), String>;

/// What the checker found.
pub(super) enum Check {
    Refused(String),
    Opened {
        roots: Roots,
        /// Per root: leaves verified, items read and the rebuilt root; or
        /// the error.
        results: Vec<(Hash256, RootCheck)>,
    },
    /// No answer in time, or a child that died: the reason.
    Broken(String),
}

pub(super) fn run_checker(backend: Backend, dir: &Path, read_only: bool, stderr: &Path) -> Check {
    let mut cmd = child_command("torture::torture_checker", backend, dir, stderr);
    if read_only {
        cmd.env(ENV_READ_ONLY, "1");
    }
    let mut child = cmd.stdin(Stdio::null()).spawn().expect("spawn the checker");
    let lines = line_reader(child.stdout.take().expect("stdout"));
    // A hang is no line for CHILD_PATIENCE: the checker says a line when
    // it has opened the store and one per root it has verified, and a
    // store with many roots on a loaded machine takes longer in all.
    let mut until = Instant::now() + CHILD_PATIENCE;
    let mut got = Vec::new();
    // `finished`: it said it is done; `ended`: its output ended (done,
    // or it died), so it exits by itself.
    let (finished, ended) = loop {
        let wait = until.saturating_duration_since(Instant::now());
        match lines.recv_timeout(wait) {
            Ok(l) if l == "done" => break (true, true),
            Ok(l) => {
                trace(&format!("checker of {}", dir.display()), &l);
                got.push(l);
                until = Instant::now() + CHILD_PATIENCE;
            }
            Err(RecvTimeoutError::Disconnected) => break (false, true),
            Err(RecvTimeoutError::Timeout) => break (false, false),
        }
    };
    // Closing the store is part of the check: bounded too. A checker
    // that did not finish is killed (and reaped) here.
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if ended && Instant::now() < until + Duration::from_secs(1) => {
                std::thread::sleep(Duration::from_millis(5))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    if status.is_none() {
        return Check::Broken(format!(
            "a hang: no answer within {} s; its last line {:?}",
            CHILD_PATIENCE.as_secs(),
            got.last()
        ));
    }
    if !finished || !status.is_some_and(|s| s.success()) {
        return Check::Broken(format!(
            "the checker died (a panic or an abort): {}",
            stderr_tail(stderr)
        ));
    }
    parse_check(&got).unwrap_or_else(Check::Broken)
}

pub(super) fn parse_check(lines: &[String]) -> Result<Check, String> {
    let Some(first) = lines.first() else {
        return Err("the checker printed nothing".to_owned());
    };
    if let Some(line) = first.strip_prefix("refused ") {
        return Ok(Check::Refused(line.to_owned()));
    }
    let Some(list) = first.strip_prefix("opened") else {
        return Err(format!("unexpected checker line: {first:?}"));
    };
    let words: Vec<&str> = list.split(' ').collect();
    let roots = parse_roots(&words)?;
    let mut results = Vec::new();
    for l in &lines[1..] {
        let words: Vec<&str> = l.splitn(4, ' ').collect();
        let hash = |s: &str| Hash256::from_hex(s).map_err(|e| format!("{l:?}: {e}"));
        match words.as_slice() {
            ["root", h, "ok", rest] => {
                let v: Vec<&str> = rest.split(' ').collect();
                let [leaves, items, rebuilt] = v.as_slice() else {
                    return Err(format!("bad checker line: {l:?}"));
                };
                let num = |s: &str| s.parse::<u64>().map_err(|_| format!("bad number in {l:?}"));
                results.push((hash(h)?, Ok((num(leaves)?, num(items)?, hash(rebuilt)?))));
            }
            ["root", h, "err", e] => results.push((hash(h)?, Err(e.to_string()))),
            _ => return Err(format!("bad checker line: {l:?}")),
        }
    }
    Ok(Check::Opened { roots, results })
}
