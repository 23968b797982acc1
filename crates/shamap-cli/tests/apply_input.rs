//! `apply`'s change file is read as the other commands read their input:
//! `-` is standard input, named `<stdin>` in messages.

use std::ffi::OsStr;

use crate::support::{assert_starts_with, import, ledger_38129, shamap, ACCOUNT_38129};

#[test]
fn apply_reads_changes_from_standard_input() {
    use shamap::{Key, MapKind, ShaMap};
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("db");
    let ledger = ledger_38129();
    import(&[&ledger], &db);

    let d = shamap_ledger::dump::parse(&std::fs::read(&ledger).expect("data")).expect("parses");
    let mut mem = ShaMap::new(MapKind::AccountState);
    for e in d.state.as_deref().expect("state") {
        mem.insert(e.key, &e.data).expect("insert");
    }
    let fresh = Key([0x5A; 32]);
    mem.insert(fresh, &[0xAB; 20]).expect("new key");
    let changes = format!("# one new entry\nset {fresh} {}\n", "AB".repeat(20));

    let apply = |stdin: &[u8]| {
        shamap(
            [
                OsStr::new("apply"),
                OsStr::new("--db"),
                db.as_os_str(),
                OsStr::new("--root"),
                OsStr::new(ACCOUNT_38129),
                OsStr::new("--name"),
                OsStr::new("from-stdin"),
                OsStr::new("-"),
            ],
            Some(stdin),
        )
    };
    let run = apply(changes.as_bytes());
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let want = format!("root {} committed as 'from-stdin'", mem.root_hash());
    assert!(run.stdout.contains(&want), "{}", run.stdout);

    // Errors name standard input and the line.
    let run = apply(format!("set {fresh} 0G\n").as_bytes());
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert_starts_with(&run.stderr, "error: <stdin>:1: ");
    let run = apply(b"\xFF\xFE");
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.starts_with("error: <stdin>: "), "{}", run.stderr);
}
