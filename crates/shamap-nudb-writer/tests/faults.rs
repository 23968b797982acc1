//! The fault builders: each damage is where it says, and the Python reader
//! sees it (or, for what only a reader honouring the log would see, the
//! files show it).

use rand::{Rng, SeedableRng};
use shamap_nudb_writer::codec::{self, lz4_declaring};
use shamap_nudb_writer::faults::{self, Field};
use shamap_nudb_writer::format::{self, LOG_HEADER_LEN};
use shamap_nudb_writer::{
    write_ledger, CodecPolicy, CodecType, Interrupt, Ledger, NudbOptions, NudbWriter, Written,
};

use crate::support::{agrees, data, python_refuses, python_report, record};

fn small() -> NudbOptions {
    NudbOptions {
        block_size: 128,
        load_factor: 0.9,
        ..NudbOptions::default()
    }
}

fn ledger_store(dir: &std::path::Path, o: NudbOptions) -> (Ledger, Written) {
    let l = Ledger::from_dump(&data("ledger-38129.json")).expect("ledger");
    let w = write_ledger(dir, o, &l).expect("write");
    (l, w)
}

/// A key of each kind: the header, the state root (an inner node), a
/// state leaf.
fn keys(l: &Ledger) -> [Vec<u8>; 3] {
    let mut leaf = None;
    l.state.for_each_node(|n| {
        if n.is_leaf && leaf.is_none() {
            leaf = Some(n.hash.0.to_vec());
        }
    });
    [
        l.hash().0.to_vec(),
        l.header.account_hash.0.to_vec(),
        leaf.expect("a leaf"),
    ]
}

#[test]
fn a_flipped_byte_breaks_exactly_its_record() {
    for (i, name) in ["header", "inner node", "leaf"].into_iter().enumerate() {
        for policy in [CodecPolicy::Rippled, CodecPolicy::Raw] {
            let dir = tempfile::tempdir().expect("tempdir");
            let (l, w) = ledger_store(
                dir.path(),
                NudbOptions {
                    codec: policy,
                    ..small()
                },
            );
            let key = &keys(&l)[i];
            let r = w.record(key).expect("record").clone();
            // A byte in the middle of the value: a hash or data byte.
            let at = faults::flip_value_byte(&w, key, r.size / 2).expect("flip");
            assert!(at > r.offset && at < r.offset + 6 + 32 + r.size);
            let report = python_report(dir.path());
            let bad: Vec<&str> = report["records"]
                .as_array()
                .expect("records")
                .iter()
                .filter(|p| p["value_ok"] != serde_json::Value::Bool(true))
                .map(|p| p["key"].as_str().expect("key"))
                .collect();
            assert_eq!(bad, [crate::support::const_hex(key)], "{name} {policy:?}");
            // Still found through its bucket.
            assert_eq!(record(&report, key)["found_at"].as_u64(), Some(r.offset));
        }
    }
}

#[test]
fn a_removed_record_is_gone_and_the_rest_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (l, w) = ledger_store(dir.path(), small());
    for key in keys(&l) {
        let out = tempfile::tempdir().expect("tempdir");
        let w2 = faults::without_records(&w, out.path(), small(), &[&key]).expect("rewrite");
        assert_eq!(w2.records.len(), w.records.len() - 1);
        assert!(w2.record(&key).is_none());
        agrees(&w2, &python_report(out.path()));
    }
    // Removing nothing rewrites the same bytes.
    let out = tempfile::tempdir().expect("tempdir");
    let same = faults::without_records(&w, out.path(), small(), &[]).expect("rewrite");
    for f in ["nudb.dat", "nudb.key"] {
        assert_eq!(
            std::fs::read(same.path(f)).expect("copy"),
            std::fs::read(w.path(f)).expect("original"),
            "{f}"
        );
    }
}

#[test]
fn an_lz4_value_whose_size_lies_does_not_decode() {
    let l = Ledger::from_dump(&data("ledger-38129.json")).expect("ledger");
    let [_, _, leaf] = keys(&l);
    let mut value = None;
    l.state.for_each_node(|n| {
        if n.hash.0[..] == leaf[..] {
            value = Some(shamap_nudb_writer::ledgers::node_value(3, &n.prefix_bytes));
        }
    });
    let value = value.expect("leaf value");
    for (declared, what) in [
        (value.len() as u64 + 7, "bigger"),
        (value.len() as u64 - 7, "smaller"),
        (1 << 40, "huge"),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut w = NudbWriter::create(dir.path(), small()).expect("create");
        let lie = lz4_declaring(&value, declared);
        assert!(codec::decode(&lie).is_err(), "{what}");
        w.insert_raw(&leaf, &lie).expect("insert");
        w.insert_as(
            &l.hash().0,
            &l.objects().last().expect("header").1,
            CodecType::Lz4,
        )
        .expect("header");
        let w = w.finish().expect("finish");
        let report = python_report(dir.path());
        let r = record(&report, &leaf);
        assert_eq!(r["hash_ok"], serde_json::Value::Bool(false), "{what}");
        assert!(r["error"].as_str().is_some(), "{what}: {r}");
        assert_eq!(r["found_at"].as_u64(), w.record(&leaf).map(|r| r.offset));
        assert_eq!(record(&report, &l.hash().0)["hash_ok"], true);
    }
}

#[test]
fn a_truncated_data_file_is_cut_inside_a_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, w) = ledger_store(dir.path(), small());
    let last = w.records.last().expect("records");
    faults::truncate(&w.path("nudb.dat"), last.offset + 10).expect("truncate");
    let err = python_refuses(dir.path());
    assert!(err.contains("cut off"), "{err}");
    assert!(err.contains(&last.offset.to_string()), "{err}");
}

#[test]
fn header_faults_are_where_they_say() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, w) = ledger_store(dir.path(), small());
    let keep = |f: &str| std::fs::read(w.path(f)).expect("read");
    let (dat, key) = (keep("nudb.dat"), keep("nudb.key"));
    let restore = || {
        std::fs::write(w.path("nudb.dat"), &dat).expect("restore");
        std::fs::write(w.path("nudb.key"), &key).expect("restore");
    };
    for (field, problem) in [
        (Field::Uid(7), "headers disagree on uid"),
        (Field::Appnum(2), "headers disagree on appnum"),
        (Field::KeySize(33), "headers disagree on key_size"),
        (Field::Salt(99), "pepper does not match the salt"),
    ] {
        faults::patch_key_header(dir.path(), field).expect("patch");
        let report = python_report(dir.path());
        let problems = report["problems"].to_string();
        assert!(problems.contains(problem), "{field:?}: {problems}");
        restore();
    }
    // Both headers agreeing on what rippled does not write.
    faults::patch_both_headers(dir.path(), Field::Appnum(2)).expect("appnum");
    let report = python_report(dir.path());
    assert_eq!(report["problems"], serde_json::json!([]));
    assert_eq!(report["key_header"]["appnum"].as_u64(), Some(2));
    assert_eq!(report["dat_header"]["appnum"].as_u64(), Some(2));
    restore();
    assert!(faults::patch_dat_header(dir.path(), Field::Salt(1)).is_err());
    agrees(&w, &python_report(dir.path()));
}

/// A database of 33-byte keys, as a wrong key size reaches a reader whole.
#[test]
fn a_database_of_another_key_size() {
    let dir = tempfile::tempdir().expect("tempdir");
    let l = Ledger::from_dump(&data("ledger-38129.json")).expect("ledger");
    let mut w = NudbWriter::create(
        dir.path(),
        NudbOptions {
            key_size: 33,
            ..small()
        },
    )
    .expect("create");
    for (h, v) in l.objects() {
        let mut k = h.0.to_vec();
        k.push(0);
        w.insert(&k, &v).expect("insert");
    }
    let w = w.finish().expect("finish");
    let report = python_report(dir.path());
    assert_eq!(report["key_header"]["key_size"].as_u64(), Some(33));
    assert_eq!(
        report["records"].as_array().map(Vec::len),
        Some(w.records.len())
    );
}

/// A commit cut short: `nudb.log` holds its header (the sizes before the
/// commit) and the buckets it changed as they were; the data file has the
/// commit's records, which the key file may or may not index yet.
#[test]
fn an_interrupted_commit_leaves_a_log() {
    for at in [Interrupt::BeforeKeyFile, Interrupt::AfterKeyFile] {
        let dir = tempfile::tempdir().expect("tempdir");
        let ledgers = shamap_nudb_writer::history(
            Ledger::from_dump(&data("ledger-38129.json")).expect("ledger"),
            1,
            3,
        );
        let mut w = NudbWriter::create(dir.path(), small()).expect("create");
        for (h, v) in ledgers[0].objects() {
            w.insert(&h.0, &v).expect("insert");
        }
        w.commit().expect("commit");
        let key_before = std::fs::read(dir.path().join("nudb.key")).expect("key");
        let dat_before = std::fs::metadata(dir.path().join("nudb.dat"))
            .expect("dat")
            .len();
        let mut added = Vec::new();
        for (h, v) in ledgers[1].objects() {
            if w.insert(&h.0, &v).expect("insert") {
                added.push(h);
            }
        }
        let written = w.finish_interrupted(at).expect("interrupted");
        let log = std::fs::read(written.path("nudb.log")).expect("log");
        assert!(log.len() > LOG_HEADER_LEN, "{at:?}");
        assert_eq!(&log[..8], b"nudb.log");
        assert_eq!(
            u64::from_be_bytes(log[46..54].try_into().expect("8")),
            key_before.len() as u64
        );
        assert_eq!(
            u64::from_be_bytes(log[54..62].try_into().expect("8")),
            dat_before
        );
        // The log's buckets are the key file's before the commit.
        let bs = usize::from(written.headers.block_size);
        let mut at_log = LOG_HEADER_LEN;
        while at_log < log.len() {
            let n = u64::from_be_bytes(log[at_log..at_log + 8].try_into().expect("8")) as usize;
            let b = format::Bucket::decode(&log[at_log + 8..]).expect("bucket");
            let len = b.encode().len();
            assert_eq!(
                format::Bucket::decode(&key_before[(n + 1) * bs..(n + 2) * bs]),
                Some(b)
            );
            at_log += 8 + len;
        }
        let key_now = std::fs::read(written.path("nudb.key")).expect("key");
        assert_eq!(
            key_now == key_before,
            at == Interrupt::BeforeKeyFile,
            "{at:?}"
        );
        let report = python_report(dir.path());
        for h in &added {
            let r = record(&report, &h.0);
            assert_eq!(r["hash_ok"], true);
            let found = r["found_at"].as_u64();
            if at == Interrupt::BeforeKeyFile {
                assert_eq!(found, None, "an unindexed record");
            }
        }
    }
}

#[test]
fn a_bucket_entry_pointing_past_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (l, w) = ledger_store(dir.path(), small());
    for key in keys(&l) {
        let at = faults::point_entry_at(&w, &key, w.dat_len + 4096).expect("point");
        let report = python_report(dir.path());
        assert_eq!(record(&report, &key)["found_at"], serde_json::Value::Null);
        assert!(at.file == "nudb.key" || at.file == "nudb.dat");
        // Put it back: found again.
        let r = w.record(&key).expect("record");
        faults::point_entry_at_raw(&w, &at, r.offset).expect("restore");
        agrees(&w, &python_report(dir.path()));
    }
}

#[test]
fn a_spill_chain_that_loops_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, w) = ledger_store(
        dir.path(),
        NudbOptions {
            block_size: 104,
            load_factor: 0.99,
            ..NudbOptions::default()
        },
    );
    assert!(!w.spills.is_empty());
    let (bucket, first) = faults::loop_spill_chain(&w).expect("loop");
    assert!(first > 0 && bucket < w.buckets);
    let err = python_refuses(dir.path());
    assert!(err.contains("loops"), "{err}");
}

/// The randomized part: flips anywhere in a value are always seen.
#[test]
fn random_flips_are_always_seen() {
    let seed = crate::support::seed();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, w) = ledger_store(
        dir.path(),
        NudbOptions {
            codec: CodecPolicy::Mixed,
            ..small()
        },
    );
    let before = python_report(dir.path());
    let picks: Vec<_> = (0..5)
        .map(|_| w.records[rng.gen_range(0..w.records.len())].clone())
        .collect();
    for r in &picks {
        let at = rng.gen_range(0..r.size);
        faults::flip_value_byte(&w, &r.key, at).expect("flip");
    }
    let report = python_report(dir.path());
    for r in &picks {
        // Seen, or the value decodes the same (an LZ4 match whose changed
        // offset copies equal bytes): no damage to see.
        let p = record(&report, &r.key);
        let same = p["value_sha256"] == record(&before, &r.key)["value_sha256"];
        assert!(p["value_ok"] != true || same, "seed {seed}: {}", p["key"]);
    }
}
