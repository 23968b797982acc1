//! The tagged, stamped pointer word behind every `NodePtr`.
//!
//! ```text
//!  63            48  47  46                                  3 2    0
//! +----------------+----+-------------------------------------+------+
//! |  stamp (16)    |leaf|     chunk address, bits 46..3        | tag  |   inner node
//! |  stamp (16)    | 1  |     chunk address, bits 46..0 (any alignment)  |   leaf
//! +----------------+----+-------------------------------------+------+
//! ```
//!
//! - Bit 47 set: a leaf; `stamp` = its data length, or `LONG_LEAF` (0xFFFF)
//!   when the length (>= 0xFFFF) is stored in the chunk instead. A leaf
//!   chunk may start at any byte (leaves are allocated to the byte), so all
//!   of bits 46..0 are address.
//! - Bit 47 clear: an inner node whose child array has size class
//!   `tag - 1` (`tag` 1..=7 in bits 2..0); `stamp` = its branch mask. Inner
//!   chunks are 8-aligned (const-asserted below), which frees the tag bits.
//!
//! Chunks lie below 2^47 (checked where blocks and large leaves are
//! allocated), which frees bit 47 and the stamp. Tag and stamp are set and
//! cleared with `map_addr` on the original pointer, so provenance is kept
//! (strict provenance).

use std::ptr::NonNull;

/// Alignment of every inner chunk (leaf chunks may start at any byte).
pub(crate) const NODE_ALIGN: usize = 8;
/// Bits of the tag.
pub(crate) const TAG_MASK: usize = 0b111;
const STAMP_SHIFT: u32 = 48;
/// The bit that marks a leaf.
const LEAF_BIT: usize = 1 << 47;
/// Address bits of a leaf word.
const LEAF_ADDR_MASK: usize = LEAF_BIT - 1;
/// Address bits of an inner word.
const INNER_ADDR_MASK: usize = LEAF_ADDR_MASK & !TAG_MASK;

const _: () = assert!(usize::BITS == 64, "stamped pointers need 64-bit addresses");
const _: () = assert!(NODE_ALIGN > TAG_MASK, "alignment must free the tag bits");
const _: () = assert!(crate::alloc::BLOCK_SIZE.is_multiple_of(NODE_ALIGN));
const _: () = assert!(crate::alloc::ADDRESS_LIMIT <= LEAF_BIT);

/// A pointer to a chunk with a leaf bit or a 3-bit tag and a 16-bit stamp
/// folded in.
#[repr(transparent)]
pub(crate) struct Tagged(NonNull<u8>);

impl Tagged {
    /// Folds `tag` and `stamp` into `addr`: `tag` 0 makes a leaf word (any
    /// address), 1..=7 an inner word (an 8-aligned address).
    #[inline]
    pub(crate) fn new(addr: NonNull<u8>, tag: u8, stamp: u16) -> Tagged {
        let a = addr.as_ptr().addr();
        debug_assert_eq!(a & !LEAF_ADDR_MASK, 0, "chunk above 2^47");
        debug_assert!(usize::from(tag) <= TAG_MASK);
        let low = if tag == 0 {
            LEAF_BIT
        } else {
            debug_assert_eq!(a & TAG_MASK, 0, "misaligned inner chunk");
            usize::from(tag)
        };
        Tagged(addr.map_addr(|a| a | low | (usize::from(stamp) << STAMP_SHIFT)))
    }

    /// A second word naming the same chunk with the same tag and stamp. Only
    /// the arena's reference counting may use it (see `NodeArena::share`).
    #[inline]
    pub(crate) fn duplicate(&self) -> Tagged {
        Tagged(self.0)
    }

    /// True for a leaf word.
    #[inline]
    pub(crate) fn is_leaf(&self) -> bool {
        self.0.as_ptr().addr() & LEAF_BIT != 0
    }

    /// The chunk address with tag, leaf bit and stamp cleared.
    #[inline]
    pub(crate) fn addr(&self) -> NonNull<u8> {
        let mask = if self.is_leaf() {
            LEAF_ADDR_MASK
        } else {
            INNER_ADDR_MASK
        };
        self.0.map_addr(|a| {
            // SAFETY: the word was made from a non-null chunk address with
            // only tag, leaf and stamp bits added (`new`, `set_stamp`), and
            // `mask` clears exactly the bits its kind added, so this gives
            // back that address, which is not zero. (The checked form costs
            // a test and a conditional move on every step of every descent.)
            unsafe { std::num::NonZeroUsize::new_unchecked(a.get() & mask) }
        })
    }

    /// The 3-bit tag: 0 for a leaf, 1..=7 for an inner node.
    #[inline]
    pub(crate) fn tag(&self) -> u8 {
        if self.is_leaf() {
            0
        } else {
            (self.0.as_ptr().addr() & TAG_MASK) as u8
        }
    }

    /// The 16-bit stamp.
    #[inline]
    pub(crate) fn stamp(&self) -> u16 {
        (self.0.as_ptr().addr() >> STAMP_SHIFT) as u16
    }

    /// Replaces the stamp, keeping address and tag.
    #[inline]
    pub(crate) fn set_stamp(&mut self, stamp: u16) {
        let keep = !(0xFFFFusize << STAMP_SHIFT);
        self.0 = self.0.map_addr(|a| {
            let v = (a.get() & keep) | (usize::from(stamp) << STAMP_SHIFT);
            // The address bits are non-zero, so `v` is too.
            std::num::NonZeroUsize::new(v).unwrap_or(a)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_and_stamp_round_trip_without_touching_the_address() {
        let mut x = 0u64;
        let p = NonNull::from(&mut x).cast::<u8>();
        let mut t = Tagged::new(p, 5, 0xBEEF);
        assert_eq!((t.tag(), t.stamp(), t.addr()), (5, 0xBEEF, p));
        t.set_stamp(0x0001);
        assert_eq!((t.tag(), t.stamp(), t.addr()), (5, 1, p));
        let t0 = Tagged::new(p, 0, 0xFFFF);
        assert_eq!((t0.tag(), t0.stamp(), t0.addr()), (0, 0xFFFF, p));
        assert!(t0.is_leaf() && !t.is_leaf());
        let odd = NonNull::new(p.as_ptr().wrapping_add(3)).expect("non-null");
        let mut t1 = Tagged::new(odd, 0, 77);
        assert_eq!((t1.tag(), t1.stamp(), t1.addr()), (0, 77, odd));
        t1.set_stamp(0xFFFF);
        assert_eq!((t1.tag(), t1.stamp(), t1.addr()), (0, 0xFFFF, odd));
    }
}
