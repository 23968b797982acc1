//! What the store subcommands (`import`, `get`, `info`, `verify --db`,
//! `sync`, `gc`) share: opening a store directory, reading hex arguments,
//! and picking the root to read.
//!
//! Exit status of every store subcommand: 0 done; 1 a negative answer (a
//! key not found, hashes that do not match the file's claims); 2 unusable
//! input or a damaged store, with one `error:` line naming the directory,
//! node or file.

use std::io::IsTerminal;
use std::path::Path;

use indicatif::{ProgressBar, ProgressStyle};
use shamap::{Hash256, MapKind};
use shamap_store::{meta, root_kind, FjallStore, NodeStore, RootKind};

/// A failure: exit status and one line.
#[derive(Debug)]
pub struct Failure {
    /// Exit status.
    pub status: u8,
    /// The message (without `error: `).
    pub message: String,
}

impl Failure {
    /// Status 2: bad input or a damaged store.
    pub fn bad(message: impl Into<String>) -> Failure {
        Failure {
            status: 2,
            message: message.into(),
        }
    }

    /// Status 1: a negative answer.
    pub fn negative(message: impl Into<String>) -> Failure {
        Failure {
            status: 1,
            message: message.into(),
        }
    }
}

impl From<shamap_store::StoreError> for Failure {
    fn from(e: shamap_store::StoreError) -> Failure {
        Failure::bad(e.to_string())
    }
}

/// Prints the outcome: nothing more on success, one `error:` line otherwise.
pub fn finish(r: Result<(), Failure>) -> std::process::ExitCode {
    match r {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(f) => crate::prove::fail(f.status, &f.message),
    }
}

/// Opens an existing store (never creates one: a mistyped directory is an
/// error, not a new empty store).
pub fn open_existing(dir: &Path) -> Result<FjallStore, Failure> {
    if !dir.is_dir() {
        return Err(Failure::bad(format!(
            "{}: no store here (not a directory)",
            dir.display()
        )));
    }
    Ok(FjallStore::open(dir)?)
}

/// Opens a store, creating it if needed.
pub fn open_or_create(dir: &Path) -> Result<FjallStore, Failure> {
    Ok(FjallStore::open(dir)?)
}

/// Parses a 64-digit hex hash given as `what`.
pub fn parse_hash(what: &str, s: &str) -> Result<Hash256, Failure> {
    Hash256::from_hex(s.trim()).map_err(|e| Failure::bad(format!("{what} '{s}': {e}")))
}

/// The optional `--root` argument, parsed.
pub fn parse_root(root: Option<&str>) -> Result<Option<Hash256>, Failure> {
    root.map(|r| parse_hash("root", r)).transpose()
}

/// The map named by `--root` (see [`map_root`]), opened as a backed map
/// with a node cache of `cache_mb` MiB.
pub fn open_backed<'s>(
    store: &'s dyn NodeStore,
    root: Option<&str>,
    cache_mb: u64,
) -> Result<shamap_store::BackedMap<'s>, Failure> {
    let (root, kind) = map_root(store, parse_root(root)?)?;
    Ok(shamap_store::BackedMap::open(
        store,
        root,
        kind,
        shamap_store::BackedOptions::with_budget_mb(cache_mb),
    )?)
}

/// The map to read for `root` (a ledger hash → its state map; a map root
/// → that map), or, when `root` is `None`, the newest retained state map
/// (a retained ledger's, or a retained state root).
pub fn map_root(
    store: &dyn NodeStore,
    root: Option<Hash256>,
) -> Result<(Hash256, MapKind), Failure> {
    if let Some(root) = root {
        return Ok(match root_kind(store, &root)? {
            RootKind::Ledger(h) => (h.account_hash, MapKind::AccountState),
            RootKind::Map(kind) => (root, kind),
        });
    }
    for r in meta::retained(store)?.iter().rev() {
        match root_kind(store, &r.hash)? {
            RootKind::Ledger(h) if !h.account_hash.is_zero() => {
                return Ok((h.account_hash, MapKind::AccountState))
            }
            RootKind::Map(MapKind::AccountState) => return Ok((r.hash, MapKind::AccountState)),
            _ => {}
        }
    }
    Err(Failure::bad(format!(
        "{}: the store has no imported state map (give --root)",
        store.location()
    )))
}

/// A progress bar on stderr when it is a terminal; hidden otherwise.
pub fn progress(len: u64, what: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    let style = ProgressStyle::with_template(&format!(
        "{{spinner}} {what} [{{bar:40}}] {{pos}}/{{len}} nodes ({{per_sec}}, {{eta}})"
    ))
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar
}
