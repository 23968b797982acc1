//! The anchors of `clio verify`: the ledgers a run verified, authenticated
//! from one trusted hash ([`shamap_store::map::authenticate`]), their skip
//! lists read from Clio's `objects` rows.
//!
//! Only ledgers verified in the run are held: their state, rebuilt from
//! Clio's rows, hashed to the header's `account_hash`, so the newest
//! `objects` row of a key at or below such a ledger is that ledger's item.
//! Ledgers a skip list names but the run did not verify are not held: their
//! hashes are still authenticated, and a verified ledger whose hash differs
//! is forged.

use std::collections::HashMap;

use shamap::xrpl::LedgerHeader;
use shamap::{Hash256, Key};
use shamap_clio::ClioReader;
use shamap_store::map::authenticate::{authenticate, Authentication, LedgerSource};

/// The ledgers verified in a run, by hash.
pub struct ClioLedgers<'r> {
    reader: &'r ClioReader,
    verified: HashMap<Hash256, LedgerHeader>,
}

impl<'r> ClioLedgers<'r> {
    /// No ledger verified yet.
    pub fn new(reader: &'r ClioReader) -> ClioLedgers<'r> {
        ClioLedgers { reader, verified: HashMap::new() }
    }

    /// Records a ledger the run verified whole: its header is read again
    /// and kept when it hashes to `hash`.
    pub fn verified(&mut self, seq: u32, hash: Hash256) {
        if let Ok(Some(raw)) = self.reader.header(seq) {
            if let Some(h) = raw.get(..shamap::xrpl::ledger::LEDGER_HEADER_LEN).and_then(LedgerHeader::deserialize) {
                if h.hash() == hash && h.seq == seq {
                    self.verified.insert(hash, h);
                }
            }
        }
    }

    /// Authenticates every verified ledger from `anchor`.
    pub fn authenticate(&self, anchor: &Hash256) -> (Vec<(u32, Hash256)>, Authentication) {
        let mut found: Vec<(u32, Hash256)> = self.verified.iter().map(|(h, l)| (l.seq, *h)).collect();
        found.sort();
        let list: Vec<(Option<u32>, Hash256)> = found.iter().map(|(s, h)| (Some(*s), *h)).collect();
        let a = authenticate(self, anchor, &list);
        (found, a)
    }
}

impl LedgerSource for ClioLedgers<'_> {
    fn header(&self, hash: &Hash256) -> Result<Option<LedgerHeader>, String> {
        Ok(self.verified.get(hash).copied())
    }

    fn state_item(&self, header: &LedgerHeader, key: &Key) -> Result<Option<Vec<u8>>, String> {
        if !self.verified.contains_key(&header.hash()) {
            return Err("not verified in this run".to_owned());
        }
        let rows = self.reader.objects(std::slice::from_ref(key), header.seq).map_err(|e| e.to_string())?;
        Ok(rows.into_iter().next().flatten().map(|(_, o)| o).filter(|o| !o.is_empty()))
    }
}
