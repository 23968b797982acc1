//! The backed map's node cache: clean nodes decoded and verified, by hash,
//! within a byte capacity, and the [`Loader`] that answers a walk's node
//! lookups from it or from the store (through the store's one verified
//! fetch).
//!
//! Memory: the nodes are held encoded, back to back, in *segments* of one
//! size (a 64th of the budget, a power of two from 4 KiB to 1 MiB), each
//! appended to until full; a table maps each node's hash prefix to its
//! place. What the cache charges is what it has allocated: its segments,
//! whole, and its tables at their capacity; no allocation per node. (With
//! one or two allocations per node, the allocator held about 11 MiB more
//! than the 64 MiB charged: size classes, and slabs left partly used by
//! eviction in random order.) A hit decodes the node into an owned
//! [`CleanNode`]: an inner node's hashes by value, a leaf's data in one
//! `Vec` (which the walks that read a leaf hand on).
//!
//! Admission: walks that change the map keep every node they load
//! ([`Keep::All`]); scans keep none; lookups keep inner nodes and admit a
//! leaf only on its second use: a leaf loaded once waits on *probation*
//! (the last few, a bounded share of the capacity), and a *doorkeeper* of
//! recently loaded leaves' hash prefixes admits a leaf seen again.
//!
//! Eviction: the oldest segment goes, whole; a node in it used since it
//! was written there is copied to the newest segment instead (a second
//! chance, as CLOCK gives).

use std::collections::VecDeque;

use hashbrown::HashMap;
use shamap::Hash256;

mod admission;
mod entry;
mod loader;
#[cfg(test)]
mod tests;

use admission::hash_prefix;
pub(super) use admission::Keep;
pub(super) use entry::CleanNode;
use entry::{decode_body, encode_entry, ENTRY_HEAD};
pub(super) use loader::Loader;

/// Where a node's entry is: its segment's number and its offset there,
/// the offset's top bit set once the node is used after it was written
/// ([`REFERENCED`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Place {
    segment: u32,
    offset: u32,
}

/// The bit of [`Place::offset`] that marks an entry used since it was
/// written (segments are at most 1 MiB, so offsets need 20 bits).
const REFERENCED: u32 = 1 << 31;

impl Place {
    fn at(self) -> usize {
        (self.offset & !REFERENCED) as usize
    }

    fn referenced(self) -> bool {
        self.offset & REFERENCED != 0
    }
}

/// A segment: its number (they increase by one, oldest first) and its
/// entries, in a buffer allocated once at the segment's size.
struct Segment {
    number: u32,
    bytes: Vec<u8>,
}

/// The segment size for a budget: a 64th of it, a power of two from 4 KiB
/// to 1 MiB. Eviction frees a segment at a time, so at least eight fit the
/// cache's smallest share (an eighth of the budget) once the budget is
/// 256 KiB or more.
fn segment_bytes_for(budget: usize) -> usize {
    (budget / 64)
        .clamp(4 << 10, 1 << 20)
        .next_power_of_two()
        .min(1 << 20)
}

/// The bounded cache of clean nodes: hash → encoded node in a segment.
pub(super) struct NodeCache {
    segment_bytes: usize,
    /// Oldest first; the last is the one appended to.
    segments: VecDeque<Segment>,
    /// The number the next segment gets.
    next_segment: u32,
    /// Hash prefix → entry. Two nodes whose hashes share 8 bytes share a
    /// slot: the later one takes it (the entry's full hash is compared on
    /// every hit).
    index: HashMap<u64, Place>,
    /// The doorkeeper of [`Keep::Reused`]: slot `i` holds the first 8
    /// bytes of the hash of the last leaf loaded by a lookup whose prefix
    /// is `i` modulo the slot count (empty until a lookup loads a leaf).
    recent_leaves: Vec<u64>,
    /// The last [`PROBATION_LEAVES`] leaves lookups loaded and did not
    /// admit, oldest first, with their hashes' first 8 bytes: a write or
    /// lookup of the same key soon after (read, modify, write) takes its
    /// leaf from here, and admits it, instead of loading it again.
    probation: VecDeque<(u64, Hash256, CleanNode)>,
    probation_bytes: usize,
    pub(super) peak: usize,
    pub(super) hits: u64,
    pub(super) loads: u64,
    pub(super) evictions: u64,
}

impl NodeCache {
    /// An empty cache for a memory budget of `budget` bytes (which sets
    /// its segment size).
    pub(super) fn new(budget: usize) -> NodeCache {
        NodeCache {
            segment_bytes: segment_bytes_for(budget),
            segments: VecDeque::new(),
            next_segment: 0,
            index: HashMap::new(),
            recent_leaves: Vec::new(),
            probation: VecDeque::new(),
            probation_bytes: 0,
            peak: 0,
            hits: 0,
            loads: 0,
            evictions: 0,
        }
    }

    /// Nodes cached.
    pub(super) fn entries(&self) -> usize {
        self.index.len()
    }

    /// The bytes of an index table with room for `entries` (hashbrown
    /// keeps at least 8 buckets per 7 entries, a power of two, each a slot
    /// and a control byte).
    fn index_bytes(entries: usize) -> usize {
        let buckets = (entries * 8 / 7).next_power_of_two();
        buckets * (std::mem::size_of::<(u64, Place)>() + 1)
    }

    /// Bytes the tables have allocated.
    fn table_bytes(&self) -> usize {
        self.index.allocation_size()
            + self.segments.capacity() * std::mem::size_of::<Segment>()
            + self.recent_leaves.capacity() * std::mem::size_of::<u64>()
            + self.probation.capacity() * std::mem::size_of::<(u64, Hash256, CleanNode)>()
    }

    fn segments_bytes(&self) -> usize {
        self.segments.len() * self.segment_bytes
    }

    /// Bytes the cache holds: its segments, its tables and the leaves on
    /// probation.
    pub(super) fn held_bytes(&self) -> usize {
        self.segments_bytes() + self.probation_bytes + self.table_bytes()
    }

    /// The segment numbered `number`, if it is still held.
    fn segment(&self, number: u32) -> Option<&Segment> {
        let first = self.segments.front()?.number;
        let seg = self.segments.get(number.wrapping_sub(first) as usize)?;
        (seg.number == number).then_some(seg)
    }

    /// The whole entry at `place` (head and body).
    fn entry(&self, place: Place) -> &[u8] {
        let seg = self
            .segment(place.segment)
            .expect("the index names only held segments");
        let at = place.at();
        let body_len = u32::from_le_bytes(
            seg.bytes[at + 32..at + ENTRY_HEAD]
                .try_into()
                .expect("4 bytes"),
        ) as usize;
        &seg.bytes[at..at + ENTRY_HEAD + body_len]
    }

    /// The place of the entry for `hash`, if it is cached.
    fn find(&self, hash: &Hash256) -> Option<Place> {
        let place = *self.index.get(&hash_prefix(hash))?;
        (self.entry(place)[..32] == hash.0).then_some(place)
    }

    fn get(&mut self, hash: &Hash256) -> Option<CleanNode> {
        let place = self.find(hash)?;
        let node = decode_body(&self.entry(place)[ENTRY_HEAD..]);
        if let Some(p) = self.index.get_mut(&hash_prefix(hash)) {
            p.offset |= REFERENCED;
        }
        self.hits += 1;
        Some(node)
    }

    /// Room for an entry of `len` bytes at the end of the newest segment,
    /// within `capacity` if it can be had: a new segment if one more fits,
    /// otherwise the oldest one recycled ([`NodeCache::recycle_oldest`]).
    /// The new entry's place.
    fn room_for(&mut self, len: usize, capacity: usize) -> Place {
        loop {
            if let Some(seg) = self.segments.back() {
                if seg.bytes.len() + len <= self.segment_bytes {
                    return Place {
                        segment: seg.number,
                        offset: u32::try_from(seg.bytes.len()).expect("segments are at most 1 MiB"),
                    };
                }
            }
            if self.segments.is_empty() || self.held_bytes() + self.segment_bytes <= capacity {
                let number = self.next_number();
                self.segments.push_back(Segment {
                    number,
                    bytes: Vec::with_capacity(self.segment_bytes),
                });
            } else {
                self.recycle_oldest();
            }
        }
    }

    fn next_number(&mut self) -> u32 {
        let n = self.next_segment;
        self.next_segment = n.wrapping_add(1);
        n
    }

    /// Inserts a node, then evicts until the cache fits `capacity`.
    pub(super) fn insert(&mut self, hash: Hash256, node: &CleanNode, capacity: usize) {
        let len = ENTRY_HEAD + node.body_len();
        if len > self.segment_bytes || self.segment_bytes > capacity {
            self.shrink_to(capacity);
            return;
        }
        if self.find(&hash).is_some() {
            return;
        }
        // hashbrown grows into a new table of twice the buckets (both held
        // while it moves the entries) once its spare room is used up, by
        // entries or by the tombstones removals leave, while it is more
        // than half full; at most half full it rehashes in place. Growing
        // only when the old table and the grown one (three times the
        // table's bytes) fit the capacity beside the entries, and
        // otherwise evicting down to half full, keeps the growth inside
        // the budget: letting it grow and shrink back put peaks of three
        // tables' bytes (45 MB at a 64 MiB budget) over the budget, and
        // counting only the grown table left the old one (4.3 MiB at 64
        // MiB) over it while the entries moved.
        if self.index.len() + 1 > self.index.capacity() / 2
            && self.segments_bytes() + self.probation_bytes + len + 3 * self.table_bytes()
                > capacity
        {
            // Recycling (not dropping) keeps the second chances; two rounds
            // clear every mark.
            let mut rounds = 2 * self.segments.len();
            while self.index.len() + 1 > self.index.capacity() / 2 && rounds > 0 {
                self.recycle_oldest();
                rounds -= 1;
            }
        }
        let place = self.room_for(len, capacity);
        encode_entry(
            &hash,
            node,
            &mut self.segments.back_mut().expect("room made").bytes,
        );
        let table = self.table_bytes();
        self.index.insert(hash_prefix(&hash), place);
        self.note_move(table);
        self.shrink_to(capacity);
        self.peak = self.peak.max(self.held_bytes());
    }

    /// Drops whole segments, oldest first, until the cache fits `capacity`.
    fn shrink_to(&mut self, capacity: usize) {
        while self.held_bytes() > capacity && self.drop_oldest() {}
        // Tables four times larger than their contents give the memory back, to
        // twice what they hold: a cache that shrinks for a block's dirty
        // nodes and grows back after the commit must not rehash both ways
        // every block. Tables that alone exceed a small budget give theirs
        // back too, so the budget holds whatever its size.
        if (self.index.len() < self.index.capacity() / 4 && self.index.capacity() > 1024)
            || self.held_bytes() > capacity
        {
            // The smaller table is allocated while the old one is held:
            // room for it first, so the move stays inside the capacity
            // (shrinking from a full table put 4.4 MiB over 64 MiB).
            while self.held_bytes() + Self::index_bytes(self.index.len() * 2) > capacity
                && self.drop_oldest()
            {}
            let table = self.table_bytes();
            self.index.shrink_to(self.index.len() * 2);
            self.note_move(table);
            self.segments.shrink_to(self.segments.len() * 2);
        }
    }

    /// Counts in [`NodeCache::peak`] a move of the index into a table of
    /// another size, if one just happened: the old table (`old_table`
    /// bytes) and the new one were both held while the entries moved.
    fn note_move(&mut self, old_table: usize) {
        let table = self.table_bytes();
        if table != old_table {
            let moving = self.segments_bytes() + self.probation_bytes + old_table + table;
            self.peak = self.peak.max(moving);
        }
    }

    /// Calls `f(prefix, start, end)` for each entry of `bytes` that the
    /// index still places at segment `number` (not superseded by a node
    /// sharing its prefix).
    fn live_entries(
        index: &HashMap<u64, Place>,
        number: u32,
        bytes: &[u8],
        mut f: impl FnMut(u64, Place, usize, usize),
    ) {
        let mut at = 0;
        while at < bytes.len() {
            let prefix = u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
            let body_len =
                u32::from_le_bytes(bytes[at + 32..at + ENTRY_HEAD].try_into().expect("4 bytes"))
                    as usize;
            let end = at + ENTRY_HEAD + body_len;
            if let Some(p) = index.get(&prefix) {
                if p.segment == number && p.at() == at {
                    f(prefix, *p, at, end);
                }
            }
            at = end;
        }
    }

    /// Evicts every node of the oldest segment and frees it. False when
    /// there is none.
    fn drop_oldest(&mut self) -> bool {
        let Some(old) = self.segments.pop_front() else {
            return false;
        };
        let mut gone = Vec::new();
        Self::live_entries(&self.index, old.number, &old.bytes, |prefix, _, _, _| {
            gone.push(prefix);
        });
        self.evictions += gone.len() as u64;
        for prefix in gone {
            self.index.remove(&prefix);
        }
        true
    }

    /// Makes the oldest segment the newest: the nodes in it used since they
    /// were written there move to its front, unmarked (their second
    /// chance), the others leave the cache, and what they held is room for
    /// new entries. Its buffer is reused: a full cache allocates nothing.
    fn recycle_oldest(&mut self) {
        let Some(mut old) = self.segments.pop_front() else {
            return;
        };
        let number = self.next_number();
        let mut kept: Vec<(u64, usize, usize)> = Vec::new();
        let mut gone = Vec::new();
        Self::live_entries(&self.index, old.number, &old.bytes, |prefix, p, at, end| {
            if p.referenced() {
                kept.push((prefix, at, end));
            } else {
                gone.push(prefix);
            }
        });
        self.evictions += gone.len() as u64;
        for prefix in gone {
            self.index.remove(&prefix);
        }
        // Entries move only toward the front, in order: no overlap with an
        // entry not yet moved.
        let mut to = 0;
        for (prefix, at, end) in kept {
            old.bytes.copy_within(at..end, to);
            self.index.insert(
                prefix,
                Place {
                    segment: number,
                    offset: u32::try_from(to).expect("segments are at most 1 MiB"),
                },
            );
            to += end - at;
        }
        old.bytes.truncate(to);
        old.number = number;
        self.segments.push_back(old);
    }
}
