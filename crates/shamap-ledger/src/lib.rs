//! # shamap-ledger
//!
//! Reading XRP Ledger ledgers as users have them, into what the
//! [`shamap`] engine takes: state entries, transactions with their
//! metadata, and header fields, as bytes and hashes.
//!
//! Today that is [`dump`]: the JSON `ledger` and `ledger_data` responses
//! that rippled and Clio emit, binary (`"binary": true`) or decoded, read
//! into a [`LedgerDump`] by [`parse`] and joined page by page with
//! [`merge`]. Decoded entries are encoded to rippled's bytes by the XRPL
//! codec `xrpl-rust` behind a guard that refuses every field the codec would
//! drop ([`decoded`]); no other crate of the workspace uses the codec. The
//! engine itself needs no JSON library.
//!
//! ```
//! let json = br#"{"ledger_index": 5, "accountState": [
//!     {"index": "02CE52E3E46AD340B1C7900F86AFB959AE0C246916E3463905EDD61DE26FFFDD",
//!      "data": "1100612200000000"}]}"#;
//! let dump = shamap_ledger::parse(json)?;
//! assert_eq!(dump.header.ledger_index, Some(5));
//! assert_eq!(dump.state.map(|s| s.len()), Some(1));
//! # Ok::<(), shamap_ledger::DumpError>(())
//! ```
//!
//! [`response`] writes a ledger back as rippled's binary `ledger` response
//! ([`response::write_ledger_response`]), which [`parse`] reads.
//!
//! [`verify`] builds a dump's state and transaction maps and checks their
//! roots and the ledger hash against the dump's claims, as `shamap verify`
//! does. [`map_stats`] is the report of `shamap stats` on a map (counts,
//! layout models, the advisor's pricing, its JSON), with the ledger-entry
//! types of [`entry_type`]; the Python module's `stats()` uses it too.
//!
//! What the engine itself needs of a ledger stays in [`shamap::xrpl`]: the
//! header and its hash ([`shamap::xrpl::LedgerHeader`]), transaction IDs
//! and the transaction+metadata leaf layout, VL encoding and wire nodes.

pub mod decoded;
pub mod dump;
pub mod entry;
pub mod entry_type;
pub mod error;
pub mod ledger_dump;
pub mod map_stats;
pub mod pages;
pub mod response;
pub mod result_code;
pub mod verify;

pub use dump::parse;
pub use error::{DumpError, EntryProblem, FieldError, FieldProblem};
pub use ledger_dump::{merge, DumpKind, HeaderFields, LedgerDump, StateEntry, TxEntry};
