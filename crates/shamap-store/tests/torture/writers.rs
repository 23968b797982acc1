//! The faults that need writers running: the lock file deleted under a
//! writer with a second one trying, a full disk, and a failing
//! acknowledgment record.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use rand::Rng;

use super::faults::Class;
use super::oracle::Model;
use super::protocol::{stderr_tail, Worker};
use super::supervisor::Torture;
use super::tally::Outcome;
use super::CHILD_PATIENCE;
use crate::support::copy_store_dir;
use crate::tmpfs::Tmpfs;

impl Torture {
    /// [`Torture::drive`]s `w` (errors allowed) and, when it was asked to
    /// stop, waits for it to exit; then it is gone.
    fn drive_to_exit(
        model: &mut Model,
        mut w: Worker,
        run: Duration,
        kill: bool,
        errors: &mut u64,
    ) -> Result<(), String> {
        let (mut result, _) = Self::drive(model, &mut w, run, kill, true, errors);
        if result.is_ok() && !kill {
            result = w.wait_exit(Instant::now() + CHILD_PATIENCE);
        }
        result
    }

    /// A worker on a copy whose acknowledgment record fails (to open, or
    /// to be written) from a random acknowledgment on, with one of the
    /// errors a disk or the system gives; then the copy is checked. It is
    /// no damage: the store must open, every acknowledged root there, and
    /// no change a worker's error called "not committed" (the model drops
    /// it, [`super::oracle::Model::take`]).
    pub(super) fn ack_fault(&mut self) {
        let copy = self.copy("ackfail");
        let mut model = self.model.clone();
        let stage = if self.rng.gen_bool(0.5) {
            "open"
        } else {
            "record"
        };
        let errnos = [
            ("EPERM", libc::EPERM),
            ("EACCES", libc::EACCES),
            ("ENOSPC", libc::ENOSPC),
            ("EMFILE", libc::EMFILE),
            ("EIO", libc::EIO),
        ];
        let (ename, errno) = errnos[self.rng.gen_range(0..errnos.len())];
        let after: u64 = self.rng.gen_range(0..4);
        let wseed = self.rng.gen();
        let run = Duration::from_millis(self.rng.gen_range(300..1500));
        let kill = self.rng.gen_bool(0.5);
        let mut errors = 0;
        let w = Worker::spawn_failing_acks(
            self.backend,
            &copy,
            wseed,
            &self.stderr_path("ackfail"),
            &format!("{stage},{errno},{after}"),
        );
        let result = Self::drive_to_exit(&mut model, w, run, kill, &mut errors);
        let fault = format!(
            "the acknowledgment record fails ({stage}, {ename}) after {after} acknowledgments under a worker (seed {wseed}) {} ms then {}; {errors} failed operations",
            run.as_millis(),
            if kill { "SIGKILL" } else { "stop" }
        );
        let outcome = self.check_after(result, &mut model, &copy, true);
        if errors == 0 {
            self.ack_fault_quiet += 1;
        }
        self.record(Class::AckFail, &outcome, &fault, Some(&copy));
        let _ = std::fs::remove_dir_all(&copy);
    }

    /// The lock file deleted while a writer runs on a copy, then a second
    /// writer: it must be refused, and nothing acknowledged lost. Writer A
    /// holds the store from its opening until it is killed (a worker that
    /// closes and reopens frees the lock for that moment, and B, trying
    /// all along, may then rightly become the writer and change what A
    /// acknowledged), and B is killed before A: every attempt of B must be
    /// refused, and the copy must show exactly what A acknowledged.
    pub(super) fn lock_fault(&mut self) {
        let copy = self.copy("lock");
        let mut model = self.model.clone();
        let (sa, sb) = (self.rng.gen(), self.rng.gen());
        let run = Duration::from_millis(self.rng.gen_range(300..1500));
        let fault = format!(
            "{} deleted under writer A (seed {sa}), writer B (seed {sb}) started, both run {} ms",
            self.backend.lock_file(),
            run.as_millis()
        );
        let mut errors = 0;
        // A is the writer once it has opened the store, until it dies.
        let mut a = Worker::spawn_holding(self.backend, &copy, sa, &self.stderr_path("a"));
        let until = Instant::now() + CHILD_PATIENCE;
        let mut outcome = None;
        loop {
            match a.next(until) {
                Ok(line) => {
                    let opened = line.starts_with("opened");
                    if let Err(why) = model.take(&line) {
                        outcome = Some(Outcome::Failed(why));
                        break;
                    }
                    if opened {
                        break;
                    }
                }
                Err(_) => {
                    outcome = Some(Outcome::Failed(format!(
                        "writer A never opened the store: {}",
                        stderr_tail(&a.stderr)
                    )));
                    break;
                }
            }
        }
        if outcome.is_none() {
            let _ = std::fs::remove_file(copy.join(self.backend.lock_file()));
            let mut b = Worker::spawn(self.backend, &copy, sb, &self.stderr_path("b"));
            // B's first line: refused (good) or opened (two writers). It
            // goes on trying (each opening waits up to a second for the
            // lock) for as long as A runs.
            let b_first = b.next(Instant::now() + CHILD_PATIENCE);
            let until = Instant::now() + run;
            // A may fail in words once its lock file is gone; only losses
            // count.
            let pumped = Self::pump(&mut model, &mut a, until, true, &mut errors);
            // B dies first: A holds the store until it dies, so there is
            // no moment at which B could rightly open it, and every line
            // of B must be a refusal.
            let b_end = b.kill();
            let a_end = pumped.and_then(|_| a.kill());
            let a_rest = Self::drain(&mut model, &mut a, true, &mut errors);
            let a_end = a_end.and(a_rest.map(|_| ()));
            let mut b_lines = Vec::new();
            while let Ok(l) = b.next(Instant::now() + Duration::from_secs(5)) {
                b_lines.push(l);
            }
            outcome = Some(match b_first {
                Err(ended) => Outcome::Failed(format!(
                    "{} writer B neither opened nor was refused within {} s: {}",
                    if ended { "a crash:" } else { "a hang:" },
                    CHILD_PATIENCE.as_secs(),
                    stderr_tail(&b.stderr)
                )),
                Ok(first) => {
                    b_lines.insert(0, first);
                    self.judge_lock(&copy, &mut model, &b_lines, b_end, a_end)
                }
            });
        }
        let outcome = outcome.unwrap_or(Outcome::Kept);
        self.record(Class::Lock, &outcome, &fault, Some(&copy));
        let _ = std::fs::remove_dir_all(&copy);
    }

    /// The judgement of a lock case from writer B's lines (all of them,
    /// B having died before A), how B and A ended, and then the check of
    /// the copy against A's acknowledged changes.
    pub(super) fn judge_lock(
        &self,
        copy: &Path,
        model: &mut Model,
        b_lines: &[String],
        b_end: Result<(), String>,
        a_end: Result<(), String>,
    ) -> Outcome {
        if b_lines.iter().any(|l| l.starts_with("opened")) {
            let acks = b_lines.iter().filter(|l| l.starts_with("ack")).count();
            return Outcome::Failed(format!(
                "a second writer opened the store while the first held it (its lock file deleted): it acknowledged {acks} changes beside the first{}",
                match a_end {
                    Err(why) => format!("; writer A then: {why}"),
                    Ok(()) => String::new(),
                }
            ));
        }
        if let Err(why) = a_end {
            return Outcome::Failed(format!("writer A: {why}"));
        }
        if let Err(why) = b_end {
            return Outcome::Failed(format!("writer B: {why}"));
        }
        if let Some(l) = b_lines.iter().find(|l| l.contains("MULTILINE")) {
            return Outcome::Failed(format!("a refusal of more than one line: {l}"));
        }
        if let Some(l) = b_lines.iter().find(|l| !l.starts_with("refused ")) {
            return Outcome::Failed(format!("writer B: said {l:?}"));
        }
        // Nothing acknowledged by A may be lost.
        match self.check(model, copy, false, false) {
            Outcome::Kept => Outcome::Refused(b_lines[0].trim_start_matches("refused ").to_owned()),
            other => other,
        }
    }

    /// A worker on a copy in a tmpfs barely larger than the store, until
    /// the disk is full; then space again, and the copy checked.
    pub(super) fn enospc_fault(&mut self) {
        if self.tmpfs_ok == Some(false) {
            return;
        }
        let Some(fs) = Tmpfs::mount("512m") else {
            self.tmpfs_ok = Some(false);
            self.tally.skipped.insert(
                Class::Enospc,
                "mounting a tmpfs needs root (not root here)".to_owned(),
            );
            return;
        };
        self.tmpfs_ok = Some(true);
        let db = fs.path.join("db");
        if self.live_dir().exists() {
            copy_store_dir(&self.live_dir(), &db);
        }
        let used = df_used_kib(&fs.path);
        let margin_kib = self.rng.gen_range(0..256u64);
        fs.remount(&format!("size={}k", used + margin_kib + 64));
        let wseed = self.rng.gen();
        let run = Duration::from_millis(self.rng.gen_range(1000..3000));
        let mut model = self.model.clone();
        let mut errors = 0;
        let w = Worker::spawn(self.backend, &db, wseed, &self.stderr_path("enospc"));
        let kill = self.rng.gen_bool(0.5);
        let result = Self::drive_to_exit(&mut model, w, run, kill, &mut errors);
        let fault = format!(
            "tmpfs of {used} KiB used + {} KiB, worker (seed {wseed}) {} ms then {}; {errors} failed operations",
            margin_kib + 64,
            run.as_millis(),
            if kill { "SIGKILL" } else { "stop" }
        );
        fs.remount("size=512m");
        let outcome = self.check_after(result, &mut model, &db, false);
        if errors == 0 {
            self.tally.notes.push(format!(
                "round {}: the disk never filled ({fault})",
                self.round
            ));
        } else {
            self.full_disks += 1;
            self.full_disk_errors += errors;
        }
        self.record(Class::Enospc, &outcome, &fault, Some(&db));
    }
}

/// KiB in use on the file system at `path` (`df`).
pub(super) fn df_used_kib(path: &Path) -> u64 {
    let out = Command::new("df")
        .args(["-k", "--output=used"])
        .arg(path)
        .output()
        .expect("df");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .nth(1)
        .and_then(|l| l.trim().parse().ok())
        .expect("df's used KiB")
}
