//! Ledgers as rippled's node store holds them: every node of the state
//! and transaction maps and the header, as NodeStore values keyed by their
//! hashes; ledger histories sharing nodes; databases of them, whole or
//! split between two rotated `online_delete` directories (with rippled's
//! `state.db` naming them); rippled's `ledger.db`, closed or in WAL mode as
//! a running rippled keeps it.
//!
//! A node's value is `8 zero bytes ‖ type ‖ prefix format`, type 3 for the
//! state map, 4 for the transaction map, 1 for the header (`LWR\0` ‖
//! header, keyed by the ledger hash), as `shamap-store`'s `import_ledger`
//! stores them.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use rand::{Rng, SeedableRng};
use shamap::xrpl::skip_list::{long_key, short_key, SkipList};
use shamap::xrpl::{tx_with_meta_item, HashPrefix, LedgerHeader};
use shamap::{Hash256, Key, MapKind, ShaMap, Snapshot};

use crate::writer::{NudbOptions, NudbWriter, WriteError, Written};

/// Type byte of a ledger header's value (`hotLEDGER`).
pub const TYPE_LEDGER: u8 = 1;
/// Type byte of an account-state node's value (`hotACCOUNT_NODE`).
pub const TYPE_ACCOUNT_NODE: u8 = 3;
/// Type byte of a transaction node's value (`hotTRANSACTION_NODE`).
pub const TYPE_TRANSACTION_NODE: u8 = 4;

/// A NodeStore value: the 9-byte header and the prefix format.
pub fn node_value(type_byte: u8, prefix_bytes: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(9 + prefix_bytes.len());
    v.extend_from_slice(&[0; 8]);
    v.push(type_byte);
    v.extend_from_slice(prefix_bytes);
    v
}

/// The header object of a ledger: its hash and value.
pub fn header_object(h: &LedgerHeader) -> (Hash256, Vec<u8>) {
    let mut prefix = HashPrefix::LEDGER_MASTER.bytes().to_vec();
    prefix.extend_from_slice(&h.serialize());
    (h.hash(), node_value(TYPE_LEDGER, &prefix))
}

/// Calls `f` with every node of `snap` (hash, value), parents first.
pub fn for_each_map_object(snap: &Snapshot, mut f: impl FnMut(Hash256, Vec<u8>)) {
    let t = match snap.kind() {
        MapKind::AccountState => TYPE_ACCOUNT_NODE,
        MapKind::TransactionWithMeta | MapKind::TransactionNoMeta => TYPE_TRANSACTION_NODE,
    };
    snap.for_each_node(|n| f(n.hash, node_value(t, &n.prefix_bytes)));
}

/// One ledger: its header and its two maps.
#[derive(Clone)]
pub struct Ledger {
    /// The header, naming the maps' roots.
    pub header: LedgerHeader,
    /// The account-state map.
    pub state: Snapshot,
    /// The transaction map (with metadata).
    pub tx: Snapshot,
}

impl Ledger {
    /// The ledger of a `ledger` dump (rippled's or Clio's JSON, binary or
    /// decoded) with its state and transactions; the header's roots are the
    /// maps' (a dump without transactions has an empty transaction map).
    pub fn from_dump(path: &Path) -> Result<Ledger, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let d = shamap_ledger::parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        let entries = d
            .state
            .as_deref()
            .ok_or_else(|| format!("{}: no state entries", path.display()))?;
        let mut state = shamap_ledger::verify::state_map(entries)
            .map_err(|(i, e)| format!("{}: state entry {i}: {e}", path.display()))?;
        let mut tx = shamap_ledger::verify::tx_map(d.transactions.as_deref().unwrap_or(&[]))
            .map_err(|(i, e)| format!("{}: transaction {i}: {e:?}", path.display()))?;
        let (state, tx) = (state.snapshot(), tx.snapshot());
        let header = d
            .header
            .header_with_roots(Some(state.root_hash()), Some(tx.root_hash()))
            .map_err(|missing| format!("{}: header lacks {missing:?}", path.display()))?;
        Ok(Ledger { header, state, tx })
    }

    /// The ledger hash.
    pub fn hash(&self) -> Hash256 {
        self.header.hash()
    }

    /// Every object of the ledger (state nodes, transaction nodes, then
    /// the header), each once.
    pub fn objects(&self) -> Vec<(Hash256, Vec<u8>)> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        self.objects_new_to(&mut seen, &mut |h, v| out.push((h, v)));
        out
    }

    /// Calls `f` with the objects of the ledger whose hashes are not in
    /// `seen`, adding them.
    pub fn objects_new_to(&self, seen: &mut HashSet<Hash256>, f: &mut dyn FnMut(Hash256, Vec<u8>)) {
        for snap in [&self.state, &self.tx] {
            for_each_map_object(snap, |h, v| {
                if seen.insert(h) {
                    f(h, v);
                }
            });
        }
        let (h, v) = header_object(&self.header);
        if seen.insert(h) {
            f(h, v);
        }
    }

    /// The next ledger: `changes` state entries rewritten, a few added and
    /// one removed, `txs` synthetic transactions with metadata, the header
    /// chained (`parent_hash`, close times, coins burnt as fees).
    pub fn successor(&self, changes: usize, txs: usize, seed: u64) -> Ledger {
        self.next(changes, txs, seed, false)
    }

    /// [`Ledger::successor`] that also keeps the skip lists as rippled does
    /// (`Ledger::updateSkipList`): the parent's hash appended to the short
    /// list (the oldest dropped past 256) and, when the parent's sequence is
    /// a multiple of 256, to its group's long list.
    pub fn successor_with_skip_lists(&self, changes: usize, txs: usize, seed: u64) -> Ledger {
        self.next(changes, txs, seed, true)
    }

    fn next(&self, changes: usize, txs: usize, seed: u64, skip_lists: bool) -> Ledger {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut state = self.state.to_map();
        // With skip lists, the lists are rippled's to change, not noise's.
        let keys: Vec<Key> = state
            .iter()
            .filter(|(_, d)| !(skip_lists && d.starts_with(&[0x11, 0x00, 0x68])))
            .map(|(k, _)| *k)
            .collect();
        for _ in 0..changes.min(keys.len()) {
            let k = keys[rng.gen_range(0..keys.len())];
            let mut data = state.get(&k).map(<[u8]>::to_vec).unwrap_or_default();
            if data.is_empty() {
                data.push(0);
            }
            let i = rng.gen_range(0..data.len());
            data[i] ^= rng.gen_range(1..=255u8);
            state.update(k, &data).expect("an existing key updates");
        }
        for _ in 0..changes.div_ceil(4) {
            let len = rng.gen_range(40..300);
            let data: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            let _ = state.upsert(Key(rng.gen()), &data);
        }
        if keys.len() > 2 {
            let _ = state.remove(&keys[rng.gen_range(0..keys.len())]);
        }
        let mut tx = ShaMap::new(MapKind::TransactionWithMeta);
        for _ in 0..txs {
            let tx_len = rng.gen_range(60..250);
            let blob: Vec<u8> = (0..tx_len).map(|_| rng.gen()).collect();
            let meta_len = rng.gen_range(100..600);
            let meta: Vec<u8> = (0..meta_len).map(|_| rng.gen()).collect();
            let (k, v) = tx_with_meta_item(&blob, &meta).expect("short blobs encode");
            tx.insert(k, &v).expect("fresh random key");
        }
        if skip_lists {
            let (prev, parent) = (self.header.seq, self.header.hash());
            if prev % 256 == 0 {
                append_skip(&mut state, long_key(prev), prev, parent, false);
            }
            append_skip(&mut state, short_key(), prev, parent, true);
        }
        let (state, tx) = (state.snapshot(), tx.snapshot());
        let p = &self.header;
        let header = LedgerHeader {
            seq: p.seq + 1,
            total_coins: p.total_coins.saturating_sub(10 * txs as u64),
            parent_hash: p.hash(),
            transaction_hash: tx.root_hash(),
            account_hash: state.root_hash(),
            parent_close_time: p.close_time,
            close_time: p.close_time + u32::from(p.close_time_resolution.max(1)),
            close_time_resolution: p.close_time_resolution,
            close_flags: 0,
        };
        Ledger { header, state, tx }
    }
}

/// Appends `parent` (the hash of ledger `prev`) to the skip list at `key`,
/// creating it; a short list keeps its newest 256 entries.
fn append_skip(state: &mut ShaMap, key: Key, prev: u32, parent: Hash256, short: bool) {
    let mut list = state
        .get(&key)
        .map(|d| SkipList::decode(d).expect("the skip lists this writer keeps decode"))
        .unwrap_or(SkipList {
            last_seq: prev,
            hashes: Vec::new(),
        });
    if short && list.hashes.len() == 256 {
        list.hashes.remove(0);
    }
    list.hashes.push(parent);
    list.last_seq = prev;
    state
        .upsert(key, &list.encode())
        .expect("a skip list is a valid item");
}

/// `base` and `count` successors of it, as rippled chains them: each
/// changing a few state entries, carrying a few transactions, and keeping
/// the skip lists ([`Ledger::successor_with_skip_lists`]).
pub fn skip_list_history(base: Ledger, count: usize, seed: u64) -> Vec<Ledger> {
    chain(base, count, seed, Ledger::successor_with_skip_lists)
}

/// `base` and `count` successors of it, each changing a few state entries
/// and carrying a few transactions: a history whose ledgers share most of
/// their state nodes.
pub fn history(base: Ledger, count: usize, seed: u64) -> Vec<Ledger> {
    chain(base, count, seed, Ledger::successor)
}

/// `base` and `count` ledgers after it, each made from the one before by
/// `next(ledger, 8 changes, 3 transactions, seed + i)`.
fn chain(
    base: Ledger,
    count: usize,
    seed: u64,
    next: fn(&Ledger, usize, usize, u64) -> Ledger,
) -> Vec<Ledger> {
    let mut out = vec![base];
    for i in 0..count {
        let l = next(&out[i], 8, 3, seed.wrapping_add(i as u64));
        out.push(l);
    }
    out
}

/// Writes one ledger into a new database in `dir`: [`write_ledgers`] of
/// `ledger` alone.
pub fn write_ledger(dir: &Path, opts: NudbOptions, ledger: &Ledger) -> Result<Written, WriteError> {
    write_ledgers(dir, opts, std::slice::from_ref(ledger))
}

/// Writes `ledgers` into a new database in `dir`, one commit per ledger
/// holding the objects it adds (as rippled stores a ledger's new nodes when
/// it is accepted).
pub fn write_ledgers(
    dir: &Path,
    opts: NudbOptions,
    ledgers: &[Ledger],
) -> Result<Written, WriteError> {
    let mut w = NudbWriter::create(dir, opts)?;
    let mut seen = HashSet::new();
    for l in ledgers {
        let mut res = Ok(());
        l.objects_new_to(&mut seen, &mut |h, v| {
            if res.is_ok() {
                res = w.insert(&h.0, &v).map(|_| ());
            }
        });
        res?;
        w.commit()?;
    }
    w.finish()
}

/// The two directories of a rotated `online_delete` node store.
#[derive(Clone, Debug)]
pub struct Rotated {
    /// The older backend (`rippledb.<4 hex>`): the ledgers before the
    /// rotation.
    pub archive: Written,
    /// The writable backend: the state and header of the ledger the
    /// rotation happened at (copied over by the rotation) and everything
    /// stored after it.
    pub writable: Written,
}

/// Names of the two rotated directories this crate writes.
pub const ROTATED_NAMES: [&str; 2] = ["rippledb.0b1f", "rippledb.a7c3"];

/// Writes `ledgers` as rippled's `SHAMapStoreImp` leaves them after a
/// rotation at ledger `at`: under `path`, `rippledb.0b1f` (archive) holds
/// ledgers `..at`; `rippledb.a7c3` (writable) holds ledger `at` whole
/// (the rotation copies the last validated ledger's state) and the objects
/// of ledgers `at + 1..` not already there. Objects may be in both.
pub fn write_rotated(
    path: &Path,
    opts: NudbOptions,
    ledgers: &[Ledger],
    at: usize,
) -> Result<Rotated, WriteError> {
    let at = at.min(ledgers.len().saturating_sub(1));
    let archive = write_ledgers(&path.join(ROTATED_NAMES[0]), opts, &ledgers[..at])?;
    let writable = write_ledgers(
        &path.join(ROTATED_NAMES[1]),
        NudbOptions {
            uid: opts.uid ^ 0xA7C3,
            salt: opts.salt ^ 0xA7C3,
            ..opts
        },
        &ledgers[at..],
    )?;
    Ok(Rotated { archive, writable })
}

/// The `Ledgers` table and its `SeqLedger` index as rippled's
/// `src/xrpld/app/main/DBInit.h` creates them.
const LEDGERS_SCHEMA: &str = "CREATE TABLE IF NOT EXISTS Ledgers (
        LedgerHash      CHARACTER(64) PRIMARY KEY,
        LedgerSeq       BIGINT UNSIGNED,
        PrevHash        CHARACTER(64),
        TotalCoins      BIGINT UNSIGNED,
        ClosingTime     BIGINT UNSIGNED,
        PrevClosingTime BIGINT UNSIGNED,
        CloseTimeRes    BIGINT UNSIGNED,
        CloseFlags      BIGINT UNSIGNED,
        AccountSetHash  CHARACTER(64),
        TransSetHash    CHARACTER(64)
    );
    CREATE INDEX IF NOT EXISTS SeqLedger ON Ledgers(LedgerSeq);";

/// Inserts one `Ledgers` row per header, in one transaction, as
/// `saveValidatedLedger` inserts them (hashes as 64 upper-case hex digits).
fn insert_ledgers(
    db: &mut rusqlite::Connection,
    headers: &[LedgerHeader],
) -> Result<(), rusqlite::Error> {
    let t = db.transaction()?;
    for h in headers {
        t.execute(
            "INSERT OR REPLACE INTO Ledgers (LedgerHash, LedgerSeq, PrevHash, TotalCoins, \
             ClosingTime, PrevClosingTime, CloseTimeRes, CloseFlags, AccountSetHash, \
             TransSetHash) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            rusqlite::params![
                h.hash().to_hex(),
                i64::from(h.seq),
                h.parent_hash.to_hex(),
                h.total_coins as i64,
                i64::from(h.close_time),
                i64::from(h.parent_close_time),
                i64::from(h.close_time_resolution),
                i64::from(h.close_flags),
                h.account_hash.to_hex(),
                h.transaction_hash.to_hex(),
            ],
        )?;
    }
    t.commit()
}

/// Writes rippled's `ledger.db` (SQLite): the `Ledgers` table and its
/// `SeqLedger` index as `src/xrpld/app/main/DBInit.h` creates them, one
/// row per header as `saveValidatedLedger` inserts it (hashes as 64
/// upper-case hex digits). Closed, with no file beside it.
pub fn write_ledger_db(path: &Path, headers: &[LedgerHeader]) -> Result<(), String> {
    let err = |e: rusqlite::Error| format!("{}: {e}", path.display());
    let mut db = rusqlite::Connection::open(path).map_err(err)?;
    db.execute_batch(LEDGERS_SCHEMA).map_err(err)?;
    insert_ledgers(&mut db, headers).map_err(err)
}

/// rippled's `ledger.db` as a running rippled keeps it: WAL mode (as
/// rippled opens it), the automatic checkpoint off, so the rows inserted
/// since the last [`WalLedgerDb::checkpoint`] are only in `ledger.db-wal`
/// (indexed by `ledger.db-shm`). While it is open, the three files are what
/// a rippled killed then leaves: copy them aside
/// ([`WalLedgerDb::copy_files_to`]) or kill the process holding it.
/// Dropping it closes the connection as rippled's clean stop does (a
/// checkpoint, the `-wal` and `-shm` deleted).
pub struct WalLedgerDb {
    path: PathBuf,
    db: rusqlite::Connection,
}

impl WalLedgerDb {
    /// Creates `path` (the `Ledgers` table, no row) in WAL mode.
    pub fn create(path: &Path) -> Result<WalLedgerDb, String> {
        let err = |e: rusqlite::Error| format!("{}: {e}", path.display());
        let db = rusqlite::Connection::open(path).map_err(err)?;
        let mode: String = db
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
            .map_err(err)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(format!("{}: journal mode {mode}, not wal", path.display()));
        }
        db.execute_batch("PRAGMA wal_autocheckpoint=0;")
            .map_err(err)?;
        db.execute_batch(LEDGERS_SCHEMA).map_err(err)?;
        Ok(WalLedgerDb {
            path: path.to_owned(),
            db,
        })
    }

    /// The database's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Inserts a row per header, in one transaction (into the WAL).
    pub fn insert(&mut self, headers: &[LedgerHeader]) -> Result<(), String> {
        insert_ledgers(&mut self.db, headers).map_err(|e| format!("{}: {e}", self.path.display()))
    }

    /// Copies every row into the database file and empties the WAL
    /// (`wal_checkpoint(TRUNCATE)`).
    pub fn checkpoint(&self) -> Result<(), String> {
        let busy: i64 = self
            .db
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        if busy != 0 {
            return Err(format!(
                "{}: the checkpoint was blocked",
                self.path.display()
            ));
        }
        Ok(())
    }

    /// Copies `ledger.db` and its `-wal` and `-shm` (those that exist) into
    /// `dir`, under the same names: the files a rippled killed now leaves.
    /// Their paths.
    pub fn copy_files_to(&self, dir: &Path) -> Result<Vec<PathBuf>, String> {
        let name = self
            .path
            .file_name()
            .ok_or_else(|| format!("{}: no file name", self.path.display()))?;
        let mut out = Vec::new();
        for suffix in ["", "-wal", "-shm"] {
            let mut n = name.to_owned();
            n.push(suffix);
            let from = self.path.with_file_name(&n);
            if !from.exists() {
                continue;
            }
            let to = dir.join(&n);
            std::fs::copy(&from, &to)
                .map_err(|e| format!("copying {} to {}: {e}", from.display(), to.display()))?;
            out.push(to);
        }
        Ok(out)
    }
}

/// Writes rippled's `state.db` of an `online_delete` node: the `DbState`
/// and `CanDelete` tables as `initStateDB` (rippled's `State.cpp`) creates
/// them, row 1 naming the writable and the archive directories (rippled
/// stores their full paths) and the last rotation's ledger.
pub fn write_state_db(
    path: &Path,
    writable: &Path,
    archive: &Path,
    last_rotated: u32,
) -> Result<(), String> {
    let err = |e: rusqlite::Error| format!("{}: {e}", path.display());
    let db = rusqlite::Connection::open(path).map_err(err)?;
    db.execute_batch(
        "CREATE TABLE IF NOT EXISTS DbState (
            Key                    INTEGER PRIMARY KEY,
            WritableDb             TEXT,
            ArchiveDb              TEXT,
            LastRotatedLedger      INTEGER
        );
        CREATE TABLE IF NOT EXISTS CanDelete (
            Key                    INTEGER PRIMARY KEY,
            CanDeleteSeq           INTEGER
        );
        INSERT OR IGNORE INTO CanDelete VALUES (1, 0);",
    )
    .map_err(err)?;
    db.execute(
        "INSERT OR REPLACE INTO DbState VALUES (1, ?1, ?2, ?3)",
        rusqlite::params![
            writable.display().to_string(),
            archive.display().to_string(),
            i64::from(last_rotated)
        ],
    )
    .map_err(err)?;
    Ok(())
}
