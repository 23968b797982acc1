//! `NodePtr`: the pointer word that names one node chunk, and views over
//! chunks.
//!
//! Chunk layouts (all offsets in bytes; every chunk is 8-aligned):
//!
//! Inner node, size class with capacity `cap` (`32 + 8·cap` bytes):
//!
//! | offset | bytes  | field                                                    |
//! |--------|--------|----------------------------------------------------------|
//! | 0      | 32     | hash (all zero = not yet computed since the last change) |
//! | 32     | 8·cap  | children: `n = popcount(mask)` `NodePtr` words in branch order, then unused |
//!
//! The branch mask and the size class are not in the chunk: they are the
//! stamp and tag of the `NodePtr` word that points at it.
//!
//! Leaf, data length `len < 0xFFFF` (`64 + round8(len)` bytes):
//!
//! | offset | bytes | field                            |
//! |--------|-------|----------------------------------|
//! | 0      | 32    | hash (all zero = not computed)   |
//! | 32     | 32    | key                              |
//! | 64     | len   | data, then padding to 8          |
//!
//! Leaf, data length `len >= 0xFFFF` (stamp `LONG_LEAF`): as above, with a
//! little-endian `u64` length at offset 64 and data from offset 72.
//!
//! The hash sits at offset 0 in both kinds, so a parent reads a child's hash
//! without knowing its kind.
//!
//! Leaf of a map without stored leaf hashes
//! ([`crate::LeafHashes::Recomputed`], the hashless-leaf mode), pooled
//! (`leaf_chunk_size(len) - 32` bytes): the chunk starts with the key, then
//! the data (or the long length and the data). The leaf's word names the
//! chunk's address minus [`LEAF_HASH_ROOM`], where the hash would be, so key,
//! length and data are read at the offsets above in both modes and the
//! readers need not know the mode. Those 32 bytes belong to whatever lies
//! before the chunk in its block (another chunk, or the block header: every
//! pooled chunk starts at offset 64 or more of its block, so the address
//! stays inside the block): the leaf's "hash" must never be read or written,
//! and the tree code asks the map's mode before touching a leaf's hash.
//! Leaves too large for a pool keep the stored-mode layout (hash room
//! unused).

use std::ptr::NonNull;

use super::mask::BranchMask;
use super::tagged::Tagged;
use crate::hash::{Hash256, Key, Nibble};

/// Bytes a pooled leaf of the hashless-leaf mode leaves out: the hash.
pub(crate) const LEAF_HASH_ROOM: usize = 32;

/// Stamp of a leaf whose length is stored in the chunk.
pub(crate) const LONG_LEAF: u16 = 0xFFFF;
pub(crate) const HASH_OFFSET: usize = 0;
pub(crate) const CHILDREN_OFFSET: usize = 32;
pub(crate) const KEY_OFFSET: usize = 32;
pub(crate) const DATA_OFFSET: usize = 64;
pub(crate) const LONG_LEN_OFFSET: usize = 64;
pub(crate) const LONG_DATA_OFFSET: usize = 72;

/// Most bytes of a chunk that `NodePtr::prefetch_chunk` hints: a full
/// inner chunk (160 bytes with 16 children) and a leaf with up to 192
/// bytes of data.
const PREFETCH_CHUNK_MAX: usize = 256;

/// Bytes of an inner chunk with capacity `cap`.
pub(crate) const fn inner_chunk_size(cap: usize) -> usize {
    CHILDREN_OFFSET + 8 * cap
}

/// Bytes of a leaf chunk holding `len` bytes of data.
pub(crate) const fn leaf_chunk_size(len: usize) -> usize {
    let padded = (len + 7) & !7;
    if len < LONG_LEAF as usize {
        DATA_OFFSET + padded
    } else {
        LONG_DATA_OFFSET + padded
    }
}

/// A pointer to one node chunk, a leaf or an inner node (whose child array
/// holds more such words): the 8-byte tagged, stamped word of `tagged.rs`,
/// whose tag says leaf or inner size class and whose stamp holds the branch
/// mask or the data length. Not `Copy`, not `Clone`.
///
/// A pointer, not a box: unlike `Box` it owns nothing alone and frees
/// nothing when dropped. Several words may name one chunk (a map and its
/// snapshots share nodes): each word is one reference, and the arena counts
/// the references beyond the first ([`NodeArena::share`], and
/// [`NodeArena::make_mut`] for the children of a node it copies). A chunk is
/// freed when its arena is handed its last word ([`NodeArena::release`]), or
/// goes with the arena's pools ([`NodeArena::dispose_tree`]). Dropping a word
/// without giving it back leaks that reference (never unsafe; the arena's
/// counters expose it in tests).
///
/// [`NodeArena::share`]: super::NodeArena::share
/// [`NodeArena::make_mut`]: super::NodeArena::make_mut
/// [`NodeArena::release`]: super::NodeArena::release
/// [`NodeArena::dispose_tree`]: super::NodeArena::dispose_tree
#[repr(transparent)]
pub(crate) struct NodePtr(pub(super) Tagged);

// SAFETY: the word names memory no thread owns: a chunk of its arena's pools
// (blocks from mmap) or of the global allocator (large leaves), or the
// static placeholder; there is no thread-local state behind it. Sending a
// word sends one counted reference. Its chunk stays valid wherever the word
// goes, for as long as the reference is counted: chunks are freed and counts
// changed only by `NodeArena` methods taking `&mut NodeArena`, which every
// map and snapshot reaches through the `Arc<Mutex<NodeArena>>` it shares
// with the others (or, as the last holder, `Arc::get_mut`), so frees are
// serialized whatever the thread, and the arena, with its pools, lives as
// long as any holder of words into it.
unsafe impl Send for NodePtr {}
// SAFETY: `&NodePtr` only reads the chunk (hash, key, data, child words) or
// hints the cache; every write takes `&mut NodePtr`. `&mut` does not make a
// write exclusive by itself, since another word (say a snapshot's, read on
// another thread) may name the same chunk or a chunk above it. The crate
// upholds that a chunk is written only through a word no other version can
// reach: writers call `NodeArena::make_mut` on every node they change, which
// first copies a shared one, and hashing writes only stale nodes, which are
// never shared because a version is fully hashed before it is shared
// (`ShaMap::snapshot`; asserted where hashing writes in debug builds, and
// audited by `ShaMap::check`). So a chunk two versions reach is immutable,
// and concurrent `&NodePtr` reads of it are sound.
unsafe impl Sync for NodePtr {}

/// An empty inner chunk that is never written or freed; see
/// [`NodePtr::placeholder`].
static PLACEHOLDER: [u64; 6] = [0; 6];

impl NodePtr {
    /// A word naming a static, empty inner node, to stand in a field whose
    /// node has just been moved out (e.g. while dropping). It must only be
    /// read or forgotten: never mutated, given to the arena, or freed.
    pub(crate) fn placeholder() -> NodePtr {
        NodePtr(Tagged::new(NonNull::from(&PLACEHOLDER).cast(), 1, 0))
    }

    #[inline]
    pub(super) fn base(&self) -> NonNull<u8> {
        self.0.addr()
    }

    /// Drops this word without touching the chunk: for when another word
    /// still refers to the chunk (a shared node), the chunk was just freed,
    /// or it goes with its arena's pools.
    #[inline]
    pub(crate) fn discard_word(self) {}

    /// Hints the CPU to load the node's whole hash, so that several
    /// children's hashes load at once. A hash is 32 bytes at an 8-aligned
    /// address, on one cache line or across two: both ends are hinted.
    #[inline]
    pub(crate) fn prefetch_hash(&self) {
        let base = self.base().as_ptr().cast_const();
        prefetch_line(base.wrapping_add(HASH_OFFSET));
        prefetch_line(base.wrapping_add(HASH_OFFSET + 31));
    }

    /// Hints the CPU to load what a writer reads of this node next: for an
    /// inner node its hash and occupied child words, for a leaf its hash,
    /// key and the start of its data (the size is known from the word
    /// alone, so nothing is loaded to compute it). At most
    /// `PREFETCH_CHUNK_MAX` bytes are hinted: the rest of a long leaf is
    /// read in order, which the hardware prefetcher follows on its own.
    #[inline]
    pub(crate) fn prefetch_chunk(&self) {
        let used = if self.is_leaf() {
            match self.0.stamp() {
                LONG_LEAF => LONG_DATA_OFFSET,
                len => DATA_OFFSET + usize::from(len),
            }
        } else {
            CHILDREN_OFFSET + 8 * self.mask_bits().count()
        }
        .min(PREFETCH_CHUNK_MAX);
        let base = self.base().as_ptr().cast_const();
        let mut off = 0;
        while off < used {
            prefetch_line(base.wrapping_add(off));
            off += 64;
        }
        prefetch_line(base.wrapping_add(used - 1));
    }

    /// Hints the CPU to load the cache line holding this word (a child
    /// slot inside its parent's chunk), which a batched lookup reads on its
    /// next step.
    #[inline]
    pub(crate) fn prefetch_word(&self) {
        prefetch_line(std::ptr::from_ref(self).cast::<u8>());
    }

    /// Hints the CPU to load a leaf's key (32 bytes from offset 32 of an
    /// 8-aligned chunk, so possibly two lines: both ends are hinted).
    #[inline]
    pub(crate) fn prefetch_key(&self) {
        let base = self.base().as_ptr().cast_const();
        prefetch_line(base.wrapping_add(KEY_OFFSET));
        prefetch_line(base.wrapping_add(KEY_OFFSET + 31));
    }

    /// True when both words name the same chunk.
    #[inline]
    pub(crate) fn same_chunk(&self, other: &NodePtr) -> bool {
        self.base() == other.base()
    }

    /// True for a leaf.
    #[inline]
    pub(crate) fn is_leaf(&self) -> bool {
        self.0.tag() == 0
    }

    /// The node's stored hash (zero when not computed since the last change).
    /// Never called on a leaf of a map in the hashless-leaf mode, which has
    /// none (crate rule; see the module docs).
    #[inline]
    pub(crate) fn hash(&self) -> &Hash256 {
        // SAFETY: every inner chunk and every leaf chunk of a map that stores
        // leaf hashes starts with a 32-byte hash, initialised when the chunk
        // was made (hashless leaves are never asked, by the crate rule
        // above); `Hash256` is a transparent `[u8; 32]` (align 1); the
        // borrow of `self` keeps the chunk alive and unaliased by writers.
        unsafe { &*self.base().as_ptr().add(HASH_OFFSET).cast::<Hash256>() }
    }

    /// Sets the stored hash (never on a hashless leaf, as for `hash`).
    #[inline]
    pub(crate) fn set_hash(&mut self, h: Hash256) {
        // SAFETY: as in `hash` (the node has a hash field); `&mut self`
        // gives exclusive access.
        unsafe {
            self.base()
                .as_ptr()
                .add(HASH_OFFSET)
                .cast::<Hash256>()
                .write(h)
        }
    }

    /// Marks the node's hash as stale.
    #[inline]
    pub(crate) fn clear_hash(&mut self) {
        self.set_hash(Hash256::ZERO);
    }

    /// A leaf view, or `None` for an inner node.
    #[inline]
    pub(crate) fn leaf(&self) -> Option<LeafRef<'_>> {
        self.is_leaf().then_some(LeafRef { node: self })
    }

    /// An inner view, or `None` for a leaf.
    #[inline]
    pub(crate) fn inner(&self) -> Option<InnerRef<'_>> {
        (!self.is_leaf()).then_some(InnerRef { node: self })
    }

    /// A mutable inner view, or `None` for a leaf.
    #[inline]
    pub(crate) fn inner_mut(&mut self) -> Option<InnerMut<'_>> {
        if self.is_leaf() {
            None
        } else {
            Some(InnerMut { node: self })
        }
    }

    /// Branch mask of an inner node (meaningless for a leaf).
    #[inline]
    pub(super) fn mask_bits(&self) -> BranchMask {
        BranchMask(self.0.stamp())
    }

    /// Size class of an inner node (meaningless for a leaf).
    #[inline]
    pub(super) fn class_index(&self) -> usize {
        usize::from(self.0.tag()).wrapping_sub(1)
    }

    /// Data length of a leaf.
    #[inline]
    pub(super) fn leaf_len(&self) -> usize {
        debug_assert!(self.is_leaf());
        let stamp = self.0.stamp();
        if stamp != LONG_LEAF {
            return usize::from(stamp);
        }
        // SAFETY: a leaf stamped LONG_LEAF has its u64 length at offset 64,
        // written when the chunk was made; unaligned read needs no alignment.
        let len = unsafe {
            self.base()
                .as_ptr()
                .add(LONG_LEN_OFFSET)
                .cast::<u64>()
                .read_unaligned()
        };
        usize::try_from(u64::from_le(len)).expect("lengths were stored from a usize")
    }

    pub(super) fn children_ptr(&self) -> *mut NodePtr {
        // SAFETY: offset 32 lies inside every inner chunk (>= 40 bytes).
        unsafe { self.base().as_ptr().add(CHILDREN_OFFSET).cast::<NodePtr>() }
    }
}

/// Read-only view of a leaf.
#[derive(Clone, Copy)]
pub(crate) struct LeafRef<'a> {
    node: &'a NodePtr,
}

impl<'a> LeafRef<'a> {
    /// The item key.
    #[inline]
    pub(crate) fn key(self) -> &'a Key {
        // SAFETY: a leaf chunk holds its key at offset 32, initialised at
        // creation; `Key` is a transparent `[u8; 32]`; the chunk lives as
        // long as the borrowed NodePtr.
        unsafe { &*self.node.base().as_ptr().add(KEY_OFFSET).cast::<Key>() }
    }

    /// The item data.
    #[inline]
    pub(crate) fn data(self) -> &'a [u8] {
        let len = self.node.leaf_len();
        let off = if self.node.0.stamp() == LONG_LEAF {
            LONG_DATA_OFFSET
        } else {
            DATA_OFFSET
        };
        // SAFETY: the chunk was sized by `leaf_chunk_size(len)`, so
        // `off + len` bytes are inside it and were initialised at creation.
        unsafe { std::slice::from_raw_parts(self.node.base().as_ptr().add(off), len) }
    }
}

/// Read-only view of an inner node.
#[derive(Clone, Copy)]
pub(crate) struct InnerRef<'a> {
    node: &'a NodePtr,
}

impl<'a> InnerRef<'a> {
    /// Occupied branches.
    #[inline]
    pub(crate) fn mask(self) -> BranchMask {
        self.node.mask_bits()
    }

    /// Index of the size class of the child array.
    #[inline]
    pub(crate) fn class(self) -> usize {
        self.node.class_index()
    }

    /// The children, densely, in branch order.
    #[inline]
    pub(crate) fn children(self) -> &'a [NodePtr] {
        let n = self.mask().count();
        // SAFETY: the first popcount(mask) slots of an inner chunk hold
        // initialised NodePtr words (arena invariant); the slice borrows the
        // chunk for as long as the parent NodePtr is borrowed.
        unsafe { std::slice::from_raw_parts(self.node.children_ptr(), n) }
    }

    /// The child on branch `b`, if any.
    #[inline]
    pub(crate) fn child(self, b: Nibble) -> Option<&'a NodePtr> {
        let m = self.mask();
        // SAFETY: branch `b` is occupied, so its slot is below
        // popcount(mask) and holds an initialised NodePtr word (as in
        // `children`, whose length check this skips: one popcount less per
        // level of a lookup).
        m.has(b)
            .then(|| unsafe { &*self.node.children_ptr().add(m.slot(b)) })
    }
}

/// Mutable view of an inner node: may change children in place, but not the
/// set of occupied branches (that needs the arena).
pub(crate) struct InnerMut<'a> {
    node: &'a mut NodePtr,
}

impl<'a> InnerMut<'a> {
    /// Occupied branches.
    #[inline]
    pub(crate) fn mask(&self) -> BranchMask {
        self.node.mask_bits()
    }

    /// The children, densely, in branch order, mutably.
    #[inline]
    pub(crate) fn into_children(self) -> &'a mut [NodePtr] {
        let n = self.mask().count();
        // SAFETY: as in `InnerRef::children`; `&mut` on the parent gives
        // exclusive access to its chunk and so to the child words.
        unsafe { std::slice::from_raw_parts_mut(self.node.children_ptr(), n) }
    }

    /// The child on branch `b`, if any, mutably.
    #[inline]
    pub(crate) fn into_child(self, b: Nibble) -> Option<&'a mut NodePtr> {
        let m = self.mask();
        if m.has(b) {
            Some(&mut self.into_children()[m.slot(b)])
        } else {
            None
        }
    }
}

/// Hints the CPU to start loading the cache line that holds the start of
/// `value` into its caches (x86-64 `prefetcht0`; nothing elsewhere). Never
/// faults and never changes `value`. For callers that interleave their
/// own memory work with the map's, and for the benchmarks that measure such
/// overlap.
#[inline]
pub fn prefetch<T: ?Sized>(value: &T) {
    prefetch_line((value as *const T).cast());
}

/// Hints the CPU to start loading the cache line holding `p`.
#[inline]
fn prefetch_line(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint that never faults, whatever the address
    // (callers pass addresses inside live chunks anyway).
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
