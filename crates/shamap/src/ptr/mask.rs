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
        self.0.count_ones() as usize
    }

    /// Dense slot index of branch `b` (whether or not it is occupied).
    #[inline]
    pub(crate) fn slot(self, b: Nibble) -> usize {
        (self.0 & ((1u16 << b.get()) - 1)).count_ones() as usize
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

#[cfg(test)]
mod tests {
    use super::*;

    fn nib(v: u8) -> Nibble {
        Nibble::new(v).expect("test nibbles are < 16")
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
