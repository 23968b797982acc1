//! The 16-bit branch mask of an inner node.

use crate::hash::Nibble;

/// Which of the 16 branches of an inner node are occupied: bit `b` set means
/// branch `b` has a child. Children are stored densely in branch order, so
/// the child of branch `b` is at slot `popcount(mask & ((1 << b) - 1))`.
#[derive(Clone, Copy, PartialEq, Eq, Default, Debug)]
pub(crate) struct BranchMask(pub(crate) u16);

impl BranchMask {
    /// True when branch `b` is occupied.
    #[inline]
    pub(crate) fn has(self, b: Nibble) -> bool {
        self.0 & (1 << b.get()) != 0
    }

    /// Number of occupied branches.
    #[inline]
    pub(crate) fn count(self) -> usize {
        pop16(self.0)
    }

    /// Dense slot index of branch `b` (whether or not it is occupied).
    #[inline]
    pub(crate) fn slot(self, b: Nibble) -> usize {
        pop16(self.0 & ((1u16 << b.get()) - 1))
    }

    /// The mask with branch `b` set.
    #[inline]
    pub(crate) fn with(self, b: Nibble) -> BranchMask {
        BranchMask(self.0 | (1 << b.get()))
    }

    /// The mask with branch `b` cleared.
    #[inline]
    pub(crate) fn without(self, b: Nibble) -> BranchMask {
        BranchMask(self.0 & !(1 << b.get()))
    }

    /// Occupied branches in ascending order.
    pub(crate) fn branches(self) -> impl DoubleEndedIterator<Item = Nibble> {
        Nibble::all().filter(move |&b| self.has(b))
    }
}

/// Set bits of each byte value.
const POP8: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = (i as u32).count_ones() as u8;
        i += 1;
    }
    t
};

/// Set bits of a 16-bit word. Without the `popcnt` instruction (not in the
/// x86-64 baseline) `count_ones` is a dozen dependent ALU operations; two
/// lookups in a 256-byte table that stays in L1 are shorter, and this is on
/// every level of every descent.
#[inline]
fn pop16(x: u16) -> usize {
    if cfg!(target_feature = "popcnt") {
        x.count_ones() as usize
    } else {
        usize::from(POP8[usize::from(x as u8)]) + usize::from(POP8[usize::from((x >> 8) as u8)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nib(v: u8) -> Nibble {
        Nibble::new(v).expect("test nibbles are < 16")
    }

    #[test]
    fn pop16_counts_every_word() {
        for x in 0..=u16::MAX {
            assert_eq!(pop16(x), x.count_ones() as usize);
        }
    }

    #[test]
    fn slot_is_popcount_below_branch() {
        let m = BranchMask(0).with(nib(3)).with(nib(9)).with(nib(15));
        assert_eq!(m.count(), 3);
        assert_eq!(m.slot(nib(3)), 0);
        assert_eq!(m.slot(nib(9)), 1);
        assert_eq!(m.slot(nib(15)), 2);
        assert_eq!(m.slot(nib(10)), 2);
        assert_eq!(m.slot(nib(0)), 0);
        assert_eq!(m.without(nib(9)).slot(nib(15)), 1);
        let got: Vec<u8> = m.branches().map(Nibble::get).collect();
        assert_eq!(got, [3, 9, 15]);
    }
}
