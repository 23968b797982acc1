//! Bulk build from sorted items: no descents, every node made once.
//!
//! Items arrive in ascending key order. A key's leaf sits one below the
//! longer of its common prefixes with the key before and the key after it
//! (the shape rule: an inner node exists at a prefix shared by two or more
//! keys), so one key of look-ahead tells where each leaf goes. The inner
//! nodes on the current path are open frames, one per depth (single-child
//! chains included), each collecting its children in branch order; a frame
//! is closed into a node of exactly the right size class when the keys move
//! past its prefix, and handed to the frame above.

use std::sync::Arc;

use crate::error::MapError;
use crate::hash::{Key, Nibble};
use crate::kind::MapKind;
use crate::options::MapOptions;
use crate::ptr::{NodeArena, NodePtr};

use super::map::{ShaMap, MAX_DATA_LEN};
use super::shared_arena::lock;

/// The open inner nodes on the current path: `frames[d]` holds the children
/// gathered so far by the node at depth `d`, for `d` in `0..=top`.
struct Frames {
    frames: Vec<Vec<(Nibble, NodePtr)>>,
    top: usize,
}

impl Frames {
    fn new() -> Frames {
        Frames {
            frames: vec![Vec::with_capacity(16)],
            top: 0,
        }
    }

    /// Opens empty frames down to `depth`.
    fn open_to(&mut self, depth: usize) {
        while self.frames.len() <= depth {
            self.frames.push(Vec::with_capacity(16));
        }
        self.top = self.top.max(depth);
    }

    /// Closes the frames below `depth` (deepest first), each becoming a child
    /// of the frame above on the branch `path` takes there.
    fn close_to(&mut self, arena: &mut NodeArena, depth: usize, path: &Key) {
        while self.top > depth {
            let node = arena.new_inner_from(&mut self.frames[self.top]);
            self.top -= 1;
            self.frames[self.top].push((path.nibble(self.top), node));
        }
    }

    /// Gives every node still held back to the arena (after an error).
    fn release(&mut self, arena: &mut NodeArena) {
        for frame in &mut self.frames {
            for (_, node) in frame.drain(..) {
                arena.release(node);
            }
        }
    }
}

impl ShaMap {
    /// Builds a map of `kind` from items in strictly ascending key order,
    /// with default options. The result is the map that inserting the same
    /// items in any order gives (same shape, same root hash), made without
    /// descending the tree once per key: each node is allocated once, at its
    /// final size, leaves in key order. Hashes are computed by the first
    /// [`root_hash`](ShaMap::root_hash), as after inserts.
    ///
    /// Fails with [`MapError::KeyExists`] on a repeated key,
    /// [`MapError::OutOfOrder`] on a key below its predecessor and
    /// [`MapError::DataTooLong`] on oversized data; nothing is kept then.
    ///
    /// ```
    /// # use shamap::{Key, MapKind, ShaMap};
    /// let items = [(Key([1; 32]), b"one"), (Key([2; 32]), b"two")];
    /// let mut bulk = ShaMap::from_sorted(MapKind::AccountState, items)?;
    /// let mut inserted = ShaMap::new(MapKind::AccountState);
    /// for (k, d) in items {
    ///     inserted.insert(k, d)?;
    /// }
    /// assert_eq!(bulk.root_hash(), inserted.root_hash());
    /// # Ok::<(), shamap::MapError>(())
    /// ```
    pub fn from_sorted<I, D>(kind: MapKind, items: I) -> Result<ShaMap, MapError>
    where
        I: IntoIterator<Item = (Key, D)>,
        D: AsRef<[u8]>,
    {
        ShaMap::from_sorted_with_options(kind, MapOptions::default(), items)
    }

    /// [`ShaMap::from_sorted`] with the given options.
    pub fn from_sorted_with_options<I, D>(
        kind: MapKind,
        options: MapOptions,
        items: I,
    ) -> Result<ShaMap, MapError>
    where
        I: IntoIterator<Item = (Key, D)>,
        D: AsRef<[u8]>,
    {
        let mut map = ShaMap::with_options(kind, options);
        let arena = Arc::clone(&map.arena);
        let mut arena = lock(&arena);
        let mut frames = Frames::new();
        match build(&mut arena, &mut frames, items.into_iter()) {
            Ok(len) => {
                let root = arena.new_inner_from(&mut frames.frames[0]);
                let empty = std::mem::replace(&mut map.root, root);
                arena.release(empty);
                map.len = len;
                map.pending_writes = len;
                drop(arena);
                Ok(map)
            }
            Err(e) => {
                frames.release(&mut arena);
                Err(e)
            }
        }
    }
}

/// Places every item; leaves the root's children in `frames[0]` and returns
/// the number of items.
fn build<D: AsRef<[u8]>>(
    arena: &mut NodeArena,
    frames: &mut Frames,
    mut items: impl Iterator<Item = (Key, D)>,
) -> Result<usize, MapError> {
    let Some(mut cur) = items.next() else {
        return Ok(0);
    };
    let mut len = 0;
    // Nibbles the current key shares with the one before it (0 for the first).
    let mut shared_before = 0;
    loop {
        let (key, data) = &cur;
        let data = data.as_ref();
        if data.len() > MAX_DATA_LEN {
            return Err(MapError::DataTooLong { len: data.len() });
        }
        let next = items.next();
        let shared_after = match &next {
            None => 0,
            Some((n, _)) => match key.common_prefix_nibbles(n) {
                64 => return Err(MapError::KeyExists(*n)),
                // They part at nibble `d`: the one there says which is lower.
                d if n.nibble(d) < key.nibble(d) => return Err(MapError::OutOfOrder(*n)),
                d => d,
            },
        };
        // The leaf hangs below the deepest inner node it needs: the one
        // where it parts from its nearer neighbour.
        let parent = shared_before.max(shared_after);
        frames.open_to(parent);
        let leaf = arena.new_leaf(key, data);
        frames.frames[parent].push((key.nibble(parent), leaf));
        len += 1;
        let Some(n) = next else {
            frames.close_to(arena, 0, key);
            return Ok(len);
        };
        // Nodes below the prefix shared with the next key are complete.
        frames.close_to(arena, shared_after, key);
        shared_before = shared_after;
        cur = n;
    }
}
