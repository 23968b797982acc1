//! The record of the last verified ledger in a `--state` store.

use shamap::xrpl::ledger::LedgerHeader;
use shamap::Hash256;

use shamap_store::BackedMap;
use shamap_store::NodeObject;
use shamap_store::StoreError;
use shamap_store::{Batch, NodeStore};

/// The metadata record of the last verified ledger in a `--state` store.
pub const VERIFIED_RECORD: &str = "clio_verified";
/// The retained-root name the verified state is committed under.
pub const STATE_ROOT_NAME: &str = "clio";

/// The last ledger a `--state` store verified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    /// Its sequence.
    pub seq: u32,
    /// Its ledger hash.
    pub ledger_hash: Hash256,
    /// Its state map's root (committed under [`STATE_ROOT_NAME`]).
    pub account_hash: Hash256,
    /// Live entries in that state.
    pub entries: u64,
    /// The Clio keyspace it was read from.
    pub keyspace: String,
}

impl Verified {
    fn encode(&self) -> Vec<u8> {
        let mut v = self.seq.to_be_bytes().to_vec();
        v.extend_from_slice(&self.ledger_hash.0);
        v.extend_from_slice(&self.account_hash.0);
        v.extend_from_slice(&self.entries.to_be_bytes());
        v.extend_from_slice(self.keyspace.as_bytes());
        v
    }

    fn decode(b: &[u8]) -> Option<Verified> {
        if b.len() < 76 {
            return None;
        }
        Some(Verified {
            seq: u32::from_be_bytes(b[..4].try_into().ok()?),
            ledger_hash: Hash256::from_slice(&b[4..36])?,
            account_hash: Hash256::from_slice(&b[36..68])?,
            entries: u64::from_be_bytes(b[68..76].try_into().ok()?),
            keyspace: String::from_utf8(b[76..].to_vec()).ok()?,
        })
    }
}

/// The last verified ledger recorded in `store`, if any.
pub fn read_verified(store: &dyn NodeStore) -> Result<Option<Verified>, StoreError> {
    let Some(b) = store.get_meta(VERIFIED_RECORD)? else {
        return Ok(None);
    };
    Verified::decode(&b)
        .map(Some)
        .ok_or_else(|| StoreError::BadMeta {
            location: store.location(),
            name: VERIFIED_RECORD.to_owned(),
            reason: format!("{} bytes that do not decode", b.len()),
        })
}

/// Commits `map` under [`STATE_ROOT_NAME`] and records `v`, with the
/// ledger's header as a node (so the ledger hash names the verified state
/// map for readers of the store: `get`, `prove --db`), all in one atomic,
/// durable batch: after a crash the store holds both or neither. The map's
/// root must be `v`'s account hash. `replaced_header`: the previous
/// ledger's header, deleted in the same batch, for a map that prunes
/// ([`BackedOptions::prune_replaced`](shamap_store::BackedOptions::prune_replaced): the state it names is gone).
pub fn record_verified(
    map: &mut BackedMap<'_>,
    store: &dyn NodeStore,
    v: &Verified,
    header: &LedgerHeader,
    replaced_header: Option<Hash256>,
) -> Result<(), StoreError> {
    let root = map.root_hash();
    if root != v.account_hash {
        return Err(StoreError::BadMeta {
            location: store.location(),
            name: VERIFIED_RECORD.to_owned(),
            reason: format!(
                "the map's root {root} is not the verified account_hash {}",
                v.account_hash
            ),
        });
    }
    let mut batch = Batch::new();
    if let Some(old) = replaced_header {
        batch.delete_node(old);
    }
    batch.put_node(NodeObject::ledger(header));
    batch.put_meta(VERIFIED_RECORD, v.encode());
    map.commit_with(STATE_ROOT_NAME, batch)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verified_record_round_trips() {
        let v = Verified {
            seq: 77,
            ledger_hash: Hash256([1; 32]),
            account_hash: Hash256([2; 32]),
            entries: 1234,
            keyspace: "clio_ks".to_owned(),
        };
        assert_eq!(Verified::decode(&v.encode()), Some(v));
        assert_eq!(Verified::decode(&[0; 75]), None);
    }
}
