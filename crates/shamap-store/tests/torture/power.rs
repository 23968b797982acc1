//! The power-loss fault: a worker on a copy of the store on [`Mounted`]
//! (the file layer that remembers what was synced), the power cut at a
//! random moment, and the image of what the disk could hold checked.

use std::time::{Duration, Instant};

use rand::Rng;

use super::backend::Backend;
use super::crash_fs::Mounted;
use super::faults::{rehome_checkpoint, Class};
use super::protocol::Worker;
use super::supervisor::Torture;
use super::tally::Outcome;

impl Torture {
    /// A copy of the live store on the crash file system (all of it
    /// synced), a worker on it for a while, and the power cut: the image
    /// keeps what was synced and any subset of the rest. No damage: the
    /// image must open with every acknowledged root (the change in flight
    /// may be there or not), and writes go on from it half the time.
    pub(super) fn power_fault(&mut self) {
        if self.fuse_ok == Some(false) {
            return;
        }
        let live = self.live_dir();
        let fs = match Mounted::mount(Some(&live), "db") {
            Ok(fs) => fs,
            Err(why) => {
                self.fuse_ok = Some(false);
                self.tally.skipped.insert(
                    Class::PowerLoss,
                    format!("the crash file system needs FUSE as root: {why}"),
                );
                return;
            }
        };
        self.fuse_ok = Some(true);
        let db = fs.path().join("db");
        // The copy's checkpoint names the copied log (its inode here), as
        // the live one names the live log; then all of it as synced.
        let rehomed = self.backend == Backend::Log && rehome_checkpoint(&db);
        fs.sync_all();
        let mut model = self.model.clone();
        let wseed = self.rng.gen();
        let run = Duration::from_millis(self.rng.gen_range(100..2500));
        // Three cases in four, the cut on a change drawn from about as
        // many as a worker asks for in a case (learned from the others),
        // so that it falls in the middle of a spill, a batch or a sync;
        // else, or if the worker has not reached it, at `run`.
        let trigger = if self.power_changes > 0 && self.rng.gen_bool(0.75) {
            let n = self.rng.gen_range(1..=self.power_changes);
            fs.arm(n);
            format!("armed {n} changes on")
        } else {
            "not armed".to_owned()
        };
        let mut errors = 0;
        let mut w = Worker::spawn(self.backend, &db, wseed, &self.stderr_path("power"));
        let deadline = Instant::now() + run;
        let mut result = Ok(());
        while fs.cut().is_none() && Instant::now() < deadline {
            let until = (Instant::now() + Duration::from_millis(20)).min(deadline);
            match Self::pump(&mut model, &mut w, until, false, &mut errors) {
                Ok(false) => {}
                Ok(true) => {
                    result = Err("the worker's output ended before the power cut".to_owned());
                    break;
                }
                Err(why) => {
                    result = Err(why);
                    break;
                }
            }
        }
        let changes = fs.changes();
        let cut = fs.cut_now();
        if cut.starts_with("by the harness") {
            self.power_changes = self.power_changes.max(changes);
        }
        // The image first, while every change the worker asks for waits
        // at the cut; then the worker dies with the power (a process
        // waiting on a FUSE answer can only die once it is answered), and
        // what it printed before counts: an acknowledgment is printed only
        // after its sync was answered, so before the cut.
        let image = self.scratch.path().join("powerloss");
        let how = fs
            .power_loss(&mut self.rng, &image)
            .map(|h| format!("cut {cut} ({trigger}): {h}"));
        w.send_kill();
        fs.release();
        if result.is_ok() {
            result = w.kill();
        }
        let drained = Self::drain(&mut model, &mut w, false, &mut errors);
        let result = result.and(drained.map(|_| ()));
        drop(w);
        drop(fs);
        let image_db = image.join("db");
        let fault = format!(
            "{} after a worker (seed {wseed}) ran {} ms on the crash file system{}",
            how.as_deref().unwrap_or("power loss (no image)"),
            run.as_millis(),
            if rehomed {
                " [with the index checkpoint]"
            } else {
                ""
            }
        );
        let outcome = match (result, how) {
            (Err(why), _) => Outcome::Failed(why),
            (Ok(()), Err(e)) => Outcome::Failed(format!("the image could not be written: {e}")),
            // Cut before the store was made, and nothing acknowledged.
            (Ok(()), Ok(_)) if model.roots.is_empty() && !self.backend.is_store(&image_db) => {
                Outcome::Kept
            }
            (Ok(()), Ok(_)) => self.check(&mut model, &image_db, true, false),
        };
        let kept = matches!(outcome, Outcome::Kept);
        self.record(Class::PowerLoss, &outcome, &fault, Some(&image_db));
        if kept && self.classes.contains(&Class::After) && self.rng.gen_bool(0.5) {
            self.go_on_after(Class::PowerLoss, &image_db, &mut model, &fault);
        }
        let _ = std::fs::remove_dir_all(&image);
    }
}
