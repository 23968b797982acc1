//! Writing one ledger as rippled's `ledger` response with `binary`,
//! `expand`, `accounts` and `transactions` true: what [`crate::parse`]
//! reads back, and what `shamap export` and Python's `Store.export` write.
//!
//! The shapes are rippled's own (`LedgerToJson.cpp`: `fillJsonBinary`,
//! `fillJsonState`, `fillJsonTx`; `LedgerHandler.cpp` and
//! `RPCLedgerHelpers.cpp`'s `lookupLedger` for the fields beside `ledger`),
//! with the keys of every object in rippled's order (its JSON objects are
//! sorted maps), as a JSON-RPC response:
//!
//! ```text
//! {"result":{"ledger":{"accountState":[
//! {"hash":"<index>","tx_blob":"<entry>"},
//! ...],"closed":true,"ledger_data":"<118-byte header>","transactions":[
//! {"meta":"<metadata>","tx_blob":"<transaction>"},
//! ...]},"ledger_hash":"<hash>","ledger_index":<seq>,"status":"success","validated":<bool>}}
//! ```
//!
//! - A binary ledger carries its header as `ledger_data` only (no header
//!   fields); `ledger_index` beside it is a number.
//! - State entries in the order given (rippled walks the state map: key
//!   order), each its index as `hash` and its bytes as `tx_blob`;
//!   transactions likewise (ID order), each leaf's `VL(tx) ‖ VL(meta)`
//!   split into `tx_blob` and `meta`. With API version 2, each transaction
//!   is `{"hash", "meta_blob", "tx_blob"}`, as rippled writes for API v2.
//! - One entry per line; hex in upper case, as rippled writes it.
//!
//! Entries are written as they come (from iterators that may fail: a
//! stored map walked node by node), so a ledger of any size takes the
//! memory of one entry.

use std::io::{self, Write};

use shamap::xrpl::tx::split_tx_with_meta;
use shamap::xrpl::LedgerHeader;
use shamap::{Hash256, Key};

/// How [`write_ledger_response`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResponseOptions {
    /// rippled's API version of the transactions: 1 (`meta`, `tx_blob`)
    /// or 2 (`hash`, `meta_blob`, `tx_blob`).
    pub api_version: u8,
    /// The response's `validated`: true only when the writer knows the
    /// ledger was validated (a node store alone cannot say so).
    pub validated: bool,
}

impl Default for ResponseOptions {
    fn default() -> Self {
        ResponseOptions {
            api_version: 1,
            validated: false,
        }
    }
}

/// Why [`write_ledger_response`] stopped.
#[derive(Debug)]
pub enum ResponseError<E> {
    /// Writing failed.
    Io(io::Error),
    /// An entry could not be read (the iterator's error).
    Read(E),
    /// A transaction leaf whose data is not `VL(tx) ‖ VL(meta)`.
    TxLeaf {
        /// The transaction's ID (its key).
        key: Key,
        /// What is wrong with its data.
        error: String,
    },
}

impl<E> From<io::Error> for ResponseError<E> {
    fn from(e: io::Error) -> Self {
        ResponseError::Io(e)
    }
}

/// Writes the ledger `hash` (its `header`, its state entries and its
/// transactions, as `(key, leaf data)`) to `w` as rippled's `ledger`
/// response (see the module docs). What was written before an error stays
/// written.
pub fn write_ledger_response<E>(
    w: &mut dyn Write,
    hash: &Hash256,
    header: &LedgerHeader,
    state: impl IntoIterator<Item = Result<(Key, Vec<u8>), E>>,
    transactions: impl IntoIterator<Item = Result<(Key, Vec<u8>), E>>,
    opts: &ResponseOptions,
) -> Result<(), ResponseError<E>> {
    let mut hex = Vec::new();
    w.write_all(b"{\"result\":{\"ledger\":{\"accountState\":[")?;
    let mut first = true;
    for item in state {
        let (key, data) = item.map_err(ResponseError::Read)?;
        w.write_all(if first { b"\n" } else { b",\n" })?;
        first = false;
        w.write_all(b"{\"hash\":\"")?;
        write_hex(w, &mut hex, key.as_bytes())?;
        w.write_all(b"\",\"tx_blob\":\"")?;
        write_hex(w, &mut hex, &data)?;
        w.write_all(b"\"}")?;
    }
    w.write_all(b"\n],\"closed\":true,\"ledger_data\":\"")?;
    write_hex(w, &mut hex, &header.serialize())?;
    w.write_all(b"\",\"transactions\":[")?;
    let mut first = true;
    for item in transactions {
        let (key, data) = item.map_err(ResponseError::Read)?;
        let (tx, meta) = split_tx_with_meta(&data).map_err(|e| ResponseError::TxLeaf {
            key,
            error: e.to_string(),
        })?;
        w.write_all(if first { b"\n" } else { b",\n" })?;
        first = false;
        if opts.api_version >= 2 {
            w.write_all(b"{\"hash\":\"")?;
            write_hex(w, &mut hex, key.as_bytes())?;
            w.write_all(b"\",\"meta_blob\":\"")?;
        } else {
            w.write_all(b"{\"meta\":\"")?;
        }
        write_hex(w, &mut hex, meta)?;
        w.write_all(b"\",\"tx_blob\":\"")?;
        write_hex(w, &mut hex, tx)?;
        w.write_all(b"\"}")?;
    }
    write!(
        w,
        "\n]}},\"ledger_hash\":\"{}\",\"ledger_index\":{},\"status\":\"success\",\"validated\":{}}}}}\n",
        hash, header.seq, opts.validated
    )?;
    Ok(())
}

/// Writes `bytes` as upper-case hex, through `buf` (reused).
fn write_hex(w: &mut dyn Write, buf: &mut Vec<u8>, bytes: &[u8]) -> io::Result<()> {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    buf.clear();
    buf.reserve(bytes.len() * 2);
    for b in bytes {
        buf.push(DIGITS[usize::from(b >> 4)]);
        buf.push(DIGITS[usize::from(b & 15)]);
    }
    w.write_all(buf)
}

#[cfg(test)]
mod tests {
    use shamap::xrpl::tx::tx_with_meta_item;

    use super::*;
    use crate::dump::tests::header;
    use crate::dump::{parse, StateEntry, TxEntry};

    /// What the response holds, written and read back by the dump reader.
    fn round_trip(api_version: u8) {
        let h = header();
        let state = [
            StateEntry {
                key: Key([0x11; 32]),
                data: vec![0x11, 0x00, 0x61, 0xAB],
            },
            StateEntry {
                key: Key([0xEE; 32]),
                data: vec![0x11, 0x00, 0x72],
            },
        ];
        let txs = [
            TxEntry {
                tx: vec![0x12, 0x00, 0x00, 0x24],
                meta: vec![0x20, 0x1C, 0x00],
            },
            TxEntry {
                tx: vec![0x12, 0x00, 0x03],
                meta: vec![0xE0, 0xF1],
            },
        ];
        let leaves: Vec<Result<(Key, Vec<u8>), ()>> = txs
            .iter()
            .map(|t| Ok(tx_with_meta_item(&t.tx, &t.meta).expect("short blobs")))
            .collect();
        let mut out = Vec::new();
        let opts = ResponseOptions {
            api_version,
            validated: true,
        };
        write_ledger_response(
            &mut out,
            &h.hash(),
            &h,
            state.iter().map(|e| Ok::<_, ()>((e.key, e.data.clone()))),
            leaves,
            &opts,
        )
        .expect("written");
        let text = String::from_utf8(out).expect("UTF-8");
        assert!(
            text.contains("\"tx_blob\":\"110061AB\""),
            "hex in upper case: {text}"
        );
        let dump = parse(text.as_bytes()).expect("read back");
        assert_eq!(dump.header.ledger_index, Some(h.seq));
        assert_eq!(dump.header.account_hash, Some(h.account_hash));
        assert_eq!(dump.header.transaction_hash, Some(h.transaction_hash));
        assert_eq!(dump.header.parent_hash, Some(h.parent_hash));
        assert_eq!(dump.header.total_coins, Some(h.total_coins));
        assert_eq!(dump.header.close_time, Some(h.close_time));
        assert_eq!(dump.header.ledger_hash, Some(h.hash()));
        assert_eq!(dump.state.as_deref(), Some(&state[..]));
        assert_eq!(dump.transactions.as_deref(), Some(&txs[..]));
    }

    #[test]
    fn a_response_reads_back_as_the_ledger_written_in_both_api_versions() {
        round_trip(1);
        round_trip(2);
    }

    #[test]
    fn a_failed_read_and_a_bad_transaction_leaf_stop_the_writing() {
        let h = header();
        let mut out = Vec::new();
        let e = write_ledger_response(
            &mut out,
            &h.hash(),
            &h,
            [Err::<(Key, Vec<u8>), &str>("node missing")],
            [],
            &ResponseOptions::default(),
        )
        .expect_err("the state walk failed");
        assert!(matches!(e, ResponseError::Read("node missing")));
        let e = write_ledger_response(
            &mut out,
            &h.hash(),
            &h,
            [],
            [Ok::<_, ()>((Key([9; 32]), vec![0xFF]))],
            &ResponseOptions::default(),
        )
        .expect_err("not VL(tx) VL(meta)");
        assert!(matches!(e, ResponseError::TxLeaf { key, .. } if key == Key([9; 32])));
    }
}
