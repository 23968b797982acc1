//! What the audit's scan remembers of each leaf it decodes, so that the
//! walk can apply the verified fetch's leaf checks (its map kind, its key
//! on the path that leads to it; `map::fetch`) without reading
//! the leaf again.
//!
//! A leaf's tag is 32 bits: its map kind (2 bits) and the first
//! [`TAG_NIBBLES`] nibbles of its key. A leaf the walk meets at depth d ≤
//! [`TAG_NIBBLES`] in a map of its kind, whose tag's first d nibbles are
//! the path to it, passes every check the fetch would make of it (the scan
//! hashed and parsed it in step with the file). Anything else (a deeper
//! leaf, a tag that disagrees, a leaf without a tag) is read and put
//! through the one check function (`crate::node_id::check_node`),
//! which also words the message: the tag only ever says "passes".
//!
//! Layout: per scanned chunk of the data file, the leaves' offsets (from
//! the chunk's start, u32) and tags, in file order: 8 bytes a leaf, at
//! most the budget's share ([`super::budget`]; past it, leaves are read).

use shamap::{Key, MapKind};

use crate::node_id::NodeId;

/// Key nibbles a tag holds.
pub const TAG_NIBBLES: u8 = 7;

/// The tag of a leaf of map kind `kind` with key `key`.
pub fn leaf_tag(kind: MapKind, key: &Key) -> u32 {
    let prefix = u32::from_be_bytes([key.0[0], key.0[1], key.0[2], key.0[3]]) >> 4;
    (kind_code(kind) << 28) | prefix
}

fn kind_code(kind: MapKind) -> u32 {
    match kind {
        MapKind::AccountState => 1,
        MapKind::TransactionWithMeta => 2,
        MapKind::TransactionNoMeta => 3,
    }
}

/// True when a leaf with tag `tag` at `id` in a map of kind `kind` passes
/// the fetch's leaf checks (see the module docs).
pub fn tag_passes(tag: u32, kind: MapKind, id: &NodeId) -> bool {
    let depth = u32::from(id.depth());
    if depth == 0 || depth > u32::from(TAG_NIBBLES) || tag >> 28 != kind_code(kind) {
        return false;
    }
    let k = id.key().0;
    let path = u32::from_be_bytes([k[0], k[1], k[2], k[3]]) >> 4;
    let mask = (0x0FFF_FFFFu32 << (28 - 4 * depth)) & 0x0FFF_FFFF;
    (tag ^ path) & mask == 0
}

/// The tags of one chunk of a data file.
#[derive(Debug, Default)]
pub struct TagChunk {
    /// The directory.
    pub part: usize,
    /// Offset of the chunk in the data file.
    pub start: u64,
    /// Each leaf's offset from `start`, ascending.
    pub offsets: Vec<u32>,
    /// Each leaf's tag.
    pub tags: Vec<u32>,
}

/// Every leaf tag the scan kept.
#[derive(Debug, Default)]
pub struct LeafTags {
    chunks: Vec<TagChunk>,
}

impl LeafTags {
    /// The tags of `chunks` (in any order).
    pub fn from_chunks(mut chunks: Vec<TagChunk>) -> LeafTags {
        chunks.retain(|c| !c.offsets.is_empty());
        chunks.sort_by_key(|c| (c.part, c.start));
        LeafTags { chunks }
    }

    /// The tag of the leaf whose record is at `offset` in directory
    /// `part`, if the scan kept one.
    pub fn tag(&self, part: usize, offset: u64) -> Option<u32> {
        let i = self
            .chunks
            .partition_point(|c| (c.part, c.start) <= (part, offset))
            .checked_sub(1)?;
        let c = &self.chunks[i];
        if c.part != part {
            return None;
        }
        let rel = u32::try_from(offset - c.start).ok()?;
        let j = c.offsets.binary_search(&rel).ok()?;
        Some(c.tags[j])
    }

    /// Leaves tagged.
    pub fn len(&self) -> usize {
        self.chunks.iter().map(|c| c.offsets.len()).sum()
    }

    /// True when no leaf is tagged.
    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// The tag passes exactly when the fetch's checks would: the kind, and
    /// the key's nibbles down to the depth (up to [`TAG_NIBBLES`]).
    #[test]
    fn a_tag_passes_exactly_the_leaves_on_their_path() {
        let seed = crate::test_support::seed();
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let kinds = [
            MapKind::AccountState,
            MapKind::TransactionWithMeta,
            MapKind::TransactionNoMeta,
        ];
        for _ in 0..20_000 {
            let mut key = Key([0; 32]);
            rng.fill(&mut key.0[..]);
            let kind = kinds[rng.gen_range(0..3)];
            let mut path_key = key;
            if rng.gen_bool(0.5) {
                let i = rng.gen_range(0..8);
                path_key.0[i / 2] ^= if i % 2 == 0 { 0x10 } else { 0x01 };
            }
            let depth = rng.gen_range(0..=9u8);
            let id = NodeId::new(&path_key, depth).expect("depth");
            let map_kind = if rng.gen_bool(0.8) {
                kind
            } else {
                kinds[rng.gen_range(0..3)]
            };
            let want = (1..=TAG_NIBBLES).contains(&depth)
                && map_kind == kind
                && key.masked(usize::from(depth)) == *id.key();
            assert_eq!(
                tag_passes(leaf_tag(kind, &key), map_kind, &id),
                want,
                "key {key} depth {depth} (seed {seed})"
            );
        }
    }

    #[test]
    fn tags_are_found_by_offset() {
        let tags = LeafTags::from_chunks(vec![
            TagChunk {
                part: 1,
                start: 92,
                offsets: vec![0, 50],
                tags: vec![7, 8],
            },
            TagChunk {
                part: 0,
                start: 1000,
                offsets: vec![5],
                tags: vec![9],
            },
            TagChunk {
                part: 0,
                start: 92,
                offsets: vec![0, 40],
                tags: vec![1, 2],
            },
        ]);
        assert_eq!(tags.tag(0, 132), Some(2));
        assert_eq!(tags.tag(0, 1005), Some(9));
        assert_eq!(tags.tag(1, 142), Some(8));
        assert_eq!(tags.tag(0, 133), None);
        assert_eq!(tags.tag(1, 50), None);
        assert_eq!(tags.len(), 5);
    }
}
