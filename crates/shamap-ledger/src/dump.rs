//! Readers for the ledger JSON that rippled and Clio emit, so that a real
//! ledger can be rebuilt and its hashes checked.
//!
//! [`parse`] takes the bytes of one file and returns a [`LedgerDump`]: the
//! header fields found, the state entries and the transactions, as bytes:
//! decoded from hex, or, for decoded-JSON entries (a response without
//! `"binary": true`), encoded with the XRPL codec behind the field guard of
//! [`crate::decoded`]. Binary and decoded entries may be mixed.
//!
//! Shapes understood (the ledger object may sit under `result.ledger`, under
//! `ledger`, or be the top-level object itself; `result` may wrap any shape):
//!
//! | shape | header | state | transactions |
//! |---|---|---|---|
//! | `ledger` response, binary | `ledger.ledger_data` (118-byte header, hex) or header fields; `ledger_hash`/`ledger_index` beside `ledger` | `accountState: [{index\|hash, data\|tx_blob}]` | `transactions: [{tx_blob, meta\|meta_blob, hash?}]` |
//! | `ledger` response, JSON header | header fields in `ledger` | as above | as above |
//! | `ledger` response, decoded (`expand` without `binary`) | as above | `accountState: [{LedgerEntryType, …, index}]` | `transactions: [{TransactionType, …, hash?, metaData}]` (API v1) or `[{tx_json, meta, hash?}]` (API v2) |
//! | `{header, transactions}` (test fixtures) | header fields in `header` | `accountState` | `transactions` |
//! | `ledger_data` page, binary | `ledger_index`/`ledger_hash` on the page; `ledger.ledger_data` or fields when present | `state: [{index, data}]` | — |
//!
//! Header fields: `ledger_index` (alias `seqNum`; string or number),
//! `total_coins` (alias `totalCoins`; string or number), `parent_hash`,
//! `transaction_hash`, `account_hash`, `parent_close_time`, `close_time`,
//! `close_time_resolution`, `close_flags`, and the expected `ledger_hash`
//! (alias `hash`). Every place a field is found must agree.
//!
//! A `ledger_data` response comes in pages; [`merge`] joins the pages of one
//! ledger. The reader never panics, whatever the input: it is fuzzed
//! (`fuzz/fuzz_targets/dump_reader.rs`).

use std::fmt;

use serde_json::{Map, Value};

mod fast;
mod unique_keys;

use shamap::hash::{decode_hex, Hash256, Key};
use shamap::xrpl::ledger::{LedgerHeader, LEDGER_HEADER_LEN};
use shamap::xrpl::transaction_id;
use shamap::ParseHexError;

use crate::decoded;

type Object = Map<String, Value>;

/// Longest server-error text quoted in [`DumpError::Server`], in characters.
const MAX_QUOTED_CHARS: usize = 200;

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

/// A dump that cannot be read. Each message is one line that names what is
/// wrong and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DumpError {
    /// The input is empty or only white space.
    #[error("empty input")]
    EmptyInput,
    /// The input is not JSON.
    #[error("invalid JSON at line {line} column {column}: {message}")]
    Json {
        /// One-based line.
        line: usize,
        /// One-based column (0 at the very start of a line).
        column: usize,
        /// The parser's description.
        message: String,
    },
    /// JSON, but not an object at the top level.
    #[error("the top-level JSON value is not an object")]
    TopLevelNotObject,
    /// An object with the same key twice: JSON readers keep one of the two
    /// values (serde_json the last), so the dump says two things at once.
    #[error("{}duplicate key {key:?} in the object at {}: each key of a JSON object must appear once", .entry.as_ref().map(|e| format!("{e}: ")).unwrap_or_default(), if .path.is_empty() { "the top level" } else { .path.as_str() })]
    DuplicateKey {
        /// The repeated key.
        key: String,
        /// The JSON path of the object (`result.ledger.accountState[3]`);
        /// empty for the top level.
        path: String,
        /// The entry it is in (`accountState entry 3`), if any.
        entry: Option<String>,
    },
    /// The file is a server's error response.
    #[error("server returned an error: {detail}")]
    Server {
        /// The quoted `error` (and `error_message` when present).
        detail: String,
    },
    /// Nothing that describes a ledger.
    #[error("no ledger header, state or transactions found")]
    NothingFound,
    /// A field of the wrong JSON type or out of range.
    #[error("field \"{field}\" is not {expected}")]
    FieldType {
        /// The field's name.
        field: &'static str,
        /// What it must be, e.g. "an unsigned 32-bit integer".
        expected: &'static str,
    },
    /// A hex field that does not decode.
    #[error("field \"{field}\": {error}")]
    FieldHex {
        /// The field's name.
        field: &'static str,
        /// What is wrong with the digits.
        error: ParseHexError,
    },
    /// A binary header (`ledger_data`) of the wrong length.
    #[error("field \"ledger_data\" holds {len} bytes, expected a {LEDGER_HEADER_LEN}-byte ledger header")]
    HeaderLength {
        /// Bytes found.
        len: usize,
    },
    /// Two places in the input give a header field different values.
    #[error("conflicting values for \"{field}\": {first} and {second}")]
    Conflict {
        /// The field's name.
        field: &'static str,
        /// The value seen first.
        first: String,
        /// The value that disagrees with it.
        second: String,
    },
    /// Two lists of the same thing (e.g. `accountState` and `state`).
    #[error("both \"{first}\" and \"{second}\" are present; expected one {what} list")]
    DuplicateList {
        /// What the lists hold ("state" or "transaction").
        what: &'static str,
        /// Path of the first list.
        first: &'static str,
        /// Path of the second list.
        second: &'static str,
    },
    /// An entry of the state or transaction list that cannot be used.
    #[error("{list} entry {index}: {problem}")]
    Entry {
        /// The list's name: `accountState`, `state` or `transactions`.
        list: &'static str,
        /// Zero-based position in the list.
        index: usize,
        /// What is wrong with it.
        problem: EntryProblem,
    },
    /// [`merge`] was given dumps of different ledgers.
    #[error("pages are from different ledgers: {first} and {second}")]
    DifferentLedgers {
        /// The ledger of the pages merged so far.
        first: String,
        /// The ledger of the page that differs.
        second: String,
    },
    /// [`merge`] was given no dumps.
    #[error("nothing to merge")]
    NothingToMerge,
}

/// What is wrong with one entry of a state or transaction list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EntryProblem {
    /// Neither an object nor a hash string.
    #[error("is not a JSON object")]
    NotObject,
    /// Only the key or ID: the dump was requested without `expand`.
    #[error("is only a hash; request the ledger with \"expand\": true and \"binary\": true")]
    HashOnly,
    /// Decoded JSON fields instead of hex: the dump was requested without `binary`.
    #[error("is decoded JSON, not hex; request it with \"binary\": true")]
    NotBinary,
    /// A required field is absent.
    #[error("missing \"{0}\"")]
    Missing(&'static str),
    /// A field that must be a hex string is not a string.
    #[error("\"{0}\" is not a string")]
    NotString(&'static str),
    /// A hex field that does not decode.
    #[error("{error} in \"{field}\"")]
    Hex {
        /// The field's name.
        field: &'static str,
        /// What is wrong with the digits.
        error: ParseHexError,
    },
    /// A key or ID that is not 32 bytes.
    #[error("{field} is {len} bytes, expected 32")]
    KeyLength {
        /// The field's name.
        field: &'static str,
        /// Bytes found.
        len: usize,
    },
    /// An all-zero state key, which rippled rejects.
    #[error("{field} is all zeros, which rippled rejects as a key")]
    ZeroKey {
        /// The field's name.
        field: &'static str,
    },
    /// A transaction's `hash` that is not the ID of its `tx_blob`.
    #[error("\"hash\" is not the transaction ID of \"tx_blob\", which is {computed}")]
    IdMismatch {
        /// The ID computed from `tx_blob`.
        computed: Hash256,
    },
    /// A decoded-JSON entry with a field that cannot be encoded exactly:
    /// unknown to the codec, of the wrong shape, a value the codec refuses,
    /// or a non-serialized key that disagrees with the entry.
    #[error("{entry}: {error}")]
    Field {
        /// The entry: `index <KEY>` for a state entry, `transaction <HASH>`
        /// for a transaction (its `hash`, or its ID once encoded), or
        /// `transaction` when neither is known.
        entry: String,
        /// The field and what is wrong with it.
        error: FieldError,
    },
    /// A decoded transaction whose `hash` is not the ID of the transaction
    /// as encoded.
    #[error("transaction {claimed}: \"hash\" is not the ID of the transaction as encoded, which is {computed}")]
    DecodedIdMismatch {
        /// The `hash` the entry gives.
        claimed: Hash256,
        /// The ID of the encoded transaction.
        computed: Hash256,
    },
}

/// A field of a decoded-JSON entry that cannot be encoded exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// Where the field is in the entry: `Balance`, `Memos[0].Memo.MemoType`,
    /// `metaData.AffectedNodes[1].ModifiedNode.FinalFields.Balance`; empty
    /// for the entry as a whole.
    pub path: String,
    /// What is wrong with it.
    pub problem: FieldProblem,
}

impl FieldError {
    pub(crate) fn new(path: impl Into<String>, problem: FieldProblem) -> FieldError {
        FieldError {
            path: path.into(),
            problem,
        }
    }

    /// The same error, in a field nested under `prefix`.
    pub(crate) fn under(self, prefix: &str) -> FieldError {
        let path = if self.path.is_empty() {
            prefix.to_owned()
        } else {
            format!("{prefix}.{}", self.path)
        };
        FieldError { path, ..self }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.problem)
        } else {
            // Debug quoting: a key with a quote or a line break in it stays
            // on one line and readable.
            write!(f, "field {:?} {}", self.path, self.problem)
        }
    }
}

/// What is wrong with a field of a decoded-JSON entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FieldProblem {
    /// Not a serialized field the codec knows: the codec would leave it out
    /// of the encoding without an error, and the hash would be wrong.
    #[error("is not a serialized field in the XRPL codec's definitions ({codec}), so it would be left out of the hash", codec = crate::decoded::CODEC)]
    NotAField,
    /// A value of the wrong JSON shape for the field's type.
    #[error("is not {0}")]
    Shape(&'static str),
    /// A value rippled would not have printed for the field, or cannot
    /// represent: the value (compact JSON, cut short) and why.
    #[error("has a value rippled does not accept ({value}): {reason}")]
    Refused {
        /// The value, as compact JSON, cut to 80 characters.
        value: String,
        /// Why it is refused.
        reason: String,
    },
    /// A non-serialized key that disagrees with the entry.
    #[error("{0}")]
    Inconsistent(String),
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
    /// Parses one file; see [`parse`].
    pub fn parse(input: &[u8]) -> Result<LedgerDump, DumpError> {
        parse(input)
    }

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
fn agree<T: PartialEq + fmt::Display>(
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

/// Reads one file's bytes: a rippled or Clio `ledger` response, a
/// `ledger_data` page, or a bare ledger object (see the module docs).
pub fn parse(input: &[u8]) -> Result<LedgerDump, DumpError> {
    let input = document(input)?;
    match fast::parse(input) {
        Some(dump) => Ok(dump),
        None => read_dom(input),
    }
}

/// [`parse`] through a full `serde_json::Value` of the document: the
/// reference the fast path must agree with, and the path for every input
/// the fast path declines (all errors among them). Public for the fuzz
/// target that compares the two.
#[doc(hidden)]
pub fn parse_dom(input: &[u8]) -> Result<LedgerDump, DumpError> {
    read_dom(document(input)?)
}

/// The input past one byte-order mark; blank input is an error.
fn document(input: &[u8]) -> Result<&[u8], DumpError> {
    let input = input.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(input);
    if input.iter().all(u8::is_ascii_whitespace) {
        return Err(DumpError::EmptyInput);
    }
    if let Some(d) = unique_keys::first_duplicate(input) {
        return Err(DumpError::DuplicateKey {
            key: d.key,
            path: d.path,
            entry: d.entry,
        });
    }
    Ok(input)
}

/// [`parse_dom`] after [`document`].
fn read_dom(input: &[u8]) -> Result<LedgerDump, DumpError> {
    let root: Value = serde_json::from_slice(input).map_err(json_error)?;
    let Value::Object(root) = root else {
        return Err(DumpError::TopLevelNotObject);
    };
    read_document(&root)
}

/// Everything [`parse`] reads from a document's top-level object.
fn read_document(root: &Object) -> Result<LedgerDump, DumpError> {
    check_server_error(root)?;
    let body = match root.get("result") {
        Some(Value::Object(result)) => {
            check_server_error(result)?;
            result
        }
        _ => root,
    };

    let ledger = object_field(body, "ledger")?;
    let header_obj = object_field(body, "header")?;
    let mut header = HeaderFields::default();
    for obj in [header_obj, ledger, Some(body)].into_iter().flatten() {
        read_header(obj, &mut header)?;
    }

    let state = one_list(
        "state",
        [
            (ledger, "accountState", "ledger.accountState"),
            (Some(body), "accountState", "accountState"),
            (Some(body), "state", "state"),
        ],
        read_state_entry,
    )?;
    let transactions = one_list(
        "transaction",
        [
            (ledger, "transactions", "ledger.transactions"),
            (Some(body), "transactions", "transactions"),
        ],
        read_tx_entry,
    )?;

    if header.is_empty() && state.is_none() && transactions.is_none() {
        return Err(DumpError::NothingFound);
    }
    let kind = if get(body, "state").is_some() {
        DumpKind::LedgerDataPage
    } else {
        DumpKind::Ledger
    };
    let marker = get(body, "marker").map(|m| match m {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    });
    Ok(LedgerDump {
        kind,
        header,
        state,
        transactions,
        marker,
    })
}

/// A one-line description of a JSON syntax error.
fn json_error(e: serde_json::Error) -> DumpError {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let message = full.strip_suffix(&suffix).unwrap_or(&full).to_owned();
    DumpError::Json {
        line: e.line(),
        column: e.column(),
        message,
    }
}

/// Fails when `obj` is a server's error response (`status: "error"` or an
/// `error` member).
fn check_server_error(obj: &Object) -> Result<(), DumpError> {
    let status_error = obj.get("status").and_then(Value::as_str) == Some("error");
    let error = get(obj, "error");
    if !status_error && error.is_none() {
        return Ok(());
    }
    let mut detail = match error {
        Some(e) => quote(e),
        None => "status \"error\"".to_owned(),
    };
    if let Some(msg) = get(obj, "error_message").or_else(|| get(obj, "error_exception")) {
        detail.push_str(": ");
        detail.push_str(&quote(msg));
    }
    Err(DumpError::Server { detail })
}

/// JSON text of `v` on one line, cut to [`MAX_QUOTED_CHARS`] characters.
fn quote(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() <= MAX_QUOTED_CHARS {
        text
    } else {
        let mut cut: String = text.chars().take(MAX_QUOTED_CHARS).collect();
        cut.push('…');
        cut
    }
}

/// A member that is present and not `null`.
fn get<'a>(obj: &'a Object, name: &str) -> Option<&'a Value> {
    obj.get(name).filter(|v| !v.is_null())
}

/// A member that must be an object when present.
fn object_field<'a>(obj: &'a Object, name: &'static str) -> Result<Option<&'a Object>, DumpError> {
    match get(obj, name) {
        None => Ok(None),
        Some(Value::Object(o)) => Ok(Some(o)),
        Some(_) => Err(DumpError::FieldType {
            field: name,
            expected: "a JSON object",
        }),
    }
}

/// Reads every header field `obj` has into `fields`, checking agreement.
fn read_header(obj: &Object, fields: &mut HeaderFields) -> Result<(), DumpError> {
    let mut found = HeaderFields::default();
    for name in ["ledger_index", "seqNum"] {
        let v = opt(obj, name, |v| {
            uint_field(name, v, "an unsigned 32-bit integer")
        })?;
        agree("ledger_index", &mut found.ledger_index, v)?;
    }
    for name in ["total_coins", "totalCoins"] {
        let v = opt(obj, name, |v| {
            uint_field(name, v, "an unsigned 64-bit integer")
        })?;
        agree("total_coins", &mut found.total_coins, v)?;
    }
    found.parent_hash = opt(obj, "parent_hash", |v| hash_field("parent_hash", v))?;
    found.transaction_hash = opt(obj, "transaction_hash", |v| {
        hash_field("transaction_hash", v)
    })?;
    found.account_hash = opt(obj, "account_hash", |v| hash_field("account_hash", v))?;
    found.parent_close_time = opt(obj, "parent_close_time", |v| {
        uint_field("parent_close_time", v, "an unsigned 32-bit integer")
    })?;
    found.close_time = opt(obj, "close_time", |v| {
        uint_field("close_time", v, "an unsigned 32-bit integer")
    })?;
    found.close_time_resolution = opt(obj, "close_time_resolution", |v| {
        uint_field("close_time_resolution", v, "an unsigned 8-bit integer")
    })?;
    found.close_flags = opt(obj, "close_flags", |v| {
        uint_field("close_flags", v, "an unsigned 8-bit integer")
    })?;
    for name in ["ledger_hash", "hash"] {
        let v = opt(obj, name, |v| hash_field(name, v))?;
        agree("ledger_hash", &mut found.ledger_hash, v)?;
    }
    if let Some(v) = get(obj, "ledger_data") {
        let Value::String(s) = v else {
            return Err(DumpError::FieldType {
                field: "ledger_data",
                expected: "a hex string",
            });
        };
        let bytes = decode_hex(s).map_err(|error| DumpError::FieldHex {
            field: "ledger_data",
            error,
        })?;
        let h = LedgerHeader::deserialize(&bytes)
            .ok_or(DumpError::HeaderLength { len: bytes.len() })?;
        found.merge_from(&HeaderFields::from_header(&h))?;
    }
    fields.merge_from(&found)
}

/// Applies `read` to member `name` when it is present.
fn opt<T>(
    obj: &Object,
    name: &str,
    read: impl FnOnce(&Value) -> Result<T, DumpError>,
) -> Result<Option<T>, DumpError> {
    get(obj, name).map(read).transpose()
}

/// An unsigned integer given as a JSON number or a string of decimal digits,
/// converted to `T`; `expected` names `T` in the error.
fn uint_field<T: TryFrom<u64>>(
    field: &'static str,
    v: &Value,
    expected: &'static str,
) -> Result<T, DumpError> {
    let n = match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
            s.parse().ok()
        }
        _ => None,
    };
    n.and_then(|n| T::try_from(n).ok())
        .ok_or(DumpError::FieldType { field, expected })
}

/// A 64-digit hex hash.
fn hash_field(field: &'static str, v: &Value) -> Result<Hash256, DumpError> {
    let Value::String(s) = v else {
        return Err(DumpError::FieldType {
            field,
            expected: "a hex string",
        });
    };
    Hash256::from_hex(s).map_err(|error| DumpError::FieldHex { field, error })
}

/// Reads the single list of `what` found among `places` (object, member
/// name, path for messages), or `None` when there is none.
fn one_list<T, const N: usize>(
    what: &'static str,
    places: [(Option<&Object>, &'static str, &'static str); N],
    read_entry: fn(&Value) -> Result<T, EntryProblem>,
) -> Result<Option<Vec<T>>, DumpError> {
    let mut found: Option<(&'static str, &'static str, &Value)> = None;
    for (obj, name, path) in places {
        let Some(v) = obj.and_then(|o| get(o, name)) else {
            continue;
        };
        if let Some((_, first, _)) = found {
            return Err(DumpError::DuplicateList {
                what,
                first,
                second: path,
            });
        }
        found = Some((name, path, v));
    }
    let Some((list, _, v)) = found else {
        return Ok(None);
    };
    let Value::Array(items) = v else {
        return Err(DumpError::FieldType {
            field: list,
            expected: "an array",
        });
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            read_entry(item).map_err(|problem| DumpError::Entry {
                list,
                index,
                problem,
            })
        })
        .collect::<Result<Vec<T>, DumpError>>()
        .map(Some)
}

/// The first of `names` that `obj` has, with its value.
fn first_of<'a>(obj: &'a Object, names: &[&'static str]) -> Option<(&'static str, &'a Value)> {
    names.iter().find_map(|&n| get(obj, n).map(|v| (n, v)))
}

/// Hex bytes of a string member.
fn hex_member(field: &'static str, v: &Value) -> Result<Vec<u8>, EntryProblem> {
    match v {
        Value::String(s) => decode_hex(s).map_err(|error| EntryProblem::Hex { field, error }),
        Value::Object(_) | Value::Array(_) => Err(EntryProblem::NotBinary),
        _ => Err(EntryProblem::NotString(field)),
    }
}

/// A 32-byte key or ID.
pub(crate) fn key_member(field: &'static str, v: &Value) -> Result<Key, EntryProblem> {
    let bytes = hex_member(field, v)?;
    Key::from_slice(&bytes).ok_or(EntryProblem::KeyLength {
        field,
        len: bytes.len(),
    })
}

pub(crate) fn read_state_entry(v: &Value) -> Result<StateEntry, EntryProblem> {
    let obj = match v {
        Value::Object(o) => o,
        Value::String(_) => return Err(EntryProblem::HashOnly),
        _ => return Err(EntryProblem::NotObject),
    };
    let Some((data_name, data)) = first_of(obj, &["data", "tx_blob"]) else {
        if obj.contains_key("LedgerEntryType") {
            let (key, data) = decoded::state_entry(obj)?;
            return Ok(StateEntry { key, data });
        }
        return Err(EntryProblem::Missing("data"));
    };
    let (key_name, key) =
        first_of(obj, &["index", "hash"]).ok_or(EntryProblem::Missing("index"))?;
    let key = key_member(key_name, key)?;
    if key.is_zero() {
        return Err(EntryProblem::ZeroKey { field: key_name });
    }
    let data = hex_member(data_name, data)?;
    Ok(StateEntry { key, data })
}

/// Where a transaction entry's transaction is.
enum TxSource<'a> {
    /// `tx_blob`, hex.
    Blob(&'a Value),
    /// API v2 `tx_json`, decoded.
    TxJson(&'a Value),
    /// API v1: the entry's own fields, decoded.
    Fields,
}

pub(crate) fn read_tx_entry(v: &Value) -> Result<TxEntry, EntryProblem> {
    let obj = match v {
        Value::Object(o) => o,
        Value::String(_) => return Err(EntryProblem::HashOnly),
        _ => return Err(EntryProblem::NotObject),
    };
    let source = if let Some(tx) = get(obj, "tx_blob") {
        TxSource::Blob(tx)
    } else if let Some(tx) = get(obj, "tx_json") {
        TxSource::TxJson(tx)
    } else if obj.contains_key("TransactionType") {
        TxSource::Fields
    } else {
        return Err(EntryProblem::Missing("tx_blob"));
    };
    let metas = ["meta", "meta_blob", "metaData"];
    let (meta_name, meta) = first_of(obj, &metas).ok_or(EntryProblem::Missing("meta"))?;
    // How a decoded entry is named in errors: by its `hash` when readable.
    let claimed = get(obj, "hash")
        .and_then(Value::as_str)
        .and_then(|h| Hash256::from_hex(h).ok());
    let name = |id: Option<Hash256>| match id {
        Some(h) => format!("transaction {h}"),
        None => "transaction".to_owned(),
    };
    let tx = match source {
        TxSource::Blob(tx) => hex_member("tx_blob", tx)?,
        TxSource::TxJson(tx) => {
            decoded::check_wrapper(obj, &name(claimed))?;
            let Value::Object(fields) = tx else {
                return Err(EntryProblem::Field {
                    entry: name(claimed),
                    error: FieldError::new("tx_json", FieldProblem::Shape("an object")),
                });
            };
            decoded::transaction(fields, true, &name(claimed))?
        }
        TxSource::Fields => decoded::transaction(obj, false, &name(claimed))?,
    };
    let meta = match meta {
        Value::Object(fields) => {
            let entry = name(claimed.or_else(|| Some(transaction_id(&tx))));
            if metas.iter().filter(|&&m| get(obj, m).is_some()).count() > 1 {
                return Err(EntryProblem::Field {
                    entry,
                    error: FieldError::new(
                        meta_name,
                        FieldProblem::Inconsistent(
                            "is one of several metadata members (meta, meta_blob, metaData)"
                                .to_owned(),
                        ),
                    ),
                });
            }
            decoded::metadata(fields, meta_name, &entry)?
        }
        other => hex_member(meta_name, other)?,
    };
    let claimed = get(obj, "hash")
        .map(|h| key_member("hash", h).map(Hash256::from))
        .transpose()?;
    match source {
        TxSource::Blob(_) => {
            if let Some(claimed) = claimed {
                let computed = transaction_id(&tx);
                if claimed != computed {
                    return Err(EntryProblem::IdMismatch { computed });
                }
            }
        }
        TxSource::TxJson(_) | TxSource::Fields => decoded::check_id(claimed, &tx)?,
    }
    Ok(TxEntry { tx, meta })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEDGER_38129: &[u8] = include_bytes!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/ledger-38129.json"
    ));
    const TESTNET_42089779: &[u8] = include_bytes!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/ledger-testnet-42089779.json"
    ));

    const KEY1: &str = "02CE52E3E46AD340B1C7900F86AFB959AE0C246916E3463905EDD61DE26FFFDD";
    const KEY2: &str = "032d4205b5d7dcec8a4e56851c44555f6dc7d410aa823ae140c78674b8734dbf";
    const H_A: &str = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    const H_B: &str = "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB";

    fn parse_str(s: &str) -> Result<LedgerDump, DumpError> {
        parse(s.as_bytes())
    }

    fn err(s: &str) -> String {
        match parse_str(s) {
            Ok(d) => panic!("expected an error, parsed {d:?}"),
            Err(e) => e.to_string(),
        }
    }

    fn header() -> LedgerHeader {
        LedgerHeader {
            seq: 38129,
            total_coins: 99_999_999_999_996_310,
            parent_hash: Hash256([1; 32]),
            transaction_hash: Hash256([2; 32]),
            account_hash: Hash256([3; 32]),
            parent_close_time: 410_424_200,
            close_time: 410_424_210,
            close_time_resolution: 10,
            close_flags: 1,
        }
    }

    #[test]
    fn ledger_38129_has_261_state_entries_one_transaction_and_a_full_header() {
        let d = parse(LEDGER_38129).expect("shipped data parses");
        assert_eq!(d.kind, DumpKind::Ledger);
        assert_eq!(d.state.as_ref().map(Vec::len), Some(261));
        assert_eq!(d.transactions.as_ref().map(Vec::len), Some(1));
        let h = d.header.complete_header().expect("header is complete");
        assert_eq!(h.seq, 38129);
        assert_eq!(h.total_coins, 99_999_999_999_996_310);
        assert_eq!(
            d.header.ledger_hash.map(|h| h.to_hex()).as_deref(),
            Some("E6DB7365949BF9814D76BCC730B01818EB9136A89DB224F3F9F5AAE4569D758E")
        );
        // The header's own values hash to the claimed ledger hash.
        assert_eq!(Some(h.hash()), d.header.ledger_hash);
        assert_eq!(
            d.state
                .as_ref()
                .and_then(|s| s.first())
                .map(|e| e.key.to_hex()),
            Some(KEY1.to_owned())
        );
    }

    #[test]
    fn testnet_fixture_has_ten_transactions_and_a_header_object() {
        let d = parse(TESTNET_42089779).expect("shipped data parses");
        assert_eq!(d.kind, DumpKind::Ledger);
        assert!(d.state.is_none());
        assert_eq!(d.transactions.as_ref().map(Vec::len), Some(10));
        let h = d.header.complete_header().expect("header is complete");
        assert_eq!(h.seq, 42_089_779);
        assert_eq!(h.close_time, 750_773_461);
        assert_eq!(Some(h.hash()), d.header.ledger_hash);
        assert_eq!(
            d.header.transaction_hash.map(|h| h.to_hex()).as_deref(),
            Some("A9BB9AA12E16175C714677CB8A9557D29F3E506C7A1A92997CA57A0DCB3EBEE1")
        );
    }

    #[test]
    fn ledger_response_under_result_with_binary_header_and_api_v2_fields() {
        let hex = shamap::hash::encode_hex_upper(&header().serialize());
        let tx = "120000";
        let id = transaction_id(&[0x12, 0, 0]);
        let json = format!(
            r#"{{"result": {{"ledger": {{"closed": true, "ledger_data": "{hex}",
                 "accountState": [{{"hash": "{KEY1}", "tx_blob": "11006122"}}],
                 "transactions": [{{"tx_blob": "{tx}", "meta_blob": "0102", "hash": "{id}"}}]}},
               "ledger_hash": "{H_A}", "ledger_index": 38129, "validated": true, "status": "success"}}}}"#
        );
        let d = parse_str(&json).expect("parses");
        assert_eq!(d.kind, DumpKind::Ledger);
        assert_eq!(d.header.complete_header(), Some(header()));
        assert_eq!(d.header.ledger_hash, Some(Hash256([0xAA; 32])));
        let state = d.state.expect("state present");
        assert_eq!(state[0].data, [0x11, 0x00, 0x61, 0x22]);
        let txs = d.transactions.expect("transactions present");
        assert_eq!(
            txs,
            [TxEntry {
                tx: vec![0x12, 0, 0],
                meta: vec![1, 2]
            }]
        );
    }

    #[test]
    fn ledger_object_under_ledger_with_json_header_fields() {
        let json = format!(
            r#"{{"ledger": {{"ledger_index": "7", "total_coins": 100, "parent_hash": "{H_A}",
                 "transaction_hash": "{H_B}", "account_hash": "{H_A}", "parent_close_time": 1,
                 "close_time": 2, "close_time_resolution": 10, "close_flags": 0, "hash": "{H_B}",
                 "accountState": [{{"index": "{KEY2}", "data": ""}}], "transactions": []}}}}"#
        );
        let d = parse_str(&json).expect("parses");
        let h = d.header.complete_header().expect("complete");
        assert_eq!((h.seq, h.total_coins, h.close_time), (7, 100, 2));
        assert_eq!(d.header.ledger_hash, Some(Hash256([0xBB; 32])));
        // Lower-case hex and empty data are accepted.
        assert_eq!(d.state.expect("state")[0].data, Vec::<u8>::new());
        assert_eq!(d.transactions, Some(vec![]));
    }

    #[test]
    fn bare_ledger_object_at_top_level() {
        let json = format!(
            r#"{{"ledger_index": 5, "accountState": [{{"index": "{KEY1}", "data": "00"}}]}}"#
        );
        let d = parse_str(&json).expect("parses");
        assert_eq!(d.header.ledger_index, Some(5));
        assert_eq!(d.header.missing_fields().len(), 8);
        assert!(d.transactions.is_none());
    }

    #[test]
    fn ledger_data_page_with_binary_header_and_marker() {
        let hex = shamap::hash::encode_hex_upper(&header().serialize());
        let json = format!(
            r#"{{"result": {{"ledger_index": 38129, "ledger_hash": "{H_A}", "marker": "{KEY2}",
                 "ledger": {{"closed": true, "ledger_data": "{hex}"}},
                 "state": [{{"index": "{KEY1}", "data": "AB"}}, {{"index": "{KEY2}", "data": "cd"}}]}}}}"#
        );
        let d = parse_str(&json).expect("parses");
        assert_eq!(d.kind, DumpKind::LedgerDataPage);
        assert_eq!(d.header.complete_header(), Some(header()));
        assert_eq!(d.state.as_ref().map(Vec::len), Some(2));
        assert_eq!(d.marker.as_deref(), Some(KEY2));
    }

    #[test]
    fn ledger_data_page_at_top_level_without_header() {
        let json =
            format!(r#"{{"ledger_index": 9, "state": [{{"index": "{KEY1}", "data": "AB"}}]}}"#);
        let d = parse_str(&json).expect("parses");
        assert_eq!(d.kind, DumpKind::LedgerDataPage);
        assert_eq!(d.header.ledger_index, Some(9));
        assert!(d.marker.is_none());
    }

    fn page(index: u32, key: &str, marker: Option<&str>) -> LedgerDump {
        let marker = marker
            .map(|m| format!(r#", "marker": "{m}""#))
            .unwrap_or_default();
        parse_str(&format!(
            r#"{{"ledger_index": {index}, "state": [{{"index": "{key}", "data": "AB"}}]{marker}}}"#
        ))
        .expect("page parses")
    }

    #[test]
    fn merge_concatenates_pages_of_one_ledger() {
        let m = merge([page(9, KEY1, Some("x")), page(9, KEY2, None)]).expect("same ledger");
        assert_eq!(m.pending_marker(), None);
        let keys: Vec<String> = m
            .state
            .expect("state")
            .iter()
            .map(|e| e.key.to_hex())
            .collect();
        assert_eq!(keys, [KEY1.to_owned(), KEY2.to_uppercase()]);
        assert!(m.marker.is_none(), "the last page has no marker");
        let all_markers =
            merge([page(9, KEY1, Some("x")), page(9, KEY2, Some("y"))]).expect("same ledger");
        assert_eq!(all_markers.marker.as_deref(), Some("y"));
        assert_eq!(all_markers.pending_marker(), Some("y"));
        assert_eq!(page(9, KEY1, Some("x")).pending_marker(), Some("x"));
    }

    #[test]
    fn merge_rejects_pages_of_different_ledgers_and_empty_input() {
        let e = merge([page(9, KEY1, None), page(10, KEY2, None)]).expect_err("different ledgers");
        assert_eq!(
            e.to_string(),
            "pages are from different ledgers: ledger 9 and ledger 10"
        );
        assert_eq!(merge(Vec::new()), Err(DumpError::NothingToMerge));
    }

    #[test]
    fn merge_rejects_conflicting_header_fields() {
        let a = parse_str(r#"{"ledger_index": 1, "close_time": 5, "state": []}"#).expect("parses");
        let b = parse_str(r#"{"ledger_index": 1, "close_time": 6, "state": []}"#).expect("parses");
        let e = merge([a, b]).expect_err("conflict");
        assert_eq!(
            e.to_string(),
            r#"conflicting values for "close_time": 5 and 6"#
        );
    }

    #[test]
    fn same_ledger_needs_a_shared_identifier() {
        let a = HeaderFields {
            ledger_index: Some(1),
            ..HeaderFields::default()
        };
        let b = HeaderFields {
            ledger_hash: Some(Hash256([1; 32])),
            ..HeaderFields::default()
        };
        assert!(a.same_ledger(&a));
        assert!(!a.same_ledger(&b));
        assert!(!HeaderFields::default().same_ledger(&HeaderFields::default()));
        let c = HeaderFields {
            ledger_index: Some(2),
            ..a
        };
        assert!(!a.same_ledger(&c));
    }

    #[test]
    fn header_with_roots_substitutes_and_names_missing_fields() {
        let mut f = HeaderFields::from_header(&header());
        f.account_hash = None;
        assert_eq!(f.complete_header(), None);
        assert_eq!(f.missing_fields(), ["account_hash"]);
        let h = f
            .header_with_roots(Some(Hash256([9; 32])), None)
            .expect("complete with root");
        assert_eq!(h.account_hash, Hash256([9; 32]));
        assert_eq!(h.transaction_hash, Hash256([2; 32]));
        assert_eq!(
            HeaderFields::default()
                .header_with_roots(None, None)
                .expect_err("empty")
                .len(),
            9
        );
    }

    #[test]
    fn entry_errors_name_list_index_and_field() {
        let bad_digit = format!(
            r#"{{"accountState": [{{"index": "{KEY1}", "data": "00"}}, {{"index": "{KEY2}", "data": "0011g2"}}]}}"#
        );
        assert_eq!(
            err(&bad_digit),
            r#"accountState entry 1: bad hex digit at position 4 in "data""#
        );
        let odd = format!(r#"{{"state": [{{"index": "{KEY1}", "data": "001"}}]}}"#);
        assert_eq!(
            err(&odd),
            r#"state entry 0: odd number of hex digits (3) in "data""#
        );
        let short = format!(
            r#"{{"accountState": [{{"index": "{}", "data": "00"}}]}}"#,
            &KEY1[..62]
        );
        assert_eq!(
            err(&short),
            "accountState entry 0: index is 31 bytes, expected 32"
        );
        let zero = format!(
            r#"{{"accountState": [{{"index": "{}", "data": "00"}}]}}"#,
            "0".repeat(64)
        );
        assert_eq!(
            err(&zero),
            "accountState entry 0: index is all zeros, which rippled rejects as a key"
        );
        assert_eq!(
            err(r#"{"accountState": [{"data": "00"}]}"#),
            r#"accountState entry 0: missing "index""#
        );
        assert_eq!(
            err(&format!(r#"{{"accountState": [{{"index": "{KEY1}"}}]}}"#)),
            r#"accountState entry 0: missing "data""#
        );
        assert_eq!(
            err(&format!(
                r#"{{"accountState": [{{"index": "{KEY1}", "data": 5}}]}}"#
            )),
            r#"accountState entry 0: "data" is not a string"#
        );
        assert_eq!(
            err(r#"{"accountState": [7]}"#),
            "accountState entry 0: is not a JSON object"
        );
        assert_eq!(
            err(r#"{"accountState": {}}"#),
            r#"field "accountState" is not an array"#
        );
    }

    #[test]
    fn transaction_errors() {
        assert_eq!(
            err(r#"{"transactions": [{"tx_blob": "00"}]}"#),
            r#"transactions entry 0: missing "meta""#
        );
        assert_eq!(
            err(r#"{"transactions": [{"meta": "00"}]}"#),
            r#"transactions entry 0: missing "tx_blob""#
        );
        assert_eq!(
            err(r#"{"transactions": [{"tx_blob": "00", "meta_blob": "0x"}]}"#),
            r#"transactions entry 0: bad hex digit at position 1 in "meta_blob""#
        );
        let wrong_id =
            format!(r#"{{"transactions": [{{"tx_blob": "00", "meta": "00", "hash": "{H_A}"}}]}}"#);
        let e = err(&wrong_id);
        assert!(
            e.starts_with(r#"transactions entry 0: "hash" is not the transaction ID"#),
            "{e}"
        );
    }

    /// Decoded JSON used to be refused ("request it with binary: true");
    /// it is now encoded with the XRPL codec. Only a hex member that holds
    /// JSON, and hashes without `expand`, still say what to request.
    #[test]
    fn decoded_entries_are_encoded_and_non_expanded_dumps_say_what_to_request() {
        let json_state =
            format!(r#"{{"state": [{{"index": "{KEY1}", "LedgerEntryType": "AccountRoot"}}]}}"#);
        let state = parse_str(&json_state).expect("decoded state entry").state;
        assert_eq!(
            state,
            Some(vec![StateEntry {
                key: Key::from_hex(KEY1).expect("key"),
                data: vec![0x11, 0x00, 0x61],
            }])
        );
        let tx = |json: &str| -> TxEntry {
            let txs = parse_str(json).expect("decoded transaction").transactions;
            txs.and_then(|t| t.into_iter().next())
                .expect("one transaction")
        };
        let json_tx =
            r#"{"ledger": {"transactions": [{"TransactionType": "Payment", "metaData": {}}]}}"#;
        assert_eq!(
            tx(json_tx),
            TxEntry {
                tx: vec![0x12, 0x00, 0x00],
                meta: vec![],
            }
        );
        let v2_json_tx = r#"{"transactions": [{"tx_json": {}, "meta": {}}]}"#;
        assert_eq!(
            tx(v2_json_tx),
            TxEntry {
                tx: vec![],
                meta: vec![]
            }
        );
        let meta_object =
            r#"{"transactions": [{"tx_blob": "00", "meta": {"TransactionIndex": 7}}]}"#;
        assert_eq!(
            tx(meta_object),
            TxEntry {
                tx: vec![0x00],
                meta: vec![0x20, 0x1C, 0, 0, 0, 7],
            }
        );
        let json_in_hex_member = format!(r#"{{"state": [{{"index": "{KEY1}", "data": {{}}}}]}}"#);
        assert_eq!(
            err(&json_in_hex_member),
            r#"state entry 0: is decoded JSON, not hex; request it with "binary": true"#
        );
        let hashes_only = format!(r#"{{"ledger": {{"accountState": ["{KEY1}"]}}}}"#);
        assert_eq!(
            err(&hashes_only),
            r#"accountState entry 0: is only a hash; request the ledger with "expand": true and "binary": true"#
        );
    }

    #[test]
    fn header_field_errors() {
        assert_eq!(
            err(r#"{"ledger": {"close_time": 4294967296}}"#),
            r#"field "close_time" is not an unsigned 32-bit integer"#
        );
        assert_eq!(
            err(r#"{"ledger": {"close_time": -1}}"#),
            r#"field "close_time" is not an unsigned 32-bit integer"#
        );
        assert_eq!(
            err(r#"{"ledger": {"close_flags": 256}}"#),
            r#"field "close_flags" is not an unsigned 8-bit integer"#
        );
        assert_eq!(
            err(r#"{"ledger": {"close_time_resolution": 1.5}}"#),
            r#"field "close_time_resolution" is not an unsigned 8-bit integer"#
        );
        assert_eq!(
            err(r#"{"ledger": {"total_coins": "18446744073709551616"}}"#),
            r#"field "total_coins" is not an unsigned 64-bit integer"#
        );
        assert_eq!(
            err(r#"{"ledger": {"ledger_index": "+5"}}"#),
            r#"field "ledger_index" is not an unsigned 32-bit integer"#
        );
        assert_eq!(
            err(r#"{"ledger": {"parent_hash": "00"}}"#),
            r#"field "parent_hash": expected 64 hex digits, found 2"#
        );
        assert_eq!(
            err(r#"{"ledger": {"account_hash": 1}}"#),
            r#"field "account_hash" is not a hex string"#
        );
        assert_eq!(
            err(r#"{"ledger": {"ledger_data": "0011"}}"#),
            "field \"ledger_data\" holds 2 bytes, expected a 118-byte ledger header"
        );
        assert_eq!(
            err(r#"{"ledger": 5}"#),
            r#"field "ledger" is not a JSON object"#
        );
        let total =
            parse_str(r#"{"ledger": {"total_coins": "18446744073709551615"}}"#).expect("u64::MAX");
        assert_eq!(total.header.total_coins, Some(u64::MAX));
    }

    #[test]
    fn conflicting_header_values_are_rejected() {
        assert_eq!(
            err(r#"{"result": {"ledger_index": 5, "ledger": {"ledger_index": "6"}}}"#),
            r#"conflicting values for "ledger_index": 6 and 5"#
        );
        let binary_vs_field = format!(
            r#"{{"ledger": {{"ledger_data": "{}", "close_time": 1}}}}"#,
            shamap::hash::encode_hex_upper(&header().serialize())
        );
        assert!(err(&binary_vs_field).starts_with(r#"conflicting values for "close_time""#));
        assert_eq!(
            err(r#"{"ledger": {"accountState": []}, "accountState": []}"#),
            r#"both "ledger.accountState" and "accountState" are present; expected one state list"#
        );
    }

    #[test]
    fn server_errors_are_quoted() {
        let rpc = r#"{"result": {"error": "lgrNotFound", "error_code": 21, "error_message": "ledgerNotFound", "status": "error"}}"#;
        assert_eq!(
            err(rpc),
            r#"server returned an error: "lgrNotFound": "ledgerNotFound""#
        );
        let ws = r#"{"type": "response", "status": "error", "error": "invalidParams"}"#;
        assert_eq!(err(ws), r#"server returned an error: "invalidParams""#);
        let multiline = "{\"error\": \"a\\nb\"}";
        assert_eq!(err(multiline), r#"server returned an error: "a\nb""#);
        let long = format!(r#"{{"error": "{}"}}"#, "x".repeat(1000));
        assert!(err(&long).chars().count() < 260);
    }

    #[test]
    fn input_level_errors() {
        assert_eq!(err(""), "empty input");
        assert_eq!(err(" \n\t"), "empty input");
        assert_eq!(err("[1, 2]"), "the top-level JSON value is not an object");
        assert_eq!(err("{}"), "no ledger header, state or transactions found");
        assert_eq!(
            err(r#"{"server": "x"}"#),
            "no ledger header, state or transactions found"
        );
        let e = err("{\n  \"ledger\": {\n  \"a\": ]");
        assert!(e.starts_with("invalid JSON at line 3 column 8: "), "{e}");
        assert!(!e.contains('\n'));
        let truncated = &LEDGER_38129[..LEDGER_38129.len() / 2];
        assert!(matches!(parse(truncated), Err(DumpError::Json { .. })));
        assert!(matches!(parse(b"\xFF\xFE"), Err(DumpError::Json { .. })));
    }

    #[test]
    fn byte_order_mark_and_nulls_are_tolerated() {
        let mut with_bom = b"\xEF\xBB\xBF".to_vec();
        with_bom.extend_from_slice(br#"{"ledger_index": 3, "ledger_hash": null}"#);
        let d = parse(&with_bom).expect("BOM skipped");
        assert_eq!(d.header.ledger_index, Some(3));
        assert_eq!(d.header.ledger_hash, None);
    }

    #[test]
    fn every_prefix_of_real_data_is_an_error_not_a_panic() {
        for cut in (0..LEDGER_38129.len()).step_by(997) {
            assert!(
                parse(&LEDGER_38129[..cut]).is_err(),
                "prefix of {cut} bytes"
            );
        }
    }

    /// The fast path answers for the shipped dumps (so it is not simply
    /// declining everything), with what the full parse gives.
    #[test]
    fn fast_path_reads_the_shipped_dumps() {
        for input in [LEDGER_38129, TESTNET_42089779] {
            let fast = super::fast::parse(input).expect("the fast path answers");
            assert_eq!(Ok(fast), parse_dom(input));
        }
    }

    /// Scalar members beside the hex ones (numbers among them) keep an
    /// entry on the fast path, whatever serde_json's number features: the
    /// XRPL codec's dependencies switch on `arbitrary_precision`, under
    /// which a number read through `deserialize_any` is a map.
    #[test]
    fn fast_path_answers_for_entries_with_scalar_members() {
        let doc = format!(
            r#"{{"ledger_index": 5, "accountState": [{{"index": "{KEY1}", "data": "AB",
                "n": 15, "f": -1.5e3, "big": 1e400, "t": true, "s": "x", "z": null}}]}}"#
        );
        let fast = super::fast::parse(doc.as_bytes()).expect("the fast path answers");
        assert_eq!(Ok(fast), parse_dom(doc.as_bytes()));
    }

    /// Variants around every rule the fast path must follow or decline on:
    /// `parse` (fast path first) always equals `parse_dom`.
    #[test]
    fn fast_path_agrees_with_the_full_parse() {
        let id = transaction_id(&[0x12, 0, 0]).to_hex();
        let deep = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
        let entries = [
            format!(r#"{{"index": "{KEY1}", "data": "AB"}}"#),
            format!(r#"{{"hash": "{KEY1}", "tx_blob": "AB", "extra": 1.5e3, "flag": true}}"#),
            format!(r#"{{"index": "{KEY1}", "data": null, "tx_blob": "AB"}}"#),
            format!(r#"{{"index": "{KEY1}", "data": "AB", "data": null}}"#),
            format!(r#"{{"index": "{KEY1}", "data": "AB", "index": "{KEY2}"}}"#),
            format!(r#"{{"index": "{KEY1}", "data": "A\u0042"}}"#),
            format!(r#"{{"ind\u0065x": "{KEY1}", "data": "AB"}}"#),
            format!(r#"{{"index": "{KEY1}", "data": "AB", "junk": {{"a": 1}}}}"#),
            format!(
                r#"{{"index": "{KEY1}", "data": "AB", "junk": {}}}"#,
                deep(130)
            ),
            format!(r#"{{"index": "{KEY1}", "data": 12}}"#),
            format!(r#"{{"index": "{KEY1}"}}"#),
            format!(r#"{{"index": "{KEY1}", "LedgerEntryType": "AccountRoot"}}"#),
            format!(r#"{{"index": "{}", "data": "AB"}}"#, "0".repeat(64)),
            format!(r#"{{"index": "{}", "data": "AB"}}"#, &KEY1[..62]),
            format!(r#"{{"index": "0x{}", "data": "AB"}}"#, &KEY1[2..]),
            format!(r#"{{"index": "{KEY1}", "data": "ABC"}}"#),
            format!(r#""{KEY1}""#),
            "[]".to_owned(),
            "7".to_owned(),
            format!(r#"{{"index": "{KEY1}", "LedgerEntryType": "AccountRoot", "Flags": 0}}"#),
            format!(r#"{{"index": "{KEY1}", "LedgerEntryType": "AccountRoot", "Foo": 1}}"#),
            format!(
                r#"{{"index": "{KEY1}", "LedgerEntryType": "DirectoryNode", "Indexes": ["{KEY2}"]}}"#
            ),
        ];
        let txs = [
            format!(r#"{{"tx_blob": "120000", "meta": "01", "hash": "{id}"}}"#),
            r#"{"tx_blob": "120000", "meta_blob": "01"}"#.to_owned(),
            format!(r#"{{"tx_blob": "120000", "meta": "01", "hash": "{H_A}"}}"#),
            r#"{"tx_blob": "120000", "metaData": {}}"#.to_owned(),
            r#"{"tx_json": {}, "meta": "01"}"#.to_owned(),
            r#"{"tx_blob": "120000", "meta": null, "meta_blob": "01"}"#.to_owned(),
            r#"{"TransactionType": "Payment", "Flags": 0, "metaData": {"TransactionIndex": 0}}"#
                .to_owned(),
            r#"{"tx_json": {"TransactionType": "Payment"}, "meta": {}, "validated": true}"#
                .to_owned(),
            r#"{"tx_blob": "120000", "meta": {"TransactionIndex": 0}, "metaData": {}}"#.to_owned(),
        ];
        let mut docs = Vec::new();
        for e in &entries {
            for shape in [
                "{\"ledger\": {\"accountState\": [@]}}",
                "{\"result\": {\"ledger\": {\"accountState\": [@]}, \"status\": \"success\"}}",
                "{\"accountState\": [@], \"ledger_index\": 5}",
                "{\"result\": {\"state\": [@], \"ledger_index\": 5, \"marker\": \"AB\"}}",
                "{\"accountState\": [@], \"result\": {\"ledger_index\": 5}}",
            ] {
                docs.push(shape.replace('@', e));
            }
            docs.push(format!(r#"{{"ledger": {{"accountState": [{e}, {e}]}}}}"#));
        }
        for t in &txs {
            docs.push(format!(r#"{{"ledger": {{"transactions": [{t}]}}}}"#));
            docs.push(format!(
                r#"{{"header": {{"ledger_index": 1}}, "transactions": [{t}]}}"#
            ));
        }
        let e = &entries[0];
        docs.extend([
            format!(r#"{{"ledger": {{"accountState": [{e}]}}, "accountState": [{e}]}}"#),
            format!(r#"{{"accountState": [{e}], "state": [{e}]}}"#),
            format!(r#"{{"accountState": [{e}], "accountState": 5}}"#),
            format!(r#"{{"accountState": 5, "accountState": [{e}]}}"#),
            format!(r#"{{"accountState": {{"0": {e}}}}}"#),
            r#"{"accountState": null, "ledger_index": 3}"#.to_owned(),
            r#"{"accountState": [], "ledger_index": 3}"#.to_owned(),
            format!(r#"{{"accountState": [{e}], "error": "lgrNotFound"}}"#),
            format!(r#"{{"result": {{"accountState": [{e}], "status": "error"}}}}"#),
            format!(r#"{{"accountState": [{e}], "x": {}}}"#, deep(100)),
            format!(r#"{{"accountState": [{e}], "x": {}}}"#, deep(127)),
            format!(r#"{{"accountState": [{e}], "x": {}}}"#, deep(130)),
            format!(r#"{{"accountState": [{e}], "x": "[[[[\"\\"}}"#),
            format!(r#"{{"accountState": [{e}]}} trailing"#),
            format!(r#"{{"accountState": [{e}],}}"#),
            format!(r#"{{"ledger": [], "accountState": [{e}]}}"#),
            format!(r#"{{"ledger": {{"ledger": {{"accountState": [{e}]}}}}}}"#),
            format!(r#"{{"result": {{"result": {{"accountState": [{e}]}}}}}}"#),
            format!(r#"{{"result": 5, "accountState": [{e}]}}"#),
            format!(r#"{{"ledger": {{"accountState": [{e}], "ledger_index": "x"}}}}"#),
            format!(r#"{{"ledger_index": 38129, "accountState": [{e}], "seqNum": "38130"}}"#),
            "[1, 2]".to_owned(),
            "{\"accountState\": [".to_owned(),
        ]);
        let mut answered = 0;
        for doc in &docs {
            assert_eq!(parse(doc.as_bytes()), parse_dom(doc.as_bytes()), "{doc}");
            answered += usize::from(super::fast::parse(doc.as_bytes()).is_some());
        }
        // Not a test of declining alone: the common forms are answered.
        assert!(
            answered >= 40,
            "fast path answered {answered} of {}",
            docs.len()
        );
        // Two byte-order marks: only the first is skipped, by either path
        // (found by the fuzz target: the fallback skipped a second one).
        let twice = b"\xEF\xBB\xBF\xEF\xBB\xBF{\"ledger_index\": 1}";
        assert_eq!(parse(twice), parse_dom(twice));
        let mut bad_utf8 = docs[0].clone().into_bytes();
        bad_utf8.insert(bad_utf8.len() - 2, 0xFF);
        assert_eq!(parse(&bad_utf8), parse_dom(&bad_utf8));
    }

    /// Seeded random damage to a real dump: byte flips, insertions and
    /// cuts, each read both ways.
    #[test]
    fn fast_path_agrees_on_damaged_dumps() {
        use rand::{rngs::SmallRng, Rng, SeedableRng};
        let seed = 0x0064_756d;
        let mut rng = SmallRng::seed_from_u64(seed);
        let pieces: &[&[u8]] = &[
            b"\"", b"\\", b"[", b"]", b"{", b"}", b",", b":", b"null", b"0", b"x",
        ];
        for round in 0..400 {
            let mut doc = LEDGER_38129.to_vec();
            for _ in 0..rng.gen_range(1..4) {
                let at = rng.gen_range(0..doc.len());
                match rng.gen_range(0..3) {
                    0 => doc[at] = rng.gen(),
                    1 => {
                        let p = pieces[rng.gen_range(0..pieces.len())];
                        doc.splice(at..at, p.iter().copied());
                    }
                    _ => doc.truncate(at.max(1)),
                }
            }
            assert_eq!(parse(&doc), parse_dom(&doc), "seed {seed} round {round}");
        }
    }
}
