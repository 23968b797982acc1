//! Reading what the subcommands are given: files (`-` for standard input),
//! ledger dumps (through [`shamap_ledger`]) grouped into ledgers, hex
//! arguments, and node stores.
//!
//! Every error is a [`Failure`] whose line starts with the file, directory
//! or argument it concerns.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::ValueEnum;

use shamap::{Hash256, MapKind};
use shamap_ledger::dump::{self, LedgerDump};
use shamap_ledger::pages::{self, PagedLedger, PagesError};
use shamap_store::{
    map::ledger, meta, root_kind, Access, BackedMap, BackedOptions, FjallOptions, NodeStore,
    OpenOptions, Opened, RootKind,
};

use crate::output::Failure;

/// The largest `--cache-mb` (1 TiB): a budget, not an allocation, but a
/// typed size has a bound like every other.
pub const MAX_CACHE_MB: u64 = 1 << 20;

/// Reads a whole file, or standard input for `-`; returns the name to use
/// in messages (`<stdin>` for `-`) and the bytes.
pub fn read_file(path: &Path) -> Result<(String, Vec<u8>), Failure> {
    let stdin = path.as_os_str() == "-";
    let name = if stdin {
        "<stdin>".to_owned()
    } else {
        path.display().to_string()
    };
    let bytes = if stdin {
        let mut buf = Vec::new();
        io::stdin().lock().read_to_end(&mut buf).map(|_| buf)
    } else {
        std::fs::read(path)
    };
    match bytes {
        Ok(b) => Ok((name, b)),
        Err(e) => Err(Failure::unusable(format!("{name}: cannot read: {e}"))),
    }
}

/// One parsed ledger dump file.
#[derive(Debug, Clone)]
pub struct Input {
    /// The file's name for messages.
    pub name: String,
    /// What it holds.
    pub dump: LedgerDump,
}

/// Reads and parses one ledger dump; `-` is standard input.
pub fn read_dump(path: &Path) -> Result<Input, Failure> {
    let (name, bytes) = read_file(path)?;
    match dump::parse(&bytes) {
        Ok(dump) => Ok(Input { name, dump }),
        Err(e) => Err(Failure::unusable(format!("{name}: {e}"))),
    }
}

/// All the input about one ledger: its files and their merged dump
/// ([`shamap_ledger::pages`], shared with the Python module).
pub type Group = PagedLedger;

/// Makes one group per ledger, in order of first appearance: each `ledger`
/// response alone, and `ledger_data` pages merged with earlier pages of the
/// same ledger (same `ledger_index` and/or `ledger_hash`). The first
/// problem stops it: pages that conflict, or a ledger whose last page is
/// missing ([`PagedLedger::require_whole`]).
pub fn group(inputs: Vec<Input>) -> Result<Vec<Group>, Failure> {
    group_each(inputs.into_iter().map(Ok).collect())
        .into_iter()
        .collect()
}

/// [`group`] that goes on past problems ([`pages::group_each`]): one
/// result per ledger, and one per input that could not be read, in order
/// of first appearance.
pub fn group_each(inputs: Vec<Result<Input, Failure>>) -> Vec<Result<Group, Failure>> {
    let inputs = inputs
        .into_iter()
        .map(|i| i.map(|Input { name, dump }| (name, dump)));
    pages::group_each(inputs, unusable)
}

/// A ledger that cannot be assembled, as a failure.
pub fn unusable(e: PagesError) -> Failure {
    Failure::unusable(e.to_string())
}

/// Reads every file, then groups them into ledgers; the first problem
/// stops it.
pub fn read_ledgers(files: &[PathBuf]) -> Result<Vec<Group>, Failure> {
    let inputs = files
        .iter()
        .map(|f| read_dump(f))
        .collect::<Result<Vec<_>, _>>()?;
    group(inputs)
}

/// Reads and groups every file as [`group_each`]: one result per ledger or
/// unreadable file, going on past problems.
pub fn read_ledgers_each(files: &[PathBuf]) -> Vec<Result<Group, Failure>> {
    group_each(files.iter().map(|f| read_dump(f)).collect())
}

/// Reads one file that must hold a whole ledger (`prove`, `diff`): a
/// `ledger_data` page with a marker is refused
/// ([`PagedLedger::require_whole`]).
pub fn read_ledger(path: &Path) -> Result<Input, Failure> {
    let Input { name, dump } = read_dump(path)?;
    let ledger = PagedLedger::new(name, dump);
    ledger.require_whole().map_err(unusable)?;
    let PagedLedger { mut sources, dump } = ledger;
    let name = sources.pop().map(|s| s.name).unwrap_or_default();
    Ok(Input { name, dump })
}

/// Parses a 64-digit hex hash given as `what`.
pub fn parse_hash(what: &str, s: &str) -> Result<Hash256, Failure> {
    Hash256::from_hex(s.trim()).map_err(|e| Failure::unusable(format!("{what} '{s}': {e}")))
}

/// The optional `--root` argument, parsed: 64 hex digits, or `0` for the
/// zero hash (the empty map), as the help offers.
pub fn parse_root(root: Option<&str>) -> Result<Option<Hash256>, Failure> {
    root.map(|r| match r.trim() {
        "0" => Ok(Hash256::ZERO),
        _ => parse_hash("root", r),
    })
    .transpose()
}

/// What `--db` (and `sync`'s `--from` and `--to`) names: the one
/// description every such argument's help is made from ([`db_help`]).
pub const DB_HELP: &str = "a directory (a node log; a fjall store made by an earlier version \
still opens; rippled's NuDB node store, read-only: a directory holding nudb.dat and nudb.key, \
or rotated rippledb.* ones, also as nudb:DIR), \
or cassandra://HOST[:PORT][,HOST...]/KEYSPACE[?consistency=LEVEL&replication=N&inflight=N] \
(an Apache Cassandra or ScyllaDB keyspace; see the store README)";

/// The help of a store argument: what it is for, then [`DB_HELP`].
pub fn db_help(what: &str) -> String {
    format!("{what}: {DB_HELP}")
}

/// A store opened from a `--db` argument, whichever backend it names.
pub type Store = Box<dyn NodeStore>;

/// The one place a `--db` argument becomes a store, through the store
/// crate's one opening ([`shamap_store::open_with`]: a node log, a fjall
/// database, a `cassandra://` keyspace; a mistyped directory is an error,
/// not a new empty store), for `access`. Under a backed map (`scan`,
/// `apply`), a fjall store gets its caches set by
/// [`FjallOptions::beside_node_cache`].
fn open_db(db: &Path, access: Access, under_backed_map: bool) -> Result<Store, Failure> {
    let mut opts = OpenOptions::new(access);
    if under_backed_map {
        opts.fjall = FjallOptions::beside_node_cache();
    }
    Ok(shamap_store::open_with(db, &opts)?.into_boxed())
}

/// Opens an existing store to read it, as [`open_to_read`], with the
/// backend the store crate's one opening found ([`Opened`]), for a
/// command whose report differs by backend (`info`).
pub fn open_to_read_backend(db: &Path) -> Result<Opened, Failure> {
    Ok(shamap_store::open_with(
        db,
        &OpenOptions::new(Access::Read),
    )?)
}

/// Opens an existing store to write to it (never creates one).
pub fn open_existing(db: &Path) -> Result<Store, Failure> {
    open_db(db, Access::Write, false)
}

/// Opens an existing store to read it: as [`open_existing`], or, where a
/// directory cannot be written (a read-only file system, no write
/// permission), read-only ([`LogStore::open_read_only`],
/// [`FjallStore::open_read_only`]); a Cassandra keyspace read-only. A store
/// locked by a writer is an error that says so.
pub fn open_to_read(db: &Path) -> Result<Store, Failure> {
    open_db(db, Access::Read, false)
}

/// Opens a store, creating it if needed.
pub fn open_or_create(db: &Path) -> Result<Store, Failure> {
    open_db(db, Access::Create, false)
}

/// Opens an existing store for the backed-map commands (`scan`, `apply`),
/// whichever backend it is; a fjall store gets its block cache and write
/// buffer set by [`FjallOptions::beside_node_cache`], so that its memory
/// is the node-cache budget plus a fixed overhead. With `Access::Read`, a
/// directory that cannot be written is opened read-only (see
/// [`open_to_read`]).
pub fn open_for_backed_map(db: &Path, access: Access) -> Result<Store, Failure> {
    open_db(db, access, true)
}

/// The arguments every backed-map command (`get`, `scan`, `apply`) shares:
/// the store, the map in it, and the memory budget.
#[derive(Debug, clap::Args)]
pub struct MapArgs {
    #[arg(long, value_name = "DB", help = db_help("The store"))]
    pub db: PathBuf,
    /// The map: --root, --ledger and --kind.
    #[command(flatten)]
    pub at: RootArgs,
    /// Memory budget of the node cache (and, for `apply`, the dirty nodes;
    /// on a node log, also its index), in MiB, at most 1048576 (1 TiB).
    #[arg(long, value_name = "MB", default_value_t = 64,
          value_parser = clap::value_parser!(u64).range(0..=MAX_CACHE_MB))]
    pub cache_mb: u64,
}

/// Which map to build (`--kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum KindArg {
    /// Account state (`account_hash`): the dump's state entries.
    State,
    /// Transactions with metadata (`transaction_hash`): the dump's transactions.
    Tx,
    /// A consensus transaction set (no metadata): the dump's transaction blobs.
    Txset,
}

impl KindArg {
    /// The engine's map kind.
    pub fn kind(self) -> MapKind {
        match self {
            KindArg::State => MapKind::AccountState,
            KindArg::Tx => MapKind::TransactionWithMeta,
            KindArg::Txset => MapKind::TransactionNoMeta,
        }
    }

    /// The header field that holds this map's root, for the maps a ledger
    /// header names.
    pub fn root_field(self) -> Option<&'static str> {
        match self {
            KindArg::State => Some("account_hash"),
            KindArg::Tx => Some("transaction_hash"),
            KindArg::Txset => None,
        }
    }

    /// The value parser of `--kind` for the subcommands that take only the
    /// maps a ledger header names (`state`, `tx`): `txset` is refused as
    /// an invalid value.
    pub fn header_maps() -> impl TypedValueParser<Value = KindArg> {
        let values = KindArg::value_variants()
            .iter()
            .filter(|k| k.root_field().is_some())
            .filter_map(ValueEnum::to_possible_value);
        PossibleValuesParser::new(values).try_map(|s| KindArg::from_str(&s, false))
    }
}

/// Which map of a store a command reads (`--root`, `--ledger`, `--kind`),
/// resolved by [`RootArgs::resolve`] through the store crate's one rule
/// ([`ledger::resolve_root`]).
#[derive(Debug, Clone, clap::Args)]
pub struct RootArgs {
    /// A ledger hash (its state map; with --kind tx, its transaction map)
    /// or a map root the store knows; default: the newest imported map of
    /// the kind. `0` (or 64 zeros) is the empty map.
    #[arg(long, value_name = "HEX", conflicts_with = "ledger")]
    pub root: Option<String>,
    /// The ledger with this sequence number, as the store lists it (the
    /// store's own ledger list, as rippled's ledger.db; else the retained
    /// ledgers, `shamap info`).
    #[arg(long, value_name = "SEQ")]
    pub ledger: Option<u32>,
    /// Which map of a ledger: state (account_hash, the default) or tx
    /// (transaction_hash, the transactions with their metadata).
    #[arg(long, value_parser = KindArg::header_maps())]
    pub kind: Option<KindArg>,
}

impl RootArgs {
    /// The map these arguments name in `store`: see [`map_root`].
    pub fn resolve(&self, store: &dyn NodeStore) -> Result<(Hash256, MapKind), Failure> {
        let hash = given_root(store, self.root.as_deref(), self.ledger)?;
        map_root(store, hash, self.kind.map(KindArg::kind))
    }
}

/// `--root HEX` or `--ledger SEQ`, one of them required: the ledger a
/// command works on (`sync` also takes a map root).
#[derive(Debug, Clone, clap::Args)]
pub struct LedgerArgs {
    /// A ledger hash (the key of its header object); `sync` also takes a
    /// map root.
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
}

impl LedgerArgs {
    /// Refuses a `--root` that is not a hash, before any store is opened.
    pub fn check(&self) -> Result<(), Failure> {
        parse_root(self.root.as_deref()).map(drop)
    }

    /// The hash these arguments name in `store` (see [`given_root`]).
    pub fn resolve(&self, store: &dyn NodeStore) -> Result<Hash256, Failure> {
        given_root(store, self.root.as_deref(), self.ledger)?
            .ok_or_else(|| Failure::unusable("give --root or --ledger"))
    }
}

/// The hash `--root HEX` or `--ledger SEQ` names (the ledger's hash, from
/// [`ledger::ledger_by_seq`]), or `None` when neither is given.
pub fn given_root(
    store: &dyn NodeStore,
    root: Option<&str>,
    seq: Option<u32>,
) -> Result<Option<Hash256>, Failure> {
    match (parse_root(root)?, seq) {
        (Some(hash), _) => Ok(Some(hash)),
        (None, Some(seq)) => Ok(Some(ledger::ledger_by_seq(store, seq)?)),
        (None, None) => Ok(None),
    }
}

/// The map named by `--root`, `--ledger` and `--kind` (see [`map_root`]),
/// opened as a backed map with a node cache of `cache_mb` MiB.
pub fn open_backed<'s>(
    store: &'s dyn NodeStore,
    at: &RootArgs,
    cache_mb: u64,
) -> Result<BackedMap<'s>, Failure> {
    let (root, kind) = at.resolve(store)?;
    Ok(BackedMap::open(
        store,
        root,
        kind,
        BackedOptions::with_budget_mb(cache_mb),
    )?)
}

/// The map to read for `root`, through the store crate's one rule
/// ([`ledger::resolve_root`]: a ledger hash → its state map, or with
/// `kind` the transaction map, no metadata record needed; a map root the
/// store knows → that map; an inner node's hash is refused, not read as a
/// map), or, when `root` is `None`, the newest retained map of `kind`
/// (state by default: a retained ledger's, or a retained map root). The
/// empty map (the zero hash, given or retained) is a map with no entries.
pub fn map_root(
    store: &dyn NodeStore,
    root: Option<Hash256>,
    kind: Option<MapKind>,
) -> Result<(Hash256, MapKind), Failure> {
    if let Some(root) = root {
        let r = ledger::resolve_root(store, &root, kind)?;
        return Ok((r.root, r.kind));
    }
    let want = kind.unwrap_or(MapKind::AccountState);
    for r in meta::retained(store)?.iter().rev() {
        if r.hash.is_zero() {
            if want == MapKind::AccountState {
                return Ok((r.hash, want));
            }
            continue;
        }
        match root_kind(store, &r.hash)? {
            RootKind::Ledger(h) => {
                let root = match want {
                    MapKind::AccountState => h.account_hash,
                    _ => h.transaction_hash,
                };
                if !root.is_zero() {
                    return Ok((root, want));
                }
            }
            RootKind::Map(k) if k == want => return Ok((r.hash, want)),
            _ => {}
        }
    }
    Err(Failure::unusable(format!(
        "{}: the store has no imported {} map (give --root or --ledger)",
        store.location(),
        want.name()
    )))
}

/// Ledger dumps for the unit tests of every module.
#[cfg(test)]
pub mod fixtures {
    use super::*;

    /// The shipped mainnet ledger 38129.
    pub const LEDGER_38129: &[u8] = include_bytes!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/ledger-38129.json"
    ));
    /// A state key of ledger 38129.
    pub const KEY1: &str = "02CE52E3E46AD340B1C7900F86AFB959AE0C246916E3463905EDD61DE26FFFDD";
    /// Another state key of ledger 38129.
    pub const KEY2: &str = "032D4205B5D7DCEC8A4E56851C44555F6DC7D410AA823AE140C78674B8734DBF";

    /// A parsed test dump named `name`.
    pub fn input(name: &str, json: &str) -> Input {
        Input {
            name: name.to_owned(),
            dump: dump::parse(json.as_bytes()).expect("test JSON parses"),
        }
    }

    /// Ledger 38129, named `name`.
    pub fn ledger_38129(name: &str) -> Input {
        Input {
            name: name.to_owned(),
            dump: dump::parse(LEDGER_38129).expect("shipped data parses"),
        }
    }

    /// A `ledger_data` page of ledger `index` with an entry per key.
    pub fn page(name: &str, index: u32, keys: &[&str]) -> Input {
        let entries: Vec<String> = keys
            .iter()
            .map(|k| {
                format!(r#"{{"index": "{k}", "data": "110061220000000024000000012500000000"}}"#)
            })
            .collect();
        input(
            name,
            &format!(
                r#"{{"ledger_index": {index}, "state": [{}]}}"#,
                entries.join(",")
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::{input, page, KEY1, KEY2};
    use super::*;

    #[test]
    fn pages_of_one_ledger_merge_and_other_ledgers_stay_apart() {
        let groups = group(vec![
            page("a", 9, &[KEY1]),
            page("b", 10, &[KEY1]),
            page("c", 9, &[KEY2]),
            input(
                "d",
                r#"{"ledger": {"ledger_index": 9, "accountState": []}}"#,
            ),
        ])
        .expect("groups");
        let names: Vec<Vec<&str>> = groups
            .iter()
            .map(|g| g.sources.iter().map(|s| s.name.as_str()).collect())
            .collect();
        assert_eq!(names, [vec!["a", "c"], vec!["b"], vec!["d"]]);
        assert_eq!(groups[0].dump.state.as_ref().map(Vec::len), Some(2));
    }

    #[test]
    fn conflicting_pages_name_the_later_file() {
        let e = group(vec![
            input("a", r#"{"ledger_index": 9, "close_time": 1, "state": []}"#),
            input("b", r#"{"ledger_index": 9, "close_time": 2, "state": []}"#),
        ])
        .expect_err("conflict");
        assert_eq!(
            e.to_string(),
            r#"b: conflicting values for "close_time": 1 and 2"#
        );
    }

    #[test]
    fn group_each_goes_on_past_problems_in_order() {
        let marked = |name: &str, index: u32, key: &str| {
            input(
                name,
                &format!(
                    r#"{{"ledger_index": {index}, "marker": "M", "state": [{{"index": "{key}", "data": "1100"}}]}}"#
                ),
            )
        };
        let results = group_each(vec![
            Err(Failure::unusable("x: cannot read")),
            Ok(page("a", 9, &[KEY1])),
            Ok(input(
                "b",
                r#"{"ledger_index": 9, "close_time": 2, "state": []}"#,
            )),
            Ok(input(
                "c",
                r#"{"ledger_index": 9, "close_time": 3, "state": []}"#,
            )),
            Ok(marked("d", 10, KEY1)),
            Ok(page("e", 11, &[KEY1])),
            Ok(marked("f", 12, KEY1)),
            Ok(marked("g", 12, KEY2)),
            Ok(marked("h", 13, KEY1)),
            Ok(page("i", 13, &[KEY2])),
        ]);
        let lines: Vec<String> = results
            .iter()
            .map(|r| match r {
                Ok(g) => format!("ok {}", g.source_names()),
                Err(f) => f.line.clone(),
            })
            .collect();
        assert_eq!(
            lines,
            [
                "x: cannot read",
                r#"c: conflicting values for "close_time": 2 and 3"#,
                "d: ledger 10 continues past this page (its marker is M): give every page of the ledger",
                "ok e",
                "f, g: ledger 12 continues past these pages (every page has a marker): give every page of the ledger",
                "ok h, i",
            ]
        );
        // The first problem stops `group`.
        let e = group(vec![marked("d", 10, KEY1), page("e", 11, &[KEY1])]).expect_err("partial");
        assert!(
            e.line.starts_with("d: ledger 10 continues past this page"),
            "{e}"
        );
    }

    #[test]
    fn read_dump_names_the_file_in_errors() {
        let e = read_dump(Path::new("/nonexistent/x.json")).expect_err("missing file");
        assert!(
            e.to_string()
                .starts_with("/nonexistent/x.json: cannot read: "),
            "{e}"
        );
    }
}
