//! The store commands on the days an operator has: a full disk, a wrong
//! hash given as a root, the empty map, a read-only file system, a store
//! locked by another process, a mistyped directory. Each ends in bounded
//! time with exit 2 and one line, or works, and leaves the store verifiable.

use std::path::{Path, PathBuf};
use std::time::Duration;

use shamap::Hash256;
use shamap_store::{LogStore, Node, NodeObject, NodeStore};

use crate::support::{
    ledger_38129, ok, one_error_line, shamap_within, Run, KEY_38129, LEDGER_38129,
};
use crate::tmpfs::Tmpfs;

/// Runs `shamap`, failing the test if it has not ended after `secs`.
fn bounded(args: &[&str], stdin: Option<&[u8]>, secs: u64) -> Run {
    shamap_within(args, stdin, Duration::from_secs(secs))
}

fn run(args: &[&str]) -> Run {
    bounded(args, None, 120)
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// `info`'s report without its last line (bytes on disk, which any opening
/// of the store changes): the retained roots and the node counts.
fn contents(db: &Path) -> String {
    let r = run(&["info", "--db", s(db)]);
    ok(&r)
        .lines()
        .filter(|l| !l.starts_with("bytes on disk"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A store with ledger 38129 imported.
fn store_with_38129(db: &Path) {
    ok(&run(&["import", s(&ledger_38129()), "--db", s(db)]));
}

/// A temporary directory (removed on drop) with a store `db` holding
/// ledger 38129, and the store's path.
fn temp_store_with_38129() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    store_with_38129(&db);
    (dir, db)
}

/// A `ledger_data`-shaped dump of `n` random-looking state entries.
fn big_dump(dir: &Path, n: u32) -> PathBuf {
    let mut state = String::from("{\"state\":[");
    for i in 0..n {
        if i > 0 {
            state.push(',');
        }
        let key = shamap::xrpl::sha512_half(&[&i.to_be_bytes()]);
        let data = shamap::xrpl::sha512_half(&[&(i ^ 0xdead_beef).to_be_bytes()]);
        state.push_str(&format!(
            "{{\"index\":\"{}\",\"data\":\"{}{}\"}}",
            key.to_hex(),
            data.to_hex(),
            data.to_hex()
        ));
    }
    state.push_str("]}");
    let path = dir.join(format!("state-{n}.json"));
    std::fs::write(&path, state).expect("write the dump");
    path
}

/// Some stored inner node of the store in `db` that is not a root.
fn an_inner_node(db: &Path, not: &[Hash256]) -> Hash256 {
    let store = LogStore::open(db).expect("open");
    let mut found = None;
    store
        .for_each_value(&mut |h, v| {
            let obj = NodeObject::decode(h, v.to_vec()).expect("decodes");
            if !not.contains(&h) && matches!(obj.parse(), Ok(Node::Inner(_))) {
                found = Some(h);
                return std::ops::ControlFlow::Break(());
            }
            std::ops::ControlFlow::Continue(())
        })
        .expect("iterate");
    found.expect("an inner node")
}

fn account_hash() -> Hash256 {
    Hash256::from_hex("2C23D15B6B549123FB351E4B5CDE81C564318EB845449CD43C3EA7953C4DB452")
        .expect("hex")
}

#[test]
fn import_apply_and_sync_on_a_full_disk_end_with_one_line() {
    let Some(fs) = Tmpfs::mount("3m") else {
        return;
    };
    let work = tempfile::tempdir().expect("tempdir");
    let dump = big_dump(work.path(), 30_000);
    let db = fs.path.join("db");
    store_with_38129(&db);

    // import
    let line = one_error_line(&bounded(&["import", s(&dump), "--db", s(&db)], None, 60), 2);
    assert!(line.contains("No space left on device"), "{line}");
    assert!(line.contains(s(&db)), "names the store: {line}");

    // apply, with a small node cache so nodes spill before the commit
    let mut changes = String::new();
    for i in 0..30_000u32 {
        let k = shamap::xrpl::sha512_half(&[&(i + 7).to_be_bytes()]);
        changes.push_str(&format!("set {} {}\n", k.to_hex(), "AB".repeat(40)));
    }
    let change_file = work.path().join("changes.txt");
    std::fs::write(&change_file, changes).expect("changes");
    let r = bounded(
        &["apply", "--db", s(&db), "--cache-mb", "1", s(&change_file)],
        None,
        60,
    );
    let line = one_error_line(&r, 2);
    assert!(line.contains("No space left on device"), "apply: {line}");

    // sync, from a store elsewhere into the full one
    let src = work.path().join("src");
    ok(&run(&["import", s(&dump), "--db", s(&src)]));
    let big_root = {
        let st = LogStore::open(&src).expect("open");
        shamap_store::meta::latest(&st)
            .expect("meta")
            .expect("root")
            .hash
    };
    let r = bounded(
        &[
            "sync",
            "--from",
            s(&src),
            "--to",
            s(&db),
            "--root",
            &big_root.to_hex(),
        ],
        None,
        60,
    );
    let line = one_error_line(&r, 2);
    assert!(line.contains("No space left on device"), "sync: {line}");

    // Space again: what was committed is still there and verifies.
    fs.remount("size=512m");
    let out = ok(&run(&["verify", "--db", s(&db)])).to_owned();
    assert!(out.contains(LEDGER_38129), "{out}");
}

#[test]
fn a_hash_that_is_not_a_root_is_refused_before_anything_changes() {
    let (dir, db) = temp_store_with_38129();
    let ledger = Hash256::from_hex(LEDGER_38129).expect("hex");
    let inner = an_inner_node(&db, &[ledger, account_hash()]).to_hex();
    let info_before = contents(&db);

    let line = one_error_line(&run(&["gc", "--db", s(&db), "--keep", &inner]), 2);
    assert!(line.contains("not a root"), "{line}");
    let line = one_error_line(
        &run(&["get", "--db", s(&db), "--root", &inner, KEY_38129]),
        2,
    );
    assert!(line.contains("not a root"), "{line}");
    let changes = dir.path().join("c.txt");
    std::fs::write(&changes, format!("set {KEY_38129} {}\n", "CD".repeat(20))).expect("write");
    let line = one_error_line(
        &run(&["apply", "--db", s(&db), "--root", &inner, s(&changes)]),
        2,
    );
    assert!(line.contains("not a root"), "{line}");
    let line = one_error_line(&run(&["scan", "--db", s(&db), "--root", &inner]), 2);
    assert!(line.contains("not a root"), "{line}");
    let line = one_error_line(&run(&["verify", "--db", s(&db), "--root", &inner]), 2);
    assert!(line.contains("not a root"), "{line}");

    // Names that would break `info`'s lines, and the key no reader accepts.
    for name in ["", "two\nlines", "tab\there"] {
        let line = one_error_line(
            &run(&["apply", "--db", s(&db), "--name", name, s(&changes)]),
            2,
        );
        assert!(line.contains("root name"), "{name:?}: {line}");
    }
    let zero_key = dir.path().join("zero.txt");
    std::fs::write(
        &zero_key,
        format!("set {} {}\n", "0".repeat(64), "CD".repeat(20)),
    )
    .expect("write");
    let line = one_error_line(&run(&["apply", "--db", s(&db), s(&zero_key)]), 2);
    assert!(line.contains("all-zero key"), "{line}");

    // Nothing deleted, nothing committed.
    assert_eq!(contents(&db), info_before);
    ok(&run(&["verify", "--db", s(&db)]));
    // A map of a retained ledger is a root the store knows.
    ok(&run(&[
        "get",
        "--db",
        s(&db),
        "--root",
        &account_hash().to_hex(),
        KEY_38129,
    ]));
}

#[test]
fn sync_with_an_unknown_root_leaves_no_target_behind() {
    let (dir, db) = temp_store_with_38129();
    let to = dir.path().join("target");
    let line = one_error_line(
        &run(&[
            "sync",
            "--from",
            s(&db),
            "--to",
            s(&to),
            "--root",
            &"77".repeat(32),
        ]),
        2,
    );
    assert!(
        line.contains("neither a ledger hash nor a map root"),
        "{line}"
    );
    assert!(!to.exists(), "no empty target store left behind");
}

#[test]
fn the_empty_map_is_a_state_every_store_command_handles() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    // One key, then deleted: the committed root is the empty map.
    let one = dir.path().join("one.txt");
    std::fs::write(&one, format!("set {KEY_38129} {}\n", "AB".repeat(20))).expect("write");
    let empty = "0".repeat(64);
    ok(&run(&["import", s(&ledger_38129()), "--db", s(&db)]));
    ok(&run(&[
        "apply",
        "--db",
        s(&db),
        "--root",
        &empty,
        "--name",
        "head",
        s(&one),
    ]));
    let del = dir.path().join("del.txt");
    std::fs::write(&del, format!("del {KEY_38129}\n")).expect("write");
    let out = ok(&run(&["apply", "--db", s(&db), "--name", "head", s(&del)])).to_owned();
    assert!(out.contains(&format!("root {empty} committed")), "{out}");

    let out = ok(&run(&["verify", "--db", s(&db)])).to_owned();
    assert!(out.contains(&format!("root {empty} (head) ok")), "{out}");
    let out = ok(&run(&["info", "--db", s(&db)])).to_owned();
    assert!(out.contains("the empty map"), "{out}");
    assert!(!out.contains("unreadable"), "{out}");
    let out = ok(&run(&["scan", "--db", s(&db)])).to_owned();
    assert!(out.contains(" 0 "), "no items: {out}");
    let r = run(&["get", "--db", s(&db), KEY_38129]);
    assert_eq!(r.code, Some(1), "absent from the empty map: {}", r.stderr);
    ok(&run(&["apply", "--db", s(&db), "--name", "head", s(&one)]));
    // gc keeping only the empty map empties the store, and it still verifies.
    ok(&run(&["gc", "--db", s(&db), "--keep", &empty]));
    ok(&run(&["verify", "--db", s(&db)]));
}

#[test]
fn an_overlong_root_name_is_refused_not_cut() {
    let (dir, db) = temp_store_with_38129();
    let changes = dir.path().join("c.txt");
    std::fs::write(&changes, format!("set {KEY_38129} {}\n", "CD".repeat(20))).expect("write");
    let long = "n".repeat(300);
    let before = contents(&db);
    let line = one_error_line(
        &run(&["apply", "--db", s(&db), "--name", &long, s(&changes)]),
        2,
    );
    assert!(line.contains("at most 255"), "{line}");
    assert_eq!(contents(&db), before);
}

#[test]
fn a_store_on_a_read_only_file_system_can_be_read() {
    let Some((fs, db)) = Tmpfs::mount_db("64m") else {
        return;
    };
    store_with_38129(&db);
    fs.remount("ro");
    let out = ok(&run(&["get", "--db", s(&db), KEY_38129])).to_owned();
    assert!(out.starts_with("1100612200000000240000000125"), "{out}");
    ok(&run(&["scan", "--db", s(&db)]));
    ok(&run(&["info", "--db", s(&db)]));
    ok(&run(&["verify", "--db", s(&db)]));
    let changes = tempfile::NamedTempFile::new().expect("temp");
    std::fs::write(changes.path(), format!("del {KEY_38129}\n")).expect("write");
    let line = one_error_line(&run(&["apply", "--db", s(&db), s(changes.path())]), 2);
    assert!(line.contains(s(&db)), "{line}");
}

#[test]
fn a_store_locked_by_a_writer_is_named_and_said_so() {
    let (_dir, db) = temp_store_with_38129();
    let _writer = LogStore::open(&db).expect("this process holds the store");
    for args in [
        vec!["import", s(&ledger_38129()), "--db", s(&db)],
        vec!["gc", "--db", s(&db), "--keep", LEDGER_38129],
    ] {
        let line = one_error_line(&run(&args), 2);
        assert!(line.contains("locked by another process"), "{line}");
        assert!(line.contains(s(&db)), "{line}");
    }
    // Readers open the store read-only beside the writer.
    ok(&run(&["info", "--db", s(&db)]));
    ok(&run(&["verify", "--db", s(&db)]));
}

#[test]
fn import_does_not_create_a_store_inside_an_unrelated_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("thesis.tex"), "mine").expect("write");
    let line = one_error_line(
        &run(&["import", s(&ledger_38129()), "--db", s(dir.path())]),
        2,
    );
    assert!(line.contains("not a store"), "{line}");
    assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 1);
    // A file given as the directory.
    let file = dir.path().join("thesis.tex");
    let line = one_error_line(&run(&["import", s(&ledger_38129()), "--db", s(&file)]), 2);
    assert!(line.contains("not a directory"), "{line}");
}
