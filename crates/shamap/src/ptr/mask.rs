//! The 16-bit branch mask of an inner node.

use crate::hash::Nibble;

/// Which of the 16 branches of an inner node are occupied: bit `b` set means
/// branch `b` has a child. Children are stored densely in branch order, so
/// the child of branch `b` is at slot `popcount(mask & ((1 << b) - 1))`.
#[derive(Clone, Copy, PartialEq, Eq, Default, Debug)]
pub struct BranchMask(pub(crate) u16);

impl BranchMask {
    /// True when branch `b` is occupied.
    #[inline]
    pub fn has(self, b: Nibble) -> bool {
        self.0 & (1 << b.get()) != 0
    }

    /// Number of occupied branches.
    #[inline]
    pub fn count(self) -> usize {
        pop16(self.0)
    }

    /// Dense slot index of branch `b` (whether or not it is occupied).
    #[inline]
    pub fn slot(self, b: Nibble) -> usize {
        pop16(self.0 & ((1u16 << b.get()) - 1))
    }

    /// The mask with branch `b` set.
    #[inline]
    pub fn with(self, b: Nibble) -> BranchMask {
        BranchMask(self.0 | (1 << b.get()))
    }

    /// The mask with branch `b` cleared.
    #[inline]
    pub(crate) fn without(self, b: Nibble) -> BranchMask {
        BranchMask(self.0 & !(1 << b.get()))
    }

    /// Occupied branches in ascending order (or, reversed, descending).
    #[inline]
    pub(crate) fn branches(self) -> Branches {
        Branches(self.0)
    }
}

/// The set bits of a mask, lowest or highest first: one step per occupied
/// branch (a loop over all sixteen nibbles with a test of each costs a
/// mispredicted branch on about every other nibble of a random mask).
#[derive(Clone, Copy)]
pub(crate) struct Branches(u16);

impl Iterator for Branches {
    type Item = Nibble;

    #[inline]
    fn next(&mut self) -> Option<Nibble> {
        if self.0 == 0 {
            return None;
        }
        let b = self.0.trailing_zeros();
        self.0 &= self.0 - 1;
        Some(Nibble::low_bits(b))
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = pop16(self.0);
        (n, Some(n))
    }
}

impl DoubleEndedIterator for Branches {
    #[inline]
    fn next_back(&mut self) -> Option<Nibble> {
        if self.0 == 0 {
            return None;
        }
        let b = 15 - self.0.leading_zeros();
        self.0 &= !(1 << b);
        Some(Nibble::low_bits(b))
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

    /// The bit iterator visits exactly the occupied branches of every mask,
    /// ascending, descending, and from both ends at once.
    #[test]
    fn branches_are_the_set_bits_of_every_mask() {
        for x in 0..=u16::MAX {
            let m = BranchMask(x);
            let want: Vec<u8> = (0..16u8).filter(|&b| m.has(nib(b))).collect();
            let up: Vec<u8> = m.branches().map(Nibble::get).collect();
            assert_eq!(up, want, "mask {x:#06x}");
            let mut down: Vec<u8> = m.branches().rev().map(Nibble::get).collect();
            down.reverse();
            assert_eq!(down, want, "mask {x:#06x} reversed");
            assert_eq!(m.branches().size_hint(), (want.len(), Some(want.len())));
            // Alternating ends meet in the middle without repeats or gaps.
            let mut it = m.branches();
            let (mut lo, mut hi) = (Vec::new(), Vec::new());
            while let Some(b) = it.next() {
                lo.push(b.get());
                match it.next_back() {
                    Some(b) => hi.push(b.get()),
                    None => break,
                }
            }
            hi.reverse();
            lo.extend(hi);
            assert_eq!(lo, want, "mask {x:#06x} from both ends");
        }
    }
}
