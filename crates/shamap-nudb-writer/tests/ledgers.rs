//! Databases of real ledgers (the repository's `data/`), a history sharing
//! nodes, a rotated `online_delete` layout and `ledger.db`, each read back
//! by the Python reader.

use std::collections::HashSet;

use shamap::Hash256;
use shamap_nudb_writer::ledgers::{header_object, ROTATED_NAMES};
use shamap_nudb_writer::{
    history, write_ledger, write_ledger_db, write_ledgers, write_rotated, CodecPolicy, CodecType,
    Ledger, NudbOptions,
};

use crate::support::{agrees, data, python, python_report, record, seed, shipped_ledgers};

/// Every shipped ledger, stored as rippled stores it (4096-byte blocks,
/// rippled's codec choice) and with small blocks (spills) and every codec
/// type: the Python reader finds every object hashing to its key, the
/// header under the ledger hash the dump claims.
#[test]
fn the_shipped_ledgers_are_read_back_whole() {
    let paths = shipped_ledgers();
    assert!(paths.len() >= 5, "the shipped ledgers: {paths:?}");
    let mut mixed_kinds = HashSet::new();
    let mut stored = 0;
    for path in paths {
        let dump = shamap_ledger::parse(&std::fs::read(&path).expect("read")).expect("parse");
        if dump.state.is_none() {
            // A dump of transactions alone: no state map to store.
            continue;
        }
        stored += 1;
        let l = Ledger::from_dump(&path).expect("dump");
        if let Some(claimed) = dump.header.ledger_hash {
            assert_eq!(l.hash(), claimed, "{}", path.display());
        }
        let objects = l.objects();
        for (o, codec) in [
            (NudbOptions::default(), CodecPolicy::Rippled),
            (
                NudbOptions {
                    block_size: 128,
                    load_factor: 0.9,
                    ..NudbOptions::default()
                },
                CodecPolicy::Mixed,
            ),
        ] {
            let dir = tempfile::tempdir().expect("tempdir");
            let w = write_ledger(dir.path(), NudbOptions { codec, ..o }, &l).expect("write");
            assert_eq!(w.records.len(), objects.len(), "{}", path.display());
            let report = python_report(dir.path());
            agrees(&w, &report);
            let header = record(&report, &l.hash().0);
            assert_eq!(header["type"].as_u64(), Some(1), "{}", path.display());
            if codec == CodecPolicy::Rippled {
                // Inner nodes as type 2 or 3, everything else LZ4.
                for r in &w.records {
                    assert!(r.codec.is_some_and(|c| c != CodecType::Raw));
                }
            } else {
                mixed_kinds.extend(w.records.iter().filter_map(|r| r.codec));
                assert!(!w.spills.is_empty(), "{}", path.display());
            }
        }
    }
    assert!(stored >= 3, "{stored} ledgers with state");
    // Some ledger has a full inner node: all four types appear.
    assert_eq!(mixed_kinds.len(), 4, "{mixed_kinds:?}");
}

fn base() -> Ledger {
    Ledger::from_dump(&data("ledger-38129.json")).expect("ledger 38129")
}

/// A history of successive ledgers: headers chained by `parent_hash`, each
/// ledger's roots in its header, nodes shared (the database holds far
/// fewer objects than the ledgers have between them), every ledger's
/// objects all present, one commit per ledger.
#[test]
fn a_history_shares_nodes_and_chains_its_headers() {
    let seed = seed();
    let ledgers = history(base(), 12, seed);
    for pair in ledgers.windows(2) {
        assert_eq!(pair[1].header.parent_hash, pair[0].hash(), "seed {seed}");
        assert_eq!(pair[1].header.seq, pair[0].header.seq + 1);
        assert_eq!(pair[1].header.account_hash, pair[1].state.root_hash());
        assert_eq!(pair[1].header.transaction_hash, pair[1].tx.root_hash());
        assert_ne!(pair[1].header.account_hash, pair[0].header.account_hash);
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let o = NudbOptions {
        block_size: 512,
        load_factor: 0.8,
        ..NudbOptions::default()
    };
    let w = write_ledgers(dir.path(), o, &ledgers).expect("write");
    assert_eq!(w.commits, ledgers.len());
    let total: usize = ledgers.iter().map(|l| l.objects().len()).sum();
    let stored: HashSet<Vec<u8>> = w.records.iter().map(|r| r.key.clone()).collect();
    assert!(
        w.records.len() * 3 < total,
        "{} of {total}",
        w.records.len()
    );
    for l in &ledgers {
        for (h, _) in l.objects() {
            assert!(
                stored.contains(&h.0[..]),
                "seed {seed}: ledger {}",
                l.header.seq
            );
        }
    }
    agrees(&w, &python_report(dir.path()));
}

/// A rotated layout: two `rippledb.*` databases whose union holds every
/// ledger; the writable one holds the rotation's ledger whole.
#[test]
fn a_rotated_layout_splits_the_history() {
    let ledgers = history(base(), 6, 11);
    let root = tempfile::tempdir().expect("tempdir");
    let r = write_rotated(root.path(), NudbOptions::default(), &ledgers, 3).expect("rotated");
    assert_eq!(r.archive.dir, root.path().join(ROTATED_NAMES[0]));
    assert_eq!(r.writable.dir, root.path().join(ROTATED_NAMES[1]));
    assert_ne!(r.archive.headers.uid, r.writable.headers.uid);
    let keys = |w: &shamap_nudb_writer::Written| -> HashSet<Vec<u8>> {
        w.records.iter().map(|r| r.key.clone()).collect()
    };
    let (old, new) = (keys(&r.archive), keys(&r.writable));
    for (i, l) in ledgers.iter().enumerate() {
        for (h, _) in l.objects() {
            let k = h.0.to_vec();
            assert!(old.contains(&k) || new.contains(&k), "ledger {i}");
            if i >= 3 {
                assert!(new.contains(&k), "ledger {i} in the writable database");
            }
        }
        let (h, _) = header_object(&l.header);
        assert_eq!(new.contains(&h.0[..]), i >= 3, "header {i}");
    }
    assert!(!old.is_disjoint(&new), "the rotation copies shared nodes");
    for w in [&r.archive, &r.writable] {
        agrees(w, &python_report(&w.dir));
    }
}

/// `ledger.db` as rippled creates it: the `Ledgers` table, one row per
/// ledger with its hash, sequence and roots.
#[test]
fn ledger_db_has_rippleds_table() {
    let ledgers = history(base(), 3, 5);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("ledger.db");
    let headers: Vec<_> = ledgers.iter().map(|l| l.header).collect();
    write_ledger_db(&path, &headers).expect("ledger.db");
    // Read with Python's sqlite3 (an independent reader of the file).
    let script = format!(
        "import sqlite3; c = sqlite3.connect('{}'); \
         print(repr(c.execute('SELECT sql FROM sqlite_master WHERE name=\"SeqLedger\"').fetchone()[0])); \
         [print(*r) for r in c.execute('SELECT LedgerSeq, LedgerHash, PrevHash, AccountSetHash, \
         TransSetHash, TotalCoins, ClosingTime, PrevClosingTime, CloseTimeRes, CloseFlags \
         FROM Ledgers ORDER BY LedgerSeq')]",
        path.display()
    );
    let out = std::process::Command::new("python3")
        .args(["-c", &script])
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    assert!(lines.next().expect("index").contains("Ledgers(LedgerSeq)"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(' ').collect()).collect();
    assert_eq!(rows.len(), ledgers.len());
    for (row, l) in rows.iter().zip(&ledgers) {
        let h = &l.header;
        let want = [
            h.seq.to_string(),
            l.hash().to_hex(),
            h.parent_hash.to_hex(),
            h.account_hash.to_hex(),
            h.transaction_hash.to_hex(),
            h.total_coins.to_string(),
            h.close_time.to_string(),
            h.parent_close_time.to_string(),
            h.close_time_resolution.to_string(),
            h.close_flags.to_string(),
        ];
        assert_eq!(row, &want.iter().map(String::as_str).collect::<Vec<_>>());
    }
    // A row's hash is the header object's key.
    let (h, _) = header_object(&ledgers[1].header);
    assert_eq!(h, ledgers[1].hash());
    assert_ne!(h, Hash256::ZERO);
}

/// The Python reader's `--get` finds a state node by key.
#[test]
fn python_get_finds_a_key() {
    let l = base();
    let dir = tempfile::tempdir().expect("tempdir");
    write_ledger(dir.path(), NudbOptions::default(), &l).expect("write");
    let (_, header) = header_object(&l.header);
    let d = dir.path().to_str().expect("utf-8");
    let (ok, out, err) = python(&[d, "--get", &l.hash().to_hex()]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), crate::support::const_hex(&header));
    let (ok, out, _) = python(&[d, "--get", &"00".repeat(32)]);
    assert!(!ok);
    assert_eq!(out.trim(), "not found");
}
