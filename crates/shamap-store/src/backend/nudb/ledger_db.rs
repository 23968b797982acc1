//! rippled's `ledger.db` (SQLite): the `Ledgers` table maps sequences to
//! ledger hashes (columns `LedgerHash`, `LedgerSeq`, `PrevHash`,
//! `AccountSetHash`, `TransSetHash`, ... as rippled creates them, hashes as
//! 64 hex digits). rippled keeps it in WAL mode, its newest rows in
//! `ledger.db-wal` while it runs or after it was killed: it is read with
//! those rows, without creating or writing a file beside it ([`super::sqlite`]
//! says how, and what SQLite was measured to do), so it is read while
//! rippled runs; rows rippled writes after the reading are not seen.

use std::path::Path;

use shamap::Hash256;

/// One row of `Ledgers`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LedgerRow {
    /// `LedgerSeq`.
    pub seq: u32,
    /// `LedgerHash`.
    pub hash: Hash256,
    /// `PrevHash`, when readable.
    pub parent_hash: Option<Hash256>,
    /// `AccountSetHash`, when readable.
    pub account_hash: Option<Hash256>,
    /// `TransSetHash`, when readable.
    pub tx_hash: Option<Hash256>,
}

/// Reads every row of `Ledgers` in `path`, by sequence (or only `seq`'s).
/// The error is one line naming the file.
pub fn read_ledgers(path: &Path, seq: Option<u32>) -> Result<Vec<LedgerRow>, String> {
    super::sqlite::read(path, |conn| rows_of(path, conn, seq))
}

fn rows_of(
    path: &Path,
    conn: &rusqlite::Connection,
    seq: Option<u32>,
) -> Result<Vec<LedgerRow>, String> {
    let name = path.display();
    let sql = "SELECT LedgerHash, LedgerSeq, PrevHash, AccountSetHash, TransSetHash FROM Ledgers \
               WHERE ?1 IS NULL OR LedgerSeq = ?1 ORDER BY LedgerSeq";
    let mut stmt = conn
        .prepare(sql)
        .map_err(|e| format!("{name}: not rippled's ledger.db (table Ledgers): {e}"))?;
    let rows = stmt
        .query_map([seq.map(i64::from)], |r| {
            Ok((
                r.get::<_, Option<String>>(0)?,
                r.get::<_, Option<i64>>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, Option<String>>(3)?,
                r.get::<_, Option<String>>(4)?,
            ))
        })
        .map_err(|e| format!("{name}: {e}"))?;
    let mut out = Vec::new();
    for row in rows {
        let (hash, s, prev, acct, tx) = row.map_err(|e| format!("{name}: {e}"))?;
        let parse =
            |h: &Option<String>| h.as_deref().and_then(|h| Hash256::from_hex(h.trim()).ok());
        let hash = parse(&hash).ok_or_else(|| {
            format!("{name}: a Ledgers row (LedgerSeq {s:?}) whose LedgerHash is not 64 hex digits")
        })?;
        let seq = s
            .and_then(|s| u32::try_from(s).ok())
            .ok_or_else(|| format!("{name}: ledger {hash} has LedgerSeq {s:?}, not a sequence"))?;
        out.push(LedgerRow {
            seq,
            hash,
            parent_hash: parse(&prev),
            account_hash: parse(&acct),
            tx_hash: parse(&tx),
        });
    }
    Ok(out)
}
