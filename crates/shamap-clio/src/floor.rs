//! The read floor of a verification: the rows [`super::ClioVerifier`]
//! reads for a range of ledgers, read with the same queries and the same
//! concurrency, with nothing built, hashed or written. A verification's
//! time over this one is what checking costs beyond reading Clio.
//!
//! - The first ledger: the two state scans of a full build
//!   ([`ClioReader::scan_state`]: `objects` and `successor`, token range by
//!   token range), rows counted and dropped (a build also sorts them
//!   through scratch files, which belongs to the build's cost).
//! - Each following ledger: its rows as the verifier reads them
//!   ([`ClioReader::fetch`] with the diff keys' objects and the
//!   transactions, [`super::PREFETCH_LEDGERS`] ledgers read ahead), then one
//!   successor row per diff key. The verifier reads the successor rows of
//!   the keys a ledger created and of the predecessors of those it created
//!   or deleted: about as many (with creates, modifies and deletes in equal
//!   parts, exactly as many on average), but not the same keys, which only
//!   the map can tell.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::reader::{ClioReader, LedgerRows};
use super::ClioError;

/// What reading a range took.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadFloor {
    /// The first ledger's two state scans.
    pub first: Duration,
    /// Rows those scans returned.
    pub first_rows: u64,
    /// The following ledgers' rows.
    pub rest: Duration,
    /// Rows read for the following ledgers (headers, diff rows,
    /// transaction list rows, objects, transactions, successor rows).
    pub rest_rows: u64,
}

/// Reads what verifying `from..=to` reads (see this module's doc).
pub fn read_floor(reader: &ClioReader, from: u32, to: u32) -> Result<ReadFloor, ClioError> {
    let mut out = ReadFloor::default();
    let t = Instant::now();
    let _ = reader.fetch(from, false)?;
    reader.scan_state(from, true, true, &mut |_| {
        out.first_rows += 1;
        Ok(())
    })?;
    out.first = t.elapsed();
    let t = Instant::now();
    let mut ahead = VecDeque::new();
    let mut next = from.checked_add(1);
    for seq in from.saturating_add(1)..=to {
        while ahead.len() <= super::PREFETCH_LEDGERS {
            match next {
                Some(n) if n <= to => {
                    ahead.push_back(reader.prefetch(n));
                    next = n.checked_add(1);
                }
                _ => break,
            }
        }
        let Some(p) = ahead.pop_front() else { break };
        let rows: LedgerRows = reader.take(p)?;
        let succ = reader.successors(&rows.keys, seq)?;
        out.rest_rows += u64::from(rows.header.is_some())
            + (rows.diff.len() + rows.tx_hashes.len() + rows.transactions.len()) as u64
            + rows.objects.iter().filter(|o| o.is_some()).count() as u64
            + succ.iter().filter(|s| s.is_some()).count() as u64;
    }
    out.rest = t.elapsed();
    Ok(out)
}
