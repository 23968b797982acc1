//! `shamap export --db DB (--root HASH | --ledger SEQ) [--out FILE]
//! [--api-version 1|2]`: writes one stored ledger as rippled's `ledger`
//! response with `binary`, `expand`, `accounts` and `transactions` true,
//! which `shamap verify`, `import` and other tools read.
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
//! - State entries in key order (rippled walks the state map), each its
//!   index as `hash` and its bytes as `tx_blob`; transactions in ID order,
//!   each leaf's `VL(tx) ‖ VL(meta)` split into `tx_blob` and `meta`. With
//!   `--api-version 2`, each transaction is `{"hash", "meta_blob",
//!   "tx_blob"}`, as rippled writes for API v2.
//! - `validated` is true only when the store's own ledger list (rippled's
//!   `ledger.db`, whose ledgers rippled saved as validated) names the
//!   ledger; a node store alone cannot say that a ledger was validated.
//! - One entry per line; hex in upper case, as rippled writes it.
//!
//! The ledger is streamed: entries are written as the maps are walked (one
//! verified node per step, as every read), so a ledger of any size takes
//! the memory of a path from the root, not of the ledger. With `--out`,
//! the file appears whole or not at all (a temporary file beside it,
//! renamed once complete); a damaged or missing node stops the export with
//! one line and status 2, and no file. An `--out` inside the store being
//! read (its `nudb.dat`, its `ledger.db`, a file of a rotated directory,
//! a link into it) is refused before anything is written
//! ([`crate::output::refuse_inside_store`]). Without `--out` the response goes
//! to standard output, where what was written before such an error stays
//! written.

use std::io::{self, Write};
use std::path::PathBuf;

use shamap::xrpl::tx::split_tx_with_meta;
use shamap::xrpl::LedgerHeader;
use shamap::{Hash256, Key, MapKind};
use shamap_store::{map::ledger, NodeStore, StoredMap};

use crate::input::{given_root, open_to_read, parse_root};
use crate::output::{write_file_streamed, Exit, Failure};

/// Arguments of `shamap export`.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    #[arg(long, value_name = "DB", help = crate::input::db_help("The store"))]
    pub db: PathBuf,
    /// The ledger's hash (the key of its header object).
    #[arg(
        long,
        value_name = "HEX",
        required_unless_present = "ledger",
        conflicts_with = "ledger"
    )]
    pub root: Option<String>,
    /// The ledger with this sequence number, as the store lists it (its
    /// own ledger list, as rippled's ledger.db; else the retained ledgers).
    #[arg(long, value_name = "SEQ")]
    pub ledger: Option<u32>,
    /// Write to FILE (whole or not at all) instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// rippled's API version to write the transactions in: 1 (`tx_blob`,
    /// `meta`) or 2 (`hash`, `meta_blob`, `tx_blob`).
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u8).range(1..=2))]
    pub api_version: u8,
}

/// Why writing stopped: the output, or the store.
enum Stop {
    /// Writing the output failed.
    Io(io::Error),
    /// Reading the ledger failed (one line, status 2).
    Failed(Failure),
}

impl From<io::Error> for Stop {
    fn from(e: io::Error) -> Stop {
        Stop::Io(e)
    }
}

impl From<Failure> for Stop {
    fn from(f: Failure) -> Stop {
        Stop::Failed(f)
    }
}

impl From<shamap_store::StoreError> for Stop {
    fn from(e: shamap_store::StoreError) -> Stop {
        Stop::Failed(e.into())
    }
}

/// The ledger to write, with its maps opened (their roots loaded and
/// verified) before any output is written.
struct Ledger<'s> {
    hash: Hash256,
    header: LedgerHeader,
    state: StoredMap<'s>,
    tx: StoredMap<'s>,
    validated: bool,
}

/// Runs `shamap export`.
pub fn run(args: &ExportArgs) -> Result<Exit, Failure> {
    parse_root(args.root.as_deref())?;
    let store = open_to_read(&args.db)?;
    let hash = given_root(&*store, args.root.as_deref(), args.ledger)?
        .ok_or_else(|| Failure::unusable("give --root or --ledger"))?;
    let ledger = open_ledger(&*store, hash)?;
    let v2 = args.api_version == 2;
    match &args.out {
        Some(out) if out.as_os_str() != "-" => {
            let cannot =
                |e: io::Error| Failure::unusable(format!("{}: cannot write: {e}", out.display()));
            write_file_streamed(out, Some(&args.db), &mut |w| {
                write_response(w, &ledger, v2).map_err(|stop| match stop {
                    Stop::Io(e) => cannot(e),
                    Stop::Failed(f) => f,
                })
            })?;
        }
        _ => {
            let stdout = io::stdout();
            let mut w = io::BufWriter::with_capacity(1 << 20, stdout.lock());
            match write_response(&mut w, &ledger, v2).and_then(|()| Ok(w.flush()?)) {
                Ok(()) => {}
                // A reader that stopped early (`| head`) is not a failure.
                Err(Stop::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => {}
                Err(Stop::Io(e)) => {
                    return Err(Failure::unusable(format!("cannot write output: {e}")))
                }
                Err(Stop::Failed(f)) => return Err(f),
            }
        }
    }
    Ok(Exit::Done)
}

/// The ledger `hash` names in `store`, with both maps opened; one line
/// when `hash` is not a stored ledger header (a map root included: an
/// export is of a whole ledger) or a map's root cannot be read.
fn open_ledger(store: &dyn NodeStore, hash: Hash256) -> Result<Ledger<'_>, Failure> {
    let Some(header) = ledger::header(store, &hash)? else {
        // Nothing there, or not a root: the one rule's own error.
        let r = ledger::resolve_root(store, &hash, None)?;
        return Err(Failure::unusable(format!(
            "{}: {hash} is the root of a {} map, not a ledger hash: export writes a whole ledger (give its ledger hash or --ledger)",
            store.location(),
            r.kind.name()
        )));
    };
    let validated = store
        .ledger_hashes()?
        .is_some_and(|list| list.contains(&(header.seq, hash)));
    Ok(Ledger {
        hash,
        header,
        state: StoredMap::open(store, header.account_hash, MapKind::AccountState)?,
        tx: StoredMap::open(store, header.transaction_hash, MapKind::TransactionWithMeta)?,
        validated,
    })
}

/// Writes the whole response (see the module docs).
fn write_response(w: &mut dyn Write, l: &Ledger<'_>, v2: bool) -> Result<(), Stop> {
    let mut hex = Vec::new();
    w.write_all(b"{\"result\":{\"ledger\":{\"accountState\":[")?;
    let mut first = true;
    for item in l.state.iter() {
        let (key, data) = item?;
        w.write_all(if first { b"\n" } else { b",\n" })?;
        first = false;
        w.write_all(b"{\"hash\":\"")?;
        write_hex(w, &mut hex, key.as_bytes())?;
        w.write_all(b"\",\"tx_blob\":\"")?;
        write_hex(w, &mut hex, &data)?;
        w.write_all(b"\"}")?;
    }
    w.write_all(b"\n],\"closed\":true,\"ledger_data\":\"")?;
    write_hex(w, &mut hex, &l.header.serialize())?;
    w.write_all(b"\",\"transactions\":[")?;
    let mut first = true;
    for item in l.tx.iter() {
        let (key, data) = item?;
        let (tx, meta) = split_tx_with_meta(&data).map_err(|e| bad_leaf(l, &key, e))?;
        w.write_all(if first { b"\n" } else { b",\n" })?;
        first = false;
        if v2 {
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
        l.hash, l.header.seq, l.validated
    )?;
    Ok(())
}

/// A transaction leaf whose data is not `VL(tx) ‖ VL(meta)`.
fn bad_leaf(l: &Ledger<'_>, key: &Key, e: impl std::fmt::Display) -> Failure {
    Failure::unusable(format!(
        "ledger {}: transaction {key} (map {}): its leaf's data is not VL(tx) followed by VL(meta): {e}",
        l.hash,
        l.tx.root_hash()
    ))
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
    use super::*;

    #[test]
    fn hex_is_upper_case() {
        let mut out = Vec::new();
        let mut buf = Vec::new();
        write_hex(&mut out, &mut buf, &[0x00, 0xAB, 0x7f]).expect("memory");
        assert_eq!(out, b"00AB7F");
    }
}
