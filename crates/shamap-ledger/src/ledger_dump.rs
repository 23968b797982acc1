//! What a ledger dump holds ([`LedgerDump`]): the kind of response, the
//! header fields, the state entries and the transactions, as bytes; and
//! [`merge`], which joins the pages of one `ledger_data` response.

use std::fmt;

use shamap::hash::{Hash256, Key};
use shamap::xrpl::ledger::{LedgerHeader, LedgerRoots};

use crate::error::DumpError;

/// Which kind of response a dump was read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DumpKind {
    /// A `ledger` response or a bare ledger object: everything in it belongs
    /// to one ledger and nothing more is expected from other files.
    Ledger,
    /// One page of a `ledger_data` response (it has a `state` list): part of
    /// one ledger's state. Join the pages of a ledger with [`merge`].
    LedgerDataPage,
}

/// One account-state item: a ledger entry's index and its serialized bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateEntry {
    /// The entry's index, its key in the state map. Never all zeros.
    pub key: Key,
    /// The serialized ledger entry. May be empty here; the map decides what
    /// it accepts.
    pub data: Vec<u8>,
}

/// One transaction of a closed ledger with its metadata, as serialized blobs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxEntry {
    /// The serialized transaction (`tx_blob`).
    pub tx: Vec<u8>,
    /// The serialized metadata (`meta`, or `meta_blob` in API v2).
    pub meta: Vec<u8>,
}

/// The ledger-header fields a dump carried, each present or not, plus the
/// ledger hash the dump claims (the value to check against).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeaderFields {
    /// Ledger sequence number (`ledger_index`).
    pub ledger_index: Option<u32>,
    /// Drops of XRP in existence (`total_coins`).
    pub total_coins: Option<u64>,
    /// Hash of the previous ledger.
    pub parent_hash: Option<Hash256>,
    /// Root of the transaction+metadata map, as the dump claims.
    pub transaction_hash: Option<Hash256>,
    /// Root of the account-state map, as the dump claims.
    pub account_hash: Option<Hash256>,
    /// Parent's close time, seconds since 2000-01-01.
    pub parent_close_time: Option<u32>,
    /// Close time, seconds since 2000-01-01.
    pub close_time: Option<u32>,
    /// Close-time resolution, seconds.
    pub close_time_resolution: Option<u8>,
    /// Close flags.
    pub close_flags: Option<u8>,
    /// The ledger hash the dump claims (`ledger_hash` or `hash`). Not an
    /// input of the hash: the value to compare a computed hash with.
    pub ledger_hash: Option<Hash256>,
}

/// What one file held about one ledger.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LedgerDump {
    /// Which response this came from.
    pub kind: DumpKind,
    /// Header fields found, from every place they appeared.
    pub header: HeaderFields,
    /// State entries in file order; `None` when the dump has no state list
    /// (an empty list is `Some(vec![])`).
    pub state: Option<Vec<StateEntry>>,
    /// Transactions in file order; `None` when the dump has no transaction
    /// list (an empty list is `Some(vec![])`: a ledger without transactions).
    pub transactions: Option<Vec<TxEntry>>,
    /// A `ledger_data` page's `marker` (compact JSON if not a string): more
    /// pages follow. After [`merge`], present only when every page had one,
    /// which means the final page is missing.
    pub marker: Option<String>,
}

/// The header fields that go into the ledger hash, in serialization order.
const HASHED_FIELDS: [&str; 9] = [
    "ledger_index",
    "total_coins",
    "parent_hash",
    "transaction_hash",
    "account_hash",
    "parent_close_time",
    "close_time",
    "close_time_resolution",
    "close_flags",
];

impl HeaderFields {
    /// All fields of `h` (the expected `ledger_hash` stays unknown: a header
    /// does not carry its own hash).
    pub fn from_header(h: &LedgerHeader) -> HeaderFields {
        HeaderFields {
            ledger_index: Some(h.seq),
            total_coins: Some(h.total_coins),
            parent_hash: Some(h.parent_hash),
            transaction_hash: Some(h.transaction_hash),
            account_hash: Some(h.account_hash),
            parent_close_time: Some(h.parent_close_time),
            close_time: Some(h.close_time),
            close_time_resolution: Some(h.close_time_resolution),
            close_flags: Some(h.close_flags),
            ledger_hash: None,
        }
    }

    /// True when no field is present.
    pub fn is_empty(&self) -> bool {
        *self == HeaderFields::default()
    }

    /// The map roots the dump claims (`account_hash`, `transaction_hash`).
    pub fn roots(&self) -> LedgerRoots {
        LedgerRoots {
            account_hash: self.account_hash,
            transaction_hash: self.transaction_hash,
        }
    }

    /// The header, when every hashed field is present.
    pub fn complete_header(&self) -> Option<LedgerHeader> {
        self.header_with_roots(None, None).ok()
    }

    /// The header with `account_hash` and `transaction_hash` replaced by the
    /// given roots where they are `Some` (e.g. roots computed from the dump's
    /// own entries), or the names of the fields still missing.
    pub fn header_with_roots(
        &self,
        account_hash: Option<Hash256>,
        transaction_hash: Option<Hash256>,
    ) -> Result<LedgerHeader, Vec<&'static str>> {
        let mut f = *self;
        f.account_hash = account_hash.or(f.account_hash);
        f.transaction_hash = transaction_hash.or(f.transaction_hash);
        match (
            f.ledger_index,
            f.total_coins,
            f.parent_hash,
            f.transaction_hash,
            f.account_hash,
            f.parent_close_time,
            f.close_time,
            f.close_time_resolution,
            f.close_flags,
        ) {
            (
                Some(seq),
                Some(total_coins),
                Some(parent_hash),
                Some(transaction_hash),
                Some(account_hash),
                Some(parent_close_time),
                Some(close_time),
                Some(close_time_resolution),
                Some(close_flags),
            ) => Ok(LedgerHeader {
                seq,
                total_coins,
                parent_hash,
                transaction_hash,
                account_hash,
                parent_close_time,
                close_time,
                close_time_resolution,
                close_flags,
            }),
            _ => Err(f.missing_fields()),
        }
    }

    /// Names of the hashed header fields that are absent, in header order.
    pub fn missing_fields(&self) -> Vec<&'static str> {
        let present = [
            self.ledger_index.is_some(),
            self.total_coins.is_some(),
            self.parent_hash.is_some(),
            self.transaction_hash.is_some(),
            self.account_hash.is_some(),
            self.parent_close_time.is_some(),
            self.close_time.is_some(),
            self.close_time_resolution.is_some(),
            self.close_flags.is_some(),
        ];
        HASHED_FIELDS
            .iter()
            .zip(present)
            .filter(|(_, p)| !p)
            .map(|(name, _)| *name)
            .collect()
    }

    /// True when both name a ledger (by index or hash), at least one naming
    /// field is present in both, and none of them differ.
    pub fn same_ledger(&self, other: &HeaderFields) -> bool {
        let idx = (self.ledger_index, other.ledger_index);
        let hash = (self.ledger_hash, other.ledger_hash);
        let differ = matches!(idx, (Some(a), Some(b)) if a != b)
            || matches!(hash, (Some(a), Some(b)) if a != b);
        let shared = matches!(idx, (Some(_), Some(_))) || matches!(hash, (Some(_), Some(_)));
        shared && !differ
    }

    /// A short human name for the ledger: `ledger 38129`, `ledger <hash>`,
    /// or `unidentified ledger`.
    pub fn ledger_name(&self) -> String {
        match (self.ledger_index, self.ledger_hash) {
            (Some(i), _) => format!("ledger {i}"),
            (None, Some(h)) => format!("ledger {h}"),
            (None, None) => "unidentified ledger".to_owned(),
        }
    }

    /// Adds the fields of `other`, failing on any field both have with
    /// different values.
    pub fn merge_from(&mut self, other: &HeaderFields) -> Result<(), DumpError> {
        agree("ledger_index", &mut self.ledger_index, other.ledger_index)?;
        agree("total_coins", &mut self.total_coins, other.total_coins)?;
        agree("parent_hash", &mut self.parent_hash, other.parent_hash)?;
        agree(
            "transaction_hash",
            &mut self.transaction_hash,
            other.transaction_hash,
        )?;
        agree("account_hash", &mut self.account_hash, other.account_hash)?;
        agree(
            "parent_close_time",
            &mut self.parent_close_time,
            other.parent_close_time,
        )?;
        agree("close_time", &mut self.close_time, other.close_time)?;
        agree(
            "close_time_resolution",
            &mut self.close_time_resolution,
            other.close_time_resolution,
        )?;
        agree("close_flags", &mut self.close_flags, other.close_flags)?;
        agree("ledger_hash", &mut self.ledger_hash, other.ledger_hash)?;
        Ok(())
    }
}

impl LedgerDump {
    /// The marker of a `ledger_data` page, or of pages joined by [`merge`],
    /// after which the ledger continues: `Some` when every page read has a
    /// marker, so the last page is missing and the state is incomplete (its
    /// root cannot be the ledger's `account_hash`). `None` for a `ledger`
    /// response and for pages that include the last one.
    pub fn pending_marker(&self) -> Option<&str> {
        match self.kind {
            DumpKind::LedgerDataPage => self.marker.as_deref(),
            DumpKind::Ledger => None,
        }
    }
}

/// Keeps `slot`'s value, takes `new` when `slot` is empty, and fails when
/// both are present and differ.
pub(crate) fn agree<T: PartialEq + fmt::Display>(
    field: &'static str,
    slot: &mut Option<T>,
    new: Option<T>,
) -> Result<(), DumpError> {
    match (slot.as_ref(), new) {
        (Some(old), Some(new)) if *old != new => Err(DumpError::Conflict {
            field,
            first: old.to_string(),
            second: new.to_string(),
        }),
        (None, new @ Some(_)) => {
            *slot = new;
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Joins dumps of one ledger (normally the pages of a `ledger_data`
/// response) into one: header fields are combined, state entries and
/// transactions concatenated in order. Fails when two dumps name different
/// ledgers (by `ledger_index` or `ledger_hash`) or disagree on any other
/// header field. The result has the first dump's kind.
pub fn merge<I>(dumps: I) -> Result<LedgerDump, DumpError>
where
    I: IntoIterator<Item = LedgerDump>,
{
    let mut it = dumps.into_iter();
    let mut acc = it.next().ok_or(DumpError::NothingToMerge)?;
    for d in it {
        let differ = matches!((acc.header.ledger_index, d.header.ledger_index), (Some(a), Some(b)) if a != b)
            || matches!((acc.header.ledger_hash, d.header.ledger_hash), (Some(a), Some(b)) if a != b);
        if differ {
            return Err(DumpError::DifferentLedgers {
                first: acc.header.ledger_name(),
                second: d.header.ledger_name(),
            });
        }
        acc.header.merge_from(&d.header)?;
        acc.state = concat(acc.state, d.state);
        acc.transactions = concat(acc.transactions, d.transactions);
        acc.marker = match (acc.marker, d.marker) {
            (Some(_), Some(m)) => Some(m),
            _ => None,
        };
    }
    Ok(acc)
}

fn concat<T>(a: Option<Vec<T>>, b: Option<Vec<T>>) -> Option<Vec<T>> {
    match (a, b) {
        (Some(mut a), Some(b)) => {
            a.extend(b);
            Some(a)
        }
        (a, None) => a,
        (None, b) => b,
    }
}
