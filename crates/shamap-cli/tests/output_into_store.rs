//! Never write over what is read: `export --out` and `sync --to` refuse,
//! in one line and with status 2, a destination inside the store they read
//! (its `nudb.dat`, `nudb.key`, `ledger.db`, a file of a rotated
//! `rippledb.*` directory, a node log's files, a link or a `..` path
//! leading into it), and the store's bytes are the same afterwards; a
//! path elsewhere with the same file name is written.

use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use shamap_nudb_writer::{write_rotated, Ledger, NudbOptions};

use crate::support::{
    assert_contains, history_38129, import, ledger_38129, nudb_with_ledger_db, ok, one_error_line,
    shamap, LEDGER_38129,
};

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// What a tree holds: every file's bytes and every link's target, by path
/// (a file created, removed or changed anywhere under `root` shows).
#[derive(Debug, PartialEq, Eq)]
enum Entry {
    File(Vec<u8>),
    Link(PathBuf),
    Dir,
}

fn snapshot(root: &Path) -> BTreeMap<PathBuf, Entry> {
    let mut out = BTreeMap::new();
    let mut todo = vec![root.to_owned()];
    while let Some(p) = todo.pop() {
        let m = std::fs::symlink_metadata(&p).expect("metadata");
        let e = if m.file_type().is_symlink() {
            Entry::Link(std::fs::read_link(&p).expect("link"))
        } else if m.is_dir() {
            for e in std::fs::read_dir(&p).expect("read_dir") {
                todo.push(e.expect("entry").path());
            }
            Entry::Dir
        } else {
            Entry::File(std::fs::read(&p).expect("read"))
        };
        out.insert(p, e);
    }
    out
}

fn three_ledgers() -> Vec<Ledger> {
    history_38129(2, 11)
}

/// [`three_ledgers`] written as a NuDB store at `t/db`, with their
/// `ledger.db` at `t/ledger_db`: the store's path and the ledgers.
fn three_ledgers_at(t: &Path, db: &str, ledger_db: &str) -> (PathBuf, Vec<Ledger>) {
    let ls = three_ledgers();
    let db = t.join(db);
    nudb_with_ledger_db(&db, &t.join(ledger_db), &ls);
    (db, ls)
}

/// `export --db DB --ledger 38129 --out OUT` must be refused in one line
/// naming OUT and the store; nothing under any of `watched` changes.
fn export_refused(db: &str, out: &Path, watched: &[&Path]) {
    let before: Vec<_> = watched.iter().map(|w| snapshot(w)).collect();
    let r = shamap(
        ["export", "--db", db, "--ledger", "38129", "--out", s(out)],
        None,
    );
    let line = one_error_line(&r, 2);
    assert_contains(
        &line,
        &format!(
            "error: {}: the output would be written inside",
            out.display()
        ),
    );
    assert_contains(&line, "refusing to write over what is read");
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    for (w, b) in watched.iter().zip(before) {
        assert_eq!(
            snapshot(w),
            b,
            "{} changed (--out {})",
            w.display(),
            out.display()
        );
    }
}

#[test]
fn export_never_writes_into_the_nudb_store_it_reads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = dir.path();
    let (db, _) = three_ledgers_at(t, "nudb", "nudb/ledger.db");
    let dbs = s(&db);
    let w: &[&Path] = &[t];
    for name in ["nudb.dat", "nudb.key", "ledger.db", "new.json"] {
        export_refused(dbs, &db.join(name), w);
        export_refused(&format!("nudb:{dbs}"), &db.join(name), w);
    }
    // A link elsewhere pointing at the store's file; a link to the store's
    // directory; a path through `..`; a relative path.
    std::fs::create_dir(t.join("out")).expect("mkdir");
    let link = t.join("out/ledger.json");
    symlink(db.join("nudb.dat"), &link).expect("symlink");
    export_refused(dbs, &link, w);
    let dangling = t.join("out/dangling.json");
    symlink("../nudb/not-yet.json", &dangling).expect("symlink");
    export_refused(dbs, &dangling, w);
    let alias = t.join("alias");
    symlink(&db, &alias).expect("symlink");
    export_refused(dbs, &alias.join("nudb.key"), w);
    export_refused(dbs, &t.join("out/../nudb/nudb.dat"), w);
    let r = shamap_in(
        t,
        &[
            "export",
            "--db",
            "nudb",
            "--ledger",
            "38129",
            "--out",
            "nudb/nudb.key",
        ],
    );
    assert_contains(
        &one_error_line(&r, 2),
        "error: nudb/nudb.key: the output would be written inside",
    );
    // The same names elsewhere are written.
    let before = snapshot(&db);
    for name in ["nudb.dat", "ledger.db"] {
        let out = t.join("out").join(name);
        let r = shamap(
            ["export", "--db", dbs, "--ledger", "38129", "--out", s(&out)],
            None,
        );
        assert_eq!(ok(&r), "");
        let text = std::fs::read_to_string(&out).expect("written");
        assert_contains(&text, "\"ledger_index\":38129,");
    }
    assert_eq!(snapshot(&db), before);
    assert!(std::fs::symlink_metadata(&link)
        .expect("link")
        .file_type()
        .is_symlink());
}

/// `shamap ARGS` run in `cwd`.
fn shamap_in(cwd: &Path, args: &[&str]) -> crate::support::Run {
    std::process::Command::new(env!("CARGO_BIN_EXE_shamap"))
        .current_dir(cwd)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("the binary runs")
        .into()
}

#[test]
fn export_never_writes_over_a_ledger_db_above_or_a_rotated_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = dir.path();
    // rippled's layout: [database_path] holds ledger.db and the node
    // store's directory.
    let (db, ls) = three_ledgers_at(t, "db/nudb", "db/ledger.db");
    let w: &[&Path] = &[t];
    export_refused(s(&db), &t.join("db/ledger.db"), w);
    // Beside the store (not inside it, not its ledger.db): written.
    let out = t.join("db/export.json");
    ok(&shamap(
        [
            "export",
            "--db",
            s(&db),
            "--ledger",
            "38129",
            "--out",
            s(&out),
        ],
        None,
    ));
    assert!(out.is_file());
    // A rotated store: every file of either rippledb.* directory.
    let rot = t.join("rotated");
    let r = write_rotated(&rot, NudbOptions::default(), &ls, 1).expect("rotated");
    for d in [&r.archive, &r.writable] {
        for name in ["nudb.dat", "nudb.key"] {
            export_refused(s(&rot), &d.path(name), &[&rot]);
        }
    }
}

#[test]
fn export_never_writes_into_a_node_log_it_reads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("log");
    import(&[ledger_38129()], &db);
    let files: Vec<PathBuf> = std::fs::read_dir(&db)
        .expect("read_dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_file())
        .collect();
    assert!(!files.is_empty());
    for f in &files {
        let before = snapshot(dir.path());
        let r = shamap(
            [
                "export",
                "--db",
                s(&db),
                "--root",
                LEDGER_38129,
                "--out",
                s(f),
            ],
            None,
        );
        assert_contains(
            &one_error_line(&r, 2),
            "the output would be written inside the store",
        );
        assert_eq!(snapshot(dir.path()), before, "{}", f.display());
    }
}

#[test]
fn sync_never_writes_into_the_store_it_reads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = dir.path();
    let (db, _) = three_ledgers_at(t, "nudb", "nudb/ledger.db");
    let alias = t.join("alias");
    symlink(&db, &alias).expect("symlink");
    let log = t.join("log");
    import(&[ledger_38129()], &log);
    for (from, to) in [
        (&db, db.clone()),
        (&db, db.join("copy")),
        (&db, alias.clone()),
        (&db, alias.join("copy")),
        (&log, log.clone()),
        (&log, log.join("copy")),
    ] {
        let before = snapshot(t);
        let r = shamap(
            [
                "sync",
                "--from",
                s(from),
                "--to",
                s(&to),
                "--ledger",
                "38129",
            ],
            None,
        );
        let line = one_error_line(&r, 2);
        assert_contains(&line, "the target store would be written inside the store");
        assert_eq!(snapshot(t), before, "--to {}", to.display());
    }
    // Elsewhere: copied.
    let to = t.join("copy");
    ok(&shamap(
        [
            "sync",
            "--from",
            s(&db),
            "--to",
            s(&to),
            "--ledger",
            "38129",
        ],
        None,
    ));
    ok(&shamap(
        ["verify", "--db", s(&to), "--ledger", "38129"],
        None,
    ));
}
