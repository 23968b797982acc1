//! `check()`: rehash everything and audit every structural invariant.

use crate::error::CheckError;
use crate::hash::{Hash256, Key};
use crate::node_hash;
use crate::ptr::NodePtr;

use super::map::ShaMap;
use super::shared_arena::lock;
use crate::ptr::NodeArena;

/// What the walk counted, to compare with the arena's counters.
#[derive(Default)]
struct Tally {
    leaves: usize,
    data_bytes: usize,
    child_slots: usize,
    inner_by_class: Vec<usize>,
}

impl ShaMap {
    /// Audits the whole map; `Ok` means every invariant holds:
    ///
    /// - the root is an inner node; every other inner node has at least two
    ///   items below it (no inner node whose only child is a leaf), so the
    ///   shape is canonical;
    /// - each inner node's child array uses the smallest size class that fits
    ///   its branch count, and the mask matches the array;
    /// - every leaf's key starts with the nibble path that leads to it (which
    ///   also makes iteration ordered and keys unique);
    /// - every stored hash equals its recomputation from the node's contents,
    ///   and a node marked stale has only stale ancestors;
    /// - no node this map shares with another version (a snapshot, or a map
    ///   made from one) is marked stale: not one that more than one node word
    ///   refers to, nor one below such a node. (The root of an empty map is
    ///   exempt: its hash is zero, which is also the stale mark.)
    /// - item count, data bytes, child slots and pool counters agree with a
    ///   full walk, and every pool's lists are consistent.
    ///
    /// Cost: one full rehash (it trusts no stored hash).
    pub fn check(&self) -> Result<(), CheckError> {
        let arena = lock(&self.arena);
        let mut tally = Tally {
            inner_by_class: vec![0; arena.classes().len()],
            ..Tally::default()
        };
        let mut path = Vec::with_capacity(64);
        self.check_node(&arena, &self.root, &mut path, &mut tally, false)?;
        let structure = |reason: String| CheckError::Structure {
            path: String::new(),
            reason,
        };
        if tally.leaves != self.len {
            return Err(structure(format!(
                "{} leaves but len() is {}",
                tally.leaves, self.len
            )));
        }
        // Counters cover every version sharing the pools; compare them with
        // this tree only when it is the sole user.
        let sole = std::sync::Arc::strong_count(&self.arena) == 1;
        if !sole {
            return arena.audit().map_err(structure);
        }
        let c = arena.counters();
        if (c.leaves, c.leaf_data_bytes, c.child_slots_used)
            != (tally.leaves, tally.data_bytes, tally.child_slots)
        {
            return Err(structure(format!(
                "arena counts leaves/data/slots {}/{}/{}, walk counts {}/{}/{}",
                c.leaves,
                c.leaf_data_bytes,
                c.child_slots_used,
                tally.leaves,
                tally.data_bytes,
                tally.child_slots
            )));
        }
        for (class, ((_, pool), walked)) in
            c.inner_pools.iter().zip(&tally.inner_by_class).enumerate()
        {
            if pool.live_chunks != *walked {
                return Err(structure(format!(
                    "size class {class} pool has {} live chunks, walk found {walked} nodes",
                    pool.live_chunks
                )));
            }
        }
        arena.audit().map_err(structure)
    }

    /// Checks the subtree at `node`, reached by `path`; returns its
    /// recomputed hash. `parent_clean` is true when the parent's stored hash
    /// is not stale.
    fn check_node(
        &self,
        arena: &NodeArena,
        node: &NodePtr,
        path: &mut Vec<u8>,
        tally: &mut Tally,
        parent_clean: bool,
    ) -> Result<Hash256, CheckError> {
        let fail = |path: &[u8], reason: String| CheckError::Structure {
            path: path_string(path),
            reason,
        };
        // A hashless leaf has no stored hash: nothing to compare, and
        // never stale.
        let has_hash = !node.is_leaf() || self.leaf_hashes.stored();
        if !has_hash {
            return self.check_leaf(node, path, tally);
        }
        let stored = *node.hash();
        if parent_clean && stored.is_zero() {
            return Err(fail(
                path,
                "stale node under a node whose hash is current".into(),
            ));
        }
        // A node in the arena's sharing table is also part of another
        // version, which may be read from another thread while this map
        // rehashes: it must be current. Nodes below it need no test of their
        // own: the rule above makes everything below a current node current.
        let empty_root = path.is_empty() && node.inner().is_some_and(|i| i.mask().count() == 0);
        if stored.is_zero() && !empty_root && arena.is_shared(node) {
            return Err(fail(path, "stale node shared with another version".into()));
        }
        let computed = if node.is_leaf() {
            self.check_leaf(node, path, tally)?
        } else {
            let inner = node.inner().expect("not a leaf");
            let mask = inner.mask();
            let n = mask.count();
            if path.len() >= 64 {
                return Err(fail(path, "inner node at depth 64".into()));
            }
            if !path.is_empty() && n == 0 {
                return Err(fail(path, "non-root inner node with no children".into()));
            }
            if !path.is_empty() && n == 1 && inner.children()[0].is_leaf() {
                return Err(fail(
                    path,
                    "non-root inner node with a single leaf below it".into(),
                ));
            }
            let classes = arena.classes();
            if inner.class() >= classes.len() || inner.class() != classes.class_for(n) {
                return Err(fail(
                    path,
                    format!(
                        "{n} children in size class {} (expected {})",
                        inner.class(),
                        classes.class_for(n)
                    ),
                ));
            }
            tally.inner_by_class[inner.class()] += 1;
            tally.child_slots += n;
            let mut buf = node_hash::EMPTY_INNER_MESSAGE;
            for (child, b) in inner.children().iter().zip(mask.branches()) {
                path.push(b.get());
                let h = self.check_node(arena, child, path, tally, !stored.is_zero())?;
                path.pop();
                node_hash::set_child(&mut buf, b, &h.0);
            }
            if n == 0 {
                Hash256::ZERO
            } else {
                node_hash::hash_inner_message(self.hash_fn, &buf)
            }
        };
        if !stored.is_zero() && stored != computed {
            return Err(CheckError::HashMismatch {
                path: path_string(path),
                stored,
                computed,
            });
        }
        Ok(computed)
    }
}

impl ShaMap {
    /// Checks a leaf's place (not the root, key on its path), counts it,
    /// and returns its computed hash.
    fn check_leaf(
        &self,
        node: &NodePtr,
        path: &[u8],
        tally: &mut Tally,
    ) -> Result<Hash256, CheckError> {
        let fail = |reason: String| CheckError::Structure {
            path: path_string(path),
            reason,
        };
        let leaf = node.leaf().expect("a leaf");
        if path.is_empty() {
            return Err(fail("the root is a leaf".into()));
        }
        if !key_has_prefix(leaf.key(), path) {
            return Err(fail(format!("leaf key {} is off its path", leaf.key())));
        }
        tally.leaves += 1;
        tally.data_bytes += leaf.data().len();
        Ok(node_hash::hash_leaf(
            self.hash_fn,
            self.kind,
            leaf.key(),
            leaf.data(),
        ))
    }
}

fn key_has_prefix(key: &Key, path: &[u8]) -> bool {
    path.iter()
        .enumerate()
        .all(|(d, &b)| key.nibble(d).get() == b)
}

fn path_string(path: &[u8]) -> String {
    if path.is_empty() {
        return "root".into();
    }
    path.iter()
        .map(|&b| char::from_digit(u32::from(b), 16).unwrap_or('?'))
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::error::CheckError;
    use crate::hash::{Hash256, Key};
    use crate::kind::MapKind;
    use crate::tree::ShaMap;

    /// A map of 200 items whose keys fill every branch of the root.
    fn filled() -> ShaMap {
        let mut m = ShaMap::new(MapKind::AccountState);
        for i in 0..200u32 {
            let mut k = [0u8; 32];
            k[0] = (i * 37) as u8;
            k[4..8].copy_from_slice(&i.to_be_bytes());
            m.insert(Key(k), &i.to_le_bytes()).expect("new key");
        }
        m
    }

    fn shared_stale_at(r: Result<(), CheckError>, at: &str) {
        match r {
            Err(CheckError::Structure { path, reason }) => {
                assert_eq!(path, at);
                assert!(reason.contains("shared"), "{reason}");
            }
            other => panic!("expected a shared stale node at {at}, got {other:?}"),
        }
    }

    #[test]
    fn a_stale_mark_on_the_root_a_snapshot_shares_fails_the_audit() {
        let mut m = filled();
        let snap = m.snapshot();
        m.check().expect("consistent after a snapshot");
        // A stale root above current children is what every write leaves,
        // so only the sharing audit can see that this root is the snapshot's
        // too.
        let h = *m.root.hash();
        m.root.clear_hash();
        shared_stale_at(m.check(), "root");
        m.root.set_hash(h);
        m.check().expect("consistent again");
        assert_eq!(snap.root_hash(), h);
    }

    #[test]
    fn a_stale_mark_on_a_shared_node_below_a_copied_path_fails_the_audit() {
        let mut m = filled();
        let _snap = m.snapshot();
        // The write copies the path to its key; the root's other children
        // stay shared with the snapshot, below a stale root.
        let written = Key([0; 32]);
        m.upsert(written, b"changed").expect("write");
        m.check().expect("consistent after the write");
        let b = m
            .root
            .inner()
            .expect("inner root")
            .mask()
            .branches()
            .find(|&b| b != written.nibble(0))
            .expect("another branch");
        let child = m
            .root
            .inner_mut()
            .expect("inner root")
            .into_child(b)
            .expect("occupied");
        let h: Hash256 = *child.hash();
        child.clear_hash();
        let at = char::from_digit(u32::from(b.get()), 16).expect("a nibble");
        shared_stale_at(m.check(), &at.to_string());
        m.root
            .inner_mut()
            .expect("inner root")
            .into_child(b)
            .expect("occupied")
            .set_hash(h);
        m.check().expect("consistent again");
    }

    #[test]
    fn the_shared_root_of_an_empty_map_passes_the_audit() {
        let mut m = ShaMap::new(MapKind::TransactionWithMeta);
        let snap = m.snapshot();
        m.check().expect("an empty root is zero, not stale");
        snap.to_map().check().expect("and so is its copy's");
    }
}
