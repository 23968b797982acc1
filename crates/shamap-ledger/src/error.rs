//! What goes wrong reading a ledger dump: the document ([`DumpError`]), one
//! entry of its lists ([`EntryProblem`]), or one field of a decoded entry
//! ([`FieldError`], [`FieldProblem`]). Each message is one line.

use std::fmt;

use shamap::hash::Hash256;
use shamap::xrpl::ledger::LEDGER_HEADER_LEN;
use shamap::ParseHexError;

/// The codec whose field definitions [`crate::decoded`] encodes by, as named
/// in messages.
pub const CODEC: &str = "xrpl-rust 1.3.0";

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
    /// [`merge`](crate::merge) was given dumps of different ledgers.
    #[error("pages are from different ledgers: {first} and {second}")]
    DifferentLedgers {
        /// The ledger of the pages merged so far.
        first: String,
        /// The ledger of the page that differs.
        second: String,
    },
    /// [`merge`](crate::merge) was given no dumps.
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
    #[error("is not a serialized field in the XRPL codec's definitions ({codec}), so it would be left out of the hash", codec = CODEC)]
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

/// `text` cut to its first `max` characters, with `…` after it when it
/// was longer: a value quoted in a message.
pub(crate) fn cut_to(text: String, max: usize) -> String {
    if text.chars().count() <= max {
        text
    } else {
        let mut cut: String = text.chars().take(max).collect();
        cut.push('…');
        cut
    }
}
