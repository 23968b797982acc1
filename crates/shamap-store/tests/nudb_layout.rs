//! rippled's node store as it is on a running (or killed) node:
//! `ledger.db` in WAL mode with its newest rows only in `ledger.db-wal`
//! (read, nothing created or changed beside it: a killed writer's `-wal`
//! and `-shm`, a `-wal` without `-shm`, a writer alive in another
//! process); the rotated layout with rippled's `state.db` naming its
//! directories beside a stale top-level pair; and the one-line refusals of
//! a directory holding half a store, or a FIFO or a directory in place of
//! a NuDB file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use shamap::xrpl::LedgerHeader;
use shamap_nudb_writer::{
    history, write_ledger, write_ledgers, write_rotated, write_state_db, Ledger, NudbOptions,
    WalLedgerDb, ROTATED_NAMES,
};
use shamap_store::backend::nudb::layout::Source;
use shamap_store::backend::nudb::sqlite::{opening, Opening};
use shamap_store::backend::nudb::{audit, read_ledgers, AuditOptions, AuditReport, NudbStore};
use shamap_store::{open, open_with, Access, NodeStore, OpenOptions, Opened};

use crate::nudb::{base, seeded_history};
use crate::support::{files_under, seed};

/// Every regular file under `dir` with its bytes (a FIFO or directory by
/// name only: reading a FIFO would block): what must not change.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    files_under(dir)
        .into_iter()
        .map(|p| {
            let regular = std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_file());
            let bytes = if regular {
                std::fs::read(&p).expect("read")
            } else {
                b"(not a regular file)".to_vec()
            };
            (p, bytes)
        })
        .collect()
}

fn audit_all(store: &NudbStore) -> AuditReport {
    audit(store, &AuditOptions::default(), &|_| {}).expect("audit runs")
}

fn rows(headers: &[LedgerHeader]) -> Vec<(u32, shamap::Hash256)> {
    headers.iter().map(|h| (h.seq, h.hash())).collect()
}

/// The ledgers' rows as `ledger_hashes` and `read_ledgers` give them, and
/// the audit over `ledger.db`: every ledger whole.
fn assert_every_row_read(db: &Path, ledger_db: &Path, ledgers: &[Ledger], what: &str) {
    let headers: Vec<LedgerHeader> = ledgers.iter().map(|l| l.header).collect();
    let store = NudbStore::open(db).expect("open");
    assert_eq!(store.ledger_db(), Some(ledger_db), "{what}");
    let got = store.ledger_hashes().expect("ledger.db read");
    assert_eq!(got, Some(rows(&headers)), "{what}");
    let last = headers.last().expect("ledgers");
    let one = read_ledgers(ledger_db, Some(last.seq)).expect("one row");
    assert_eq!(one.len(), 1, "{what}");
    assert_eq!(one[0].hash, last.hash(), "{what}");
    assert_eq!(one[0].account_hash, Some(last.account_hash), "{what}");
    let r = audit_all(&store);
    assert!(r.ledgers_from.ends_with("ledger.db"), "{what}");
    assert_eq!(r.ledgers.len(), ledgers.len(), "{what}");
    assert!(r.is_whole(), "{what}: {:?}", r.nodes);
}

/// A store in `root/nudb`, and `ledger.db` in `root` as a killed rippled
/// leaves it: the first `committed` rows in the database file, the rest
/// only in `ledger.db-wal`, with its `-shm`. Copied aside while the writer
/// (in `live`) is open, so no process holds them.
fn killed_writer_layout(root: &Path, live: &Path, ledgers: &[Ledger], committed: usize) -> PathBuf {
    let db = root.join("nudb");
    write_ledgers(&db, NudbOptions::default(), ledgers).expect("write");
    let headers: Vec<LedgerHeader> = ledgers.iter().map(|l| l.header).collect();
    let mut w = WalLedgerDb::create(&live.join("ledger.db")).expect("ledger.db");
    w.insert(&headers[..committed]).expect("rows");
    w.checkpoint().expect("checkpoint");
    for h in &headers[committed..] {
        w.insert(std::slice::from_ref(h)).expect("row");
    }
    let copied = w.copy_files_to(root).expect("copy");
    assert_eq!(copied.len(), 3, "ledger.db, -wal and -shm: {copied:?}");
    drop(w);
    db
}

/// rippled's `ledger.db` as a killed rippled leaves it: rows only in the
/// WAL are read (the database file alone has the checkpointed ones), and
/// the directory's files and bytes are unchanged; then the same with the
/// `-wal` but no `-shm`.
#[test]
fn ledger_db_rows_only_in_the_wal_are_read_and_nothing_changes() {
    let (s, ledgers) = seeded_history(43, 5);
    let root = tempfile::tempdir().expect("tempdir");
    let live = tempfile::tempdir().expect("tempdir");
    let db = killed_writer_layout(root.path(), live.path(), &ledgers, 2);
    let ledger_db = root.path().join("ledger.db");
    let wal = root.path().join("ledger.db-wal");
    let shm = root.path().join("ledger.db-shm");
    assert!(std::fs::metadata(&wal).expect("wal").len() > 0);

    // The database file alone (what `immutable=1` reads) lacks the rows in
    // the WAL: they must come from the WAL.
    let alone = tempfile::tempdir().expect("tempdir");
    std::fs::copy(&ledger_db, alone.path().join("ledger.db")).expect("copy");
    let in_file = read_ledgers(&alone.path().join("ledger.db"), None).expect("file alone");
    assert_eq!(in_file.len(), 2, "seed {s}: the checkpointed rows only");

    // Opened as `want`, every row read, and no file created or changed.
    let read_changing_nothing = |want: Opening, what: &str, unchanged: &str| {
        let before = snapshot(root.path());
        assert_eq!(opening(&ledger_db), Ok(want));
        assert_every_row_read(&db, &ledger_db, &ledgers, what);
        assert_eq!(snapshot(root.path()), before, "seed {s}: {unchanged}");
    };
    read_changing_nothing(
        Opening::SharedIndexReadOnly,
        "a killed writer's -wal and -shm",
        "no file created, none changed",
    );

    std::fs::remove_file(&shm).expect("rm shm");
    read_changing_nothing(
        Opening::PrivateIndex,
        "a -wal without -shm",
        "no -shm created, nothing changed",
    );
    assert!(!shm.exists());

    // Once rippled stops cleanly the WAL is gone: the database file alone,
    // immutable.
    std::fs::remove_file(&wal).expect("rm wal");
    assert_eq!(opening(&ledger_db), Ok(Opening::Immutable));
    let before = snapshot(root.path());
    assert_eq!(read_ledgers(&ledger_db, None).expect("read").len(), 2);
    assert_eq!(snapshot(root.path()), before);
}

/// The environment variable naming the child writer's `ledger.db`.
const WAL_WRITER: &str = "SHAMAP_NUDB_WAL_WRITER";

/// The child of [`ledger_db_beside_a_live_writer_then_killed`]: writes the
/// history's rows into the `ledger.db` `SHAMAP_NUDB_WAL_WRITER` names (two
/// checkpointed, the rest only in the WAL), says so in a file beside the
/// directory (`<dir>.ready`), and stays open until it is killed.
#[test]
#[ignore = "the writer process of ledger_db_beside_a_live_writer_then_killed"]
fn wal_writer_child() {
    let Some(path) = std::env::var_os(WAL_WRITER).map(PathBuf::from) else {
        return;
    };
    let s = seed(44);
    let headers: Vec<LedgerHeader> = history(base(), 5, s).iter().map(|l| l.header).collect();
    let mut w = WalLedgerDb::create(&path).expect("ledger.db");
    w.insert(&headers[..2]).expect("rows");
    w.checkpoint().expect("checkpoint");
    w.insert(&headers[2..]).expect("rows");
    let dir = path.parent().expect("dir");
    std::fs::write(dir.with_extension("ready"), b"ready").expect("ready file");
    std::thread::sleep(Duration::from_secs(120));
}

/// `ledger.db` held open by a writer in another process (its locks on the
/// `-shm`): every row read through the writer's index, nothing changed;
/// then the writer killed with SIGKILL, which leaves the files as they
/// were: every row read again, nothing changed.
#[test]
fn ledger_db_beside_a_live_writer_then_killed() {
    let (s, ledgers) = seeded_history(44, 5);
    let root = tempfile::tempdir().expect("tempdir");
    let dir = root.path().join("db");
    let db = dir.join("nudb");
    write_ledgers(&db, NudbOptions::default(), &ledgers).expect("write");
    let ledger_db = dir.join("ledger.db");
    let ready = dir.with_extension("ready");
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "nudb_layout::wal_writer_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(WAL_WRITER, &ledger_db)
        .env("SHAMAP_STORE_SEED", s.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the writer");
    let start = Instant::now();
    while !ready.exists() {
        if let Some(status) = child.try_wait().expect("poll the writer") {
            panic!("the writer ended before writing: {status}");
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the writer is not ready after 60 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let before = snapshot(&dir);
    assert!(before.contains_key(&dir.join("ledger.db-wal")));
    assert!(before.contains_key(&dir.join("ledger.db-shm")));
    assert_eq!(opening(&ledger_db), Ok(Opening::SharedIndexReadOnly));
    assert_every_row_read(&db, &ledger_db, &ledgers, "beside a live writer");
    assert_eq!(snapshot(&dir), before, "seed {s}: beside a live writer");
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    assert_eq!(snapshot(&dir), before, "the kill leaves the files");
    assert_every_row_read(&db, &ledger_db, &ledgers, "after the writer was killed");
    assert_eq!(snapshot(&dir), before, "seed {s}: after the kill");
}

/// rippled's rotated layout as a node with `online_delete` leaves it:
/// `rippledb.*` directories, a stale top-level pair of another store
/// (written last, so by the data's age alone it would be read), and
/// `state.db` in the directory above naming the two rotated ones: those are
/// read (writable first), every ledger whole, the stale pair not read.
#[test]
fn state_db_names_the_rotated_directories_and_a_stale_pair_is_not_read() {
    let (s, ledgers) = seeded_history(45, 6);
    let root = tempfile::tempdir().expect("tempdir");
    let db = root.path().join("nudb");
    write_rotated(&db, NudbOptions::default(), &ledgers, 3).expect("rotated");
    // Another store's ledger: a history of its own, from another seed.
    let stale = history(base(), 1, s ^ 0x5eed).pop().expect("a ledger");
    write_ledger(&db, NudbOptions::default(), &stale).expect("stale pair");
    let newer = std::time::SystemTime::now() + Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(db.join("nudb.dat"))
        .and_then(|f| f.set_modified(newer))
        .expect("the stale pair written last");
    let (archive, writable) = (db.join(ROTATED_NAMES[0]), db.join(ROTATED_NAMES[1]));

    // Without state.db the data's age decides: the pair, written last.
    let store = NudbStore::open(&db).expect("open");
    assert_eq!(store.layout().source, Source::Single);
    assert_eq!(store.layout().dirs, vec![db.clone()]);
    let mut not_read = vec![archive.clone(), writable.clone()];
    not_read.sort();
    let mut ignored = store.layout().ignored.clone();
    ignored.sort();
    assert_eq!(ignored, not_read, "the order is the data's age");
    assert!(
        store.layout().describe().contains("not read"),
        "{}",
        store.layout().describe()
    );
    drop(store);

    let state_db = root.path().join("state.db");
    write_state_db(&state_db, &writable, &archive, ledgers[3].header.seq).expect("state.db");
    let before = snapshot(root.path());
    let Opened::Nudb(store) = open_with(&db, &OpenOptions::new(Access::Read)).expect("opens")
    else {
        panic!("not opened as NuDB");
    };
    let l = store.layout();
    assert_eq!(l.source, Source::StateDb(state_db.clone()));
    assert_eq!(l.dirs, vec![writable.clone(), archive.clone()]);
    assert_eq!(l.ignored, vec![db.clone()]);
    let parts: Vec<&Path> = store.parts().iter().map(|p| p.dir.as_path()).collect();
    assert_eq!(parts, vec![writable.as_path(), archive.as_path()]);
    let text = l.describe();
    for part in [
        state_db.display().to_string(),
        format!("writable {}", writable.display()),
        format!("archive {}", archive.display()),
        format!(
            "not read (stale: state.db does not name them): the nudb.dat and nudb.key in {}",
            db.display()
        ),
    ] {
        assert!(text.contains(&part), "{text}\nlacks {part}");
    }
    for l in &ledgers {
        for (h, _) in l.objects() {
            assert!(store.contains(&h).expect("lookup"), "seed {s}: {h}");
        }
    }
    assert!(
        !store.contains(&stale.hash()).expect("lookup"),
        "the stale pair read"
    );
    let r = audit_all(&store);
    assert!(r.is_whole(), "seed {s}: {:?}", r.nodes);
    let found: Vec<_> = r.ledgers.iter().map(|l| l.hash).collect();
    let want: Vec<_> = ledgers.iter().map(Ledger::hash).collect();
    assert_eq!(found, want, "seed {s}: every rotated ledger, no stale one");
    drop(store);
    assert_eq!(snapshot(root.path()), before, "nothing created or changed");

    // rippled stores full paths; after the configured path moved it
    // resolves them by name under the new one, and so does the reader.
    write_state_db(
        &state_db,
        &Path::new("/var/lib/rippled/db/nudb").join(ROTATED_NAMES[1]),
        &Path::new("/var/lib/rippled/db/nudb").join(ROTATED_NAMES[0]),
        ledgers[3].header.seq,
    )
    .expect("state.db");
    let store = NudbStore::open(&db).expect("open");
    assert_eq!(store.layout().dirs, vec![writable.clone(), archive.clone()]);
    drop(store);

    // A directory state.db names that is not there: refused in one line,
    // as rippled refuses to start.
    write_state_db(&state_db, &db.join("rippledb.ffff"), &archive, 1).expect("state.db");
    let e = NudbStore::open(&db)
        .expect_err("a missing directory")
        .to_string();
    assert!(e.contains("state.db") && e.contains("rippledb.ffff"), "{e}");
    assert!(!e.contains('\n'), "{e}");
}

/// Opening `dir` (directly and through the one store opening) fails in one
/// line holding `expect`, within 30 s (a FIFO opened for reading would
/// block forever).
fn assert_refused(dir: &Path, expect: &str) {
    let (tx, rx) = std::sync::mpsc::channel();
    let d = dir.to_owned();
    std::thread::spawn(move || {
        let direct = NudbStore::open(&d).map(|_| ()).map_err(|e| e.to_string());
        let through = open(&d, Access::Read)
            .map(|_| ())
            .map_err(|e| e.to_string());
        let _ = tx.send((direct, through));
    });
    let (direct, through) = rx
        .recv_timeout(Duration::from_secs(30))
        .unwrap_or_else(|_| panic!("{}: opening still blocked after 30 s", dir.display()));
    for e in [direct, through] {
        let e = e.expect_err(expect);
        assert!(e.contains(expect), "{e}\nlacks: {expect}");
        assert!(!e.contains('\n'), "{e}");
        assert!(!e.contains("neither a node log"), "{e}");
    }
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// Half a store and files of the wrong kind are named at opening: a
/// `nudb.dat` without `nudb.key` and the reverse, a `nudb.dat` or
/// `nudb.key` that is a FIFO (never opened: no hang) or a directory, and
/// the same inside a rotated directory.
#[test]
fn half_a_store_and_a_fifo_or_directory_are_named_at_opening() {
    let l = base();
    let whole = |dir: &Path| {
        write_ledger(dir, NudbOptions::default(), &l).expect("write");
    };
    let root = tempfile::tempdir().expect("tempdir");
    type Case = (&'static str, fn(&Path), &'static str);
    let cases: [Case; 6] = [
        (
            "no key file",
            |d| std::fs::remove_file(d.join("nudb.key")).expect("rm"),
            "nudb.key is missing beside nudb.dat",
        ),
        (
            "no data file",
            |d| std::fs::remove_file(d.join("nudb.dat")).expect("rm"),
            "nudb.dat is missing beside nudb.key",
        ),
        (
            "data file a FIFO",
            |d| {
                std::fs::remove_file(d.join("nudb.dat")).expect("rm");
                mkfifo(&d.join("nudb.dat"));
            },
            "nudb.dat: a FIFO (named pipe), not a file",
        ),
        (
            "key file a FIFO",
            |d| {
                std::fs::remove_file(d.join("nudb.key")).expect("rm");
                mkfifo(&d.join("nudb.key"));
            },
            "nudb.key: a FIFO (named pipe), not a file",
        ),
        (
            "key file a directory",
            |d| {
                std::fs::remove_file(d.join("nudb.key")).expect("rm");
                std::fs::create_dir(d.join("nudb.key")).expect("mkdir");
            },
            "nudb.key: a directory, not a file",
        ),
        (
            "data file a directory",
            |d| {
                std::fs::remove_file(d.join("nudb.dat")).expect("rm");
                std::fs::create_dir(d.join("nudb.dat")).expect("mkdir");
            },
            "nudb.dat: a directory, not a file",
        ),
    ];
    for (i, (what, damage, expect)) in cases.into_iter().enumerate() {
        let dir = root.path().join(format!("case{i}"));
        whole(&dir);
        damage(&dir);
        let before = snapshot(&dir);
        assert_refused(&dir, expect);
        assert_eq!(snapshot(&dir), before, "{what}");
        // Inside a rotated directory, named the same.
        let rotated = root.path().join(format!("rotated{i}"));
        whole(&rotated.join(ROTATED_NAMES[0]));
        whole(&rotated.join(ROTATED_NAMES[1]));
        damage(&rotated.join(ROTATED_NAMES[1]));
        assert_refused(&rotated, expect);
        assert_refused(&rotated, ROTATED_NAMES[1]);
    }
    // Nothing NuDB at all: still "no store", from the one opening.
    let empty = root.path().join("empty");
    std::fs::create_dir(&empty).expect("mkdir");
    let e = open(&empty, Access::Read)
        .map(|_| ())
        .expect_err("empty")
        .to_string();
    assert!(e.contains("no store here"), "{e}");
}
