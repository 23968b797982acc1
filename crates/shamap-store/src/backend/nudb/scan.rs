//! The audit's scan: every record of every data file decoded and its
//! hash checked, in parallel. One reader thread streams each data file
//! sequentially in blocks of [`SCAN_BLOCK`] bytes cut at record boundaries
//! (the disk's best pattern, and bounded memory: a few blocks in flight);
//! worker threads decode the records of a block (rippled's codec) and
//! check them in batches of [`HASH_BATCH`] against their keys
//! ([`NodeObject::decode_many`]: the multi-lane SHA-512).
//!
//! What the scan keeps for the walk, bounded by the audit's budget
//! ([`super::budget`]): the records it checked, by a keyed fingerprint
//! ([`super::record_index`]: 13 bytes a record, so that the walk finds
//! each node in memory), and the inner nodes' encodings that fit beside
//! them ([`super::inner_cache`]). Past the budget, records are left out
//! and the walk looks them up the slow way. Besides that it keeps the
//! damage it finds (capped at [`MAX_DAMAGE`] records, the rest counted),
//! the ledger headers it meets (one small entry per ledger), and the keys
//! of inner nodes stored other than as rippled stores them (LZ4 or raw;
//! rippled never does, capped at [`MAX_ODD_INNER`]).
//!
//! [`decode_and_hash_floor`] is the yardstick the audit is measured
//! against: the same decoding and hashing on one thread, nothing else.

use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Mutex;

use hashbrown::HashSet;
use shamap::Hash256;

use super::budget::MemoryBudget;
use super::codec::decode_value;
use super::dat_file::{Chunk, Record, SIZE_LEN};
use super::inner_cache::{InnerBudget, InnerCache, InnerShare};
use super::key_file::{key_hash, Bucket, IndexDigest};
use super::ledgers::FoundHeader;
use super::record_index::{place, ChunkEntries, IndexBuilder, RecordIndex};
use super::store::{NudbStore, SCAN_BLOCK};
use crate::error::StoreError;
use crate::node::{Node, NodeObject};

/// Records hashed per multi-lane batch.
pub const HASH_BATCH: usize = 64;
/// Damaged records listed (more are counted).
pub const MAX_DAMAGE: usize = 10_000;
/// Oddly stored inner nodes remembered; past it the walk decodes every
/// record it needs to tell an inner node from a leaf.
pub const MAX_ODD_INNER: usize = 100_000;

/// A record the scan found damaged (or the place the scan had to stop).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DamagedRecord {
    /// The data file.
    pub file: PathBuf,
    /// Byte offset of the record.
    pub offset: u64,
    /// The key the record holds (none when the record could not be read).
    pub key: Option<Hash256>,
    /// What is wrong, on one line.
    pub what: String,
}

/// What the scan found.
#[derive(Debug, Default)]
pub struct ScanReport {
    /// Data records read.
    pub records: u64,
    /// Spill records passed.
    pub spills: u64,
    /// Bytes of the data files scanned.
    pub bytes: u64,
    /// Bytes of the values once decoded.
    pub decoded_bytes: u64,
    /// Records per codec type (0 raw, 1 LZ4, 2 compressed inner, 3 full
    /// inner, 4 anything else).
    pub codec_types: [u64; 5],
    /// Damaged records, in file order per file (at most [`MAX_DAMAGE`]).
    pub damaged: Vec<DamagedRecord>,
    /// Damaged records in all, listed or not.
    pub damaged_count: u64,
    /// Ledger headers found.
    pub headers: Vec<FoundHeader>,
    /// Inner nodes stored as LZ4 or raw values.
    pub odd_inner: HashSet<Hash256>,
    /// True when more than [`MAX_ODD_INNER`] were found.
    pub odd_inner_overflow: bool,
    /// Per directory: records before this offset were checked by the scan
    /// in step with the file (before the first damage found in it).
    pub verified_below: Vec<u64>,
    /// Per directory: the digest of its data records' index entries
    /// (offset, value size, key hash).
    pub records_index: Vec<IndexDigest>,
    /// Per directory: true when its key file's entries are exactly its data
    /// records' (the two digests agree, set by the audit's key file check):
    /// the walk may then trust a bucket entry in the checked region
    /// without reading its record.
    pub index_agrees: Vec<bool>,
    /// Inner nodes the scan checked, kept for the walk (bounded).
    pub inner_cache: InnerCache,
    /// Per directory: its first buckets as the audit's key file check read
    /// them (bounded), shared by the walkers.
    pub kept_buckets: Vec<Vec<Bucket>>,
    /// True when not every inner node checked fitted in the cache.
    pub inner_cache_full: bool,
    /// The records checked, by fingerprint, for the walk
    /// ([`super::record_index`]).
    pub record_index: RecordIndex,
    /// Leaves and inner nodes the record index held, and records left out
    /// of it for want of room.
    pub indexed: (u64, u64, u64),
    /// Wrong key file entries, by directory and key hash, with what is
    /// wrong ([`super::key_check`]): a lookup through one is damage.
    pub bad_entries: hashbrown::HashMap<(usize, u64), String>,
    /// Per directory with any: records after the last indexed one, with no
    /// entry (an interrupted commit's leftovers, which NuDB ignores).
    pub unindexed_tail: Vec<(usize, u64)>,
}

impl ScanReport {
    fn merge(&mut self, o: ScanReport) {
        self.records += o.records;
        self.spills += o.spills;
        self.decoded_bytes += o.decoded_bytes;
        for (a, b) in self.codec_types.iter_mut().zip(o.codec_types) {
            *a += b;
        }
        self.damaged_count += o.damaged_count;
        self.damaged.extend(o.damaged);
        self.headers.extend(o.headers);
        self.odd_inner_overflow |= o.odd_inner_overflow;
        if self.records_index.len() < o.records_index.len() {
            self.records_index
                .resize(o.records_index.len(), IndexDigest::default());
        }
        for (a, b) in self.records_index.iter_mut().zip(o.records_index) {
            a.merge(b);
        }
        for h in o.odd_inner {
            if self.odd_inner.len() >= MAX_ODD_INNER {
                self.odd_inner_overflow = true;
                break;
            }
            self.odd_inner.insert(h);
        }
    }

    fn damage(&mut self, d: DamagedRecord) {
        self.damaged_count += 1;
        if self.damaged.len() < MAX_DAMAGE {
            self.damaged.push(d);
        }
    }
}

/// Scans every record of `store` with `threads` workers (at least 1);
/// `progress` gets the bytes read so far.
pub fn scan(
    store: &NudbStore,
    threads: usize,
    memory: &MemoryBudget,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<ScanReport, StoreError> {
    let (tx, rx) = sync_channel::<(usize, Chunk)>(threads + 2);
    let rx = Mutex::new(rx);
    // Chunks the workers are done with, for the reader to read into again.
    let spent = Mutex::new(Vec::<Chunk>::new());
    let read = AtomicU64::new(0);
    let budget = InnerBudget::new(memory.inner_cache);
    let index = IndexBuilder::new(memory.record_index);
    let mut total = ScanReport {
        verified_below: store.parts().iter().map(|p| p.dat.len).collect(),
        bytes: store.data_bytes(),
        ..ScanReport::default()
    };
    let (reader_result, parts) = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads.max(1))
            .map(|_| s.spawn(|| work(store, (&rx, &spent), &budget, &index)))
            .collect();
        let spent = &spent;
        let reader = s.spawn(move || -> Result<Vec<DamagedRecord>, StoreError> {
            let mut broken = Vec::new();
            for (i, p) in store.parts().iter().enumerate() {
                let mut chunks = p
                    .dat
                    .chunks(SCAN_BLOCK)
                    .map_err(|e| StoreError::backend(store.location_str(), e))?;
                let spare = || spent.lock().ok().and_then(|mut v| v.pop());
                while let Some(mut c) = chunks
                    .next_chunk_reusing(spare())
                    .map_err(|e| StoreError::backend(store.location_str(), e))?
                {
                    if let Some((offset, what)) = c.broken.take() {
                        broken.push(DamagedRecord {
                            file: p.dat.path.clone(),
                            offset,
                            key: p.dat.key_at(offset).and_then(|k| Hash256::from_slice(&k)),
                            what,
                        });
                    }
                    progress(
                        read.fetch_add(c.bytes.len() as u64, Ordering::Relaxed)
                            + c.bytes.len() as u64,
                    );
                    if tx.send((i, c)).is_err() {
                        break;
                    }
                }
            }
            Ok(broken)
        });
        let reader_result = reader.join().unwrap_or_else(|_| {
            Err(StoreError::backend(
                store.location_str(),
                "the scan's reader thread failed",
            ))
        });
        let parts: Vec<(ScanReport, InnerShare)> =
            workers.into_iter().filter_map(|w| w.join().ok()).collect();
        (reader_result, parts)
    });
    let broken = reader_result?;
    let mut shares = Vec::with_capacity(parts.len());
    for (p, share) in parts {
        total.merge(p);
        shares.push(share);
    }
    total.inner_cache = InnerCache::from_shares(shares);
    total.record_index = index.finish(threads);
    let (leaves, inner) = total.record_index.len();
    total.indexed = (leaves as u64, inner as u64, total.record_index.left_out);
    total.inner_cache_full = budget.is_full();
    for b in broken {
        total.damage(b);
    }
    let file_index = |f: &PathBuf| store.parts().iter().position(|p| &p.dat.path == f);
    for d in &total.damaged {
        if let Some(i) = file_index(&d.file) {
            total.verified_below[i] = total.verified_below[i].min(d.offset);
        }
    }
    total
        .damaged
        .sort_by_key(|d| (file_index(&d.file), d.offset));
    total.headers.sort_by_key(|h| (h.header.seq, h.hash));
    total.headers.dedup();
    Ok(total)
}

/// A worker: decodes and checks the records of the chunks it receives,
/// keeping the inner nodes that check out while `budget` allows.
fn work(
    store: &NudbStore,
    (rx, spent): (&ChunkQueue, &Mutex<Vec<Chunk>>),
    budget: &InnerBudget,
    index: &IndexBuilder,
) -> (ScanReport, InnerShare) {
    let mut out = ScanReport::default();
    let mut share = InnerShare::default();
    let mut entries = ChunkEntries::default();
    loop {
        let next = match rx.lock() {
            Ok(r) => r.recv(),
            Err(_) => return (out, share),
        };
        let Ok((part, chunk)) = next else {
            return (out, share);
        };
        check_chunk(
            store,
            part,
            &chunk,
            &mut out,
            &mut share,
            budget,
            (index, &mut entries),
        );
        if let Ok(mut v) = spent.lock() {
            v.push(chunk);
        }
    }
}

/// Chunks read, with their directory, for the workers to take.
type ChunkQueue = Mutex<Receiver<(usize, Chunk)>>;

/// Decodes and checks every data record of `chunk` (of directory `part`).
fn check_chunk(
    store: &NudbStore,
    part: usize,
    chunk: &Chunk,
    out: &mut ScanReport,
    share: &mut InnerShare,
    budget: &InnerBudget,
    (index, entries): (&IndexBuilder, &mut ChunkEntries),
) {
    let p = &store.parts()[part];
    let fp = index.fingerprint();
    let ks = usize::from(p.dat.header.key_size);
    if out.records_index.len() <= part {
        out.records_index
            .resize(store.parts().len(), IndexDigest::default());
    }
    let mut batch: Vec<(Hash256, Vec<u8>)> = Vec::with_capacity(HASH_BATCH);
    // Per record of the batch: its offset, codec type and where its stored
    // value is in the chunk.
    let mut offsets: Vec<(u64, u64, std::ops::Range<usize>)> = Vec::with_capacity(HASH_BATCH);
    // Decoded values' buffers, reused from one batch to the next.
    let mut spare: Vec<Vec<u8>> = Vec::with_capacity(HASH_BATCH);
    let flush = |batch: &mut Vec<(Hash256, Vec<u8>)>,
                 spare: &mut Vec<Vec<u8>>,
                 offsets: &mut Vec<(u64, u64, std::ops::Range<usize>)>,
                 out: &mut ScanReport,
                 share: &mut InnerShare,
                 entries: &mut ChunkEntries| {
        for (r, (offset, ty, raw)) in NodeObject::decode_many(std::mem::take(batch))
            .into_iter()
            .zip(offsets.drain(..))
        {
            match r {
                Ok(obj) => {
                    out.decoded_bytes += obj.value().len() as u64;
                    if ty == 2 || ty == 3 {
                        let size = raw.len() as u64;
                        entries.inner(fp, &obj.hash(), part, offset, size);
                        share.keep(budget, obj.hash(), part, offset, &chunk.bytes[raw]);
                    } else if obj.value()[8] == 1 {
                        if let Ok(Node::Ledger(header)) = obj.parse() {
                            out.headers.push(FoundHeader {
                                hash: obj.hash(),
                                header,
                            });
                        }
                    } else if ty < 2 && obj.prefix_bytes().starts_with(b"MIN\0") {
                        if out.odd_inner.len() < MAX_ODD_INNER {
                            out.odd_inner.insert(obj.hash());
                        } else {
                            out.odd_inner_overflow = true;
                        }
                    } else if let Some((kind, key)) = obj.leaf_kind_key() {
                        let at = (part, place(offset, p.dat.len));
                        entries.leaf(fp, &obj.hash(), kind, &key.0, at);
                    }
                    // The value's buffer serves a later record.
                    spare.push(obj.into_value());
                }
                Err(e) => out.damage(DamagedRecord {
                    file: p.dat.path.clone(),
                    offset,
                    key: Some(error_key(&e)),
                    what: e.to_string(),
                }),
            }
        }
    };
    for &(pos, r) in &chunk.records {
        let Record::Data { size } = r else {
            out.spills += 1;
            continue;
        };
        out.records += 1;
        let offset = chunk.start + pos as u64;
        let k = pos + SIZE_LEN;
        let key_bytes = &chunk.bytes[k..k + ks];
        out.records_index[part].add(offset, size, key_hash(key_bytes, p.key_header.salt));
        let key = Hash256::from_slice(key_bytes).unwrap_or(Hash256::ZERO);
        let raw = &chunk.bytes[k + ks..k + ks + size as usize];
        let ty = super::codec::codec_type(raw).unwrap_or(4);
        out.codec_types[ty.min(4) as usize] += 1;
        let mut value = spare.pop().unwrap_or_default();
        if let Err(e) = decode_value(raw, &mut value) {
            out.damage(DamagedRecord {
                file: p.dat.path.clone(),
                offset,
                key: Some(key),
                what: format!("node {key} is corrupt: {e}"),
            });
            continue;
        }
        batch.push((key, value));
        offsets.push((offset, ty, k + ks..k + ks + size as usize));
        if batch.len() == HASH_BATCH {
            flush(&mut batch, &mut spare, &mut offsets, out, share, entries);
        }
    }
    flush(&mut batch, &mut spare, &mut offsets, out, share, entries);
    index.file(entries);
}

/// The key a decode error names.
fn error_key(e: &StoreError) -> Hash256 {
    match e {
        StoreError::Corrupt { hash, .. } => *hash,
        _ => Hash256::ZERO,
    }
}

/// What [`decode_and_hash_floor`] counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FloorReport {
    /// Records decoded and hashed.
    pub records: u64,
    /// Records that failed.
    pub bad: u64,
}

/// The floor an audit is measured against: every record decoded with
/// rippled's codec and hashed (SHA-512Half, one message at a time), on
/// one thread, with no tree work.
pub fn decode_and_hash_floor(store: &NudbStore) -> Result<FloorReport, StoreError> {
    let mut r = FloorReport::default();
    let mut value = Vec::new();
    store.for_each_record(&mut |_, _, key, raw| {
        r.records += 1;
        let ok = decode_value(raw, &mut value).is_ok()
            && value.len() > crate::node::VALUE_HEADER_LEN
            && shamap::xrpl::sha512_half(&[&value[crate::node::VALUE_HEADER_LEN..]]).0 == key;
        if !ok {
            r.bad += 1;
        }
        ControlFlow::Continue(())
    })?;
    Ok(r)
}
