//! [`NudbStore`]: rippled's node store as a read-only [`NodeStore`]: one
//! NuDB directory, or the two `rippledb.*` directories of rippled's
//! `online_delete` rotation read as one store (newest first); which ones,
//! [`super::layout`] decides.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use shamap::Hash256;

use super::codec::decode_value;
use super::dat_file::{Record, SIZE_LEN};
use super::dir::NudbDir;
use super::layout::{find_ledger_db, Layout};
use super::log_file::FileStamp;
use crate::error::StoreError;
use crate::store::{Batch, NodeStore};

/// What a write to a NuDB store answers ([`crate::error::NextStep::CopyOut`]).
pub const READ_ONLY: &str = crate::error::facts::READ_ONLY_NUDB;

/// What [`NudbStore::for_each_record`] calls: the directory's index, the
/// record's offset, its key, its raw value.
pub type RecordVisitor<'a> = dyn FnMut(usize, u64, &[u8], &[u8]) -> ControlFlow<()> + 'a;

/// Bytes a sequential scan of a data file reads at a time (2 MiB: large
/// enough that the reads are the disk's best pattern, small enough that
/// the audit's blocks in flight, seven of them on two cores, stay near 14
/// MiB beside its record index).
pub const SCAN_BLOCK: usize = 2 << 20;

/// rippled's node store, read-only: lookups through each directory's key
/// file, scans through its data file, every value decoded from rippled's
/// codec ([`super::codec`]). Writes and syncs are refused
/// ([`READ_ONLY`]); nothing in the directories is written, created or
/// locked, so it opens beside a running rippled and reads what rippled
/// had committed when it opened (records appended later are not seen).
#[derive(Debug)]
pub struct NudbStore {
    location: String,
    root: PathBuf,
    layout: Layout,
    parts: Vec<NudbDir>,
    ledger_db: Option<PathBuf>,
    /// `ledger.db` and its `-wal` as they were when opened.
    ledger_db_stamps: [FileStamp; 2],
}

/// The stamps of `ledger.db` and its `-wal` (rippled's newest rows).
fn ledger_db_stamps(db: Option<&Path>) -> [FileStamp; 2] {
    match db {
        Some(p) => {
            let mut wal = p.as_os_str().to_owned();
            wal.push("-wal");
            [FileStamp::of(p), FileStamp::of(Path::new(&wal))]
        }
        None => [FileStamp::of(Path::new("")); 2],
    }
}

impl NudbStore {
    /// Opens the NuDB store at `path` (a NuDB directory or a directory of
    /// rotated `rippledb.*` ones, as [`Layout::discover`] finds them),
    /// read-only, with `ledger.db` when one is beside it. A directory with
    /// one of `nudb.dat` and `nudb.key` but not the other, or one that is
    /// not a file (a FIFO is never opened), is refused in one line naming
    /// it.
    pub fn open(path: &Path) -> Result<NudbStore, StoreError> {
        let location = path.display().to_string();
        let layout = Layout::discover(path)
            .map_err(|e| StoreError::backend(&location, e))?
            .ok_or_else(|| StoreError::NoStore {
                location: location.clone(),
                reason: "no NuDB store here (no nudb.dat and nudb.key, nor rippledb.* directories holding them)".to_owned(),
            })?;
        let parts = layout
            .dirs
            .iter()
            .map(|d| NudbDir::open(d))
            .collect::<Result<Vec<_>, String>>()
            .map_err(|e| StoreError::backend(&location, e))?;
        let ledger_db = find_ledger_db(path);
        Ok(NudbStore {
            location,
            root: path.to_owned(),
            ledger_db_stamps: ledger_db_stamps(ledger_db.as_deref()),
            layout,
            parts,
            ledger_db,
        })
    }

    /// The store opened again, in a new view of its files (what an audit
    /// that found the store moving under it reads next), with the same
    /// `ledger.db`.
    pub fn reopen(&self) -> Result<NudbStore, StoreError> {
        let mut s = NudbStore::open(&self.root)?;
        s.set_ledger_db(self.ledger_db.clone());
        Ok(s)
    }

    /// What changed in the store's files since it was opened (a writer
    /// committed, or rippled wrote `ledger.db`), if anything.
    pub fn moved(&self) -> Option<String> {
        let mut what: Vec<String> = self.parts.iter().filter_map(NudbDir::moved).collect();
        if let Some(db) = &self.ledger_db {
            if ledger_db_stamps(Some(db)) != self.ledger_db_stamps {
                what.push(format!("{} was written", db.display()));
            }
        }
        (!what.is_empty()).then(|| what.join("; "))
    }

    /// Waits, at most `limit`, until no commit is under way in any of the
    /// store's directories (every `nudb.log` empty or absent): the moment
    /// to take a new view of a live store.
    pub fn wait_for_quiet(&self, limit: std::time::Duration) {
        let start = std::time::Instant::now();
        while start.elapsed() < limit
            && self
                .parts
                .iter()
                .any(|p| FileStamp::of(&p.dir.join("nudb.log")).len > 0)
        {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    /// What `nudb.log` held in each directory that had a commit under way
    /// (read as the store before it).
    pub fn notes(&self) -> Vec<String> {
        self.parts
            .iter()
            .filter_map(|p| p.log_note.clone())
            .collect()
    }

    /// Where the store is, for messages.
    pub(crate) fn location_str(&self) -> &str {
        &self.location
    }

    /// Which directories are read and why ([`Layout::describe`] says it in
    /// one line), and which NuDB directories under the path are not.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The directories read, newest first.
    pub fn parts(&self) -> &[NudbDir] {
        &self.parts
    }

    /// rippled's `ledger.db` for this store, if one was found or given.
    pub fn ledger_db(&self) -> Option<&Path> {
        self.ledger_db.as_deref()
    }

    /// Uses `path` as the store's `ledger.db`.
    pub fn set_ledger_db(&mut self, path: Option<PathBuf>) {
        self.ledger_db_stamps = ledger_db_stamps(path.as_deref());
        self.ledger_db = path;
    }

    /// Bytes of the data files (as opened).
    pub fn data_bytes(&self) -> u64 {
        self.parts.iter().map(|p| p.dat.len).sum()
    }

    /// Where `hash`'s record is: the directory's index in [`Self::parts`]
    /// and the record's offset and value size.
    pub fn locate(&self, hash: &Hash256) -> Result<Option<(usize, u64, u64)>, StoreError> {
        for (i, p) in self.parts.iter().enumerate() {
            if let Some(l) = p.locate(hash).map_err(|e| {
                StoreError::backend(&self.location, format!("looking up {hash}: {e}"))
            })? {
                return Ok(Some((i, l.offset, l.size)));
            }
        }
        Ok(None)
    }

    /// Calls `f` with every data record of every directory (the directory's
    /// index, the record's offset, its key, its raw value) in file order.
    pub fn for_each_record(&self, f: &mut RecordVisitor<'_>) -> Result<(), StoreError> {
        for (i, p) in self.parts.iter().enumerate() {
            let ks = usize::from(p.dat.header.key_size);
            let mut chunks = p
                .dat
                .chunks(SCAN_BLOCK)
                .map_err(|e| StoreError::backend(&self.location, e))?;
            while let Some(c) = chunks
                .next_chunk()
                .map_err(|e| StoreError::backend(&self.location, e))?
            {
                for &(pos, r) in &c.records {
                    if let Record::Data { size } = r {
                        let k = pos + SIZE_LEN;
                        let v = &c.bytes[k + ks..k + ks + size as usize];
                        if f(i, c.start + pos as u64, &c.bytes[k..k + ks], v).is_break() {
                            return Ok(());
                        }
                    }
                }
                if let Some((_, msg)) = c.broken {
                    return Err(StoreError::backend(&self.location, msg));
                }
            }
        }
        Ok(())
    }
}

impl NodeStore for NudbStore {
    fn location(&self) -> String {
        self.location.clone()
    }

    fn read_value(&self, hash: &Hash256) -> Result<Option<Vec<u8>>, StoreError> {
        for p in &self.parts {
            let found = p
                .read_raw(hash)
                .map_err(|e| StoreError::backend(&self.location, format!("reading {hash}: {e}")))?;
            if let Some((at, raw)) = found {
                let mut value = Vec::new();
                decode_value(&raw, &mut value).map_err(|e| StoreError::Corrupt {
                    hash: *hash,
                    reason: format!("{} at byte {}: {e}", p.dat.path.display(), at.offset),
                })?;
                return Ok(Some(value));
            }
        }
        Ok(None)
    }

    fn write(&self, _: Batch) -> Result<(), StoreError> {
        Err(StoreError::backend(&self.location, READ_ONLY))
    }

    fn for_each_value(
        &self,
        f: &mut dyn FnMut(Hash256, &[u8]) -> ControlFlow<()>,
    ) -> Result<(), StoreError> {
        let mut value = Vec::new();
        let mut failed = None;
        self.for_each_record(&mut |i, offset, key, raw| {
            let hash = Hash256::from_slice(key).unwrap_or(Hash256::ZERO);
            if let Err(e) = decode_value(raw, &mut value) {
                failed = Some(StoreError::Corrupt {
                    hash,
                    reason: format!("{} at byte {offset}: {e}", self.parts[i].dat.path.display()),
                });
                return ControlFlow::Break(());
            }
            f(hash, &value)
        })?;
        failed.map_or(Ok(()), Err)
    }

    fn get_meta(&self, _: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(None)
    }

    fn disk_bytes(&self) -> Result<u64, StoreError> {
        Ok(self.parts.iter().map(|p| p.dat.len + p.key_len).sum())
    }

    fn write_durably(&self, _: Batch) -> Result<(), StoreError> {
        Err(StoreError::backend(&self.location, READ_ONLY))
    }

    fn contains(&self, hash: &Hash256) -> Result<bool, StoreError> {
        Ok(self.locate(hash)?.is_some())
    }

    /// The store's ledgers by the one rule of `ledgers.rs`: `ledger.db`
    /// when there is one, else the headers in the data files.
    fn ledger_hashes(&self) -> Result<Option<Vec<(u32, Hash256)>>, StoreError> {
        self.listed_ledgers().map(Some)
    }
}
