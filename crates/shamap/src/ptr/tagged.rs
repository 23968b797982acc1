//! The tagged, stamped pointer word behind every `NodePtr`.
//!
//! ```text
//!  63            48 47                                   3 2    0
//! +----------------+--------------------------------------+------+
//! |  stamp (16)    |     chunk address, bits 47..3         | tag  |
//! +----------------+--------------------------------------+------+
//! ```
//!
//! - `tag` 0: a leaf; `stamp` = its data length, or `LONG_LEAF` (0xFFFF) when
//!   the length (>= 0xFFFF) is stored in the chunk instead.
//! - `tag` 1..=7: an inner node whose child array has size class `tag - 1`;
//!   `stamp` = its branch mask.
//!
//! Chunks are 8-aligned (const-asserted below), which frees the three tag
//! bits, and lie below 2^48 (checked where blocks are allocated), which frees
//! the stamp. Tag and stamp are set and cleared with `map_addr` on the
//! original pointer, so provenance is kept (strict provenance).

use std::ptr::NonNull;

/// Alignment of every node chunk.
pub(crate) const NODE_ALIGN: usize = 8;
/// Bits of the tag.
pub(crate) const TAG_MASK: usize = 0b111;
const STAMP_SHIFT: u32 = 48;
const ADDR_MASK: usize = ((1usize << STAMP_SHIFT) - 1) & !TAG_MASK;

const _: () = assert!(usize::BITS == 64, "stamped pointers need 64-bit addresses");
const _: () = assert!(NODE_ALIGN > TAG_MASK, "alignment must free the tag bits");
const _: () = assert!(crate::alloc::BLOCK_SIZE.is_multiple_of(NODE_ALIGN));

/// A pointer to a chunk with a 3-bit tag and a 16-bit stamp folded in.
#[repr(transparent)]
pub(crate) struct Tagged(NonNull<u8>);

impl Tagged {
    /// Folds `tag` and `stamp` into `addr`.
    #[inline]
    pub(crate) fn new(addr: NonNull<u8>, tag: u8, stamp: u16) -> Tagged {
        debug_assert_eq!(
            addr.as_ptr().addr() & !ADDR_MASK,
            0,
            "misaligned or high chunk"
        );
        debug_assert!(usize::from(tag) <= TAG_MASK);
        Tagged(addr.map_addr(|a| a | usize::from(tag) | (usize::from(stamp) << STAMP_SHIFT)))
    }

    /// A second word naming the same chunk with the same tag and stamp. Only
    /// the arena's reference counting may use it (see `NodeArena::share`).
    #[inline]
    pub(crate) fn duplicate(&self) -> Tagged {
        Tagged(self.0)
    }

    /// The chunk address with tag and stamp cleared.
    #[inline]
    pub(crate) fn addr(&self) -> NonNull<u8> {
        self.0.map_addr(|a| {
            // SAFETY: the word was made from a non-null chunk address with
            // only tag and stamp bits added (`new`, `set_stamp`), so clearing
            // those bits gives back that address, which is not zero. (The
            // checked form costs a test and a conditional move on every step
            // of every descent.)
            unsafe { std::num::NonZeroUsize::new_unchecked(a.get() & ADDR_MASK) }
        })
    }

    /// The 3-bit tag.
    #[inline]
    pub(crate) fn tag(&self) -> u8 {
        (self.0.as_ptr().addr() & TAG_MASK) as u8
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
    }
}
