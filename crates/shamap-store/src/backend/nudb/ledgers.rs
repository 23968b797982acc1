//! The ledgers of a NuDB store, by one rule: rippled's `ledger.db` when
//! the store has one ([`NudbStore::ledger_db`]: given, or found in its
//! directory or the one above), else the ledger headers in the data files
//! ([`headers_in_data`]: one pass, decoding only the values of a header's
//! length). The store's ledger list (`NodeStore::ledger_hashes`), the
//! audit and `shamap info` all ask here; [`ListedIn`] names where a list
//! came from, in their reports.

use std::ops::ControlFlow;
use std::path::Path;

use shamap::xrpl::LedgerHeader;
use shamap::Hash256;

use super::store::NudbStore;
use crate::error::StoreError;
use crate::node::{Node, NodeObject};

/// Where a NuDB store's ledgers are listed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListedIn<'a> {
    /// rippled's `ledger.db`, at this path.
    LedgerDb(&'a Path),
    /// The ledger headers in the data files.
    DataFiles,
}

impl ListedIn<'_> {
    /// The source, as reports name it (the `ledgers_from` of the audit and
    /// of `shamap info`).
    pub fn describe(&self) -> String {
        match self {
            ListedIn::LedgerDb(p) => p.display().to_string(),
            ListedIn::DataFiles => "ledger headers in the data files".to_owned(),
        }
    }
}

/// Where `store`'s ledgers are listed: the rule, once.
pub fn listed_in(store: &NudbStore) -> ListedIn<'_> {
    match store.ledger_db() {
        Some(p) => ListedIn::LedgerDb(p),
        None => ListedIn::DataFiles,
    }
}

/// `store`'s ledgers as `(sequence, ledger hash)`, in the order of their
/// source: `ledger.db`'s rows, else `headers` (the headers found in the
/// data files, when the caller has passed over them already; `None`: one
/// pass of [`headers_in_data`] here).
pub fn ledgers(
    store: &NudbStore,
    headers: Option<Vec<(u32, Hash256)>>,
) -> Result<Vec<(u32, Hash256)>, StoreError> {
    match listed_in(store) {
        ListedIn::LedgerDb(db) => Ok(super::ledger_db::read_ledgers(db, None)
            .map_err(|e| StoreError::backend(store.location_str(), e))?
            .iter()
            .map(|r| (r.seq, r.hash))
            .collect()),
        ListedIn::DataFiles => match headers {
            Some(found) => Ok(found),
            None => {
                let mut found = Vec::new();
                headers_in_data(store, &mut |h| {
                    found.push((h.header.seq, h.hash));
                    ControlFlow::Continue(())
                })?;
                Ok(found)
            }
        },
    }
}

impl NudbStore {
    /// The store's ledgers ([`ledgers`], with one pass over the data files
    /// when there is no `ledger.db`): its `NodeStore::ledger_hashes`.
    pub fn listed_ledgers(&self) -> Result<Vec<(u32, Hash256)>, StoreError> {
        ledgers(self, None)
    }
}

/// A ledger header found by the scan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundHeader {
    /// The ledger hash (the record's key).
    pub hash: Hash256,
    /// The header.
    pub header: LedgerHeader,
}

/// What [`headers_in_data`] counts on its way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecordCounts {
    /// Data records.
    pub records: u64,
    /// Bytes of their stored (encoded) values.
    pub value_bytes: u64,
    /// Records per codec type (0 raw, 1 LZ4, 2 compressed inner, 3 full
    /// inner, 4 anything else).
    pub codec_types: [u64; 5],
}

/// Calls `f` with every ledger header in the data files, in file order,
/// reading them through once and decoding only the values of a header's
/// length (each one checked against its key): what lists a store's
/// ledgers when there is no `ledger.db`. Returns the records counted.
pub fn headers_in_data(
    store: &NudbStore,
    f: &mut dyn FnMut(&FoundHeader) -> std::ops::ControlFlow<()>,
) -> Result<RecordCounts, StoreError> {
    use super::codec::{decode_value, read_varint};
    const HEADER_VALUE_LEN: u64 = 9 + 4 + 118;
    let mut counts = RecordCounts::default();
    let mut value = Vec::new();
    store.for_each_record(&mut |_, _, key, raw| {
        counts.records += 1;
        counts.value_bytes += raw.len() as u64;
        let ty = read_varint(raw);
        counts.codec_types[ty.map_or(4, |(t, _)| t.min(4)) as usize] += 1;
        let candidate = match ty {
            Some((0, n)) => (raw.len() - n) as u64 == HEADER_VALUE_LEN,
            Some((1, n)) => read_varint(&raw[n..]).is_some_and(|(s, _)| s == HEADER_VALUE_LEN),
            _ => false,
        };
        if candidate && decode_value(raw, &mut value).is_ok() && value[8] == 1 {
            if let Some(hash) = Hash256::from_slice(key) {
                if let Ok(obj) = NodeObject::decode(hash, value.clone()) {
                    if let Ok(Node::Ledger(header)) = obj.parse() {
                        return f(&FoundHeader { hash, header });
                    }
                }
            }
        }
        std::ops::ControlFlow::Continue(())
    })?;
    Ok(counts)
}

/// The hash of the ledger header of sequence `seq` in the data files
/// ([`headers_in_data`], stopping at the first).
pub fn find_header_by_seq(store: &NudbStore, seq: u32) -> Result<Option<Hash256>, StoreError> {
    let mut found = None;
    headers_in_data(store, &mut |h| {
        if h.header.seq == seq {
            found = Some(h.hash);
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    })?;
    Ok(found)
}
