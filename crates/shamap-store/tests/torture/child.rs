//! The children: the worker, which changes the store and announces each
//! change before and after, and the checker, which opens a store and
//! verifies every retained root. Both are this test binary re-run (see
//! the `#[test]` functions in `mod.rs`).

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use shamap::{Hash256, MapKind, ShaMap};
use shamap_store::{
    fail_acknowledgments, gc, import_ledger, meta, verify_all, AckFault, AckStage, BackedMap,
    NodeStore, StoreError, StoredMap,
};

use super::backend::Backend;
use super::oracle::{apply, changes, root_of, Contents};
use super::{
    BACKED_BUDGET, ENV_ACK_FAULT, ENV_BACKEND, ENV_DIR, ENV_HOLD, ENV_READ_ONLY, ENV_WORKER_SEED,
    TAG,
};
use crate::support::with_budget;

pub(super) fn roots_line(roots: &[meta::RetainedRoot]) -> String {
    roots
        .iter()
        .map(|r| format!("{}={}", r.name, r.hash.to_hex()))
        .collect::<Vec<_>>()
        .join(" ")
}

// ---- the children ----

/// One protocol line to the parent, flushed: once the parent has read it,
/// it is acknowledged.
/// Appends `line` to the file `SHAMAP_TORTURE_TRACE` names, if any: every
/// protocol line of every child, for reading a FAILED case afterwards.
pub(super) fn trace(who: &str, line: &str) {
    append_to_named_file("SHAMAP_TORTURE_TRACE", &format!("{who}: {line}"));
}

/// Appends `line` to the file the environment variable `var` names, if it
/// is set (best effort: a file that cannot be written is passed over).
pub(super) fn append_to_named_file(var: &str, line: &str) {
    if let Ok(path) = std::env::var(var) {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(f, "{line}");
        }
    }
}

pub(super) fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{TAG}{line}");
    let _ = out.flush();
}

/// An error as one protocol word-safe line, and whether it was more than
/// one line.
pub(super) fn one_line(e: &dyn std::fmt::Display) -> String {
    let s = e.to_string();
    if s.contains('\n') {
        format!("MULTILINE {}", s.replace('\n', " | "))
    } else {
        s
    }
}

pub(super) fn child_env() -> Option<(PathBuf, Backend)> {
    let dir = std::env::var(ENV_DIR).ok();
    let backend = std::env::var(ENV_BACKEND)
        .ok()
        .and_then(|b| Backend::from_name(&b));
    match (dir, backend) {
        (Some(d), Some(b)) => Some((PathBuf::from(d), b)),
        _ => {
            eprintln!("not a test on its own: a child process of the torture tests, which set {ENV_DIR} and {ENV_BACKEND}");
            None
        }
    }
}

/// The contents of the state map at `root`, read through a `StoredMap`.
pub(super) fn read_map(store: &dyn NodeStore, root: Hash256) -> Result<Contents, StoreError> {
    if root.is_zero() {
        return Ok(Contents::new());
    }
    StoredMap::open(store, root, MapKind::AccountState)?
        .iter()
        .collect()
}

pub(super) fn worker() {
    let Some((dir, backend)) = child_env() else {
        return;
    };
    let seed: u64 = std::env::var(ENV_WORKER_SEED)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let hold = std::env::var(ENV_HOLD).is_ok();
    if let Ok(f) = std::env::var(ENV_ACK_FAULT) {
        let parts: Vec<&str> = f.split(',').collect();
        let [stage, errno, after] = parts.as_slice() else {
            panic!("{ENV_ACK_FAULT}={f:?}: not stage,errno,after");
        };
        let stage = match *stage {
            "open" => AckStage::Open,
            _ => AckStage::Record,
        };
        let fault = AckFault {
            stage,
            errno: errno.parse().expect("errno"),
            after: after.parse().expect("after"),
        };
        fail_acknowledgments(&dir, Some(fault));
    }
    let mut rng = SmallRng::seed_from_u64(seed);
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = std::io::stdin().read_line(&mut line);
            stop.store(true, Ordering::SeqCst);
        });
    }
    let open = |stop: &AtomicBool| -> Option<Box<dyn NodeStore>> {
        loop {
            match backend
                .open(&dir)
                .and_then(|s| meta::retained(&*s).map(|r| (s, r)))
            {
                Ok((s, roots)) => {
                    say(&format!("opened {}", roots_line(&roots)));
                    return Some(s);
                }
                Err(e) => {
                    say(&format!("refused {}", one_line(&e)));
                    std::thread::sleep(Duration::from_millis(100));
                    if stop.load(Ordering::SeqCst) {
                        return None;
                    }
                }
            }
        }
    };
    let Some(mut store) = open(&stop) else {
        say("closed");
        return;
    };
    loop {
        if stop.load(Ordering::SeqCst) {
            drop(store);
            say("closed");
            return;
        }
        let op = rng.gen_range(0..100);
        let done = match op {
            0..=39 => worker_import(&*store, &mut rng),
            40..=77 => worker_commit(&*store, &mut rng),
            78..=91 => worker_gc(&*store, &mut rng),
            _ => Err(None),
        };
        match done {
            Ok(()) => continue,
            Err(Some((what, e))) => {
                say(&format!("error {what} {}", one_line(&e)));
                if hold {
                    // Still the writer, but no more changes: the failed
                    // one stays in flight until a check shows which.
                    while !stop.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    continue;
                }
            }
            Err(None) if hold => continue,
            // A clean close and reopening.
            Err(None) => {}
        }
        drop(store);
        store = match open(&stop) {
            Some(s) => s,
            None => {
                say("closed");
                return;
            }
        };
    }
}

pub(super) type WorkerResult = Result<(), Option<(&'static str, StoreError)>>;

/// A new import (`imp-<seed>`) of the last imported version with changes.
pub(super) fn worker_import(store: &dyn NodeStore, rng: &mut SmallRng) -> WorkerResult {
    let fail = |e| Some(("import", e));
    let roots = meta::retained(store).map_err(fail)?;
    let base = roots
        .iter()
        .rev()
        .find(|r| r.name.starts_with("imp-"))
        .map_or(Hash256::ZERO, |r| r.hash);
    let contents = read_map(store, base).map_err(fail)?;
    let seed: u64 = rng.gen();
    let name = format!("imp-{seed:016x}");
    say(&format!("begin import {name} {} {seed}", base.to_hex()));
    let next = apply(&contents, seed);
    let mut map = ShaMap::new(MapKind::AccountState);
    for (k, v) in &next {
        map.insert(*k, v).expect("fresh key");
    }
    let r = import_ledger(store, &name, Some(&map.snapshot()), None, None, &mut |_| {})
        .map_err(fail)?;
    say(&format!("ack import {name} {}", r.recorded.to_hex()));
    Ok(())
}

/// A backed-map commit of `head` with changes.
pub(super) fn worker_commit(store: &dyn NodeStore, rng: &mut SmallRng) -> WorkerResult {
    let fail = |e| Some(("commit", e));
    let roots = meta::retained(store).map_err(fail)?;
    let base = roots
        .iter()
        .find(|r| r.name == "head")
        .map_or(Hash256::ZERO, |r| r.hash);
    let contents = read_map(store, base).map_err(fail)?;
    let opts = with_budget(BACKED_BUDGET);
    let mut map = if base.is_zero() {
        BackedMap::new(store, MapKind::AccountState, opts)
    } else {
        BackedMap::open(store, base, MapKind::AccountState, opts).map_err(fail)?
    };
    let seed: u64 = rng.gen();
    say(&format!("begin commit head {} {seed}", base.to_hex()));
    for (k, v) in changes(&contents, seed) {
        match v {
            Some(v) => map.upsert(k, &v).map(|_| ()),
            None => map.remove(&k).map(|_| ()),
        }
        .map_err(fail)?;
    }
    let root = map.commit("head").map_err(fail)?;
    say(&format!("ack commit head {}", root.to_hex()));
    Ok(())
}

/// gc keeping the last import, `head`, and now and then another root.
pub(super) fn worker_gc(store: &dyn NodeStore, rng: &mut SmallRng) -> WorkerResult {
    let fail = |e| Some(("gc", e));
    let roots = meta::retained(store).map_err(fail)?;
    let mut keep: Vec<Hash256> = Vec::new();
    if let Some(r) = roots.iter().rev().find(|r| r.name.starts_with("imp-")) {
        keep.push(r.hash);
    }
    if let Some(r) = roots.iter().find(|r| r.name == "head") {
        keep.push(r.hash);
    }
    if rng.gen_bool(0.3) {
        if let Some(r) = roots.choose(rng) {
            if !keep.contains(&r.hash) {
                keep.push(r.hash);
            }
        }
    }
    if keep.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = keep.iter().map(|h| h.to_hex()).collect();
    say(&format!("begin gc {}", list.join(" ")));
    gc(store, &keep).map_err(fail)?;
    say("ack gc");
    Ok(())
}

/// The checker: opens the store (read-only when asked), lists the retained
/// roots, verifies each and reads it whole, rebuilding it in memory.
pub(super) fn checker() {
    let Some((dir, backend)) = child_env() else {
        return;
    };
    let read_only = std::env::var(ENV_READ_ONLY).is_ok();
    let opened = if read_only {
        backend.open_read_only(&dir)
    } else {
        backend.open(&dir)
    };
    let store = match opened.and_then(|s| meta::retained(&*s).map(|r| (s, r))) {
        Ok((store, roots)) => {
            say(&format!("opened {}", roots_line(&roots)));
            for r in &roots {
                let checked = verify_all(&*store, &r.hash).and_then(|report| {
                    let contents = read_map(&*store, r.hash)?;
                    Ok((report.leaves, contents.len(), root_of(&contents)))
                });
                match checked {
                    Ok((leaves, items, rebuilt)) => say(&format!(
                        "root {} ok {leaves} {items} {}",
                        r.hash.to_hex(),
                        rebuilt.to_hex()
                    )),
                    Err(e) => say(&format!("root {} err {}", r.hash.to_hex(), one_line(&e))),
                }
            }
            Some(store)
        }
        Err(e) => {
            say(&format!("refused {}", one_line(&e)));
            None
        }
    };
    drop(store);
    say("done");
}
