//! `export --out` never writes over the store it reads: the output path is
//! compared with the store after resolving links (the store's own files,
//! a symbolic link into it, a rotated directory's file, `ledger.db` beside
//! it), refused in one line with status 2, and every file of the store is
//! unchanged; a path elsewhere with the same name is written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use shamap_nudb_writer::{write_rotated, NudbOptions};

use crate::support::{history_38129, nudb_with_ledger_db, ok, one_error_line, shamap};

fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let p = e.path();
            let m = std::fs::symlink_metadata(&p).expect("meta");
            if m.is_dir() {
                stack.push(p);
            } else if m.is_file() {
                out.insert(p.clone(), std::fs::read(&p).expect("read"));
            }
        }
    }
    out
}

#[test]
fn export_out_is_refused_inside_the_store() {
    let ls = history_38129(2, 11);
    let root = tempfile::tempdir().expect("tempdir");
    let db = root.path().join("nudb");
    nudb_with_ledger_db(&db, &db.join("ledger.db"), &ls);
    let link = root.path().join("innocent.json");
    std::os::unix::fs::symlink(db.join("nudb.key"), &link).expect("symlink");
    let dbs = db.to_str().expect("utf-8").to_owned();
    let seq = ls[0].header.seq.to_string();
    let before = snapshot(root.path());
    for target in [
        db.join("nudb.dat"),
        db.join("nudb.key"),
        db.join("ledger.db"),
        db.join("new-file.json"),
        link.clone(),
        root.path().join("nudb/../nudb/nudb.dat"),
    ] {
        let out = target.to_str().expect("utf-8");
        let r = shamap(
            ["export", "--db", &dbs, "--ledger", &seq, "--out", out],
            None,
        );
        let line = one_error_line(&r, 2);
        assert!(
            line.contains("refusing to write over what is read"),
            "{out}: {line}"
        );
        assert_eq!(snapshot(root.path()), before, "{out}: the store changed");
    }
    // Elsewhere, even with a store file's name: written.
    let elsewhere = root.path().join("nudb.dat");
    ok(&shamap(
        [
            "export",
            "--db",
            &dbs,
            "--ledger",
            &seq,
            "--out",
            elsewhere.to_str().expect("utf-8"),
        ],
        None,
    ));
    assert!(std::fs::metadata(&elsewhere).expect("written").len() > 0);
}

#[test]
fn export_out_is_refused_in_a_rotated_directory() {
    let ls = history_38129(2, 11);
    let root = tempfile::tempdir().expect("tempdir");
    let db = root.path().join("db");
    write_rotated(&db, NudbOptions::default(), &ls, 1).expect("rotated");
    let rotated: Vec<PathBuf> = std::fs::read_dir(&db)
        .expect("read_dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    assert!(!rotated.is_empty());
    let before = snapshot(root.path());
    let hash = ls[0].hash().to_hex();
    let target = rotated[0].join("nudb.dat");
    let r = shamap(
        [
            "export",
            "--db",
            db.to_str().expect("utf-8"),
            "--root",
            &hash,
            "--out",
            target.to_str().expect("utf-8"),
        ],
        None,
    );
    let line = one_error_line(&r, 2);
    assert!(
        line.contains("refusing to write over what is read"),
        "{line}"
    );
    assert_eq!(snapshot(root.path()), before);
}
