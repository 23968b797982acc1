//! Differences between two versions, skipping equal subtrees.

use crate::hash::Key;
use crate::options::LeafHashes;
use crate::ptr::NodePtr;

use super::map::ShaMap;
use super::snapshot::Snapshot;
use super::tree_ref::TreeRef;

/// One key whose data differ between the two sides of a diff.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference<'a> {
    /// The key.
    pub key: Key,
    /// Its data on the left side (`None`: absent there, so added on the right).
    pub left: Option<&'a [u8]>,
    /// Its data on the right side (`None`: absent there, so removed).
    pub right: Option<&'a [u8]>,
}

/// A diff that stopped because there were more differences than allowed
/// (like rippled's `compare`, which gives up past a maximum).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("more than {max} differences")]
pub struct TooManyDifferences {
    /// The limit that was passed.
    pub max: usize,
}

impl Snapshot {
    /// The keys whose data differ between `self` (left) and `other` (right),
    /// in ascending key order. Subtrees with equal hashes are skipped, so the
    /// cost grows with the number of differences times the depth, not with
    /// the size of the maps. Fails once more than `max` are found.
    pub fn diff<'a>(
        &'a self,
        other: &'a Snapshot,
        max: usize,
    ) -> Result<Vec<Difference<'a>>, TooManyDifferences> {
        diff_trees(self.tree(), other.tree(), max)
    }
}

impl ShaMap {
    /// Like [`Snapshot::diff`] between two maps (both are hashed first).
    pub fn diff<'a>(
        &'a mut self,
        other: &'a mut ShaMap,
        max: usize,
    ) -> Result<Vec<Difference<'a>>, TooManyDifferences> {
        self.root_hash();
        other.root_hash();
        diff_trees(self.tree(), other.tree(), max)
    }
}

/// Diffs two fully hashed trees.
pub(crate) fn diff_trees<'a>(
    a: TreeRef<'a>,
    b: TreeRef<'a>,
    max: usize,
) -> Result<Vec<Difference<'a>>, TooManyDifferences> {
    let mut d = Differ {
        out: Vec::new(),
        max,
        leaf_hashes: a.leaf_hashes.stored() && b.leaf_hashes.stored(),
    };
    d.nodes(Some(a.root), Some(b.root))?;
    Ok(d.out)
}

struct Differ<'a> {
    out: Vec<Difference<'a>>,
    max: usize,
    /// Both trees' leaves keep their hash (else leaves are compared by
    /// key and data).
    leaf_hashes: bool,
}

impl<'a> Differ<'a> {
    fn push(
        &mut self,
        key: Key,
        left: Option<&'a [u8]>,
        right: Option<&'a [u8]>,
    ) -> Result<(), TooManyDifferences> {
        if self.out.len() >= self.max {
            return Err(TooManyDifferences { max: self.max });
        }
        self.out.push(Difference { key, left, right });
        Ok(())
    }

    /// Compares two subtrees at the same position.
    fn nodes(
        &mut self,
        a: Option<&'a NodePtr>,
        b: Option<&'a NodePtr>,
    ) -> Result<(), TooManyDifferences> {
        match (a, b) {
            (None, None) => Ok(()),
            (Some(x), Some(y))
                if x.same_chunk(y)
                    || ((self.leaf_hashes || !(x.is_leaf() || y.is_leaf()))
                        && !x.hash().is_zero()
                        && x.hash() == y.hash()) =>
            {
                Ok(())
            }
            (Some(x), None) => self.one_side(x, true),
            (None, Some(y)) => self.one_side(y, false),
            (Some(x), Some(y)) => match (x.inner(), y.inner()) {
                (Some(xi), Some(yi)) => {
                    for br in crate::hash::Nibble::all() {
                        self.nodes(xi.child(br), yi.child(br))?;
                    }
                    Ok(())
                }
                (None, None) => {
                    let (xl, yl) = (x.leaf().expect("leaf"), y.leaf().expect("leaf"));
                    match xl.key().cmp(yl.key()) {
                        std::cmp::Ordering::Equal => {
                            if xl.data() != yl.data() {
                                self.push(*xl.key(), Some(xl.data()), Some(yl.data()))?;
                            }
                            Ok(())
                        }
                        std::cmp::Ordering::Less => {
                            self.push(*xl.key(), Some(xl.data()), None)?;
                            self.push(*yl.key(), None, Some(yl.data()))
                        }
                        std::cmp::Ordering::Greater => {
                            self.push(*yl.key(), None, Some(yl.data()))?;
                            self.push(*xl.key(), Some(xl.data()), None)
                        }
                    }
                }
                // A leaf on one side, a subtree on the other: merge the
                // subtree's items with the single leaf, in key order.
                (Some(_), None) => self.leaf_vs_subtree(y, x, false),
                (None, Some(_)) => self.leaf_vs_subtree(x, y, true),
            },
        }
    }

    /// Every item of `node` exists on one side only.
    fn one_side(&mut self, node: &'a NodePtr, left: bool) -> Result<(), TooManyDifferences> {
        for (k, v) in (TreeRef {
            root: node,
            len: 0,
            leaf_hashes: LeafHashes::Recomputed,
        })
        .subtree_items()
        {
            if left {
                self.push(*k, Some(v), None)?;
            } else {
                self.push(*k, None, Some(v))?;
            }
        }
        Ok(())
    }

    /// `leaf` stands where the other side has the subtree `tree`;
    /// `leaf_is_left` says which side the leaf is on.
    fn leaf_vs_subtree(
        &mut self,
        leaf: &'a NodePtr,
        tree: &'a NodePtr,
        leaf_is_left: bool,
    ) -> Result<(), TooManyDifferences> {
        let l = leaf.leaf().expect("leaf");
        let mut pending = Some((l.key(), l.data()));
        for (k, v) in (TreeRef {
            root: tree,
            len: 0,
            leaf_hashes: LeafHashes::Recomputed,
        })
        .subtree_items()
        {
            if let Some((lk, lv)) = pending {
                if lk < k {
                    self.side(*lk, lv, leaf_is_left)?;
                    pending = None;
                } else if lk == k {
                    pending = None;
                    if lv != v {
                        let (left, right) = if leaf_is_left { (lv, v) } else { (v, lv) };
                        self.push(*k, Some(left), Some(right))?;
                    }
                    continue;
                }
            }
            self.side(*k, v, !leaf_is_left)?;
        }
        if let Some((lk, lv)) = pending {
            self.side(*lk, lv, leaf_is_left)?;
        }
        Ok(())
    }

    fn side(&mut self, k: Key, v: &'a [u8], left: bool) -> Result<(), TooManyDifferences> {
        if left {
            self.push(k, Some(v), None)
        } else {
            self.push(k, None, Some(v))
        }
    }
}
