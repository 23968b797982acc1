//! The audit's index of the records its scan checked, by a keyed
//! fingerprint of their keys: what lets the walk of a ledger find each of
//! its nodes in memory instead of through the key file.
//!
//! Without it, every node the walk meets costs a lookup in the key file
//! (a 4 KiB bucket read at a random place: the key file is in hash order,
//! the walk in key order) and, for a leaf not tagged or an inner node not
//! cached, a read of its record. At 10M entries that is 13M random reads
//! and most of the audit's time. The scan meets every record in file
//! order anyway; it files each one here:
//!
//! | table | entry (12 bytes) | what the walk learns |
//! |---|---|---|
//! | leaves | 48-bit fingerprint of (key, map kind) ‖ its directory and place in the data file (1/4096 of the file) ‖ the key's first 8 nibbles | the leaf is present, hashed, of this kind, and on its path down to depth 8 |
//! | inner nodes | 32 bits of the key's fingerprint ‖ directory, byte offset and value size of its record | where to read it (one read, its key compared in full) |
//!
//! The fingerprint is SipHash-1-3 under a key drawn at random for each
//! audit, so a store cannot be built to collide with it: a reference to a
//! leaf that is not in the store (or not of that kind) is taken for one
//! that is only when a leaf's 48-bit fingerprint equals the reference's
//! and its key's nibbles equal the reference's path, about n × 2^-48 ×
//! 16^-depth for n leaves (below 2^-40 for a reference at depth 1 of a
//! map of 10M leaves, and smaller deeper down). A leaf's place is coarse
//! (its directory, and which 4096th of the data file): it is trusted only
//! where the key file agrees with the data file and before the scan's
//! first damage, like every record the walk takes from the scan. An inner node found here is read and its key
//! compared in full, so its short fingerprint only costs a read when it
//! collides. A leaf whose tag does not pass, a node in neither table, a
//! deeper leaf, any record the scan did not check in step: the walk looks
//! it up the slow way, which also words any problem.
//!
//! Each table is cut in 16 parts by the fingerprint's top 4 bits (sorted
//! in parallel once the scan ends) and each part has a directory on the
//! next bits (about four entries a slot), so a lookup is the hash, a
//! directory load and a short run of one or two cache lines. Memory: 12
//! bytes a record plus 1 byte a record of directory, bounded by the
//! budget's share ([`super::budget`]): records past it are not indexed
//! (the walk looks them up the slow way).

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use shamap::{Hash256, MapKind};

use crate::node_id::NodeId;

/// Parts of a table (by the fingerprint's top 4 bits).
const PARTS: usize = 16;
/// Bytes an entry is counted as (its 12 and its share of the directory).
pub const ENTRY_BYTES: usize = 13;
/// The largest value size an inner entry holds (an inner node's stored
/// value is at most 513 bytes).
const MAX_INNER_SIZE: u64 = (1 << 10) - 1;
/// The largest directory number an inner entry holds.
const MAX_PART: usize = (1 << 6) - 1;
/// The largest byte offset an inner entry holds (256 TiB).
const MAX_OFFSET: u64 = (1 << 48) - 1;

/// The key nibbles a leaf's tag holds.
pub const TAG_NIBBLES: u8 = 8;

/// A leaf: its 48-bit fingerprint, directory (4 bits) and place (12 bits,
/// in 4096ths of the data file), high to low in two words, and the first 8
/// nibbles of its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct LeafEntry {
    fp: [u32; 2],
    prefix: u32,
}

/// Directories a leaf entry can name.
const LEAF_PARTS: usize = 16;
/// Places in a data file a leaf entry tells apart.
pub const PLACES: u64 = 4096;

/// The place (0 to [`PLACES`] - 1) of byte `offset` of a data file of
/// `len` bytes.
pub fn place(offset: u64, len: u64) -> u64 {
    if len == 0 {
        return 0;
    }
    ((u128::from(offset.min(len)) * u128::from(PLACES)) / u128::from(len))
        .min(u128::from(PLACES - 1)) as u64
}

/// An inner node: the low 32 bits of its fingerprint and its record
/// (offset in the low 48 bits, value size in the next 10, directory in
/// the top 6), as two words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct InnerEntry {
    fp: u32,
    at: [u32; 2],
}

trait Entry: Copy + Send {
    /// The fingerprint's bits this entry is sorted and placed by.
    fn fp(&self) -> u64;
}

impl LeafEntry {
    fn word(&self) -> u64 {
        (u64::from(self.fp[0]) << 32) | u64::from(self.fp[1])
    }
}

impl Entry for LeafEntry {
    fn fp(&self) -> u64 {
        self.word() >> 16
    }
}

impl Entry for InnerEntry {
    fn fp(&self) -> u64 {
        u64::from(self.fp)
    }
}

/// Fingerprint constants a leaf's map kind is folded in with.
fn kind_salt(kind: MapKind) -> u64 {
    match kind {
        MapKind::AccountState => 0x9e37_79b9_7f4a_7c15,
        MapKind::TransactionWithMeta => 0xc2b2_ae3d_27d4_eb4f,
        MapKind::TransactionNoMeta => 0x1656_67b1_9e37_79f9,
    }
}

/// The keyed fingerprint of a node's key (one per audit).
#[derive(Clone, Debug)]
pub struct Fingerprint {
    state: RandomState,
}

impl Fingerprint {
    /// A fingerprint under a fresh random key.
    pub fn new() -> Fingerprint {
        Fingerprint {
            state: RandomState::new(),
        }
    }

    /// The fingerprint of `key`.
    pub fn of(&self, key: &Hash256) -> u64 {
        let mut h = self.state.build_hasher();
        h.write(&key.0);
        h.finish()
    }
}

impl Default for Fingerprint {
    fn default() -> Self {
        Fingerprint::new()
    }
}

/// The first 8 nibbles of a key.
fn prefix(key: &[u8; 32]) -> u32 {
    u32::from_be_bytes([key[0], key[1], key[2], key[3]])
}

/// True when a leaf whose key starts with the 8 nibbles `prefix` is on the
/// path to `id`, at depth 1 to [`TAG_NIBBLES`]: the key's first `depth`
/// nibbles are the path's. (Deeper, the index cannot tell: the walk reads
/// the leaf.)
pub fn on_path(prefix: u32, id: &NodeId) -> bool {
    let depth = u32::from(id.depth());
    if depth == 0 || depth > u32::from(TAG_NIBBLES) {
        return false;
    }
    let mask = u32::MAX << (32 - 4 * depth);
    (prefix ^ self::prefix(&id.key().0)) & mask == 0
}

/// One part of a table: sorted entries and the directory over them.
#[derive(Debug)]
struct Sorted<E> {
    entries: Vec<E>,
    /// `dir[s]..dir[s + 1]`: the entries of slot `s`.
    dir: Vec<u32>,
    /// Bits of the fingerprint, after the part's, that name the slot.
    bits: u32,
}

impl<E: Entry> Sorted<E> {
    fn new(mut entries: Vec<E>, fp_bits: u32) -> Sorted<E> {
        entries.sort_unstable_by_key(Entry::fp);
        entries.shrink_to_fit();
        let per_slot = 4;
        let bits = (entries.len() / per_slot).max(1).ilog2().min(fp_bits - 4);
        let slot_of = |e: &E| slot(e.fp(), fp_bits, bits);
        let mut dir = Vec::with_capacity((1usize << bits) + 1);
        let mut i = 0usize;
        for s in 0..(1u64 << bits) {
            while i < entries.len() && slot_of(&entries[i]) < s {
                i += 1;
            }
            dir.push(i as u32);
        }
        dir.push(entries.len() as u32);
        Sorted { entries, dir, bits }
    }

    /// The run of entries where those with sort fingerprint `fp`
    /// (`fp_bits` wide) are: the directory's load, then the run's first
    /// entry's (which the probing of a batch overlaps between its nodes).
    /// The run starts at the first entry not below `fp` (empty when none
    /// is).
    fn run(&self, fp: u64, fp_bits: u32) -> (u32, u32) {
        let s = slot(fp, fp_bits, self.bits) as usize;
        let (mut a, b) = match (self.dir.get(s), self.dir.get(s + 1)) {
            (Some(&a), Some(&b)) => (a, b),
            _ => return (0, 0),
        };
        while a < b && self.entries.get(a as usize).is_some_and(|e| e.fp() < fp) {
            a += 1;
        }
        (a, b)
    }

    /// The entries of `run` whose sort fingerprint is `fp`: the entries'
    /// load.
    fn matching(&self, (a, b): (u32, u32), fp: u64) -> impl Iterator<Item = &E> {
        self.entries
            .get(a as usize..b as usize)
            .unwrap_or_default()
            .iter()
            .take_while(move |e| e.fp() == fp)
    }
}

/// The slot of `fp` (`fp_bits` wide) in a directory of `bits` bits: the
/// bits after the top 4 (the part).
fn slot(fp: u64, fp_bits: u32, bits: u32) -> u64 {
    if bits == 0 {
        return 0;
    }
    let below_part = fp_bits - 4;
    (fp >> (below_part - bits)) & ((1u64 << bits) - 1)
}

/// The part of `fp` (`fp_bits` wide).
fn part_of(fp: u64, fp_bits: u32) -> usize {
    (fp >> (fp_bits - 4)) as usize & (PARTS - 1)
}

/// Half a lookup: the table, the directory's run and the fingerprint.
#[derive(Clone, Copy, Debug)]
pub struct Probe {
    table: usize,
    run: (u32, u32),
    fp: u64,
}

/// The index the walk reads (see the module docs).
#[derive(Debug, Default)]
pub struct RecordIndex {
    fingerprint: Fingerprint,
    leaves: Vec<Sorted<LeafEntry>>,
    inner: Vec<Sorted<InnerEntry>>,
    /// Records not indexed for want of room.
    pub left_out: u64,
}

impl RecordIndex {
    /// The fingerprint this index is keyed by.
    pub fn fingerprint(&self) -> &Fingerprint {
        &self.fingerprint
    }

    /// Where a leaf of kind `kind` whose key has fingerprint `fp`
    /// ([`Fingerprint::of`]) would be: the first half of a lookup, apart so
    /// that a batch's directory loads overlap ([`RecordIndex::leaf_passes`]
    /// is the second).
    pub fn leaf_probe(&self, fp: u64, kind: MapKind) -> Probe {
        let fp = (fp ^ kind_salt(kind)) >> 16;
        let table = part_of(fp, 48);
        let run = self.leaves.get(table).map_or((0, 0), |t| t.run(fp, 48));
        Probe { table, run, fp }
    }

    /// True when the leaf `probe` looks for is indexed, `trusted` accepts
    /// its place (directory, [`place`]) and `passes` its key's first 8
    /// nibbles.
    pub fn leaf_passes(
        &self,
        probe: &Probe,
        trusted: impl Fn(usize, u64) -> bool,
        passes: impl Fn(u32) -> bool,
    ) -> bool {
        self.leaves.get(probe.table).is_some_and(|t| {
            t.matching(probe.run, probe.fp).any(|e| {
                let w = e.word();
                trusted(((w >> 12) & 0xF) as usize, w & 0xFFF) && passes(e.prefix)
            })
        })
    }

    /// Where an inner node whose key has fingerprint `fp` would be (the
    /// first half of [`RecordIndex::inner_at`]).
    pub fn inner_probe(&self, fp: u64) -> Probe {
        let fp = fp & 0xFFFF_FFFF;
        let table = part_of(fp, 32);
        let run = self.inner.get(table).map_or((0, 0), |t| t.run(fp, 32));
        Probe { table, run, fp }
    }

    /// The records (directory, byte offset, value size) of the inner nodes
    /// indexed that `probe` finds: its key is to be compared.
    pub fn inner_at(&self, probe: Probe) -> impl Iterator<Item = (usize, u64, u64)> + '_ {
        self.inner
            .get(probe.table)
            .into_iter()
            .flat_map(move |t| t.matching(probe.run, probe.fp))
            .map(|e| {
                let at = (u64::from(e.at[0]) << 32) | u64::from(e.at[1]);
                (
                    (at >> 58) as usize,
                    at & MAX_OFFSET,
                    (at >> 48) & MAX_INNER_SIZE,
                )
            })
    }

    /// Leaves and inner nodes indexed.
    pub fn len(&self) -> (usize, usize) {
        let n = |t: &[Sorted<LeafEntry>]| t.iter().map(|s| s.entries.len()).sum::<usize>();
        (
            n(&self.leaves),
            self.inner.iter().map(|s| s.entries.len()).sum(),
        )
    }

    /// True when nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.len() == (0, 0)
    }
}

/// The index as the scan's workers fill it (shared, bounded).
#[derive(Debug)]
pub struct IndexBuilder {
    fingerprint: Fingerprint,
    leaves: Vec<Mutex<Vec<LeafEntry>>>,
    inner: Vec<Mutex<Vec<InnerEntry>>>,
    room: AtomicUsize,
    left_out: AtomicUsize,
}

/// One worker's entries of a chunk, filed into the builder at its end.
#[derive(Debug, Default)]
pub struct ChunkEntries {
    leaves: Vec<LeafEntry>,
    inner: Vec<InnerEntry>,
}

impl ChunkEntries {
    /// A leaf of kind `kind` with key `leaf_key`, whose record has the key
    /// `key` and is in directory `part` at `place` ([`place`]). False when
    /// its place does not fit an entry (it is then not indexed).
    pub fn leaf(
        &mut self,
        fp: &Fingerprint,
        key: &Hash256,
        kind: MapKind,
        leaf_key: &[u8; 32],
        (part, place): (usize, u64),
    ) -> bool {
        if part >= LEAF_PARTS || place >= PLACES {
            return false;
        }
        let f = ((fp.of(key) ^ kind_salt(kind)) & !0xFFFF) | ((part as u64) << 12) | place;
        self.leaves.push(LeafEntry {
            fp: [(f >> 32) as u32, f as u32],
            prefix: prefix(leaf_key),
        });
        true
    }

    /// An inner node `key` whose record is at `offset` in directory `part`
    /// with a value of `size` bytes. False when its place does not fit an
    /// entry (it is then not indexed).
    pub fn inner(
        &mut self,
        fp: &Fingerprint,
        key: &Hash256,
        part: usize,
        offset: u64,
        size: u64,
    ) -> bool {
        if part > MAX_PART || offset > MAX_OFFSET || size > MAX_INNER_SIZE {
            return false;
        }
        let at = ((part as u64) << 58) | (size << 48) | offset;
        self.inner.push(InnerEntry {
            fp: fp.of(key) as u32,
            at: [(at >> 32) as u32, at as u32],
        });
        true
    }
}

impl IndexBuilder {
    /// A builder that takes at most `bytes` of entries.
    pub fn new(bytes: usize) -> IndexBuilder {
        IndexBuilder {
            fingerprint: Fingerprint::new(),
            leaves: (0..PARTS).map(|_| Mutex::new(Vec::new())).collect(),
            inner: (0..PARTS).map(|_| Mutex::new(Vec::new())).collect(),
            room: AtomicUsize::new(bytes / ENTRY_BYTES),
            left_out: AtomicUsize::new(0),
        }
    }

    /// The fingerprint entries are made with.
    pub fn fingerprint(&self) -> &Fingerprint {
        &self.fingerprint
    }

    /// Files `c`'s entries (as many as there is room for) and empties it.
    pub fn file(&self, c: &mut ChunkEntries) {
        let n = c.leaves.len() + c.inner.len();
        if n == 0 {
            return;
        }
        let took = self
            .room
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |r| {
                Some(r.saturating_sub(n))
            })
            .unwrap_or(0)
            .min(n);
        if took < n {
            self.left_out.fetch_add(n - took, Ordering::Relaxed);
            // Inner nodes first: each one left out costs the walk two
            // reads, a leaf one.
            let keep_inner = took.min(c.inner.len());
            c.inner.truncate(keep_inner);
            c.leaves.truncate(took - keep_inner);
        }
        file_parts(&self.leaves, &mut c.leaves, 48);
        file_parts(&self.inner, &mut c.inner, 32);
    }

    /// The index, its tables sorted on `threads` threads.
    pub fn finish(self, threads: usize) -> RecordIndex {
        let leaves = sort_parts(take(self.leaves), 48, threads);
        let inner = sort_parts(take(self.inner), 32, threads);
        RecordIndex {
            fingerprint: self.fingerprint,
            leaves,
            inner,
            left_out: self.left_out.into_inner() as u64,
        }
    }
}

/// The vectors behind `v`'s locks.
fn take<E>(v: Vec<Mutex<Vec<E>>>) -> Vec<Vec<E>> {
    v.into_iter()
        .map(|m| m.into_inner().unwrap_or_else(|p| p.into_inner()))
        .collect()
}

/// Moves `entries` into their parts.
fn file_parts<E: Entry>(parts: &[Mutex<Vec<E>>], entries: &mut Vec<E>, fp_bits: u32) {
    let mut by_part: [Vec<E>; PARTS] = Default::default();
    for e in entries.drain(..) {
        by_part[part_of(e.fp(), fp_bits)].push(e);
    }
    for (p, es) in parts.iter().zip(by_part) {
        if !es.is_empty() {
            if let Ok(mut v) = p.lock() {
                v.extend_from_slice(&es);
            }
        }
    }
}

/// Sorts each part (on up to `threads` threads) and builds its directory.
fn sort_parts<E: Entry>(parts: Vec<Vec<E>>, fp_bits: u32, threads: usize) -> Vec<Sorted<E>> {
    let queue = Mutex::new(parts.into_iter().enumerate().collect::<Vec<_>>());
    let mut done: Vec<(usize, Sorted<E>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads.clamp(1, PARTS))
            .map(|_| {
                s.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let next = queue.lock().ok().and_then(|mut q| q.pop());
                        let Some((i, v)) = next else { break };
                        out.push((i, Sorted::new(v, fp_bits)));
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, s)| s).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use std::collections::HashMap;

    /// Every entry filed is found by its fingerprint and nothing else is,
    /// whatever the sizes (empty parts, one entry, many).
    #[test]
    fn what_is_filed_is_found_and_nothing_else() {
        let seed = crate::test_support::seed();
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        for n in [0usize, 1, 7, 100, 5_000] {
            let b = IndexBuilder::new(usize::MAX / 2);
            let fp = b.fingerprint().clone();
            let mut leaves = HashMap::new();
            let mut inner = HashMap::new();
            let mut c = ChunkEntries::default();
            for i in 0..n {
                let key = Hash256(rng.gen());
                if rng.gen_bool(0.7) {
                    let leaf_key: [u8; 32] = rng.gen();
                    let at = (rng.gen_range(0..16), rng.gen_range(0..PLACES));
                    assert!(c.leaf(&fp, &key, MapKind::AccountState, &leaf_key, at));
                    leaves.insert(key, (prefix(&leaf_key), at));
                } else {
                    let at = (rng.gen_range(0..4), rng.gen_range(0..1u64 << 40), 513);
                    assert!(c.inner(&fp, &key, at.0, at.1, at.2));
                    inner.insert(key, at);
                }
                if i % 97 == 0 {
                    b.file(&mut c);
                }
            }
            b.file(&mut c);
            let ix = b.finish(3);
            assert_eq!(ix.len(), (leaves.len(), inner.len()), "seed {seed}");
            let any = |_: usize, _: u64| true;
            for (key, (p, at)) in &leaves {
                let f = ix.fingerprint().of(key);
                let here = |d: usize, q: u64| (d, q) == *at;
                let probe = ix.leaf_probe(f, MapKind::AccountState);
                assert!(ix.leaf_passes(&probe, here, |q| q == *p));
                assert!(!ix.leaf_passes(&probe, any, |q| q != *p));
                assert!(!ix.leaf_passes(&probe, |d, q| !here(d, q), |_| true));
                let other = ix.leaf_probe(f, MapKind::TransactionWithMeta);
                assert!(!ix.leaf_passes(&other, any, |_| true));
            }
            for (key, at) in &inner {
                let f = ix.fingerprint().of(key);
                let probe = ix.inner_probe(f);
                assert!(ix.inner_at(probe).any(|x| x == *at), "seed {seed}");
            }
            for _ in 0..1000 {
                let key = Hash256(rng.gen());
                let f = ix.fingerprint().of(&key);
                let probe = ix.leaf_probe(f, MapKind::AccountState);
                assert!(!ix.leaf_passes(&probe, any, |_| true));
            }
        }
    }

    /// A prefix is on a path exactly when the fetch's check would say so:
    /// the key's nibbles down to the depth (1 to 8).
    #[test]
    fn on_path_is_the_fetchs_path_check() {
        let seed = crate::test_support::seed();
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        for _ in 0..20_000 {
            let key = shamap::Key(rng.gen());
            let mut path_key = key;
            if rng.gen_bool(0.5) {
                let i = rng.gen_range(0..9);
                path_key.0[i / 2] ^= if i % 2 == 0 { 0x10 } else { 0x01 };
            }
            let depth = rng.gen_range(0..=10u8);
            let id = NodeId::new(&path_key, depth).expect("depth");
            let want =
                (1..=TAG_NIBBLES).contains(&depth) && key.masked(usize::from(depth)) == *id.key();
            assert_eq!(
                on_path(prefix(&key.0), &id),
                want,
                "key {key} depth {depth} (seed {seed})"
            );
        }
    }

    /// Past its room the builder leaves records out (inner nodes kept
    /// first) and counts them.
    #[test]
    fn the_room_bounds_the_index() {
        let b = IndexBuilder::new(10 * ENTRY_BYTES);
        let fp = b.fingerprint().clone();
        let mut c = ChunkEntries::default();
        for i in 0..8u8 {
            let at = (0, u64::from(i));
            assert!(c.leaf(&fp, &Hash256([i; 32]), MapKind::AccountState, &[i; 32], at));
        }
        assert!(!c.leaf(
            &fp,
            &Hash256([1; 32]),
            MapKind::AccountState,
            &[1; 32],
            (16, 0)
        ));
        for i in 0..4u8 {
            assert!(c.inner(&fp, &Hash256([100 + i; 32]), 0, u64::from(i), 99));
        }
        b.file(&mut c);
        let ix = b.finish(1);
        assert_eq!(ix.len(), (6, 4));
        assert_eq!(ix.left_out, 2);
        assert_eq!(
            (place(0, 100), place(99, 100), place(100, 100)),
            (0, 4055, 4095)
        );
        assert!(!c.inner(&fp, &Hash256([1; 32]), 64, 0, 99));
        assert!(!c.inner(&fp, &Hash256([1; 32]), 0, 1 << 48, 99));
        assert!(!c.inner(&fp, &Hash256([1; 32]), 0, 0, 1024));
    }
}
