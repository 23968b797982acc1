//! The writer's files: known bytes, NuDB's split schedule, spill records,
//! every codec type, commits and reopenings; read back by the Python
//! reader and by the crate's own decoder.

use std::collections::HashMap;

use rand::{Rng, SeedableRng};
use shamap_nudb_writer::codec::{self, CodecType};
use shamap_nudb_writer::format::{self, Bucket};
use shamap_nudb_writer::{CodecPolicy, NudbOptions, NudbWriter, WriteError, Written};

use crate::support::{agrees, python_report, record, seed};

fn opts(block_size: u16, load_factor: f32) -> NudbOptions {
    NudbOptions {
        block_size,
        load_factor,
        ..NudbOptions::default()
    }
}

/// A random NodeStore leaf value (type 3, `MLN\0`, data, key) and its key.
fn leaf(rng: &mut impl Rng) -> ([u8; 32], Vec<u8>) {
    let len = rng.gen_range(20..400);
    let mut prefix = b"MLN\0".to_vec();
    prefix.extend((0..len).map(|_| rng.gen_range(0..4u8)));
    prefix.extend_from_slice(&rng.gen::<[u8; 32]>());
    let key = shamap::xrpl::sha512_half(&[&prefix]).0;
    let mut v = vec![0u8; 8];
    v.push(3);
    v.extend_from_slice(&prefix);
    (key, v)
}

/// Each record's value read back from `nudb.dat` and decoded.
fn decoded(w: &Written) -> HashMap<Vec<u8>, Vec<u8>> {
    let dat = std::fs::read(w.path("nudb.dat")).expect("nudb.dat");
    let ks = usize::from(w.headers.key_size);
    w.records
        .iter()
        .map(|r| {
            let at = r.offset as usize;
            assert_eq!(format::get_u48(&dat[at..]), r.size);
            assert_eq!(&dat[at + 6..at + 6 + ks], r.key.as_slice());
            let v = &dat[at + 6 + ks..at + 6 + ks + r.size as usize];
            (r.key.clone(), codec::decode(v).expect("decodes"))
        })
        .collect()
}

#[test]
fn an_empty_database_has_nudbs_header_bytes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = NudbOptions {
        block_size: 256,
        salt: 0x0102_0304_0506_0708,
        uid: 0x1112_1314_1516_1718,
        ..NudbOptions::default()
    };
    let w = NudbWriter::create(dir.path(), o)
        .expect("create")
        .finish()
        .expect("finish");
    let dat = std::fs::read(w.path("nudb.dat")).expect("dat");
    let mut want = b"nudb.dat\x00\x02".to_vec();
    want.extend_from_slice(&[0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18]);
    want.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 1, 0, 32]);
    want.resize(92, 0);
    assert_eq!(dat, want);
    let key = std::fs::read(w.path("nudb.key")).expect("key");
    assert_eq!(key.len(), 512, "header block and one empty bucket");
    let mut want = b"nudb.key\x00\x02".to_vec();
    want.extend_from_slice(&[0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18]);
    want.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 1, 0, 32]);
    want.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
    want.extend_from_slice(&format::pepper(o.salt).to_be_bytes());
    want.extend_from_slice(&[1, 0, 0x80, 0]);
    want.resize(512, 0);
    assert_eq!(key, want);
    assert!(
        !w.path("nudb.log").exists(),
        "a clean close removes the log"
    );
    // The pepper is XXH64 as the Python reader computes it.
    agrees(&w, &python_report(dir.path()));
}

#[test]
fn rippled_options_leave_an_empty_log_when_asked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let w = NudbWriter::create(
        dir.path(),
        NudbOptions {
            keep_empty_log: true,
            ..NudbOptions::default()
        },
    )
    .expect("create")
    .finish()
    .expect("finish");
    assert_eq!(std::fs::metadata(w.path("nudb.log")).expect("log").len(), 0);
    assert_eq!(w.headers.appnum, 1);
    assert_eq!(w.headers.key_size, 32);
    assert_eq!(w.headers.load_factor, 32768);
}

#[test]
fn options_nudb_refuses_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (o, what) in [
        (opts(103, 0.5), "block size"),
        (opts(4096, 0.0), "load factor"),
        (opts(4096, 1.0), "load factor"),
        (
            NudbOptions {
                key_size: 0,
                ..NudbOptions::default()
            },
            "key size",
        ),
    ] {
        match NudbWriter::create(dir.path().join(what), o) {
            Err(WriteError::Options(m)) => assert!(m.contains(what), "{m}"),
            Err(e) => panic!("{what}: {e}"),
            Ok(_) => panic!("{what}: accepted"),
        }
    }
    let mut w = NudbWriter::create(dir.path().join("ok"), NudbOptions::default()).expect("ok");
    assert!(matches!(
        w.insert_raw(&[0; 31], &[1]),
        Err(WriteError::KeySize { got: 31, want: 32 })
    ));
    assert!(matches!(
        w.insert_raw(&[0; 32], &[]),
        Err(WriteError::ValueSize(0))
    ));
    assert!(w.insert_raw(&[0; 32], &[0, 1]).expect("insert"));
    assert!(!w.insert_raw(&[0; 32], &[0, 2]).expect("duplicate"));
    w.commit().expect("commit");
    assert!(!w.insert_raw(&[0; 32], &[0, 3]).expect("duplicate"));
    assert_eq!(w.finish().expect("finish").records.len(), 1);
}

/// NuDB's schedule: frac starts at thresh/2 and each insert adds 65536; a
/// split whenever it reaches thresh = max(65536, load_factor × capacity).
#[test]
fn buckets_split_on_nudbs_schedule() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    // block 104: capacity 5; load 0.5: thresh 163840, frac from 81920.
    let mut w = NudbWriter::create(dir.path(), opts(104, 0.5)).expect("create");
    for _ in 0..6 {
        let (k, v) = leaf(&mut rng);
        w.insert(&k, &v).expect("insert");
    }
    let written = w.finish().expect("finish");
    // frac: 147456, 212992 split, 114688, 180224 split, 81920, 147456.
    assert_eq!(written.buckets, 3);
    agrees(&written, &python_report(dir.path()));
    // rippled's 4096-byte blocks: capacity 227, thresh 7438336, so
    // floor((3719168 + 65536 n) / 7438336) splits in one commit.
    let thresh = 32768u64 * 227;
    for n in [1u64, 56, 57, 170, 171, 1000] {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut w = NudbWriter::create(dir.path(), NudbOptions::default()).expect("create");
        for _ in 0..n {
            let (k, v) = leaf(&mut rng);
            w.insert(&k, &v).expect("insert");
        }
        let written = w.finish().expect("finish");
        assert_eq!(
            written.buckets,
            1 + (thresh / 2 + 65536 * n) / thresh,
            "n {n}"
        );
    }
}

/// Small blocks and a high load factor: full buckets spill into the data
/// file, splits redistribute spill chains, and every key is still found
/// through its bucket by the Python reader; values decode to what was
/// inserted.
#[test]
fn small_blocks_spill_and_every_key_is_found() {
    let seed = seed();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    for (block, load, n, commit_every) in [
        (104u16, 0.95f32, 600usize, 0usize),
        (128, 0.9, 900, 97),
        (256, 0.75, 1500, 400),
        (4096, 0.5, 300, 0),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut w = NudbWriter::create(
            dir.path(),
            NudbOptions {
                commit_every,
                codec: CodecPolicy::Mixed,
                ..opts(block, load)
            },
        )
        .expect("create");
        let mut inserted = HashMap::new();
        for i in 0..n {
            let (k, v) = leaf(&mut rng);
            w.insert(&k, &v).expect("insert");
            inserted.insert(k.to_vec(), v);
            if i == n / 2 {
                w.reopen().expect("reopen");
            }
        }
        let written = w.finish().expect("finish");
        let ctx = format!("seed {seed}, block {block}, load {load}");
        if block < 4096 {
            assert!(!written.spills.is_empty(), "{ctx}: no spill record");
        }
        let report = python_report(dir.path());
        agrees(&written, &report);
        if block < 4096 {
            assert!(report["deepest_chain"].as_u64() > Some(0), "{ctx}");
        }
        for (k, v) in decoded(&written) {
            let want = &inserted[&k];
            assert_eq!(&v, want, "{ctx}: the value of {k:02X?}");
        }
        // Every bucket holds at most its capacity.
        let key = std::fs::read(written.path("nudb.key")).expect("key");
        let cap = format::bucket_capacity(usize::from(block));
        for b in key.chunks_exact(usize::from(block)).skip(1) {
            let b = Bucket::decode(b).expect("bucket");
            assert!(b.entries.len() <= cap, "{ctx}");
            assert!(
                b.entries.windows(2).all(|e| e[0].hash <= e[1].hash),
                "{ctx}"
            );
        }
    }
}

fn inner_value(present: &[usize], rng: &mut impl Rng) -> ([u8; 32], Vec<u8>) {
    let mut prefix = b"MIN\0".to_vec();
    for b in 0..16 {
        if present.contains(&b) {
            prefix.extend_from_slice(&rng.gen::<[u8; 32]>());
        } else {
            prefix.extend_from_slice(&[0; 32]);
        }
    }
    let key = shamap::xrpl::sha512_half(&[&prefix]).0;
    let mut v = vec![0u8; 8];
    v.push(4);
    v.extend_from_slice(&prefix);
    (key, v)
}

/// Each forced codec type is what is stored and what the Python reader
/// decodes; the inner-node types decode with type byte 0 (`hotUNKNOWN`).
#[test]
fn every_codec_type_is_written_and_read_back() {
    let seed = seed();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut w = NudbWriter::create(dir.path(), opts(256, 0.5)).expect("create");
    let full: Vec<usize> = (0..16).collect();
    let mut want = Vec::new();
    for (i, t) in [
        CodecType::Raw,
        CodecType::Lz4,
        CodecType::InnerCompressed,
        CodecType::InnerFull,
    ]
    .into_iter()
    .enumerate()
    {
        for j in 0..20 {
            let (k, v) = match t {
                CodecType::InnerFull => inner_value(&full, &mut rng),
                CodecType::InnerCompressed if j % 2 == 0 => inner_value(&full, &mut rng),
                CodecType::InnerCompressed => inner_value(&[0, 3, i + j % 12], &mut rng),
                _ if j % 3 == 0 => inner_value(&[1, 2], &mut rng),
                _ => leaf(&mut rng),
            };
            w.insert_as(&k, &v, t).expect("insert");
            let type_byte = if matches!(t, CodecType::InnerCompressed | CodecType::InnerFull) {
                0
            } else {
                v[8]
            };
            want.push((k, t, type_byte));
        }
    }
    let written = w.finish().expect("finish");
    let report = python_report(dir.path());
    agrees(&written, &report);
    for (k, t, type_byte) in want {
        let r = record(&report, &k);
        assert_eq!(r["codec"].as_u64(), Some(t as u64), "seed {seed}");
        assert_eq!(
            r["type"].as_u64(),
            Some(u64::from(type_byte)),
            "seed {seed}"
        );
    }
}

/// Keys of another size than rippled's 32 bytes (NuDB takes any).
#[test]
fn other_key_sizes_are_read_by_the_python_reader() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    for ks in [1u16, 20, 33] {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut w = NudbWriter::create(
            dir.path(),
            NudbOptions {
                key_size: ks,
                ..opts(128, 0.8)
            },
        )
        .expect("create");
        for _ in 0..200 {
            let k: Vec<u8> = (0..ks).map(|_| rng.gen()).collect();
            let _ = w.insert_raw(&k, &[0, 1, 2, 3]).expect("insert");
        }
        let written = w.finish().expect("finish");
        let report = python_report(dir.path());
        for (r, p) in written
            .records
            .iter()
            .zip(report["records"].as_array().expect("r"))
        {
            assert_eq!(p["found_at"].as_u64(), Some(r.offset), "key size {ks}");
        }
        assert_eq!(
            report["dat_header"]["key_size"].as_u64(),
            Some(u64::from(ks))
        );
    }
}
