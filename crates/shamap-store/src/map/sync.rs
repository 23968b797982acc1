//! State sync: fill a store with a map, node by node, from untrusted wire
//! blobs, as rippled's `getMissingNodes` / `addRootNode` / `addKnownNode`.
//!
//! Every node is checked against the hash its parent (already stored, so
//! already verified) names at that node ID before it is stored; the root is
//! checked against the root hash the caller trusts. Invalid and duplicate
//! blobs are reported and never stored. A stored copy that does not verify
//! (its value does not hash to its key, or its sparse inner record does not
//! decode: damage the log's checksums let through) counts as missing: it
//! is asked for again, and the verified blob offered replaces it (counted
//! in [`SyncSession::repaired`]). Stored nodes are read through the
//! store's one verified fetch (`crate::map::fetch`), and received blobs get the
//! same checks of type and place.

use hashbrown::{HashMap, HashSet};
use shamap::{Hash256, MapKind, Nibble};

use crate::error::StoreError;
use crate::map::fetch::{fetch_node, Fetched};
use crate::map::reader::{root_kind, RootKind};
use crate::node::NodeObject;
use crate::node_id::NodeId;
use crate::node_id::{check_node, MapNode};
use crate::store::{Batch, NodeStore, NodeStoreExt};

/// What became of a blob offered to the store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AddOutcome {
    /// Verified and stored.
    Useful,
    /// The store already had this node; nothing written.
    Duplicate,
    /// Rejected, and why; nothing written.
    Invalid(String),
}

/// One map being synced into a store. Remembers which subtrees are
/// complete (so repeated [`SyncSession::missing_nodes`] calls do not walk
/// them again) and which hashes it asked for at which node IDs.
pub struct SyncSession<'s> {
    store: &'s dyn NodeStore,
    root: Hash256,
    kind: MapKind,
    /// Roots of subtrees known to be complete in the store.
    full_below: HashSet<Hash256>,
    /// Hashes expected at node IDs, from parents already stored.
    expected: HashMap<NodeId, Hash256>,
    /// Children of stored inner nodes whose subtrees are not complete yet,
    /// so that each round does not reload and rehash them.
    incomplete: HashMap<Hash256, Box<[Hash256; 16]>>,
    /// Damaged stored copies replaced by verified blobs.
    repaired: u64,
}

/// What the store holds under a hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stored {
    /// Nothing.
    Absent,
    /// A value that verifies against the hash.
    Whole,
    /// A value that does not (see the module docs): to be replaced.
    Damaged,
}

/// What `store` holds under `hash`.
fn stored(store: &dyn NodeStore, hash: &Hash256) -> Result<Stored, StoreError> {
    match store.get(hash) {
        Ok(Some(_)) => Ok(Stored::Whole),
        Ok(None) => Ok(Stored::Absent),
        Err(StoreError::Corrupt { .. }) => Ok(Stored::Damaged),
        Err(e) => Err(e),
    }
}

/// [`fetch_node`], with a stored copy that does not verify against its
/// hash read as absent (see the module docs); one that verifies and fails
/// the other checks is still an error.
fn fetch_or_missing(
    store: &dyn NodeStore,
    hash: &Hash256,
    kind: MapKind,
    id: &NodeId,
) -> Result<Option<Fetched>, StoreError> {
    match store.get(hash) {
        Err(StoreError::Corrupt { .. }) => Ok(None),
        Err(e) => Err(e.at(*hash, &id.nibbles())),
        Ok(None) => Ok(None),
        Ok(Some(obj)) => {
            let node = check_node(&obj, kind, id)?;
            Ok(Some(Fetched {
                node,
                value_len: obj.value().len(),
            }))
        }
    }
}

impl<'s> SyncSession<'s> {
    /// A session that fills `store` with the map of kind `kind` whose root
    /// (trusted, e.g. from a validated ledger header) is `root`.
    pub fn new(store: &'s dyn NodeStore, root: Hash256, kind: MapKind) -> SyncSession<'s> {
        SyncSession {
            store,
            root,
            kind,
            full_below: HashSet::new(),
            expected: HashMap::new(),
            incomplete: HashMap::new(),
            repaired: 0,
        }
    }

    /// How many damaged stored copies this session replaced with verified
    /// blobs.
    pub fn repaired(&self) -> u64 {
        self.repaired
    }

    /// The root being synced.
    pub fn root(&self) -> Hash256 {
        self.root
    }

    /// Up to `max` nodes the store lacks, as (node ID, hash) pairs, in
    /// depth-first branch order. Empty when the map is complete. Nodes
    /// already stored are loaded and verified on the way.
    pub fn missing_nodes(&mut self, max: usize) -> Result<Vec<(NodeId, Hash256)>, StoreError> {
        let mut out = Vec::new();
        if self.root.is_zero() || max == 0 {
            return Ok(out);
        }
        self.visit(self.root, NodeId::ROOT, max, &mut out)?;
        for (id, h) in &out {
            self.expected.insert(*id, *h);
        }
        Ok(out)
    }

    /// True when every node of the map is in the store.
    pub fn is_complete(&mut self) -> Result<bool, StoreError> {
        Ok(self.missing_nodes(1)?.is_empty())
    }

    /// Walks the subtree under `hash` at `id`; returns whether it is
    /// complete. Stops adding once `out` holds `max`.
    fn visit(
        &mut self,
        hash: Hash256,
        id: NodeId,
        max: usize,
        out: &mut Vec<(NodeId, Hash256)>,
    ) -> Result<bool, StoreError> {
        if self.full_below.contains(&hash) {
            return Ok(true);
        }
        let children = match self.incomplete.remove(&hash) {
            Some(c) => c,
            None => match fetch_or_missing(self.store, &hash, self.kind, &id)? {
                None => {
                    out.push((id, hash));
                    return Ok(false);
                }
                Some(fetched) => match fetched.node {
                    MapNode::Inner(c) => c,
                    MapNode::Leaf { .. } => {
                        self.full_below.insert(hash);
                        return Ok(true);
                    }
                },
            },
        };
        let mut complete = true;
        for b in Nibble::all() {
            let c = children[usize::from(b.get())];
            if c.is_zero() {
                continue;
            }
            if out.len() >= max {
                complete = false;
                break;
            }
            if !self.visit(c, id.child(b), max, out)? {
                complete = false;
            }
        }
        if complete {
            self.full_below.insert(hash);
        } else {
            self.incomplete.insert(hash, children);
        }
        Ok(complete)
    }

    /// Offers the root node's wire blob: stored if it decodes to an inner
    /// node hashing to the session's root.
    pub fn add_root_node(&mut self, blob: &[u8]) -> Result<AddOutcome, StoreError> {
        let was = stored(self.store, &self.root)?;
        if was == Stored::Whole {
            return Ok(AddOutcome::Duplicate);
        }
        let (obj, node) = match self.check_blob(blob, self.root, NodeId::ROOT) {
            Ok(n) => n,
            Err(reason) => return Ok(AddOutcome::Invalid(reason)),
        };
        let mut b = Batch::new();
        b.put_node(obj);
        self.store.write(b)?;
        self.remember(self.root, node);
        self.repaired += u64::from(was == Stored::Damaged);
        Ok(AddOutcome::Useful)
    }

    /// Notes what a node just verified and stored means for the walk: a
    /// leaf is a complete subtree; an inner node's children are known.
    fn remember(&mut self, hash: Hash256, node: MapNode) {
        match node {
            MapNode::Leaf { .. } => {
                self.full_below.insert(hash);
            }
            MapNode::Inner(c) => {
                self.incomplete.insert(hash, c);
            }
        }
    }

    /// Offers the wire blob of the node at `id`: stored if it hashes to
    /// what its stored parent names at `id`.
    pub fn add_known_node(&mut self, id: &NodeId, blob: &[u8]) -> Result<AddOutcome, StoreError> {
        let mut out = self.add_known_nodes(&[(*id, blob)])?;
        Ok(out
            .pop()
            .unwrap_or(AddOutcome::Invalid("nothing offered".to_owned())))
    }

    /// Offers several (node ID, blob) pairs; the useful ones are stored in
    /// one batch. One outcome per pair, in order.
    pub fn add_known_nodes(
        &mut self,
        nodes: &[(NodeId, &[u8])],
    ) -> Result<Vec<AddOutcome>, StoreError> {
        let mut batch = Batch::new();
        let mut in_batch: HashSet<Hash256> = HashSet::new();
        let mut accepted = Vec::new();
        let mut repairs = 0;
        let mut outcomes = Vec::with_capacity(nodes.len());
        for (id, blob) in nodes {
            if id.depth() == 0 {
                outcomes.push(AddOutcome::Invalid(
                    "node ID names the root: use add_root_node".to_owned(),
                ));
                continue;
            }
            let expected = match self.expected.get(id) {
                Some(h) => *h,
                None => match self.expected_from_parent(id)? {
                    Ok(h) => h,
                    Err(reason) => {
                        outcomes.push(AddOutcome::Invalid(reason));
                        continue;
                    }
                },
            };
            if in_batch.contains(&expected) {
                outcomes.push(AddOutcome::Duplicate);
                continue;
            }
            let was = stored(self.store, &expected)?;
            if was == Stored::Whole {
                outcomes.push(AddOutcome::Duplicate);
                continue;
            }
            match self.check_blob(blob, expected, *id) {
                Ok((obj, node)) => {
                    repairs += u64::from(was == Stored::Damaged);
                    in_batch.insert(expected);
                    accepted.push((expected, node));
                    batch.put_node(obj);
                    self.expected.remove(id);
                    outcomes.push(AddOutcome::Useful);
                }
                Err(reason) => outcomes.push(AddOutcome::Invalid(reason)),
            }
        }
        self.store.write(batch)?;
        self.repaired += repairs;
        for (hash, node) in accepted {
            self.remember(hash, node);
        }
        Ok(outcomes)
    }

    /// The hash the stored parent of `id` names for it, walking from the
    /// root; `Err(reason)` when the path is not in the store or has no
    /// node there.
    fn expected_from_parent(&self, id: &NodeId) -> Result<Result<Hash256, String>, StoreError> {
        let mut hash = self.root;
        for d in 0..usize::from(id.depth()) {
            let at = NodeId::on_path(id.key(), d);
            let Some(fetched) = fetch_node(self.store, &hash, self.kind, &at)? else {
                return Ok(Err(format!(
                    "the node at depth {d} on its path is not in the store yet"
                )));
            };
            let MapNode::Inner(children) = fetched.node else {
                return Ok(Err(format!("the path ends in a leaf at depth {d}")));
            };
            hash = children[usize::from(id.key().nibble(d).get())];
            if hash.is_zero() {
                return Ok(Err(format!(
                    "its parent has no child on that branch (depth {d})"
                )));
            }
        }
        Ok(Ok(hash))
    }

    /// Decodes `blob` and checks it is the node `expected` at `id`: its
    /// hash, then its type and place as the store's fetch checks a stored
    /// node (`crate::node_id::check_node`). On success, the node to store and
    /// what it holds.
    fn check_blob(
        &self,
        blob: &[u8],
        expected: Hash256,
        id: NodeId,
    ) -> Result<(NodeObject, MapNode), String> {
        let obj = NodeObject::from_wire(self.kind, blob).map_err(|e| e.to_string())?;
        if obj.hash() != expected {
            return Err(format!(
                "blob hashes to {}, its parent expects {expected}",
                obj.hash()
            ));
        }
        let node = check_node(&obj, self.kind, &id).map_err(|e| e.to_string())?;
        Ok((obj, node))
    }
}

/// Up to `max` nodes of the map rooted at `root` that `store` lacks (a
/// one-shot [`SyncSession::missing_nodes`]). The stored nodes are checked
/// as nodes of the map's kind, read from the store ([`root_kind`]); while
/// no stored leaf on the first path tells it, the kinds are tried in turn
/// (transaction maps first) and the first that reads is used, or the
/// first one's error returned. A [`SyncSession`] takes the kind instead.
pub fn missing_nodes(
    store: &dyn NodeStore,
    root: Hash256,
    max: usize,
) -> Result<Vec<(NodeId, Hash256)>, StoreError> {
    let (first, others): (MapKind, &[MapKind]) = match root_kind(store, &root) {
        Ok(RootKind::Map(kind)) => (kind, &[]),
        Ok(RootKind::Ledger(_)) | Err(_) => (
            MapKind::TransactionWithMeta,
            &[MapKind::TransactionNoMeta, MapKind::AccountState],
        ),
    };
    let mut result = SyncSession::new(store, root, first).missing_nodes(max);
    for &kind in others {
        if result.is_ok() {
            break;
        }
        if let Ok(missing) = SyncSession::new(store, root, kind).missing_nodes(max) {
            result = Ok(missing);
        }
    }
    result
}

/// A one-shot [`SyncSession::add_root_node`].
pub fn add_root_node(
    store: &dyn NodeStore,
    kind: MapKind,
    root: Hash256,
    blob: &[u8],
) -> Result<AddOutcome, StoreError> {
    SyncSession::new(store, root, kind).add_root_node(blob)
}

/// A one-shot [`SyncSession::add_known_node`]: the parent is found by
/// walking from `root` in the store.
pub fn add_known_node(
    store: &dyn NodeStore,
    kind: MapKind,
    root: Hash256,
    id: &NodeId,
    blob: &[u8],
) -> Result<AddOutcome, StoreError> {
    SyncSession::new(store, root, kind).add_known_node(id, blob)
}

/// The wire blob of the node stored under `hash` (verified), as a peer
/// serving sync requests sends it; `None` when absent.
pub fn wire_blob(store: &dyn NodeStore, hash: &Hash256) -> Result<Option<Vec<u8>>, StoreError> {
    match store.get(hash)? {
        None => Ok(None),
        Some(obj) => obj.to_wire(),
    }
}

/// Nodes requested per round by [`copy_root`].
pub const COPY_ROUND: usize = 4096;

/// What [`copy_root`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CopyReport {
    /// Nodes stored in the target.
    pub copied: u64,
    /// Of those, nodes the target held a damaged copy of (a value that
    /// does not verify against its hash), now replaced.
    pub repaired: u64,
    /// Rounds of missing-node requests.
    pub rounds: u64,
}

/// Copies the ledger or map under `root` from `from` into `to` through wire
/// blobs, each checked against its parent as a peer's would be, and records
/// `root` in `to` under `name` once every node is there (durably: see
/// [`crate::record_root`]). `root` must be a root `from` knows
/// ([`crate::meta::known_root`]), checked before anything is written; the
/// empty map is copied as itself. `progress` gets the nodes stored so far.
/// A failure leaves `to` with at most some unreferenced nodes of `root`
/// (which a later copy reuses and `gc` removes), never a recorded root
/// whose nodes are missing.
pub fn copy_root(
    from: &dyn NodeStore,
    to: &dyn NodeStore,
    root: Hash256,
    name: &str,
    progress: &mut dyn FnMut(u64),
) -> Result<CopyReport, StoreError> {
    crate::meta::check_name(to, name)?;
    crate::meta::known_root(from, &root)?;
    let (maps, header) = if root.is_zero() {
        (Vec::new(), None)
    } else {
        match root_kind(from, &root)? {
            RootKind::Ledger(h) => (
                vec![
                    (h.account_hash, MapKind::AccountState),
                    (h.transaction_hash, MapKind::TransactionWithMeta),
                ],
                Some(from.load(&root)?),
            ),
            RootKind::Map(kind) => (vec![(root, kind)], None),
        }
    };
    let mut report = CopyReport::default();
    for (map_root, kind) in maps {
        if !map_root.is_zero() {
            copy_map(from, to, map_root, kind, &mut report, progress)?;
        }
    }
    let mut last = Batch::new();
    if let Some(h) = header {
        last.put_node(h);
    }
    crate::map::import::record_root(to, name, root, last)?;
    Ok(report)
}

/// Fills `to` with the map under `root`, round by round.
fn copy_map(
    from: &dyn NodeStore,
    to: &dyn NodeStore,
    root: Hash256,
    kind: MapKind,
    report: &mut CopyReport,
    progress: &mut dyn FnMut(u64),
) -> Result<(), StoreError> {
    let absent = |h: &Hash256| {
        StoreError::backend(
            from.location(),
            format!("node {h} is missing from the source"),
        )
    };
    let fetch = |h: &Hash256| -> Result<Vec<u8>, StoreError> {
        wire_blob(from, h)?.ok_or_else(|| absent(h))
    };
    let mut s = SyncSession::new(to, root, kind);
    let result = copy_rounds(&mut s, root, &fetch, report, progress, from);
    report.repaired += s.repaired;
    result
}

/// The rounds of [`copy_map`] through session `s`.
fn copy_rounds(
    s: &mut SyncSession<'_>,
    root: Hash256,
    fetch: &dyn Fn(&Hash256) -> Result<Vec<u8>, StoreError>,
    report: &mut CopyReport,
    progress: &mut dyn FnMut(u64),
    from: &dyn NodeStore,
) -> Result<(), StoreError> {
    let absent = |h: &Hash256| {
        StoreError::backend(
            from.location(),
            format!("node {h} is missing from the source"),
        )
    };
    let refused = |h: &Hash256, depth: u8, why: String| StoreError::Corrupt {
        hash: *h,
        reason: format!(
            "refused from the source {} at depth {depth}: {why}",
            from.location()
        ),
    };
    if stored(s.store, &root)? != Stored::Whole {
        match s.add_root_node(&fetch(&root)?)? {
            AddOutcome::Useful => report.copied += 1,
            AddOutcome::Duplicate => {}
            AddOutcome::Invalid(why) => return Err(refused(&root, 0, why)),
        }
    }
    loop {
        let missing = s.missing_nodes(COPY_ROUND)?;
        if missing.is_empty() {
            return Ok(());
        }
        report.rounds += 1;
        // The round's nodes read from the source at once (concurrently
        // where it can), each verified against its hash, then as wire blobs.
        let hashes: Vec<Hash256> = missing.iter().map(|(_, h)| *h).collect();
        let blobs = missing
            .iter()
            .zip(from.read_values(&hashes)?)
            .map(|((id, h), value)| {
                let blob = match value {
                    Some(v) => NodeObject::decode(*h, v)?.to_wire()?,
                    None => None,
                };
                Ok((*id, blob.ok_or_else(|| absent(h))?))
            })
            .collect::<Result<Vec<(NodeId, Vec<u8>)>, StoreError>>()?;
        let offered: Vec<(NodeId, &[u8])> =
            blobs.iter().map(|(id, b)| (*id, b.as_slice())).collect();
        for (o, (id, h)) in s.add_known_nodes(&offered)?.into_iter().zip(&missing) {
            match o {
                AddOutcome::Useful => report.copied += 1,
                AddOutcome::Duplicate => {}
                AddOutcome::Invalid(why) => return Err(refused(h, id.depth(), why)),
            }
        }
        progress(report.copied);
    }
}
