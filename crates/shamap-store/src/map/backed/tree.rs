//! The backed map's working tree in memory: slots (empty, clean by hash,
//! dirty in memory), and the walks over it: lookups, the in-order scan,
//! and the mutations (insert or update with splits, removal with rippled's
//! collapse), loading clean nodes through the [`Loader`].

use std::ops::ControlFlow;

use shamap::{Hash256, Key, Nibble};

use crate::error::StoreError;
use crate::node_id::NodeId;

use super::cache::{CleanNode, Keep, Loader};

/// A slot of the working tree.
pub(super) enum Child {
    Empty,
    /// A node in the store, by hash.
    Clean(Hash256),
    /// A node in memory.
    Dirty(Dirty),
}

/// A node in memory (boxed by kind: a dirty leaf does not pay for an
/// inner node's sixteen slots).
pub(super) enum Dirty {
    Inner(Box<Inner>),
    Leaf(Box<Leaf>),
}

pub(super) struct Inner {
    pub(super) children: [Child; 16],
    /// Known hash (None once something below changed).
    pub(super) hash: Option<Hash256>,
    /// True when the node (hence its whole subtree) is in the store.
    pub(super) stored: bool,
}

pub(super) struct Leaf {
    pub(super) key: Key,
    pub(super) data: Vec<u8>,
    pub(super) hash: Option<Hash256>,
    pub(super) stored: bool,
}

/// Bytes charged for a dirty inner node.
pub(super) const DIRTY_INNER_BYTES: usize = std::mem::size_of::<Inner>() + 16;

fn dirty_leaf_bytes(data_len: usize) -> usize {
    std::mem::size_of::<Leaf>() + 16 + data_len
}

impl Inner {
    pub(super) fn empty() -> Inner {
        Inner {
            children: std::array::from_fn(|_| Child::Empty),
            hash: None,
            stored: false,
        }
    }

    pub(super) fn count(&self) -> usize {
        self.children
            .iter()
            .filter(|c| !matches!(c, Child::Empty))
            .count()
    }

    /// Marks the node changed (at `id`): its hash unknown, not in the
    /// store; the stored node it was is noted in `replaced`.
    fn touch(&mut self, id: NodeId, replaced: &mut Replaced) {
        if self.stored {
            if let Some(hash) = self.hash {
                replaced.note(ReplacedNode::Inner { hash, id });
            }
        }
        self.hash = None;
        self.stored = false;
    }
}

/// A stored node that a change replaced or removed: it may be garbage
/// once the change is written (see [`Replaced`]). Where it stood, so that
/// the check for a node that came back looks in one place: an inner
/// node's hash fixes its position (its hash fixes its leaves and their
/// arrangement by nibble, hence its depth and prefix); a leaf's fixes its
/// key, and it stands somewhere on the key's path.
#[derive(Clone, Copy, Debug)]
pub(super) enum ReplacedNode {
    Inner { hash: Hash256, id: NodeId },
    Leaf { hash: Hash256, key: Key },
}

impl ReplacedNode {
    pub(super) fn hash(&self) -> Hash256 {
        match self {
            ReplacedNode::Inner { hash, .. } | ReplacedNode::Leaf { hash, .. } => *hash,
        }
    }
}

/// The stored nodes replaced since the last write-out, when the map
/// prunes ([`super::BackedOptions::prune_replaced`]). Bounded: past
/// `limit` entries the list is given up for the round (`overflowed`) and
/// those nodes stay in the store, unreferenced, for `gc`.
#[derive(Debug, Default)]
pub(super) struct Replaced {
    pub(super) on: bool,
    pub(super) nodes: Vec<ReplacedNode>,
    pub(super) limit: usize,
    pub(super) overflowed: bool,
}

/// Bytes one [`ReplacedNode`] takes in the list.
pub(super) const REPLACED_NODE_BYTES: usize = std::mem::size_of::<ReplacedNode>();

impl Replaced {
    fn note(&mut self, node: ReplacedNode) {
        if !self.on || self.overflowed {
            return;
        }
        if self.nodes.len() >= self.limit {
            self.overflowed = true;
            self.nodes = Vec::new();
            return;
        }
        self.nodes.push(node);
    }

    fn note_leaf(&mut self, leaf: &Leaf) {
        if leaf.stored {
            if let Some(hash) = leaf.hash {
                self.note(ReplacedNode::Leaf {
                    hash,
                    key: leaf.key,
                });
            }
        }
    }

    /// Bytes the list holds.
    pub(super) fn heap_bytes(&self) -> usize {
        self.nodes.capacity() * REPLACED_NODE_BYTES
    }
}

pub(super) fn branch(key: &Key, depth: usize) -> usize {
    usize::from(key.nibble(depth).get())
}

/// What a removal below an inner node did.
pub(super) enum Removed {
    No,
    /// Removed; `single_leaf` when the inner node now holds exactly one
    /// child and it is a leaf (its parent must take the leaf's place).
    Yes {
        single_leaf: bool,
    },
}

/// The data under `key` in the tree under `root` (nodes loaded on the way
/// kept in the cache as `keep` says).
pub(super) fn lookup(
    loader: &Loader<'_>,
    root: &Child,
    key: &Key,
    keep: Keep,
) -> Result<Option<Vec<u8>>, StoreError> {
    let mut depth = 0;
    let mut at = root;
    let mut hash = loop {
        match at {
            Child::Empty => return Ok(None),
            Child::Clean(h) => break *h,
            Child::Dirty(d) => match d {
                Dirty::Leaf(l) => return Ok((l.key == *key).then(|| l.data.clone())),
                Dirty::Inner(i) => {
                    at = &i.children[branch(key, depth)];
                    depth += 1;
                }
            },
        }
    };
    loop {
        let node = loader.fetch(&hash, &NodeId::on_path(key, depth), keep)?;
        match node {
            CleanNode::Leaf { key: k, data } => {
                return Ok((k == *key).then_some(data));
            }
            CleanNode::Inner { .. } => match node.child(key.nibble(depth)) {
                None => return Ok(None),
                Some(h) => {
                    hash = h;
                    depth += 1;
                }
            },
        }
    }
}

/// Calls `f` with every item below `child` (at `id`) in key order until
/// it breaks; clean nodes are read without filling the cache.
pub(super) fn visit(
    loader: &Loader<'_>,
    child: &Child,
    id: NodeId,
    f: &mut dyn FnMut(&Key, &[u8]) -> ControlFlow<()>,
) -> Result<ControlFlow<()>, StoreError> {
    match child {
        Child::Empty => Ok(ControlFlow::Continue(())),
        Child::Dirty(d) => match d {
            Dirty::Leaf(l) => Ok(f(&l.key, &l.data)),
            Dirty::Inner(i) => {
                for (b, c) in Nibble::all().zip(&i.children) {
                    if visit(loader, c, id.child(b), f)?.is_break() {
                        return Ok(ControlFlow::Break(()));
                    }
                }
                Ok(ControlFlow::Continue(()))
            }
        },
        Child::Clean(h) => {
            let node = loader.fetch(h, &id, Keep::Nothing)?;
            match &node {
                CleanNode::Leaf { key, data } => Ok(f(key, data)),
                CleanNode::Inner { .. } => {
                    for b in Nibble::all() {
                        if let Some(ch) = node.child(b) {
                            if visit(loader, &Child::Clean(ch), id.child(b), f)?.is_break() {
                                return Ok(ControlFlow::Break(()));
                            }
                        }
                    }
                    Ok(ControlFlow::Continue(()))
                }
            }
        }
    }
}

/// The nearest item beyond `bound` in one direction: the first key
/// greater than `bound` (`up`) or the last key less than it (`!up`), as a
/// walk that descends only into the subtrees that can hold such keys and
/// stops at the first leaf past the bound. `edge` is true while `id`'s
/// path is a prefix of `bound` (the walk starts there, at the root). Clean
/// nodes are read through the cache with `keep`.
pub(super) fn neighbour(
    loader: &Loader<'_>,
    child: &Child,
    id: NodeId,
    bound: &Key,
    up: bool,
    edge: bool,
    keep: Keep,
) -> Result<Option<(Key, Vec<u8>)>, StoreError> {
    let beyond = |key: &Key| if up { key > bound } else { key < bound };
    // The branches to try at this inner node, nearest to the bound first
    // (on the bound's path, only those on its side).
    let depth = usize::from(id.depth());
    let order = || -> Vec<Nibble> {
        let on_side = |b: &Nibble| {
            !edge || (up && *b >= bound.nibble(depth)) || (!up && *b <= bound.nibble(depth))
        };
        let range = Nibble::all().filter(on_side);
        if up {
            range.collect()
        } else {
            range.rev().collect()
        }
    };
    // The walk on into branch `b`, whose child is `c`.
    let into = |b: Nibble, c: &Child| {
        let on_edge = edge && b == bound.nibble(depth);
        neighbour(loader, c, id.child(b), bound, up, on_edge, keep)
    };
    match child {
        Child::Empty => Ok(None),
        Child::Dirty(Dirty::Leaf(l)) => Ok(beyond(&l.key).then(|| (l.key, l.data.clone()))),
        Child::Dirty(Dirty::Inner(i)) => {
            for b in order() {
                if let Some(found) = into(b, &i.children[usize::from(b.get())])? {
                    return Ok(Some(found));
                }
            }
            Ok(None)
        }
        Child::Clean(h) => {
            let node = loader.fetch(h, &id, keep)?;
            match node {
                CleanNode::Leaf { key, data } => Ok(beyond(&key).then_some((key, data))),
                CleanNode::Inner { .. } => {
                    for b in order() {
                        let Some(ch) = node.child(b) else { continue };
                        if let Some(found) = into(b, &Child::Clean(ch))? {
                            return Ok(Some(found));
                        }
                    }
                    Ok(None)
                }
            }
        }
    }
}

/// Turns a clean slot into a dirty node (loaded, verified, keeping its hash
/// and `stored` mark); returns the bytes charged. Leaves other slots alone.
pub(super) fn materialize(
    loader: &Loader<'_>,
    slot: &mut Child,
    id: &NodeId,
    cap: usize,
) -> Result<usize, StoreError> {
    let Child::Clean(h) = slot else {
        return Ok(0);
    };
    let h = *h;
    let node = loader.fetch(&h, id, Keep::All { capacity: cap })?;
    Ok(materialize_loaded(slot, h, node))
}

/// [`materialize`] with the slot's node (hash `h`) already loaded.
fn materialize_loaded(slot: &mut Child, h: Hash256, node: CleanNode) -> usize {
    let (dirty, bytes) = match node {
        CleanNode::Inner { .. } => {
            let mut inner = Inner::empty();
            for (b, c) in Nibble::all().zip(inner.children.iter_mut()) {
                if let Some(ch) = node.child(b) {
                    *c = Child::Clean(ch);
                }
            }
            inner.hash = Some(h);
            inner.stored = true;
            (Dirty::Inner(Box::new(inner)), DIRTY_INNER_BYTES)
        }
        CleanNode::Leaf { key, data } => {
            let bytes = dirty_leaf_bytes(data.len());
            (
                Dirty::Leaf(Box::new(Leaf {
                    key,
                    data,
                    hash: Some(h),
                    stored: true,
                })),
                bytes,
            )
        }
    };
    *slot = Child::Dirty(dirty);
    bytes
}

fn new_leaf(key: Key, data: &[u8], charged: &mut usize) -> Child {
    *charged += dirty_leaf_bytes(data.len());
    Child::Dirty(Dirty::Leaf(Box::new(Leaf {
        key,
        data: data.to_vec(),
        hash: None,
        stored: false,
    })))
}

/// An inner node at `depth` (and more below while the keys agree) holding
/// the leaves `a` (key `a_key`) and `b` (key `b_key`).
fn split(depth: usize, a: Child, a_key: &Key, b: Child, b_key: &Key, charged: &mut usize) -> Child {
    let mut inner = Inner::empty();
    *charged += DIRTY_INNER_BYTES;
    let (na, nb) = (branch(a_key, depth), branch(b_key, depth));
    if na == nb {
        inner.children[na] = split(depth + 1, a, a_key, b, b_key, charged);
    } else {
        inner.children[na] = a;
        inner.children[nb] = b;
    }
    Child::Dirty(Dirty::Inner(Box::new(inner)))
}

/// What a mutation works with besides the tree: the cache capacity for
/// the nodes it loads, the bytes it adds to the dirty nodes (`charged`),
/// and the list of the stored nodes it replaces.
pub(super) struct Effects<'r> {
    pub(super) cap: usize,
    pub(super) charged: usize,
    pub(super) replaced: &'r mut Replaced,
}

/// Writes `key` below `inner` (at `depth`); true when the key was new.
pub(super) fn write_in(
    loader: &Loader<'_>,
    inner: &mut Inner,
    depth: usize,
    key: &Key,
    data: &[u8],
    fx: &mut Effects<'_>,
) -> Result<bool, StoreError> {
    let cap = fx.cap;
    let b = branch(key, depth);
    let slot = &mut inner.children[b];
    // A clean leaf that is not ours moves down unchanged (its hash does not
    // depend on its depth); anything else clean is loaded.
    if let Child::Clean(h) = slot {
        let h = *h;
        let id = NodeId::on_path(key, depth + 1);
        let node = loader.fetch(&h, &id, Keep::All { capacity: cap })?;
        if let CleanNode::Leaf { key: other, .. } = &node {
            if other != key {
                let existing = std::mem::replace(slot, Child::Empty);
                *slot = split(
                    depth + 1,
                    existing,
                    other,
                    new_leaf(*key, data, &mut fx.charged),
                    key,
                    &mut fx.charged,
                );
                inner.touch(NodeId::on_path(key, depth), fx.replaced);
                return Ok(true);
            }
        }
        fx.charged += materialize_loaded(slot, h, node);
    }
    let added = match slot {
        Child::Empty => {
            *slot = new_leaf(*key, data, &mut fx.charged);
            true
        }
        Child::Clean(_) => unreachable!("materialized above"),
        Child::Dirty(d) => match d {
            Dirty::Leaf(l) if l.key == *key => {
                fx.replaced.note_leaf(l);
                fx.charged += data.len().saturating_sub(l.data.len());
                l.data.clear();
                l.data.extend_from_slice(data);
                l.hash = None;
                l.stored = false;
                false
            }
            Dirty::Leaf(l) => {
                let other = l.key;
                let existing = std::mem::replace(slot, Child::Empty);
                *slot = split(
                    depth + 1,
                    existing,
                    &other,
                    new_leaf(*key, data, &mut fx.charged),
                    key,
                    &mut fx.charged,
                );
                true
            }
            Dirty::Inner(child) => write_in(loader, child, depth + 1, key, data, fx)?,
        },
    };
    inner.touch(NodeId::on_path(key, depth), fx.replaced);
    Ok(added)
}

/// True when the node in `slot` (at `id`) is a leaf.
fn is_leaf(loader: &Loader<'_>, slot: &Child, id: &NodeId, cap: usize) -> Result<bool, StoreError> {
    Ok(match slot {
        Child::Empty => false,
        Child::Clean(h) => matches!(
            loader.fetch(h, id, Keep::All { capacity: cap })?,
            CleanNode::Leaf { .. }
        ),
        Child::Dirty(d) => matches!(d, Dirty::Leaf(_)),
    })
}

/// Removes `key` (known present) below `inner` at `depth`. Everything that
/// can fail (loads) happens before the tree changes.
pub(super) fn remove_in(
    loader: &Loader<'_>,
    inner: &mut Inner,
    depth: usize,
    key: &Key,
    fx: &mut Effects<'_>,
) -> Result<Removed, StoreError> {
    let cap = fx.cap;
    let b = branch(key, depth);
    let id = NodeId::on_path(key, depth + 1);
    fx.charged += materialize(loader, &mut inner.children[b], &id, cap)?;
    let target = match &mut inner.children[b] {
        Child::Empty => return Ok(Removed::No),
        Child::Clean(_) => unreachable!("materialized above"),
        Child::Dirty(d) => match d {
            Dirty::Leaf(l) => {
                if l.key != *key {
                    return Ok(Removed::No);
                }
                true
            }
            Dirty::Inner(_) => false,
        },
    };
    if target {
        let count = inner.count();
        let single_leaf = if count == 2 {
            let o = Nibble::all()
                .find(|o| {
                    let o = usize::from(o.get());
                    o != b && !matches!(inner.children[o], Child::Empty)
                })
                .expect("two children");
            let other = NodeId::on_path(key, depth).child(o);
            is_leaf(loader, &inner.children[usize::from(o.get())], &other, cap)?
        } else {
            false
        };
        if let Child::Dirty(Dirty::Leaf(l)) = &inner.children[b] {
            fx.replaced.note_leaf(l);
        }
        inner.children[b] = Child::Empty;
        inner.touch(NodeId::on_path(key, depth), fx.replaced);
        return Ok(Removed::Yes { single_leaf });
    }
    let Child::Dirty(d) = &mut inner.children[b] else {
        unreachable!("checked above")
    };
    let Dirty::Inner(child) = d else {
        unreachable!("checked above")
    };
    match remove_in(loader, child, depth + 1, key, fx)? {
        Removed::No => Ok(Removed::No),
        Removed::Yes { single_leaf } => {
            if single_leaf {
                let only = child
                    .children
                    .iter_mut()
                    .find(|c| !matches!(c, Child::Empty))
                    .map(|c| std::mem::replace(c, Child::Empty))
                    .expect("one child");
                inner.children[b] = only;
            }
            inner.touch(NodeId::on_path(key, depth), fx.replaced);
            Ok(Removed::Yes {
                single_leaf: single_leaf && inner.count() == 1,
            })
        }
    }
}

/// True when `node`, replaced since the last write-out, stands in the
/// tree under `root` again (a change undone, or a leaf's data set back).
/// Every dirty node must be hashed. Walks the one path where it can stand,
/// reading clean nodes on the way without filling the cache.
pub(super) fn holds(
    loader: &Loader<'_>,
    root: &Child,
    node: &ReplacedNode,
) -> Result<bool, StoreError> {
    let (want, key, last_depth) = match node {
        ReplacedNode::Inner { hash, id } => (*hash, *id.key(), usize::from(id.depth())),
        ReplacedNode::Leaf { hash, key } => (*hash, *key, 64),
    };
    let mut depth = 0;
    let mut at = root;
    let mut hash = loop {
        match at {
            Child::Empty => return Ok(false),
            Child::Clean(h) => break *h,
            Child::Dirty(Dirty::Leaf(l)) => return Ok(l.hash == Some(want)),
            Child::Dirty(Dirty::Inner(i)) => {
                if i.hash == Some(want) {
                    return Ok(true);
                }
                if depth >= last_depth {
                    return Ok(false);
                }
                at = &i.children[branch(&key, depth)];
                depth += 1;
            }
        }
    };
    loop {
        if hash == want {
            return Ok(true);
        }
        if depth >= last_depth {
            return Ok(false);
        }
        let found = loader.fetch(&hash, &NodeId::on_path(&key, depth), Keep::Nothing)?;
        match &found {
            CleanNode::Leaf { .. } => return Ok(false),
            CleanNode::Inner { .. } => match found.child(key.nibble(depth)) {
                None => return Ok(false),
                Some(h) => {
                    hash = h;
                    depth += 1;
                }
            },
        }
    }
}
