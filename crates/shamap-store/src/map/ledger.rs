//! Ledgers in a store: what a `--root` hash or a `--ledger` sequence names,
//! decided in one place for every command and every backend.
//!
//! A ledger is found by its header object (type 1, `LWR\0` ‖ header), whose
//! key is the ledger hash; the header names the ledger's two maps
//! (`account_hash`, `transaction_hash`). [`resolve_root`] turns a hash into
//! the map to read: a ledger hash into one of its maps (no metadata record
//! needed, so it works on stores that keep none, such as rippled's node
//! store), or a map root the store knows as one ([`crate::meta::known_root`])
//! into that map. [`ledgers`] lists the ledgers a store holds by sequence,
//! and [`ledger_by_seq`] finds one: from the backend's own list when it
//! keeps one ([`NodeStore::ledger_hashes`]: rippled's `ledger.db`), else
//! from the retained roots whose header objects are stored.

use shamap::xrpl::LedgerHeader;
use shamap::{Hash256, MapKind};

use crate::error::{facts, StoreError};
use crate::map::reader::{root_kind, RootKind, StoredMap};
use crate::meta::{self, KnownRoot};
use crate::node::Node;
use crate::store::{NodeStore, NodeStoreExt};

/// The map a root argument names, and the ledger it belongs to when the
/// argument was a ledger hash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedRoot {
    /// The map's root hash (zero: the empty map).
    pub root: Hash256,
    /// The map's kind.
    pub kind: MapKind,
    /// The ledger, when the hash given was a ledger hash: its hash and its
    /// header (checked against the hash: every stored value is).
    pub ledger: Option<(Hash256, LedgerHeader)>,
}

/// Where [`ledgers`] found its list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LedgerSource {
    /// The backend's own list ([`NodeStore::ledger_hashes`]: for rippled's
    /// node store, the `Ledgers` table of its `ledger.db`).
    Store,
    /// The retained roots whose header objects are stored.
    Retained,
}

/// The ledgers a store holds, by sequence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LedgerList {
    /// `(sequence, ledger hash)`, in ascending order of sequence (then
    /// hash), without repeats.
    pub ledgers: Vec<(u32, Hash256)>,
    /// Where the list came from.
    pub source: LedgerSource,
}

/// The header stored under `hash`, if the object there is a ledger header
/// (`None` when nothing is stored there or the object is a map node). The
/// value is verified against `hash` like every read.
pub fn header(store: &dyn NodeStore, hash: &Hash256) -> Result<Option<LedgerHeader>, StoreError> {
    match store.get(hash)? {
        Some(obj) => match obj.parse()? {
            Node::Ledger(h) => Ok(Some(h)),
            _ => Ok(None),
        },
        None => Ok(None),
    }
}

/// A stored ledger opened whole: its header and both maps (their roots
/// loaded and verified), for writing it out (`shamap export`, Python's
/// `Store.export`).
pub struct StoredLedger<'s> {
    /// The ledger hash.
    pub hash: Hash256,
    /// Its header.
    pub header: LedgerHeader,
    /// Its state map.
    pub state: StoredMap<'s>,
    /// Its transaction map.
    pub tx: StoredMap<'s>,
    /// True when the store's own ledger list ([`NodeStore::ledger_hashes`]:
    /// rippled's `ledger.db`, whose ledgers rippled saved as validated)
    /// names it; a node store alone cannot say that a ledger was validated.
    pub listed: bool,
}

impl<'s> StoredLedger<'s> {
    /// The ledger `hash` names, with both maps opened; `None` when no
    /// ledger header is stored under `hash` (nothing, or a map node).
    pub fn open(store: &'s dyn NodeStore, hash: Hash256) -> Result<Option<Self>, StoreError> {
        let Some(header) = self::header(store, &hash)? else {
            return Ok(None);
        };
        let listed = store
            .ledger_hashes()?
            .is_some_and(|list| list.contains(&(header.seq, hash)));
        Ok(Some(StoredLedger {
            hash,
            header,
            state: StoredMap::open(store, header.account_hash, MapKind::AccountState)?,
            tx: StoredMap::open(store, header.transaction_hash, MapKind::TransactionWithMeta)?,
            listed,
        }))
    }
}

/// The map that `hash` names, for reading: the one rule every command
/// uses for `--root`.
///
/// - The zero hash is the empty map (of `kind`, state by default).
/// - A ledger hash (a stored header object) names its state map
///   (`account_hash`) when `kind` is `None` or the state kind, its
///   transaction map (`transaction_hash`) when `kind` is the transaction
///   kind. A ledger whose transaction tree is empty (a zero
///   `transaction_hash`) has no transaction map to read:
///   [`StoreError::Unresolved`]. No metadata record is needed.
/// - Any other hash must be a map root the store knows
///   ([`meta::known_root`]: a retained root, or a map of a retained
///   ledger); its kind is read from the store ([`root_kind`]) and must be
///   `kind` when one is asked for.
///
/// Errors are one line naming the store and the hash: a hash with nothing
/// stored under it, a stored node that is not a root
/// ([`StoreError::NotARoot`]), a map of another kind than asked.
pub fn resolve_root(
    store: &dyn NodeStore,
    hash: &Hash256,
    kind: Option<MapKind>,
) -> Result<ResolvedRoot, StoreError> {
    let unresolved = |message: String| StoreError::Unresolved {
        location: store.location(),
        message,
    };
    if hash.is_zero() {
        return Ok(ResolvedRoot {
            root: *hash,
            kind: kind.unwrap_or(MapKind::AccountState),
            ledger: None,
        });
    }
    if let Some(h) = header(store, hash)? {
        let (root, kind) = match kind.unwrap_or(MapKind::AccountState) {
            MapKind::AccountState => (h.account_hash, MapKind::AccountState),
            MapKind::TransactionWithMeta if h.transaction_hash.is_zero() => {
                return Err(unresolved(format!(
                    "ledger {hash} (sequence {}) has no transactions: its transaction_hash is zero, the empty tree",
                    h.seq
                )))
            }
            MapKind::TransactionWithMeta => (h.transaction_hash, MapKind::TransactionWithMeta),
            MapKind::TransactionNoMeta => {
                return Err(unresolved(format!(
                    "{hash} is a ledger hash: a ledger names a state map and a transaction map with metadata, no transaction set"
                )))
            }
        };
        return Ok(ResolvedRoot {
            root,
            kind,
            ledger: Some((*hash, h)),
        });
    }
    match meta::known_root(store, hash) {
        Ok(KnownRoot::Empty | KnownRoot::LedgerHeader) => {
            // Both handled above; a header read twice differently would be
            // a store changing under us.
            return Err(unresolved(format!("{hash} changed while it was read")));
        }
        Ok(KnownRoot::Retained | KnownRoot::MapOfRetainedLedger) => {}
        Err(StoreError::NotARoot { .. }) if !store.contains(hash)? => {
            return Err(unresolved(format!(
                "nothing is stored under {hash}: {}",
                facts::NEITHER_LEDGER_NOR_ROOT
            )))
        }
        Err(e) => return Err(e),
    }
    let found = match root_kind(store, hash)? {
        RootKind::Map(found) => found,
        RootKind::Ledger(_) => {
            return Err(unresolved(format!("{hash} changed while it was read")));
        }
    };
    match kind {
        Some(want) if want != found => Err(unresolved(format!(
            "{hash} is the root of a {} map, not of a {} map",
            found.name(),
            want.name()
        ))),
        _ => Ok(ResolvedRoot {
            root: *hash,
            kind: found,
            ledger: None,
        }),
    }
}

/// The ledgers `store` holds, by sequence: the backend's own list when it
/// keeps one ([`NodeStore::ledger_hashes`]), else the retained roots
/// whose header objects are stored (each header read and verified; a
/// retained map root or a missing header is left out).
pub fn ledgers(store: &dyn NodeStore) -> Result<LedgerList, StoreError> {
    let (mut ledgers, source) = match store.ledger_hashes()? {
        Some(list) => (list, LedgerSource::Store),
        None => {
            let mut list = Vec::new();
            for r in meta::retained(store)? {
                if r.hash.is_zero() {
                    continue;
                }
                if let Some(h) = header(store, &r.hash)? {
                    list.push((h.seq, r.hash));
                }
            }
            (list, LedgerSource::Retained)
        }
    };
    ledgers.sort_unstable();
    ledgers.dedup();
    Ok(LedgerList { ledgers, source })
}

/// The hash of the ledger with sequence `seq` ([`ledgers`]): the one
/// place every command's `--ledger SEQ` is resolved, for every backend.
///
/// The list only points at a ledger: the header stored under the hash
/// found is read (and verified, as every read) and must say sequence
/// `seq`, so a sequence is only ever served as the ledger it is. A list
/// that maps `seq` to a ledger whose header says another sequence (a
/// `ledger.db` whose rows were remapped, or belong to another node store),
/// to a hash with nothing stored under it, or to an object that is not a
/// ledger header, is refused in one line naming the sequence and the hash
/// ([`StoreError::Unresolved`]). So is a sequence that no ledger, or more
/// than one (a fork kept in the store), has.
pub fn ledger_by_seq(store: &dyn NodeStore, seq: u32) -> Result<Hash256, StoreError> {
    let list = ledgers(store)?;
    let unresolved = |message: String| StoreError::Unresolved {
        location: store.location(),
        message,
    };
    let found: Vec<Hash256> = list
        .ledgers
        .iter()
        .filter(|(s, _)| *s == seq)
        .map(|(_, h)| *h)
        .collect();
    match found.as_slice() {
        [one] => {
            check_listed_header(store, list.source, seq, one)?;
            Ok(*one)
        }
        [] => {
            let whose = match list.source {
                LedgerSource::Store => "the store's ledger list",
                LedgerSource::Retained => "the retained ledgers",
            };
            Err(unresolved(
                match (list.ledgers.first(), list.ledgers.last()) {
                    (Some((lo, _)), Some((hi, _))) => format!(
                    "no ledger with sequence {seq} in {whose} ({} ledgers, sequences {lo} to {hi})",
                    list.ledgers.len()
                ),
                    _ => format!("no ledger with sequence {seq}: {whose} is empty"),
                },
            ))
        }
        many => Err(unresolved(format!(
            "{} {} {seq} ({})",
            many.len(),
            facts::SEQUENCE_SHARED,
            many.iter()
                .map(Hash256::to_hex)
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// Checks that the header stored under `hash`, which the list from
/// `source` gives for sequence `seq`, is there and says `seq`
/// ([`ledger_by_seq`]).
fn check_listed_header(
    store: &dyn NodeStore,
    source: LedgerSource,
    seq: u32,
    hash: &Hash256,
) -> Result<(), StoreError> {
    // Only one backend keeps a list of its own today: rippled's node
    // store, whose list is its `ledger.db`.
    let list = match source {
        LedgerSource::Store => "the store's ledger list (rippled's ledger.db)",
        LedgerSource::Retained => "the retained ledger list",
    };
    let wrong = |what: String| StoreError::Unresolved {
        location: store.location(),
        message: format!("{list} maps sequence {seq} to {hash}, {what}"),
    };
    match store.get(hash)? {
        None => Err(wrong(
            "but no ledger header is stored under that hash: the store does not hold that ledger"
                .to_owned(),
        )),
        Some(obj) => match obj.parse()? {
            Node::Ledger(h) if h.seq == seq => Ok(()),
            Node::Ledger(h) => Err(wrong(format!(
                "whose header says sequence {}: refusing to serve ledger {} as ledger {seq}",
                h.seq, h.seq
            ))),
            _ => Err(wrong(
                "but the object stored under that hash is a map node, not a ledger header"
                    .to_owned(),
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::{put_retained, RetainedRoot};
    use crate::node::NodeObject;
    use crate::store::Batch;
    use crate::MemStore;
    use shamap::{Key, ShaMap};

    /// A store holding one ledger (two state entries, one transaction, or
    /// none when `with_tx` is false), not retained; returns its hash and
    /// header.
    fn one_ledger(store: &MemStore, seq: u32, with_tx: bool) -> (Hash256, LedgerHeader) {
        let mut state = ShaMap::new(MapKind::AccountState);
        state.insert(Key([seq as u8; 32]), &[1; 20]).expect("new");
        state.insert(Key([0xEE; 32]), &[2; 20]).expect("new");
        let mut tx = ShaMap::new(MapKind::TransactionWithMeta);
        if with_tx {
            let (k, d) =
                shamap::xrpl::tx::tx_with_meta_item(&[seq as u8; 30], &[7; 25]).expect("small");
            tx.insert(k, &d).expect("new");
        }
        let header = LedgerHeader {
            seq,
            total_coins: 100,
            parent_hash: Hash256([9; 32]),
            transaction_hash: tx.root_hash(),
            account_hash: state.root_hash(),
            parent_close_time: 1,
            close_time: 2,
            close_time_resolution: 10,
            close_flags: 0,
        };
        for m in [&mut state, &mut tx] {
            crate::map::import::write_snapshot(store, &m.snapshot(), &mut |_| {}).expect("nodes");
        }
        let mut b = Batch::new();
        b.put_node(NodeObject::ledger(&header));
        store.write(b).expect("write");
        (header.hash(), header)
    }

    fn retain(store: &MemStore, hashes: &[Hash256]) {
        let roots: Vec<RetainedRoot> = hashes
            .iter()
            .map(|h| RetainedRoot {
                name: format!("r {}", &h.to_hex()[..6]),
                hash: *h,
            })
            .collect();
        let mut b = Batch::new();
        put_retained(&mut b, &roots);
        store.write(b).expect("write");
    }

    #[test]
    fn a_ledger_hash_names_its_maps_without_any_record() {
        let s = MemStore::new();
        let (hash, h) = one_ledger(&s, 5, true);
        let state = resolve_root(&s, &hash, None).expect("state");
        assert_eq!(
            (state.root, state.kind),
            (h.account_hash, MapKind::AccountState)
        );
        assert_eq!(state.ledger, Some((hash, h)));
        let tx = resolve_root(&s, &hash, Some(MapKind::TransactionWithMeta)).expect("tx");
        assert_eq!(
            (tx.root, tx.kind),
            (h.transaction_hash, MapKind::TransactionWithMeta)
        );
        let e = resolve_root(&s, &hash, Some(MapKind::TransactionNoMeta)).expect_err("txset");
        assert!(e.to_string().contains("no transaction set"), "{e}");
    }

    #[test]
    fn an_empty_transaction_tree_is_one_line() {
        let s = MemStore::new();
        let (hash, _) = one_ledger(&s, 6, false);
        let e = resolve_root(&s, &hash, Some(MapKind::TransactionWithMeta)).expect_err("no tx");
        assert_eq!(
            e.to_string(),
            format!("store {}: ledger {hash} (sequence 6) has no transactions: its transaction_hash is zero, the empty tree", s.location())
        );
    }

    #[test]
    fn map_roots_need_the_store_to_know_them() {
        let s = MemStore::new();
        let (hash, h) = one_ledger(&s, 7, true);
        // Not retained: a map root alone is refused (it could be any inner node).
        let e = resolve_root(&s, &h.account_hash, None).expect_err("unknown");
        assert!(matches!(e, StoreError::NotARoot { .. }), "{e}");
        retain(&s, &[hash]);
        let r = resolve_root(&s, &h.transaction_hash, None).expect("map of a retained ledger");
        assert_eq!(r.kind, MapKind::TransactionWithMeta);
        assert_eq!(r.ledger, None);
        let e = resolve_root(&s, &h.transaction_hash, Some(MapKind::AccountState))
            .expect_err("other kind");
        assert!(
            e.to_string()
                .ends_with("is the root of a tx map, not of a state map"),
            "{e}"
        );
        let absent = Hash256([0x42; 32]);
        let e = resolve_root(&s, &absent, None).expect_err("absent");
        assert!(
            e.to_string()
                .contains(&format!("nothing is stored under {absent}")),
            "{e}"
        );
        let zero = resolve_root(&s, &Hash256::default(), None).expect("empty");
        assert_eq!(zero.kind, MapKind::AccountState);
    }

    /// A store whose own ledger list is `list`, whatever its headers say
    /// (as rippled's `ledger.db` beside a node store can be).
    struct Listed {
        inner: MemStore,
        list: Vec<(u32, Hash256)>,
    }

    impl NodeStore for Listed {
        fn location(&self) -> String {
            self.inner.location()
        }
        fn read_value(&self, hash: &Hash256) -> Result<Option<Vec<u8>>, StoreError> {
            self.inner.read_value(hash)
        }
        fn write(&self, batch: Batch) -> Result<(), StoreError> {
            self.inner.write(batch)
        }
        fn for_each_value(
            &self,
            f: &mut dyn FnMut(Hash256, &[u8]) -> std::ops::ControlFlow<()>,
        ) -> Result<(), StoreError> {
            self.inner.for_each_value(f)
        }
        fn get_meta(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
            self.inner.get_meta(name)
        }
        fn disk_bytes(&self) -> Result<u64, StoreError> {
            self.inner.disk_bytes()
        }
        fn write_durably(&self, batch: Batch) -> Result<(), StoreError> {
            self.inner.write_durably(batch)
        }
        fn ledger_hashes(&self) -> Result<Option<Vec<(u32, Hash256)>>, StoreError> {
            Ok(Some(self.list.clone()))
        }
    }

    #[test]
    fn a_sequence_is_served_only_as_the_ledger_it_is() {
        let inner = MemStore::new();
        let (a, ha) = one_ledger(&inner, 20, true);
        let (b, _) = one_ledger(&inner, 21, true);
        let absent = Hash256([0x42; 32]);
        // 20 and 21 swapped; 22 names nothing stored; 23 a map root.
        let s = Listed {
            inner,
            list: vec![(20, b), (21, a), (22, absent), (23, ha.account_hash)],
        };
        let loc = s.location();
        let e = ledger_by_seq(&s, 20).expect_err("remapped");
        assert_eq!(
            e.to_string(),
            format!("store {loc}: the store's ledger list (rippled's ledger.db) maps sequence 20 to {b}, whose header says sequence 21: refusing to serve ledger 21 as ledger 20")
        );
        let e = ledger_by_seq(&s, 21).expect_err("remapped");
        assert!(
            e.to_string().contains(&format!(
                "maps sequence 21 to {a}, whose header says sequence 20"
            )),
            "{e}"
        );
        let e = ledger_by_seq(&s, 22).expect_err("absent");
        assert!(
            e.to_string().contains(&format!(
                "maps sequence 22 to {absent}, but no ledger header is stored under that hash"
            )),
            "{e}"
        );
        let e = ledger_by_seq(&s, 23).expect_err("a map root");
        assert!(
            e.to_string().contains(&format!(
                "maps sequence 23 to {}, but the object stored under that hash is a map node, not a ledger header",
                ha.account_hash
            )),
            "{e}"
        );
        // A list that tells the truth is served.
        let honest = Listed {
            inner: s.inner,
            list: vec![(20, a), (21, b)],
        };
        assert_eq!(ledger_by_seq(&honest, 20).expect("listed"), a);
        assert_eq!(ledger_by_seq(&honest, 21).expect("listed"), b);
    }

    #[test]
    fn sequences_come_from_retained_headers_or_the_store() {
        let s = MemStore::new();
        let (a, _) = one_ledger(&s, 10, true);
        let (b, h) = one_ledger(&s, 11, true);
        let e = ledger_by_seq(&s, 10).expect_err("nothing retained");
        assert!(
            e.to_string().ends_with("the retained ledgers is empty"),
            "{e}"
        );
        // A retained map root is left out of the list.
        retain(&s, &[b, a, h.account_hash]);
        let list = ledgers(&s).expect("list");
        assert_eq!(list.ledgers, vec![(10, a), (11, b)]);
        assert_eq!(list.source, LedgerSource::Retained);
        assert_eq!(ledger_by_seq(&s, 11).expect("found"), b);
        let e = ledger_by_seq(&s, 12).expect_err("absent");
        assert!(
            e.to_string()
                .ends_with("no ledger with sequence 12 in the retained ledgers (2 ledgers, sequences 10 to 11)"),
            "{e}"
        );
        // A second ledger 11 (another close time): ambiguous.
        let mut other = h;
        other.close_time += 1;
        let mut batch = Batch::new();
        batch.put_node(NodeObject::ledger(&other));
        s.write(batch).expect("write");
        retain(&s, &[a, b, other.hash()]);
        let e = ledger_by_seq(&s, 11).expect_err("two");
        assert!(e.to_string().contains("2 ledgers have sequence 11"), "{e}");
    }
}
