//! Authenticating ledgers from one trusted hash (an *anchor*): which of the
//! ledgers a store (or a set of dumps) holds are the ledgers the network
//! validated.
//!
//! A ledger is *authenticated* when its hash is the anchor or is named by an
//! authenticated ledger: by its parent link (`parent_hash` names the ledger
//! before) or by one of its skip lists ([`shamap::xrpl::skip_list`]: the
//! last 256 ancestors, and every 256th since genesis). Skip lists are read
//! only from the state map of an authenticated ledger, each node verified
//! against that ledger's `account_hash`, so every hash learned is vouched for
//! by the anchor through an unbroken chain of hashes.
//!
//! The walk goes from the newest authenticated ledger the source holds to
//! the oldest: each held ledger whose hash is authenticated has its header
//! read (its hash checked), its parent link and short skip list taken; the
//! first one also gives every long list. Gaps (headers missing from the
//! store) are crossed by skip lists: a ledger 300 below the last held one
//! is reached through the 256th ancestor's own short list.
//!
//! Every ledger found is then *authenticated*, *forged* (an authenticated
//! ledger names another hash for its sequence: the ledger held is not the
//! one the network validated) or *not authenticated* (no authenticated
//! ledger names its sequence). Without an anchor nothing is authenticated.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use shamap::xrpl::skip_list::{long_key, short_key, SkipList};
use shamap::xrpl::LedgerHeader;
use shamap::{Hash256, Key, MapKind};

use crate::error::StoreError;
use crate::map::ledger;
use crate::map::reader::StoredMap;
use crate::store::NodeStore;

/// Where the ledgers to authenticate are read from.
pub trait LedgerSource {
    /// The header of the ledger with this hash, if held (its hash checked).
    fn header(&self, hash: &Hash256) -> Result<Option<LedgerHeader>, String>;
    /// The state map item `key` of the held ledger `header` (`None`: absent;
    /// an error when the state map cannot be read).
    fn state_item(&self, header: &LedgerHeader, key: &Key) -> Result<Option<Vec<u8>>, String>;
}

/// A store as a ledger source: headers by hash, state items through a
/// verified read of the ledger's state map.
pub struct StoreLedgers<'s>(pub &'s dyn NodeStore);

impl LedgerSource for StoreLedgers<'_> {
    fn header(&self, hash: &Hash256) -> Result<Option<LedgerHeader>, String> {
        ledger::header(self.0, hash).map_err(|e: StoreError| e.to_string())
    }

    fn state_item(&self, header: &LedgerHeader, key: &Key) -> Result<Option<Vec<u8>>, String> {
        let map = StoredMap::open(self.0, header.account_hash, MapKind::AccountState)
            .map_err(|e| e.to_string())?;
        map.get(key).map_err(|e| e.to_string())
    }
}

/// What the walk decided of one ledger found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The ledger is one the anchor vouches for; `via` says through what.
    Authenticated {
        /// "the anchor", "the parent link of ledger N", "the skip list of ledger N".
        via: String,
    },
    /// An authenticated ledger names another hash for this sequence.
    Forged {
        /// The hash the network validated for this sequence.
        expected: Hash256,
        /// What names it.
        by: String,
    },
    /// No authenticated ledger names this sequence.
    NotAuthenticated {
        /// Why not.
        why: String,
    },
}

impl Verdict {
    /// Whether the ledger is authenticated.
    pub fn is_authenticated(&self) -> bool {
        matches!(self, Verdict::Authenticated { .. })
    }

    /// One phrase for reports: "authenticated (via …)", "FORGED: …", "not authenticated: …".
    pub fn describe(&self) -> String {
        match self {
            Verdict::Authenticated { via } => format!("authenticated (via {via})"),
            Verdict::Forged { expected, by } => {
                format!("FORGED: {by} names {expected} for this sequence")
            }
            Verdict::NotAuthenticated { why } => format!("not authenticated: {why}"),
        }
    }
}

/// The walk's result.
#[derive(Clone, Debug, Default)]
pub struct Authentication {
    /// One verdict per ledger found, by ledger hash.
    pub verdicts: HashMap<Hash256, Verdict>,
    /// The authenticated hash of each sequence learned, and what named it.
    pub known: BTreeMap<u32, (Hash256, String)>,
    /// Ledgers whose header and skip lists were read.
    pub ledgers_read: usize,
    /// What the walk noticed (an anchor not held, a skip list that could not be read).
    pub notes: Vec<String>,
}

/// Authenticates `found` (each ledger's sequence, when known, and hash)
/// from `anchor` (see the module docs).
pub fn authenticate(
    source: &dyn LedgerSource,
    anchor: &Hash256,
    found: &[(Option<u32>, Hash256)],
) -> Authentication {
    let mut out = Authentication::default();
    // Hashes to visit when held, newest first (by sequence).
    let mut pending: BTreeMap<u32, BTreeSet<Hash256>> = BTreeMap::new();
    let mut visited: BTreeSet<Hash256> = BTreeSet::new();
    let mut conflicts: Vec<String> = Vec::new();
    let mut learn = |out: &mut Authentication,
                     pending: &mut BTreeMap<u32, BTreeSet<Hash256>>,
                     seq: u32,
                     hash: Hash256,
                     via: String| {
        match out.known.get(&seq) {
            Some((h, first)) if *h != hash => conflicts.push(format!(
                "ledger {seq}: {first} names {h} but {via} names {hash}"
            )),
            Some(_) => {}
            None => {
                out.known.insert(seq, (hash, via));
                pending.entry(seq).or_default().insert(hash);
            }
        }
    };
    match source.header(anchor) {
        Ok(Some(h)) => {
            learn(
                &mut out,
                &mut pending,
                h.seq,
                *anchor,
                "the anchor".to_owned(),
            );
        }
        Ok(None) => out.notes.push(format!(
            "the anchor {anchor} is not a ledger held here: nothing can be authenticated from it"
        )),
        Err(e) => out
            .notes
            .push(format!("the anchor {anchor} cannot be read: {e}")),
    }
    let mut long_lists_read = false;
    while let Some((&seq, _)) = pending.iter().next_back() {
        let hashes = pending.remove(&seq).unwrap_or_default();
        for hash in hashes {
            if !visited.insert(hash) {
                continue;
            }
            let header = match source.header(&hash) {
                Ok(Some(h)) => h,
                Ok(None) => continue, // not held: only its children's links can cross it
                Err(e) => {
                    out.notes.push(format!(
                        "ledger {seq} {hash}: its header cannot be read: {e}"
                    ));
                    continue;
                }
            };
            if header.hash() != hash || header.seq != seq {
                out.notes.push(format!(
                    "ledger {hash}: the header held under this hash is ledger {} {}, not ledger {seq}",
                    header.seq,
                    header.hash()
                ));
                continue;
            }
            out.ledgers_read += 1;
            if seq > 1 {
                learn(
                    &mut out,
                    &mut pending,
                    seq - 1,
                    header.parent_hash,
                    format!("the parent link of ledger {seq}"),
                );
            }
            if let Some(list) =
                read_list(source, &header, &short_key(), "skip list", &mut out.notes)
            {
                if list.last_seq != seq.saturating_sub(1) {
                    out.notes.push(format!(
                        "ledger {seq}: its skip list ends at ledger {}, not at its parent {}",
                        list.last_seq,
                        seq - 1
                    ));
                } else {
                    for (s, h) in list.entries(1) {
                        learn(
                            &mut out,
                            &mut pending,
                            s,
                            h,
                            format!("the skip list of ledger {seq}"),
                        );
                    }
                }
            }
            if !long_lists_read {
                long_lists_read = true;
                let mut group = seq.saturating_sub(1) >> 16;
                loop {
                    if let Some(list) = read_list(
                        source,
                        &header,
                        &long_key(group << 16),
                        "long skip list",
                        &mut out.notes,
                    ) {
                        if list.last_seq >> 16 == group
                            && list.last_seq % 256 == 0
                            && list.last_seq < seq
                        {
                            for (s, h) in list.entries(256) {
                                learn(
                                    &mut out,
                                    &mut pending,
                                    s,
                                    h,
                                    format!("the long skip list of ledger {seq}"),
                                );
                            }
                        } else {
                            out.notes.push(format!(
                                "ledger {seq}: the long skip list of group {group} ends at ledger {}, outside its group",
                                list.last_seq
                            ));
                        }
                    }
                    if group == 0 {
                        break;
                    }
                    group -= 1;
                }
            }
        }
    }
    out.notes.extend(conflicts);
    let by_hash: HashMap<Hash256, u32> = out.known.iter().map(|(s, (h, _))| (*h, *s)).collect();
    for (seq, hash) in found {
        let verdict = match by_hash.get(hash).and_then(|s| out.known.get(s)) {
            Some((_, via)) => Verdict::Authenticated { via: via.clone() },
            None => {
                let seq = seq.or_else(|| source.header(hash).ok().flatten().map(|h| h.seq));
                match seq.and_then(|s| out.known.get(&s)) {
                    Some((expected, by)) => Verdict::Forged { expected: *expected, by: by.clone() },
                    None => Verdict::NotAuthenticated {
                        why: match seq {
                            None => "not a ledger (a map root alone names no ledger)".to_owned(),
                            Some(_) if out.known.is_empty() => {
                                "the anchor is not held here".to_owned()
                            }
                            Some(_) => "no authenticated ledger names its sequence (no path from the anchor)".to_owned(),
                        },
                    },
                }
            }
        };
        out.verdicts.insert(*hash, verdict);
    }
    out
}

/// A skip list of `header`'s state map at `key`: `None` when absent, or
/// (with a note) when it cannot be read or decoded.
fn read_list(
    source: &dyn LedgerSource,
    header: &LedgerHeader,
    key: &Key,
    name: &str,
    notes: &mut Vec<String>,
) -> Option<SkipList> {
    match source.state_item(header, key) {
        Ok(Some(data)) => match SkipList::decode(&data) {
            Ok(l) => Some(l),
            Err(e) => {
                notes.push(format!(
                    "ledger {}: its {name} cannot be decoded: {e}",
                    header.seq
                ));
                None
            }
        },
        Ok(None) => None,
        Err(e) => {
            notes.push(format!(
                "ledger {}: its {name} cannot be read: {e}",
                header.seq
            ));
            None
        }
    }
}
