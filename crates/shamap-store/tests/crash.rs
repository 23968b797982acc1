//! Crash safety: a child process imports version after version into a
//! store (or commits a backed map, version after version); the test kills
//! it with SIGKILL at random moments, reopens the store and verifies the
//! last recorded root completely.
//!
//! The child is this very test binary, re-run with an environment variable
//! naming the store directory and filtered to the child test, which then
//! works forever. The child entry points are `#[ignore]`d, with the reason
//! shown in every normal run: they are not tests on their own, only the
//! bodies of the parents' child processes (started with `--ignored`). The
//! parents assert in every run. The bodies are generic over the store, so
//! that `rocks.rs` runs the same tests on RocksDB.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shamap::{Key, MapKind};
use shamap_store::{
    import_ledger, meta, verify_all, BackedMap, BackedOptions, FjallStore, NodeStore, StoredMap,
};

use crate::support::{random_map, seed};

const CHILD_ENV: &str = "SHAMAP_STORE_CRASH_DIR";
const KILLS: usize = 12;
const BACKED_CHILD_ENV: &str = "SHAMAP_STORE_BACKED_CRASH_DIR";

/// The store directory a child entry point works in: `env`, set by its
/// parent. Run by hand without it (`--ignored`), the entry point has no
/// store to work on and says so instead of pretending to test anything.
fn child_dir(env: &str) -> Option<String> {
    let dir = std::env::var(env).ok();
    if dir.is_none() {
        eprintln!("not a test on its own: the child process of a SIGKILL test, which sets {env}");
    }
    dir
}

fn open_fjall(dir: &Path) -> FjallStore {
    FjallStore::open(dir).expect("open the store")
}

#[test]
#[ignore = "child process of sigkill_at_random_points_never_breaks_the_last_recorded_root"]
fn crash_child() {
    import_child(CHILD_ENV, open_fjall);
}

#[test]
fn sigkill_at_random_points_never_breaks_the_last_recorded_root() {
    kill_imports("crash::crash_child", CHILD_ENV, 30, open_fjall);
}

#[test]
#[ignore = "child process of sigkill_during_backed_commits_reopens_at_the_last_committed_root"]
fn backed_crash_child() {
    backed_child(BACKED_CHILD_ENV, open_fjall);
}

#[test]
fn sigkill_during_backed_commits_reopens_at_the_last_committed_root() {
    kill_backed_commits(
        "crash::backed_crash_child",
        BACKED_CHILD_ENV,
        31,
        open_fjall,
    );
}

/// The child's loop (in the directory `env` names): import a 4000-entry map,
/// then new versions with 400 changed entries each, for ever. Version `v`
/// sets the data of its changed keys to `v` repeated, so the parent can
/// check the contents of whatever version it finds.
pub(crate) fn import_child<S: NodeStore>(env: &str, open: fn(&Path) -> S) {
    import_child_collecting(env, open, None, |_| {});
}

/// [`import_child`], with `gc` keeping only the newest version after every
/// `gc_every` imports, then `after_gc` (so a kill can also land in a sweep,
/// and in what follows one: the node log's reclaim).
pub(crate) fn import_child_collecting<S: NodeStore>(
    env: &str,
    open: fn(&Path) -> S,
    gc_every: Option<u32>,
    after_gc: fn(&S),
) {
    let Some(dir) = child_dir(env) else {
        return;
    };
    let store = open(Path::new(&dir));
    let start = meta::retained(&store).expect("meta").len() as u32;
    let (mut map, model) = random_map(MapKind::AccountState, 4000, 99);
    let keys: Vec<Key> = model.keys().copied().collect();
    let mut v = start;
    loop {
        for k in keys.iter().skip(v as usize % 10).step_by(10) {
            map.update(*k, &v.to_be_bytes().repeat(4)).expect("update");
        }
        let s = map.snapshot();
        // A full import each time (most nodes are already stored and
        // skipped), so a kill can land in the node writes or the record.
        let r = import_ledger(&store, &format!("v{v}"), Some(&s), None, None, &mut |_| {})
            .expect("import");
        v += 1;
        if gc_every.is_some_and(|n| v.is_multiple_of(n)) {
            shamap_store::gc(&store, &[r.recorded]).expect("gc");
            after_gc(&store);
        }
    }
}

/// Re-runs this test binary as the child `test` (with `env` set to `dir`),
/// lets it work for `ms` milliseconds, kills it with SIGKILL and checks it
/// did not end on its own.
fn run_and_kill(
    test: &str,
    env: &str,
    dir: &std::path::Path,
    ms: u64,
    log: &std::path::Path,
    round: usize,
) {
    let exe = std::env::current_exe().expect("test binary");
    let mut child = Command::new(exe)
        .args([
            "--exact",
            test,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(env, dir)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).expect("log file"))
        .spawn()
        .expect("spawn child");
    std::thread::sleep(Duration::from_millis(ms));
    child.kill().expect("SIGKILL");
    let status = child.wait().expect("reap");
    assert_eq!(
        status.signal(),
        Some(libc::SIGKILL),
        "round {round}: the child ended on its own: {}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
}

/// Runs the child test `child` (with `env` naming a fresh store directory)
/// [`KILLS`] times, each time killing it after a seeded random number of
/// milliseconds from `ms`, and calls `after(dir, round)` after each kill.
fn kill_in_rounds(
    child: &str,
    env: &str,
    default_seed: u64,
    ms: std::ops::Range<u64>,
    mut after: impl FnMut(&Path, usize),
) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = SmallRng::seed_from_u64(seed(default_seed));
    let logs = tempfile::tempdir().expect("tempdir");
    let log = logs.path().join("child.log");
    for round in 0..KILLS {
        let wait = rng.gen_range(ms.clone());
        run_and_kill(child, env, dir.path(), wait, &log, round);
        after(dir.path(), round);
    }
}

/// Kills the import child `child` (run with `env`) at random moments and
/// verifies the last recorded root after each kill.
pub(crate) fn kill_imports<S: NodeStore>(
    child: &str,
    env: &str,
    default_seed: u64,
    open: fn(&Path) -> S,
) {
    let mut recorded = Vec::new();
    kill_in_rounds(child, env, default_seed, 120..500, |dir, round| {
        let store = open(dir);
        let roots = meta::retained(&store).expect("retained list readable");
        if let Some(last) = roots.last() {
            let r = verify_all(&store, &last.hash)
                .unwrap_or_else(|e| panic!("round {round}: last root {}: {e}", last.name));
            assert_eq!(r.leaves, 4000, "round {round}");
            let sm = StoredMap::open(&store, last.hash, MapKind::AccountState).expect("open");
            assert_eq!(sm.iter().count(), 4000);
        }
        recorded.push(roots.len());
    });
    eprintln!("retained roots after each kill: {recorded:?}");
    assert!(
        recorded.last().copied().unwrap_or(0) > 0,
        "the child never recorded a root"
    );
}

/// The child of the backed-map test (in the directory `env` names): a
/// [`BackedMap`] with a 192 KiB budget (so dirty nodes spill to the store
/// between commits) that sets 400 keys per version and commits each version
/// as `head`, for ever.
pub(crate) fn backed_child<S: NodeStore>(env: &str, open: fn(&Path) -> S) {
    backed_child_with(env, open, false);
}

/// [`backed_child`]; with `prune`, the map prunes what each commit
/// replaces ([`BackedOptions::prune_replaced`]), so kills also land in
/// commits that delete.
pub(crate) fn backed_child_with<S: NodeStore>(env: &str, open: fn(&Path) -> S, prune: bool) {
    let Some(dir) = child_dir(env) else {
        return;
    };
    let store = open(Path::new(&dir));
    let head = meta::retained(&store)
        .expect("meta")
        .into_iter()
        .find(|r| r.name == "head");
    let opts = BackedOptions {
        budget_bytes: 192 << 10,
        prune_replaced: prune,
        ..BackedOptions::default()
    };
    let mut map = match &head {
        Some(r) => BackedMap::open(&store, r.hash, MapKind::AccountState, opts).expect("open head"),
        None => BackedMap::new(&store, MapKind::AccountState, opts),
    };
    let (_, model) = random_map(MapKind::AccountState, 4000, 98);
    let keys: Vec<Key> = model.keys().copied().collect();
    if head.is_none() {
        for (k, d) in &model {
            map.upsert(*k, d).expect("upsert");
        }
        map.commit("head").expect("first commit");
    }
    let mut v = 0u32;
    loop {
        for k in keys.iter().skip(v as usize % 10).step_by(10) {
            map.upsert(*k, &v.to_be_bytes().repeat(4)).expect("upsert");
        }
        map.commit("head").expect("commit");
        v += 1;
    }
}

/// Kills the backed-map child `child` (run with `env`) at random moments
/// and verifies the committed `head` after each kill.
pub(crate) fn kill_backed_commits<S: NodeStore>(
    child: &str,
    env: &str,
    default_seed: u64,
    open: fn(&Path) -> S,
) {
    let heads = std::cell::RefCell::new(Vec::new());
    let check = |dir: &Path, round: usize| {
        let store = open(dir);
        let roots = meta::retained(&store).expect("retained list readable");
        if let Some(head) = roots.iter().find(|r| r.name == "head") {
            let r = verify_all(&store, &head.hash)
                .unwrap_or_else(|e| panic!("round {round}: head {}: {e}", head.hash));
            assert_eq!(r.leaves, 4000, "round {round}");
            let m = BackedMap::open(
                &store,
                head.hash,
                MapKind::AccountState,
                BackedOptions::default(),
            )
            .expect("open head");
            let mut n = 0;
            m.for_each(&mut |_, _| {
                n += 1;
                std::ops::ControlFlow::Continue(())
            })
            .expect("scan");
            assert_eq!(n, 4000, "round {round}");
            heads.borrow_mut().push(head.hash);
        }
    };
    kill_in_rounds(child, env, default_seed, 150..600, check);
    // On a loaded machine a child may not get past its first commit within
    // those windows; then rounds with longer ones (in a new store), so the
    // test still sees several commits survive kills rather than pass
    // without them.
    for _ in 0..3 {
        let mut distinct = heads.borrow().clone();
        distinct.dedup();
        if distinct.len() > 1 {
            break;
        }
        kill_in_rounds(child, env, default_seed ^ 1, 1000..4000, check);
    }
    let mut heads = heads.into_inner();
    heads.dedup();
    eprintln!("distinct heads seen after kills: {}", heads.len());
    assert!(
        heads.len() > 1,
        "the child never committed twice across kills"
    );
}
