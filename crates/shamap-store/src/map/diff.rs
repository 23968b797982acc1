//! Differences between two stored maps of one kind, in ascending key
//! order, skipping subtrees whose hashes are equal: the cost grows with
//! the differences (times the depth), not with the maps. Every node is
//! loaded through the one verified fetch (`crate::map::fetch`), as every read.

use std::ops::ControlFlow;

use shamap::{Hash256, Key, Nibble};

use crate::error::StoreError;
use crate::map::fetch::fetch_required;
use crate::map::reader::StoredMap;
use crate::node_id::MapNode;
use crate::node_id::NodeId;

/// What `each_leaf` calls with every leaf: the walker, the key, the data.
type LeafVisitor<'a, W> = dyn FnMut(&mut W, Key, Vec<u8>) -> ControlFlow<()> + 'a;

/// One key whose data differ between two stored maps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredDifference {
    /// The key.
    pub key: Key,
    /// Its data in the left map (`None`: absent there, so added).
    pub left: Option<Vec<u8>>,
    /// Its data in the right map (`None`: absent there, so removed).
    pub right: Option<Vec<u8>>,
}

/// Which side a node is read from.
#[derive(Clone, Copy)]
enum Side {
    Left,
    Right,
}

/// The two maps and the callback.
struct Diff<'a, 'm, 's> {
    left: &'m StoredMap<'s>,
    right: &'m StoredMap<'s>,
    f: &'a mut dyn FnMut(StoredDifference) -> ControlFlow<()>,
}

/// A subtree: its hash and its place (`None`: an empty branch).
type Sub = Option<(Hash256, NodeId)>;

/// Calls `f` with every key whose data differ between `left` and `right`
/// (present on one side only, or with other data), in ascending key
/// order, until it breaks. Both maps must be of one kind.
pub fn diff_stored(
    left: &StoredMap<'_>,
    right: &StoredMap<'_>,
    f: &mut dyn FnMut(StoredDifference) -> ControlFlow<()>,
) -> Result<(), StoreError> {
    if left.kind() != right.kind() {
        return Err(StoreError::Unresolved {
            location: left.store().location(),
            message: format!(
                "cannot compare a {} map ({}) with a {} map ({})",
                left.kind().name(),
                left.root_hash(),
                right.kind().name(),
                right.root_hash()
            ),
        });
    }
    let sub = |root: Hash256| (!root.is_zero()).then_some((root, NodeId::ROOT));
    let mut d = Diff { left, right, f };
    // A break is the caller's: nothing to report.
    let _ = d.subtrees(sub(left.root_hash()), sub(right.root_hash()))?;
    Ok(())
}

impl Diff<'_, '_, '_> {
    fn load(&self, side: Side, sub: &Sub) -> Result<Option<MapNode>, StoreError> {
        let Some((hash, id)) = sub else {
            return Ok(None);
        };
        let map = match side {
            Side::Left => self.left,
            Side::Right => self.right,
        };
        Ok(Some(
            fetch_required(map.store(), hash, map.kind(), id)?.node,
        ))
    }

    fn emit(&mut self, key: Key, left: Option<Vec<u8>>, right: Option<Vec<u8>>) -> ControlFlow<()> {
        if left == right {
            return ControlFlow::Continue(());
        }
        (self.f)(StoredDifference { key, left, right })
    }

    /// The differences between two subtrees at the same place.
    fn subtrees(&mut self, a: Sub, b: Sub) -> Result<ControlFlow<()>, StoreError> {
        if a.map(|(h, _)| h) == b.map(|(h, _)| h) {
            return Ok(ControlFlow::Continue(()));
        }
        let (na, nb) = (self.load(Side::Left, &a)?, self.load(Side::Right, &b)?);
        match (na, nb) {
            (Some(MapNode::Inner(ca)), Some(MapNode::Inner(cb))) => {
                let (ida, idb) = (a.map(|s| s.1), b.map(|s| s.1));
                for n in Nibble::all() {
                    let i = usize::from(n.get());
                    let child = |c: &[Hash256; 16], id: Option<NodeId>| {
                        id.filter(|_| !c[i].is_zero()).map(|id| (c[i], id.child(n)))
                    };
                    if self.subtrees(child(&ca, ida), child(&cb, idb))?.is_break() {
                        return Ok(ControlFlow::Break(()));
                    }
                }
                Ok(ControlFlow::Continue(()))
            }
            (na, nb) => {
                // At least one side is a leaf or empty: merge the other
                // side's leaves (in key order) with it.
                let (single, other, other_side, single_is_left) = match (na, nb) {
                    (Some(MapNode::Inner(_)), single) => (single, a, Side::Left, false),
                    (single, Some(MapNode::Inner(_))) => (single, b, Side::Right, true),
                    (Some(MapNode::Leaf { key, data }), right) => {
                        let right = match right {
                            Some(MapNode::Leaf { key, data }) => Some((key, data)),
                            _ => None,
                        };
                        return Ok(self.leaves(Some((key, data)), right));
                    }
                    (None, Some(MapNode::Leaf { key, data })) => {
                        return Ok(self.leaves(None, Some((key, data))))
                    }
                    (None, None) => return Ok(ControlFlow::Continue(())),
                };
                let mut single = match single {
                    Some(MapNode::Leaf { key, data }) => Some((key, data)),
                    _ => None,
                };
                let mut out = ControlFlow::Continue(());
                let walked = self.each_leaf(other_side, other, &mut |d, key, data| {
                    if let Some((k, _)) = &single {
                        if *k < key {
                            let (k, v) = single.take().expect("checked");
                            if d.side_pair(k, Some(v), None, single_is_left).is_break() {
                                out = ControlFlow::Break(());
                                return ControlFlow::Break(());
                            }
                        }
                    }
                    let mine = match &single {
                        Some((k, _)) if *k == key => single.take().map(|(_, v)| v),
                        _ => None,
                    };
                    let flow = d.side_pair(key, mine, Some(data), single_is_left);
                    if flow.is_break() {
                        out = ControlFlow::Break(());
                    }
                    flow
                })?;
                if walked.is_break() {
                    return Ok(ControlFlow::Break(()));
                }
                if out.is_continue() {
                    if let Some((k, v)) = single {
                        out = self.side_pair(k, Some(v), None, single_is_left);
                    }
                }
                Ok(out)
            }
        }
    }

    /// Emits a key with `single` (the leaf or empty side's data) and
    /// `other` (the inner side's), each on its side.
    fn side_pair(
        &mut self,
        key: Key,
        single: Option<Vec<u8>>,
        other: Option<Vec<u8>>,
        single_is_left: bool,
    ) -> ControlFlow<()> {
        if single_is_left {
            self.emit(key, single, other)
        } else {
            self.emit(key, other, single)
        }
    }

    /// Two leaves (or one and nothing) at the same place.
    fn leaves(&mut self, a: Option<(Key, Vec<u8>)>, b: Option<(Key, Vec<u8>)>) -> ControlFlow<()> {
        match (a, b) {
            (Some((ka, da)), Some((kb, db))) if ka == kb => self.emit(ka, Some(da), Some(db)),
            (Some((ka, da)), Some((kb, db))) => {
                if ka < kb {
                    self.emit(ka, Some(da), None)?;
                    self.emit(kb, None, Some(db))
                } else {
                    self.emit(kb, None, Some(db))?;
                    self.emit(ka, Some(da), None)
                }
            }
            (Some((k, d)), None) => self.emit(k, Some(d), None),
            (None, Some((k, d))) => self.emit(k, None, Some(d)),
            (None, None) => ControlFlow::Continue(()),
        }
    }

    /// Calls `f` with every leaf under `sub` on `side`, in key order.
    fn each_leaf(
        &mut self,
        side: Side,
        sub: Sub,
        f: &mut LeafVisitor<'_, Self>,
    ) -> Result<ControlFlow<()>, StoreError> {
        let Some((_, id)) = sub else {
            return Ok(ControlFlow::Continue(()));
        };
        match self.load(side, &sub)? {
            Some(MapNode::Leaf { key, data }) => Ok(f(self, key, data)),
            Some(MapNode::Inner(children)) => {
                for n in Nibble::all() {
                    let h = children[usize::from(n.get())];
                    if !h.is_zero() && self.each_leaf(side, Some((h, id.child(n))), f)?.is_break() {
                        return Ok(ControlFlow::Break(()));
                    }
                }
                Ok(ControlFlow::Continue(()))
            }
            None => Ok(ControlFlow::Continue(())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::map::import::write_snapshot;
    use crate::test_support::seed;
    use crate::MemStore;
    use rand::{Rng, SeedableRng};
    use shamap::{MapKind, ShaMap};

    /// The differences as the engine's in-memory diff gives them.
    fn expected(a: &mut ShaMap, b: &mut ShaMap) -> Vec<StoredDifference> {
        a.diff(b, usize::MAX)
            .expect("no limit")
            .into_iter()
            .map(|d| StoredDifference {
                key: d.key,
                left: d.left.map(<[u8]>::to_vec),
                right: d.right.map(<[u8]>::to_vec),
            })
            .collect()
    }

    #[test]
    fn stored_diffs_equal_the_engines_on_random_maps() {
        let seed = seed();
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        for round in 0..40 {
            let store = MemStore::new();
            let mut a = ShaMap::new(MapKind::AccountState);
            let n = rng.gen_range(0..300);
            // Few distinct first bytes, so that leaves and inner nodes meet
            // at the same places.
            let key = |rng: &mut rand::rngs::StdRng| {
                let mut k = [0u8; 32];
                rng.fill(&mut k[..]);
                k[0] &= 0x13;
                Key(k)
            };
            for _ in 0..n {
                let k = key(&mut rng);
                let _ = a.insert(k, &[rng.gen(); 16]);
            }
            let mut b = a.clone();
            for _ in 0..rng.gen_range(0..40) {
                match rng.gen_range(0..3) {
                    0 => {
                        let k = key(&mut rng);
                        let _ = b.insert(k, &[rng.gen(); 16]);
                    }
                    1 => {
                        if let Some((k, _)) = b.iter().nth(rng.gen_range(0..b.len().max(1))) {
                            let k = *k;
                            let _ = b.remove(&k);
                        }
                    }
                    _ => {
                        if let Some((k, _)) = b.iter().nth(rng.gen_range(0..b.len().max(1))) {
                            let k = *k;
                            let _ = b.upsert(k, &[rng.gen(); 20]);
                        }
                    }
                }
            }
            for m in [&mut a, &mut b] {
                write_snapshot(&store, &m.snapshot(), &mut |_| {}).expect("write");
            }
            let (ra, rb) = (a.root_hash(), b.root_hash());
            let sa = StoredMap::open(&store, ra, MapKind::AccountState).expect("a");
            let sb = StoredMap::open(&store, rb, MapKind::AccountState).expect("b");
            let diffs = |x: &StoredMap<'_>, y: &StoredMap<'_>| {
                let mut got = Vec::new();
                diff_stored(x, y, &mut |d| {
                    got.push(d);
                    ControlFlow::Continue(())
                })
                .expect("diff");
                got
            };
            let here = format!("seed {seed}, round {round}");
            assert_eq!(diffs(&sa, &sb), expected(&mut a, &mut b), "{here}");
            assert_eq!(diffs(&sb, &sa), expected(&mut b, &mut a), "{here}");
        }
    }
}
