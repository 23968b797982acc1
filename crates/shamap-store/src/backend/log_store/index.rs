//! The node log's index: where each live node's record starts, in 8 bytes
//! per slot.
//!
//! An open-addressing table (linear probing) of `u64` entries: the top 30
//! bits of the node's hash's second 8 bytes (its *tag*) and the record's offset in the log
//! divided by 8 (34 bits: logs up to 128 GiB). A node's home slot is its
//! tag's top `bits` bits, so the table can be doubled from the tags alone.
//! Nodes whose tags are equal (rare: the tag has 30 bits, and only nodes in
//! the same probe run meet) are told apart by the caller, which reads the
//! record and compares the whole hash: [`Index::probe`] yields every entry
//! with the tag. Zero is never an entry (offset 0 is the file header).
//!
//! Memory: 8 bytes per slot, the table at most 7/8 full after growth, so
//! 9–18 bytes per live node: a 10M-entry map (about 11M nodes) takes 128 or
//! 256 MiB. Hashes are uniform (SHA-512Half), which linear probing needs.

use shamap::Hash256;

/// Puts published per warm-up of the index (see [`Index::warm`]):
/// their home slots fit the CPU's second-level cache.
pub(super) const WARM_CHUNK: usize = 4096;

const TAG_BITS: u32 = 30;
const OFFSET_BITS: u32 = 64 - TAG_BITS;
const OFFSET_MASK: u64 = (1 << OFFSET_BITS) - 1;
/// Smallest table: 2^10 slots.
const MIN_BITS: u32 = 10;

/// The largest log offset an entry can hold.
pub const MAX_OFFSET: u64 = OFFSET_MASK << 3;

/// The 30-bit tag of a hash: from its second 8 bytes, not its first, so
/// that nodes written in hash order (a bulk import) land all over the
/// table instead of in one run at its start.
fn tag(hash: &Hash256) -> u64 {
    u64::from_be_bytes(hash.0[8..16].try_into().expect("8 bytes")) >> OFFSET_BITS
}

/// The table.
#[derive(Debug)]
pub struct Index {
    slots: Vec<u64>,
    bits: u32,
    len: usize,
}

impl Default for Index {
    fn default() -> Self {
        Index::with_capacity(0)
    }
}

impl Index {
    /// A table for about `n` entries without growing.
    pub fn with_capacity(n: usize) -> Index {
        let mut bits = MIN_BITS;
        while (1usize << bits) * 7 / 8 < n && bits < TAG_BITS {
            bits += 1;
        }
        Index {
            slots: vec![0; 1 << bits],
            bits,
            len: 0,
        }
    }

    /// A table from a checkpoint's `slots` (`2^bits` of them), checked so
    /// that every operation on it is as on a table built here: `bits` in
    /// range, a free slot left (at most 7/8 full below the largest size),
    /// every entry's offset in `8..end`, and every entry found by a probe
    /// from its home slot (no free slot between them).
    pub fn from_slots(slots: Vec<u64>, bits: u32, end: u64) -> Result<Index, String> {
        if !(MIN_BITS..=TAG_BITS).contains(&bits) || slots.len() != 1 << bits {
            return Err(format!(
                "an index of {} slots with bits {bits}",
                slots.len()
            ));
        }
        let len = slots.iter().filter(|&&e| e != 0).count();
        let full = if bits < TAG_BITS {
            len * 8 > slots.len() * 7
        } else {
            len == slots.len()
        };
        if full {
            return Err(format!(
                "an index of {len} entries in {} slots",
                slots.len()
            ));
        }
        let index = Index { slots, bits, len };
        let n = index.slots.len();
        let mask = n - 1;
        let free = index
            .slots
            .iter()
            .position(|&e| e == 0)
            .expect("a free slot");
        // Positions counted on from `free` (so `free + n` is `free` again);
        // an entry at position `p` whose home is `h` is found by a probe
        // when no free slot lies in `[home, p)`, its home counted back from
        // `p`: when that home is after the last free slot.
        let mut last_free = free;
        for p in free + 1..free + n {
            let e = index.slots[p & mask];
            if e == 0 {
                last_free = p;
                continue;
            }
            let off = (e & OFFSET_MASK) << 3;
            if off == 0 || off >= end {
                return Err(format!(
                    "an index entry at offset {off}, past the log's {end}"
                ));
            }
            let home = index.home_of_tag(e >> OFFSET_BITS);
            let home_p = p - ((p + n - home) & mask);
            if home_p <= last_free {
                return Err(format!(
                    "an index entry in slot {} that no probe reaches",
                    p & mask
                ));
            }
        }
        Ok(index)
    }

    /// The slots, for a checkpoint.
    pub fn slots(&self) -> &[u64] {
        &self.slots
    }

    /// The table has `2^bits` slots.
    pub fn bits(&self) -> u32 {
        self.bits
    }

    /// Live entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Bytes the table takes.
    pub fn heap_bytes(&self) -> usize {
        self.slots.len() * 8
    }

    /// Bytes the table's next growth allocates (a table twice the size,
    /// held beside this one while the entries move) once the table is
    /// within an eighth of growing; 0 before that.
    pub fn growth_bytes_ahead(&self) -> usize {
        let grows_at = self.slots.len() * 7 / 8;
        if self.bits < TAG_BITS && self.len * 8 >= grows_at * 7 {
            2 * self.heap_bytes()
        } else {
            0
        }
    }

    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    fn home_of_tag(&self, tag: u64) -> usize {
        (tag >> (TAG_BITS - self.bits)) as usize
    }

    /// The slots holding `hash`'s tag, with their record offsets: the
    /// candidates for `hash`, to be confirmed by reading the record.
    pub fn probe(&self, hash: &Hash256) -> impl Iterator<Item = (usize, u64)> + '_ {
        let t = tag(hash);
        let mask = self.mask();
        let mut i = self.home_of_tag(t);
        std::iter::from_fn(move || loop {
            let e = self.slots[i];
            if e == 0 {
                return None;
            }
            let here = i;
            i = (i + 1) & mask;
            if e >> OFFSET_BITS == t {
                return Some((here, (e & OFFSET_MASK) << 3));
            }
        })
    }

    /// Every entry's record offset, in slot order.
    pub fn offsets(&self) -> impl Iterator<Item = u64> + '_ {
        self.slots
            .iter()
            .filter(|&&e| e != 0)
            .map(|e| (e & OFFSET_MASK) << 3)
    }

    /// Grows the table now, if `additional` more entries would make it
    /// grow: once, instead of during the inserts.
    pub fn reserve(&mut self, additional: usize) {
        while (self.len + additional) * 8 > self.slots.len() * 7 && self.bits < TAG_BITS {
            self.grow();
        }
    }

    /// Reads the home slot of every hash, so that a loop of inserts that
    /// follows finds them in the CPU's cache: these loads do not depend on
    /// one another, so the CPU has many of them in flight at once, where
    /// an insert waits for its slot before the next. (A batch of 4096
    /// puts touches 256 KiB.)
    pub fn warm<'h>(&self, hashes: impl Iterator<Item = &'h Hash256>) {
        let mut acc = 0u64;
        for h in hashes {
            acc ^= self.slots[self.home_of_tag(tag(h))];
        }
        std::hint::black_box(acc);
    }

    /// Points `hash` at `offset` in one probe: a slot with its tag whose
    /// record `is_it` confirms (reading it) is replaced, and its old offset
    /// returned; otherwise `hash` is added in the first free slot.
    pub fn upsert<E>(
        &mut self,
        hash: &Hash256,
        offset: u64,
        mut is_it: impl FnMut(u64) -> Result<bool, E>,
    ) -> Result<Option<u64>, E> {
        if (self.len + 1) * 8 > self.slots.len() * 7 && self.bits < TAG_BITS {
            self.grow();
        }
        let t = tag(hash);
        let mask = self.mask();
        let mut i = self.home_of_tag(t);
        loop {
            let e = self.slots[i];
            if e == 0 {
                self.slots[i] = entry(t, offset);
                self.len += 1;
                return Ok(None);
            }
            if e >> OFFSET_BITS == t {
                let old = (e & OFFSET_MASK) << 3;
                if is_it(old)? {
                    self.slots[i] = entry(t, offset);
                    return Ok(Some(old));
                }
            }
            i = (i + 1) & mask;
        }
    }

    /// Adds `hash` at `offset`; the caller has checked that it is absent.
    /// `offset` must be a multiple of 8 in `8..=MAX_OFFSET`.
    pub fn insert_new(&mut self, hash: &Hash256, offset: u64) {
        if (self.len + 1) * 8 > self.slots.len() * 7 && self.bits < TAG_BITS {
            self.grow();
        }
        let e = entry(tag(hash), offset);
        self.place(e);
        self.len += 1;
    }

    fn place(&mut self, e: u64) {
        let mask = self.mask();
        let mut i = self.home_of_tag(e >> OFFSET_BITS);
        while self.slots[i] != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = e;
    }

    fn grow(&mut self) {
        let old = std::mem::replace(&mut self.slots, vec![0; 1 << (self.bits + 1)]);
        self.bits += 1;
        for e in old.into_iter().filter(|&e| e != 0) {
            self.place(e);
        }
    }

    /// Removes the entry in slot `at` (from [`Index::probe`]), shifting the
    /// entries after it back so that no probe run is broken.
    pub fn remove_at(&mut self, mut at: usize) {
        let mask = self.mask();
        let mut j = at;
        loop {
            j = (j + 1) & mask;
            let e = self.slots[j];
            if e == 0 {
                break;
            }
            let home = self.home_of_tag(e >> OFFSET_BITS);
            // The entry may stay if its home lies in (at, j], cyclically.
            let stays = if at <= j {
                at < home && home <= j
            } else {
                at < home || home <= j
            };
            if !stays {
                self.slots[at] = e;
                at = j;
            }
        }
        self.slots[at] = 0;
        self.len -= 1;
    }
}

fn entry(tag: u64, offset: u64) -> u64 {
    debug_assert!(offset.is_multiple_of(8) && offset > 0 && offset <= MAX_OFFSET);
    (tag << OFFSET_BITS) | (offset >> 3)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::Rng;
    use std::collections::HashMap;

    /// Hashes whose tags collide often: only a few distinct top bits.
    fn crowded_hash(rng: &mut SmallRng) -> Hash256 {
        let mut h = [0u8; 32];
        rng.fill(&mut h[..]);
        h[8] &= 0x03;
        h[9] = 0;
        h[10] &= 0x01;
        Hash256(h)
    }

    #[test]
    fn the_index_matches_a_hashmap_through_inserts_replaces_removes_and_growth() {
        let (seed, mut rng) = crate::test_support::seeded_rng();
        let mut index = Index::default();
        let mut model: HashMap<Hash256, u64> = HashMap::new();
        let mut keys: Vec<Hash256> = Vec::new();
        let find = |index: &Index, model_off: &HashMap<u64, Hash256>, h: &Hash256| {
            index
                .probe(h)
                .find(|&(_, off)| model_off.get(&off) == Some(h))
        };
        let mut by_offset: HashMap<u64, Hash256> = HashMap::new();
        let mut next = 8u64;
        for step in 0..40_000 {
            match rng.gen_range(0..10) {
                0..=5 => {
                    let h = if rng.gen_bool(0.5) {
                        crowded_hash(&mut rng)
                    } else {
                        Hash256(rng.gen())
                    };
                    let off = next;
                    next += 8 * rng.gen_range(1..100);
                    // A hash known to be new goes in either way.
                    let old = if !model.contains_key(&h) && rng.gen_bool(0.5) {
                        index.insert_new(&h, off);
                        None
                    } else {
                        index
                            .upsert(&h, off, |o| Ok::<bool, ()>(by_offset.get(&o) == Some(&h)))
                            .expect("no read fails here")
                    };
                    match old {
                        Some(o) => {
                            by_offset.remove(&o);
                        }
                        None => keys.push(h),
                    }
                    by_offset.insert(off, h);
                    model.insert(h, off);
                }
                6..=8 if !keys.is_empty() => {
                    let h = keys.swap_remove(rng.gen_range(0..keys.len()));
                    let (at, off) = find(&index, &by_offset, &h)
                        .unwrap_or_else(|| panic!("seed {seed} step {step}: {h} lost"));
                    index.remove_at(at);
                    by_offset.remove(&off);
                    model.remove(&h);
                }
                _ => {}
            }
            assert_eq!(index.len(), model.len(), "seed {seed} step {step}");
        }
        for (h, off) in &model {
            assert_eq!(
                find(&index, &by_offset, h).map(|x| x.1),
                Some(*off),
                "seed {seed}: {h}"
            );
        }
        let copy = Index::from_slots(index.slots().to_vec(), index.bits(), next)
            .unwrap_or_else(|e| panic!("seed {seed}: a table built here is refused: {e}"));
        assert_eq!(copy.len(), index.len(), "seed {seed}");
        let mut offs: Vec<u64> = index.offsets().collect();
        offs.sort_unstable();
        let mut want: Vec<u64> = model.values().copied().collect();
        want.sort_unstable();
        assert_eq!(offs, want, "seed {seed}");
    }

    #[test]
    fn a_table_from_slots_is_refused_when_a_probe_would_miss_an_entry_or_never_end() {
        let mut index = Index::default();
        let h = Hash256([7; 32]);
        index.insert_new(&h, 64);
        let bits = index.bits();
        let home = index.probe(&h).next().expect("present").0;
        let n = index.slots().len();
        // Moved one slot on, past a free home slot: no probe finds it.
        let mut moved = index.slots().to_vec();
        moved.swap(home, (home + 1) % n);
        let e = Index::from_slots(moved, bits, 1000).expect_err("unreachable");
        assert!(e.contains("no probe reaches"), "{e}");
        // Two slots on behind an occupied one: found (the run is unbroken).
        let mut run = index.slots().to_vec();
        run[(home + 1) % n] = run[home];
        Index::from_slots(run, bits, 1000).expect("a run from its home");
        // Offsets past the log, too many entries, wrong sizes.
        assert!(Index::from_slots(index.slots().to_vec(), bits, 64).is_err());
        assert!(Index::from_slots(vec![entry(1, 8); n], bits, 1000).is_err());
        assert!(Index::from_slots(vec![0; n], bits + 1, 1000).is_err());
        assert!(Index::from_slots(vec![0; 4], 2, 1000).is_err());
    }
}
