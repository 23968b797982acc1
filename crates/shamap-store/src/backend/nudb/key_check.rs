//! The audit's check of every key file against its data file: each bucket
//! entry must name a record that starts where it says, with its size and
//! its key's hash, from the bucket its hash belongs to, and each record
//! must be indexed exactly once.
//!
//! 1. One pass over the key file, a window of buckets per read
//!    ([`BUCKET_WINDOW_BYTES`]), each bucket's spill chain followed to its
//!    end: an entry in a bucket its hash does not belong to (a chain
//!    through another bucket's spills), or naming bytes past the data
//!    file's end, is wrong; the entries are digested
//!    ([`IndexDigest`]).
//! 2. When the digest equals the scan's digest of the data records, every
//!    entry is its record's (up to a 64-bit collision) and the walk may
//!    trust entries without reading records.
//! 3. Otherwise the entries and records are matched exactly, by offset, in
//!    windows of at most [`MATCH_WINDOW_RECORDS`] records (a pass over the
//!    key file and the window's part of the data file each): an entry
//!    naming no record, or a record with another size or key hash, or a
//!    second entry for a record, is wrong; a record with no entry before
//!    the last one indexed is damage (one after it is an interrupted
//!    commit's leftover, which NuDB ignores: counted, not damage).
//!
//! Wrong entries are kept by their key hash ([`ScanReport::bad_entries`]):
//! the walk reports every ledger whose node it looks up through one,
//! naming the entry.

use shamap::Hash256;

use super::dat_file::{Record, SIZE_LEN};
use super::key_file::{bucket_index, key_hash, Entry, IndexDigest};
use super::scan::{DamagedRecord, ScanReport, MAX_DAMAGE};
use super::store::{NudbStore, SCAN_BLOCK};

/// Bytes of key file read at a time.
pub const BUCKET_WINDOW_BYTES: u64 = 1 << 20;
/// Records matched against entries per window (40 bytes each, both sides).
pub const MATCH_WINDOW_RECORDS: u64 = 2 << 20;

/// A wrong entry, where it is.
#[derive(Clone, Debug)]
struct Placed {
    bucket: u64,
    entry: Entry,
}

/// Runs the check on every directory of `store` (see the module docs),
/// setting [`ScanReport::index_agrees`], [`ScanReport::kept_buckets`] (at
/// most `kept_limit` entries) and
/// [`ScanReport::bad_entries`], and adding what it finds to the scan's
/// damage.
pub fn check_key_files(store: &NudbStore, scan: &mut ScanReport, kept_limit: usize) {
    scan.index_agrees = vec![false; store.parts().len()];
    scan.kept_buckets = vec![Vec::new(); store.parts().len()];
    let mut kept_entries = 0;
    for (i, p) in store.parts().iter().enumerate() {
        let kh = &p.key_header;
        let mut digest = IndexDigest::default();
        let mut whole = true;
        let mut damage = Vec::new();
        let window = (BUCKET_WINDOW_BYTES / u64::from(kh.block_size)).max(1);
        let mut n0 = 0;
        while n0 < kh.buckets {
            for (n, b) in buckets_from(p, n0, window, &mut damage) {
                let mut wrong = Vec::new();
                let walked = p.walk_chain(n, &b, &mut |e| {
                    digest.add(e.offset, e.size, e.hash);
                    let home = bucket_index(e.hash, kh.buckets, kh.modulus);
                    let end = e
                        .offset
                        .saturating_add((SIZE_LEN + usize::from(kh.key_size)) as u64)
                        .saturating_add(e.size);
                    let problem = if home != n {
                        Some(format!(
                            "bucket {n} holds an entry (record at byte {}, {} bytes, hash {:#014x}) that belongs to bucket {home}: a spill chain through another bucket's spills, or a damaged entry",
                            e.offset, e.size, e.hash
                        ))
                    } else if e.offset < super::dat_file::DAT_HEADER_LEN as u64 || end > p.dat.len {
                        Some(format!(
                            "bucket {n} names a record at byte {} of {} bytes, past the end of {} ({} bytes)",
                            e.offset,
                            e.size,
                            p.dat.path.display(),
                            p.dat.len
                        ))
                    } else {
                        None
                    };
                    if let Some(what) = problem {
                        scan.bad_entries
                            .entry((i, e.hash))
                            .or_insert_with(|| what.clone());
                        wrong.push(what);
                    }
                });
                if let Err(what) = walked {
                    wrong.push(what);
                }
                if wrong.is_empty() {
                    let kept = &mut scan.kept_buckets[i];
                    if kept_entries + b.entries.len() <= kept_limit && kept.len() as u64 == n {
                        kept_entries += b.entries.len();
                        kept.push(b);
                    }
                } else {
                    whole = false;
                    for what in wrong {
                        damage.push(key_damage(p, kh.bucket_offset(n), None, what));
                    }
                }
            }
            n0 += window;
        }
        let agrees = whole && scan.records_index.get(i) == Some(&digest);
        if !agrees {
            whole = false;
            match_exactly(store, i, scan, &mut damage);
        }
        scan.index_agrees[i] = whole;
        for d in damage {
            scan.damaged_count += 1;
            if scan.damaged.len() < MAX_DAMAGE {
                scan.damaged.push(d);
            }
        }
    }
}

/// Buckets `n0..n0 + window` of `p`, read in one go, or one by one when
/// that fails (each bucket that cannot be read is damage).
fn buckets_from(
    p: &super::dir::NudbDir,
    n0: u64,
    window: u64,
    damage: &mut Vec<DamagedRecord>,
) -> Vec<(u64, super::key_file::Bucket)> {
    match p.read_buckets(n0, window) {
        Ok(b) => (n0..).zip(b).collect(),
        Err(_) => (n0..(n0 + window).min(p.key_header.buckets))
            .filter_map(|n| match p.read_bucket(n) {
                Ok(b) => Some((n, b)),
                Err(what) => {
                    damage.push(key_damage(p, p.key_header.bucket_offset(n), None, what));
                    None
                }
            })
            .collect(),
    }
}

/// Damage found in `p`'s key file at `offset`.
fn key_damage(
    p: &super::dir::NudbDir,
    offset: u64,
    key: Option<Hash256>,
    what: String,
) -> DamagedRecord {
    DamagedRecord {
        file: p.key_path.clone(),
        offset,
        key,
        what,
    }
}

/// Matches directory `i`'s entries and records exactly (step 3 of the
/// module docs), pushing what is wrong to `damage` and the wrong entries
/// to [`ScanReport::bad_entries`].
fn match_exactly(
    store: &NudbStore,
    i: usize,
    scan: &mut ScanReport,
    damage: &mut Vec<DamagedRecord>,
) {
    let p = &store.parts()[i];
    let kh = &p.key_header;
    let ks = usize::from(kh.key_size);
    let start = super::dat_file::DAT_HEADER_LEN as u64;
    let records = scan.records.max(1);
    let windows = records.div_ceil(MATCH_WINDOW_RECORDS).max(1);
    let span = (p.dat.len - start).div_ceil(windows).max(1);
    let mut last_indexed = 0u64;
    let mut unindexed: Vec<(u64, Hash256)> = Vec::new();
    for w in 0..windows {
        let lo = start + w * span;
        let hi = (lo + span).min(p.dat.len);
        // The entries naming offsets in [lo, hi).
        let mut entries: Vec<Placed> = Vec::new();
        let window = (BUCKET_WINDOW_BYTES / u64::from(kh.block_size)).max(1);
        let mut n0 = 0;
        let mut ignored = Vec::new();
        while n0 < kh.buckets {
            for (n, b) in buckets_from(p, n0, window, &mut ignored) {
                let _ = p.walk_chain(n, &b, &mut |e| {
                    if (lo..hi).contains(&e.offset) {
                        entries.push(Placed {
                            bucket: n,
                            entry: *e,
                        });
                    }
                });
            }
            n0 += window;
        }
        entries.sort_by_key(|e| (e.entry.offset, e.bucket));
        // The records starting in [lo, hi): offset, size, key.
        let mut recs: Vec<(u64, u64, Hash256)> = Vec::new();
        if let Ok(mut chunks) = p.dat.chunks(SCAN_BLOCK) {
            while let Ok(Some(c)) = chunks.next_chunk() {
                if c.start >= hi {
                    break;
                }
                for &(pos, r) in &c.records {
                    let offset = c.start + pos as u64;
                    if let Record::Data { size } = r {
                        if (lo..hi).contains(&offset) {
                            let k = pos + SIZE_LEN;
                            let key = Hash256::from_slice(&c.bytes[k..k + ks]).unwrap_or_default();
                            recs.push((offset, size, key));
                        }
                    }
                }
            }
        }
        let mut r = 0;
        let mut matched = vec![false; recs.len()];
        for e in &entries {
            while r < recs.len() && recs[r].0 < e.entry.offset {
                r += 1;
            }
            let at = kh.bucket_offset(e.bucket);
            let n = e.bucket;
            let (offset, size, hash) = (e.entry.offset, e.entry.size, e.entry.hash);
            let what = match recs.get(r) {
                Some(&(o, s, key)) if o == offset => {
                    let own = key_hash(&key.0, kh.salt);
                    if s != size || own != hash {
                        // Indexed, wrongly: named here, not again as unindexed.
                        matched[r] = true;
                        Some((
                            Some(key),
                            format!(
                                "bucket {n}'s entry for the record at byte {offset} (key {key}) says {size} bytes and hash {hash:#014x}; the record has {s} bytes and hash {own:#014x}"
                            ),
                        ))
                    } else if matched[r] {
                        Some((
                            Some(key),
                            format!(
                                "bucket {n} holds a second entry for the record at byte {offset} (key {key}): a duplicated entry"
                            ),
                        ))
                    } else {
                        matched[r] = true;
                        last_indexed = last_indexed.max(offset);
                        None
                    }
                }
                _ => Some((
                    None,
                    format!(
                        "bucket {n} names byte {offset} of {} ({size} bytes), where no record starts",
                        p.dat.path.display()
                    ),
                )),
            };
            if let Some((key, what)) = what {
                scan.bad_entries
                    .entry((i, hash))
                    .or_insert_with(|| what.clone());
                if let Some(k) = key {
                    scan.bad_entries
                        .entry((i, key_hash(&k.0, kh.salt)))
                        .or_insert_with(|| what.clone());
                }
                damage.push(key_damage(p, at, key, what));
            }
        }
        for (k, &(offset, _, key)) in recs.iter().enumerate() {
            if !matched[k] {
                unindexed.push((offset, key));
            }
        }
    }
    let mut tail = 0u64;
    for (offset, key) in unindexed {
        if offset < last_indexed {
            let what = format!(
                "the record at byte {offset} of {} (key {key}) has no bucket entry in {}",
                p.dat.path.display(),
                p.key_path.display()
            );
            scan.bad_entries
                .entry((i, key_hash(&key.0, kh.salt)))
                .or_insert_with(|| what.clone());
            damage.push(DamagedRecord {
                file: p.dat.path.clone(),
                offset,
                key: Some(key),
                what,
            });
        } else {
            tail += 1;
        }
    }
    if tail > 0 {
        scan.unindexed_tail.push((i, tail));
    }
}
