//! Fuzz target: rippled's NuDB node store (`nudb.dat`, `nudb.key`,
//! `nudb.log`) is bytes from disk, written by another program, perhaps
//! damaged or cut short. For any input, rippled's value codec returns a
//! value or an error, and opening the store returns a store or one error,
//! never a panic, a hang or an allocation sized by a length field; an opened
//! store reads every record, looks up keys, and audits itself (the scan, the
//! key file check, every ledger header found walked) without panicking, and
//! never hands out a node whose bytes do not hash to its key.
//!
//! The inputs start from a real store: a small ledger (random state entries
//! and its header) written by the project's test-only writer in NuDB's
//! layout with rippled's codec, with small blocks so that buckets spill.
//! The first input byte picks what the rest is: the whole data file, the
//! whole key file, or patches (offset, XOR byte) to both files plus a cut
//! of either, so the fuzzer reaches the buckets, spills and records past
//! valid headers. With the top bit of a patch mode, the rest is also a
//! `nudb.log` beside them (a commit under way, or one a crash stopped): it
//! is read in memory, never applied, and the store opens as it was before
//! that commit, or the log is refused in one line (another store's, or
//! damaged).

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

use shamap::Hash256;
use shamap_nudb_writer::{write_ledgers, CodecPolicy, NudbOptions};
use shamap_store::backend::nudb::codec::decode_value;
use shamap_store::backend::nudb::{audit, AuditOptions, NudbStore};
use shamap_store::{NodeStore, NodeStoreExt};

/// The seed store: its data and key files and the keys it holds.
struct Seed {
    dat: Vec<u8>,
    key: Vec<u8>,
    keys: Vec<Hash256>,
}

fn seed() -> &'static Seed {
    static SEED: OnceLock<Seed> = OnceLock::new();
    SEED.get_or_init(|| {
        let dir = common::scratch_dir("nudb-seed");
        let ledger = shamap_nudb_writer::random::ledger(40, 7, 90_000_001);
        let opts = NudbOptions {
            block_size: 128,
            load_factor: 0.9,
            codec: CodecPolicy::Mixed,
            ..NudbOptions::default()
        };
        let w = write_ledgers(&dir, opts, std::slice::from_ref(&ledger)).expect("the seed store");
        let keys = w
            .records
            .iter()
            .filter_map(|r| Hash256::from_slice(&r.key))
            .collect();
        let seed = Seed {
            dat: std::fs::read(dir.join("nudb.dat")).expect("nudb.dat"),
            key: std::fs::read(dir.join("nudb.key")).expect("nudb.key"),
            keys,
        };
        let _ = std::fs::remove_dir_all(&dir);
        seed
    })
}

/// Applies the patches in `data` (4-byte little-endian offset, XOR byte;
/// the offset's top bit picks the key file) and a final cut.
fn patch(dat: &mut Vec<u8>, key: &mut Vec<u8>, data: &[u8]) {
    let mut chunks = data.chunks_exact(5);
    for c in &mut chunks {
        let at = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        let file = if at & 0x8000_0000 != 0 {
            &mut *key
        } else {
            &mut *dat
        };
        let at = (at & 0x7fff_ffff) as usize;
        if !file.is_empty() {
            let i = at % file.len();
            file[i] ^= c[4];
        }
    }
    if let [cut, which] = chunks.remainder() {
        let file = if which % 2 == 0 { dat } else { key };
        let keep = file.len() - file.len() * usize::from(*cut) / 1024;
        file.truncate(keep);
    }
}

fn exercise(store: &NudbStore, keys: &[Hash256]) {
    let _ = store.for_each_record(&mut |_, _, _, _| std::ops::ControlFlow::Continue(()));
    for k in keys.iter().chain([&Hash256([0x5a; 32])]) {
        if let Ok(Some(obj)) = store.get(k) {
            assert_eq!(obj.hash(), *k, "a node handed out under another key");
        }
        let _ = store.contains(k);
    }
    let _ = store.ledger_hashes();
    for threads in [1, 2] {
        let _ = audit(
            store,
            &AuditOptions {
                only: None,
                threads,
                memory: None,
            },
            &|_| {},
        );
    }
    if let Some(k) = keys.first() {
        let _ = audit(
            store,
            &AuditOptions {
                only: Some(shamap_store::findings::Only::Hash(*k)),
                threads: 1,
                memory: None,
            },
            &|_| {},
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let mut out = Vec::new();
    let _ = decode_value(data, &mut out);
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let seed = seed();
    let (mut dat, mut key) = (seed.dat.clone(), seed.key.clone());
    match mode % 4 {
        0 => dat = rest.to_vec(),
        1 => key = rest.to_vec(),
        _ => patch(&mut dat, &mut key, rest),
    }
    let dir = common::scratch_dir("nudb-input");
    std::fs::write(dir.join("nudb.dat"), &dat).expect("write nudb.dat");
    std::fs::write(dir.join("nudb.key"), &key).expect("write nudb.key");
    if mode % 4 == 3 && mode & 0x80 != 0 {
        std::fs::write(dir.join("nudb.log"), rest).expect("write nudb.log");
    }
    match NudbStore::open(&dir) {
        Ok(store) => exercise(&store, &seed.keys),
        Err(e) => {
            let msg = e.to_string();
            assert!(!msg.contains('\n'), "an error of more than one line: {msg}");
        }
    }
    if mode % 4 == 3 && mode & 0x80 != 0 {
        let log = std::fs::read(dir.join("nudb.log")).expect("nudb.log");
        assert_eq!(log, rest, "the reader changed nudb.log");
    }
    let _ = std::fs::remove_dir_all(&dir);
});
