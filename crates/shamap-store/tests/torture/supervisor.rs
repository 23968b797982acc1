//! The supervisor: live rounds (a worker killed or closed, then checked)
//! and the faults on copies, each judged and counted.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use super::backend::Backend;
use super::child::{append_to_named_file, trace};
use super::faults::{apply_file_fault, rehome_checkpoint, Class};
use super::oracle::{judge, Model};
use super::protocol::{run_checker, Worker};
use super::tally::{Outcome, Tally};
use super::{CHILD_PATIENCE, DEFAULT_SECS};
use crate::support::copy_store_dir;

pub(super) struct Torture {
    pub(super) backend: Backend,
    pub(super) seed: u64,
    pub(super) rng: SmallRng,
    /// The live store and its model.
    pub(super) live: tempfile::TempDir,
    pub(super) model: Model,
    /// Scratch space: copies, logs.
    pub(super) scratch: tempfile::TempDir,
    pub(super) tally: Tally,
    pub(super) round: u64,
    pub(super) classes: Vec<Class>,
    pub(super) keep: Option<PathBuf>,
    pub(super) tmpfs_ok: Option<bool>,
    /// Whether the crash file system mounts here (FUSE, root).
    pub(super) fuse_ok: Option<bool>,
    /// The most changes a worker asked of the crash file system in one
    /// power-loss case: the range the next cut is drawn from.
    pub(super) power_changes: u64,
    /// Changes acknowledged by the live workers, over every live store.
    pub(super) acks: u64,
    /// Full-disk cases where writes failed, and the failed operations.
    pub(super) full_disks: u64,
    pub(super) full_disk_errors: u64,
    /// Failed-acknowledgment cases where no operation failed (the worker
    /// did not reach the failing acknowledgment).
    pub(super) ack_fault_quiet: u64,
}

impl Torture {
    pub(super) fn new(backend: Backend, seed: u64) -> Torture {
        let only: Option<Vec<String>> = std::env::var("SHAMAP_TORTURE_CLASSES")
            .ok()
            .map(|s| s.split(',').map(|c| c.trim().to_owned()).collect());
        let classes = backend
            .classes()
            .iter()
            .copied()
            .filter(|c| {
                only.as_ref()
                    .is_none_or(|o| o.iter().any(|n| n == c.name()))
            })
            .collect();
        Torture {
            backend,
            seed,
            rng: SmallRng::seed_from_u64(seed),
            live: tempfile::tempdir().expect("tempdir"),
            model: Model::default(),
            scratch: tempfile::tempdir().expect("tempdir"),
            tally: Tally::default(),
            round: 0,
            classes,
            keep: std::env::var("SHAMAP_TORTURE_KEEP").ok().map(PathBuf::from),
            tmpfs_ok: None,
            fuse_ok: None,
            power_changes: 0,
            acks: 0,
            full_disks: 0,
            full_disk_errors: 0,
            ack_fault_quiet: 0,
        }
    }

    pub(super) fn live_dir(&self) -> PathBuf {
        self.live.path().join("db")
    }

    pub(super) fn context(&self, fault: &str) -> String {
        let classes = std::env::var("SHAMAP_TORTURE_CLASSES")
            .map(|c| format!("SHAMAP_TORTURE_CLASSES={c} "))
            .unwrap_or_default();
        format!(
            "backend {} seed {} round {}: {fault} (replay: SHAMAP_TORTURE_SEED={} {classes}cargo test -p shamap-store --test main torture::torture_{} -- --nocapture)",
            self.backend.name(),
            self.seed,
            self.round,
            self.seed,
            self.backend.name()
        )
    }

    pub(super) fn record(
        &mut self,
        class: Class,
        outcome: &Outcome,
        fault: &str,
        copy: Option<&Path>,
    ) {
        let context = self.context(fault);
        trace(
            "harness",
            &format!("round {} {}: {}", self.round, class.name(), fault),
        );
        if let (Outcome::Failed(_), Some(keep), Some(copy)) = (outcome, &self.keep, copy) {
            let to = keep.join(format!(
                "{}-{}-r{}-{}",
                self.backend.name(),
                self.seed,
                self.round,
                class.name()
            ));
            let _ = std::fs::create_dir_all(keep);
            let _ = std::fs::remove_dir_all(&to);
            copy_store_dir(copy, &to);
            let before = self.scratch.path().join("before-after");
            if class == Class::After && before.exists() {
                copy_store_dir(&before, &to.with_extension("before"));
            }
        }
        self.tally.add(class, outcome, &context);
    }

    /// A fresh live store (after a failure left the old one unusable).
    pub(super) fn restart(&mut self) {
        self.acks += self.model.acks;
        self.live = tempfile::tempdir().expect("tempdir");
        self.model = Model::default();
    }

    pub(super) fn stderr_path(&self, what: &str) -> PathBuf {
        self.scratch.path().join(format!("{what}.stderr"))
    }

    /// The checker run on the store at `dir` (its stderr kept as
    /// `check.stderr`), judged against `model` ([`judge`]).
    pub(super) fn check(
        &self,
        model: &mut Model,
        dir: &Path,
        refusal_fails: bool,
        read_only: bool,
    ) -> Outcome {
        let check = run_checker(self.backend, dir, read_only, &self.stderr_path("check"));
        judge(model, check, refusal_fails, read_only)
    }

    /// A worker's `result`: its failure, or else [`Torture::check`] of the
    /// store it wrote (not read-only).
    pub(super) fn check_after(
        &self,
        result: Result<(), String>,
        model: &mut Model,
        dir: &Path,
        refusal_fails: bool,
    ) -> Outcome {
        match result {
            Err(why) => Outcome::Failed(why),
            Ok(()) => self.check(model, dir, refusal_fails, false),
        }
    }

    /// Feeds `w`'s lines to `model` for `run`, then SIGKILLs it (`kill`) or
    /// asks it to stop, and takes what it printed before it ended (that
    /// counts too). Returns the outcome and whether its output ended.
    pub(super) fn drive(
        model: &mut Model,
        w: &mut Worker,
        run: Duration,
        kill: bool,
        errors_allowed: bool,
        errors: &mut u64,
    ) -> (Result<(), String>, bool) {
        let mut result =
            Self::pump(model, w, Instant::now() + run, errors_allowed, errors).map(|_| ());
        if result.is_ok() {
            if kill {
                result = w.kill();
            } else {
                w.ask_to_stop();
            }
        }
        let drained = Self::drain(model, w, errors_allowed, errors);
        let ended = matches!(drained, Ok(true));
        (result.and(drained.map(|_| ())), ended)
    }

    /// Feeds what a worker that was killed or asked to stop printed before
    /// it ended to `model` (for up to [`CHILD_PATIENCE`]). `Ok(true)` when
    /// its output ended.
    pub(super) fn drain(
        model: &mut Model,
        w: &mut Worker,
        errors_allowed: bool,
        errors: &mut u64,
    ) -> Result<bool, String> {
        Self::pump(
            model,
            w,
            Instant::now() + CHILD_PATIENCE,
            errors_allowed,
            errors,
        )
    }

    /// Feeds the worker's lines to `model` until `until`. `Ok(true)` when
    /// the worker's output ended.
    pub(super) fn pump(
        model: &mut Model,
        w: &mut Worker,
        until: Instant,
        errors_allowed: bool,
        errors: &mut u64,
    ) -> Result<bool, String> {
        loop {
            match w.next(until) {
                Ok(line) => {
                    if line.starts_with("error ") || line.starts_with("refused ") {
                        if line.contains("MULTILINE") {
                            return Err(format!("an error of more than one line: {line}"));
                        }
                        *errors += 1;
                        if !errors_allowed {
                            return Err(format!("the worker failed on a healthy store: {line}"));
                        }
                    }
                    model.take(&line)?;
                }
                Err(ended) => return Ok(ended),
            }
        }
    }

    /// One run of the worker on the live store, ended by a SIGKILL or a
    /// clean close, then the live store checked.
    pub(super) fn live_round(&mut self) {
        let dir = self.live_dir();
        let run = Duration::from_millis(self.rng.gen_range(50..2500));
        let kill = self.rng.gen_bool(0.7);
        let class = if kill { Class::Sigkill } else { Class::Close };
        let wseed = self.rng.gen();
        let fault = format!(
            "{} after {} ms (worker seed {wseed})",
            if kill {
                "SIGKILL"
            } else {
                "stop and clean close"
            },
            run.as_millis()
        );
        let mut w = Worker::spawn(self.backend, &dir, wseed, &self.stderr_path("worker"));
        let mut errors = 0;
        let (mut result, ended) =
            Self::drive(&mut self.model, &mut w, run, kill, false, &mut errors);
        if result.is_ok() && !kill {
            let patience = if ended {
                CHILD_PATIENCE
            } else {
                Duration::ZERO
            };
            result = w.wait_exit(Instant::now() + patience);
        }
        drop(w);
        let outcome = match result {
            Err(why) => Outcome::Failed(why),
            // Killed before it made the store: nothing to check (its
            // next opening makes it, or says why not).
            Ok(()) if self.model.roots.is_empty() && !self.backend.is_store(&dir) => Outcome::Kept,
            Ok(()) => {
                let check = run_checker(self.backend, &dir, true, &self.stderr_path("check"));
                judge(&mut self.model, check, true, true)
            }
        };
        let failed = matches!(outcome, Outcome::Failed(_));
        self.record(class, &outcome, &fault, Some(&dir));
        if failed {
            self.restart();
        }
    }

    /// A fresh copy of the live store (a quiet moment: no worker runs).
    pub(super) fn copy(&self, name: &str) -> PathBuf {
        let to = self.scratch.path().join(name);
        let _ = std::fs::remove_dir_all(&to);
        if self.live_dir().exists() {
            copy_store_dir(&self.live_dir(), &to);
        } else {
            std::fs::create_dir_all(&to).expect("mkdir");
        }
        to
    }

    /// One file fault of `class` on a copy, checked.
    pub(super) fn file_fault(&mut self, class: Class) -> bool {
        let copy = self.copy("copy");
        let rehomed = self.backend == Backend::Log && rehome_checkpoint(&copy);
        let Some(fault) = apply_file_fault(self.backend, class, &copy, &mut self.rng) else {
            return false;
        };
        let fault = if rehomed {
            format!("{fault} [with the index checkpoint]")
        } else {
            fault
        };
        let mut model = self.model.clone();
        let outcome = self.check(&mut model, &copy, false, false);
        self.record(class, &outcome, &fault, Some(&copy));
        if matches!(outcome, Outcome::Kept)
            && class != Class::Fifo
            && self.classes.contains(&Class::After)
            && self.rng.gen_bool(0.5)
        {
            if self.keep.is_some() {
                // What the writer after the fault starts from, kept with
                // the case if it fails.
                let before = self.scratch.path().join("before-after");
                let _ = std::fs::remove_dir_all(&before);
                copy_store_dir(&copy, &before);
            }
            self.go_on_after(class, &copy, &mut model, &fault);
        }
        let _ = std::fs::remove_dir_all(&copy);
        true
    }

    /// Writes go on after a file fault that opening and verification did
    /// not see (damage nothing acknowledged needed, or damage unseen): a
    /// worker on the faulted copy for a while, SIGKILL, and the copy
    /// checked again. Nothing acknowledged before or after may be lost.
    pub(super) fn go_on_after(
        &mut self,
        class: Class,
        copy: &Path,
        model: &mut Model,
        fault: &str,
    ) {
        let wseed = self.rng.gen();
        let run = Duration::from_millis(self.rng.gen_range(300..1500));
        let mut errors = 0;
        let mut w = Worker::spawn(self.backend, copy, wseed, &self.stderr_path("after"));
        // The store may refuse in words now (a write meeting the damage).
        let (result, _) = Self::drive(model, &mut w, run, true, true, &mut errors);
        drop(w);
        let fault = format!(
            "after [{}] {fault}: a worker (seed {wseed}) {} ms on the copy, SIGKILL; {errors} failed operations",
            class.name(),
            run.as_millis()
        );
        let outcome = self.check_after(result, model, copy, false);
        self.record(Class::After, &outcome, &fault, Some(copy));
    }

    pub(super) fn run(&mut self, budget: Duration) {
        let start = Instant::now();
        let file_classes: Vec<Class> = Class::FILE
            .iter()
            .copied()
            .filter(|c| self.classes.contains(c))
            .collect();
        while start.elapsed() < budget {
            self.round += 1;
            self.live_round();
            if start.elapsed() >= budget {
                break;
            }
            for _ in 0..self.rng.gen_range(1..=3) {
                let Some(&class) = file_classes.choose(&mut self.rng) else {
                    break;
                };
                // A class that needs more batches than the log has now
                // is tried again in a later round.
                self.file_fault(class);
            }
            if self.classes.contains(&Class::Lock) && self.rng.gen_bool(0.2) {
                self.lock_fault();
            }
            if self.classes.contains(&Class::Enospc) && self.rng.gen_bool(0.15) {
                self.enospc_fault();
            }
            if self.classes.contains(&Class::AckFail) && self.rng.gen_bool(0.2) {
                self.ack_fault();
            }
            if self.classes.contains(&Class::PowerLoss) && self.rng.gen_bool(0.4) {
                self.power_fault();
            }
        }
        self.acks += std::mem::take(&mut self.model.acks);
        let mut table = self
            .tally
            .table(self.backend, self.seed, start.elapsed().as_secs_f64());
        let _ = writeln!(
            table,
            "  {} rounds, {} changes acknowledged by the live workers; {} full-disk cases saw {} operations fail (each in one line); {} failed-acknowledgment cases saw no operation fail",
            self.round,
            self.acks,
            self.full_disks,
            self.full_disk_errors,
            self.ack_fault_quiet
        );
        eprintln!("{table}");
        append_to_named_file("SHAMAP_TORTURE_REPORT", &table);
    }
}

pub(super) fn torture(backend: Backend, default_seed: u64) {
    let seed = std::env::var("SHAMAP_TORTURE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default_seed);
    let secs = std::env::var("SHAMAP_TORTURE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_SECS);
    eprintln!(
        "torture of {}: seed {seed} (SHAMAP_TORTURE_SEED), {secs} s (SHAMAP_TORTURE_SECS)",
        backend.name()
    );
    let mut t = Torture::new(backend, seed);
    t.run(Duration::from_secs(secs));
    let cases: u64 = t.tally.counts.values().flatten().sum();
    assert!(cases > 0, "no case was run");
    assert!(
        t.acks > 0 || t.tally.failed() > 0,
        "the worker never acknowledged a change"
    );
    assert_eq!(
        t.tally.failed(),
        0,
        "{} FAILED cases on {} (seed {seed}):\n{}",
        t.tally.failed(),
        backend.name(),
        t.tally.failures.join("\n")
    );
}
