//! `shamap clio load` and `clio repair` (and `clio insert-floor`, the
//! load's floor): Clio's rows written from a verified node store or a
//! directory of ledger dumps ([`shamap_clio::etl`]). The shared helpers of
//! the `clio` commands (one-line failures, the progress bar) live here too.

use std::io::IsTerminal;
use std::path::PathBuf;

use indicatif::{ProgressBar, ProgressStyle};
use shamap_clio::{insert_floor, load, repair, LedgerLoaded, LoadOptions};
use shamap_store::map::audit::plural;
use shamap_store::{MemStore, NodeStore};

use crate::output::{print_text, Exit, Failure};

pub fn unusable(e: impl std::fmt::Display) -> Failure {
    Failure::unusable(e.to_string())
}

pub fn progress(len: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    let style = ProgressStyle::with_template(
        "{spinner} clio [{bar:40}] {pos}/{len} ledgers ({per_sec}, {eta})",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar
}

/// The Clio keyspace a command writes into.
#[derive(Debug, clap::Args)]
pub struct ClioTarget {
    /// The Clio keyspace: cassandra://HOST[:PORT][,HOST...]/KEYSPACE.
    #[arg(long, value_name = "URL")]
    pub db: String,
    /// Clio's `table_prefix`: its tables are KEYSPACE.<P><name> (also
    /// `table_prefix=P` in the URL).
    #[arg(long, value_name = "P")]
    pub table_prefix: Option<String>,
}

impl ClioTarget {
    fn options(&self) -> LoadOptions {
        LoadOptions {
            table_prefix: self.table_prefix.clone(),
        }
    }
}

/// Arguments of `shamap clio load`.
#[derive(Debug, clap::Args)]
pub struct ClioLoadArgs {
    /// The store to read: a NuDB directory (with ledger.db beside it or
    /// inside), a node log directory, a cassandra:// node store, or a
    /// directory of ledger dumps (JSON with state, transactions and
    /// header; each checked against its header, held in memory).
    #[arg(long, value_name = "STORE")]
    pub from: PathBuf,
    #[command(flatten)]
    pub to: ClioTarget,
    /// The ledgers to write, A..B (or one, N).
    #[arg(long, value_name = "A..B", value_parser = parse_ledgers)]
    pub ledgers: (u32, u32),
    /// With an anchor, every ledger of A..B must be authenticated from it
    /// (through parent links and skip lists) before anything is written.
    #[command(flatten)]
    pub anchor: crate::anchor::AnchorArgs,
}

fn parse_ledgers(s: &str) -> Result<(u32, u32), String> {
    let num = |x: &str| {
        x.trim()
            .parse::<u32>()
            .map_err(|_| format!("'{x}' is not a ledger sequence"))
    };
    let (a, b) = match s.split_once("..") {
        Some((a, b)) => (num(a)?, num(b)?),
        None => {
            let n = num(s)?;
            (n, n)
        }
    };
    if a > b {
        return Err(format!("{a}..{b}: the first ledger is after the last"));
    }
    Ok((a, b))
}

/// Arguments of `shamap clio repair`.
#[derive(Debug, clap::Args)]
pub struct ClioRepairArgs {
    /// The store to read: a NuDB directory (with ledger.db), a node log
    /// directory, a cassandra:// node store.
    #[arg(long, value_name = "STORE")]
    pub from: PathBuf,
    #[command(flatten)]
    pub to: ClioTarget,
    /// Repair this ledger.
    #[arg(
        long,
        value_name = "N",
        required_unless_present = "from_ledger",
        conflicts_with = "from_ledger"
    )]
    pub ledger: Option<u32>,
    /// Repair this ledger and every later one of ledger_range.
    #[arg(long, value_name = "N")]
    pub from_ledger: Option<u32>,
    /// Print what would change; change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// The `*.json` files of `dir`, sorted, when it is a directory that holds
/// no store but ledger dumps.
fn dump_files(dir: &std::path::Path) -> Option<Vec<PathBuf>> {
    if !dir.is_dir() || crate::input::open_to_read(dir).is_ok() {
        return None;
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
        .collect();
    files.sort();
    (!files.is_empty()).then_some(files)
}

/// The ledgers of a directory of ledger dumps, each whole (state entries,
/// transactions and a complete header), its maps built and checked
/// against its header (and the file's ledger hash) as `import` checks
/// them, stored in memory: a store `clio load` reads like any other.
fn dumps_store(files: &[PathBuf]) -> Result<MemStore, Failure> {
    let store = MemStore::new();
    for g in crate::input::read_ledgers(files)? {
        let src = g.source_names();
        let d = &g.dump;
        let entries = d
            .state
            .as_deref()
            .ok_or_else(|| Failure::unusable(format!("{src}: no state entries")))?;
        let state = crate::maps::state_map(entries)
            .map_err(|(i, e)| Failure::unusable(format!("{src}: state entry {i}: {e}")))?
            .snapshot();
        let tx = crate::maps::tx_map(d.transactions.as_deref().unwrap_or(&[]))
            .map_err(|(i, e)| Failure::unusable(format!("{src}: transactions entry {i}: {e}")))?
            .snapshot();
        let header = d
            .header
            .header_with_roots(Some(state.root_hash()), Some(tx.root_hash()))
            .map_err(|missing| {
                Failure::unusable(format!("{src}: the header lacks {}", missing.join(", ")))
            })?;
        let claimed = d.header.roots();
        for (what, computed, file) in [
            ("account_hash", header.account_hash, claimed.account_hash),
            (
                "transaction_hash",
                header.transaction_hash,
                claimed.transaction_hash,
            ),
            ("ledger_hash", header.hash(), d.header.ledger_hash),
        ] {
            if file.is_some_and(|f| f != computed) {
                return Err(Failure::negative(format!(
                    "{src}: computed {what} {computed} differs from the file's"
                )));
            }
        }
        shamap_store::import_ledger(
            &store,
            &format!("ledger-{}", header.seq),
            Some(&state),
            Some(&tx),
            Some(&header),
            &mut |_| {},
        )
        .map_err(|e| Failure::unusable(format!("{src}: {e}")))?;
    }
    Ok(store)
}

/// The store `--from` names: a store, or a directory of ledger dumps.
fn source_store(from: &std::path::Path) -> Result<Box<dyn NodeStore>, Failure> {
    match dump_files(from) {
        Some(files) => Ok(Box::new(dumps_store(&files)?)),
        None => crate::input::open_to_read(from).map_err(|f| f.about_store(from)),
    }
}

/// Refuses, in one line (exit 1), unless every ledger `from..=to` that
/// `store` lists is authenticated from `anchor` and none is missing.
fn require_authenticated(
    store: &dyn NodeStore,
    anchor: &shamap_auth::anchor::Anchor,
    (from, to): (u32, u32),
) -> Result<(), Failure> {
    use shamap_store::map::authenticate::{authenticate, StoreLedgers};
    let list = shamap_store::map::ledger::ledgers(store).map_err(unusable)?;
    let found: Vec<(Option<u32>, shamap::Hash256)> = list
        .ledgers
        .iter()
        .filter(|(s, _)| (from..=to).contains(s))
        .map(|(s, h)| (Some(*s), *h))
        .collect();
    let auth = authenticate(&StoreLedgers(store), &anchor.hash, &found);
    let from_anchor = format!("from the anchor {} ({})", anchor.hash, anchor.source);
    let mut listed = found.iter().map(|(s, _)| s.unwrap_or(0)).peekable();
    for seq in from..=to {
        if listed.peek() != Some(&seq) {
            return Err(Failure::negative(format!(
                "ledger {seq}: not in the store's ledger list, so not authenticated {from_anchor}: nothing written"
            )));
        }
        while listed.peek() == Some(&seq) {
            listed.next();
        }
    }
    for (seq, hash) in &found {
        let seq = seq.unwrap_or(0);
        match auth.verdicts.get(hash) {
            Some(v) if v.is_authenticated() => {}
            v => {
                let why = v.map_or_else(|| "no verdict".to_owned(), |v| v.describe());
                let notes = if auth.notes.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", auth.notes.join("; "))
                };
                return Err(Failure::negative(format!(
                    "ledger {seq} {hash}: {why}, {from_anchor}{notes}: nothing written"
                )));
            }
        }
    }
    Ok(())
}

pub fn load_cmd(args: &ClioLoadArgs) -> Result<Exit, Failure> {
    let (from, to) = args.ledgers;
    let anchor = args.anchor.resolve()?;
    let store = source_store(&args.from)?;
    if let Some(a) = &anchor {
        require_authenticated(&*store, a, args.ledgers)?;
    }
    let bar = progress(u64::from(to - from) + 1);
    let mut done = |_: &LedgerLoaded| bar.inc(1);
    let t = std::time::Instant::now();
    let opts = args.to.options();
    let r = load(&*store, &args.to.db, &opts, from, to, &mut done);
    let took = t.elapsed().as_secs_f64();
    bar.finish_and_clear();
    let r = r.map_err(unusable)?;
    let mut out = String::new();
    if r.created_schema {
        out.push_str(&format!(
            "created Clio's schema in {} ({:.2} s)\n",
            r.location,
            r.schema_time.as_secs_f64()
        ));
    }
    let range = |x: Option<(u32, u32)>| match x {
        Some((a, b)) => format!("{a}..{b}"),
        None => "empty".to_owned(),
    };
    if r.written == 0 {
        out.push_str(&format!(
            "nothing to write: ledgers {from}..{to} are in ledger_range {} of {}\n",
            range(r.range_after),
            r.location
        ));
    } else {
        out.push_str(&format!(
            "wrote {} ledger{} ({} rows, {took:.2} s) into {}: ledger_range {} (was {})\n",
            r.written,
            if r.written == 1 { "" } else { "s" },
            r.rows,
            r.location,
            range(r.range_after),
            range(r.range_before)
        ));
    }
    print_text(&out)?;
    Ok(Exit::Done)
}

pub fn repair_cmd(args: &ClioRepairArgs) -> Result<Exit, Failure> {
    let store = source_store(&args.from)?;
    let (from, to) = match (args.ledger, args.from_ledger) {
        (Some(n), _) => (n, Some(n)),
        (None, Some(n)) => (n, None),
        (None, None) => return Err(Failure::unusable("give --ledger N or --from-ledger N")),
    };
    let opts = args.to.options();
    let r = repair(&*store, &args.to.db, &opts, from, to, args.dry_run).map_err(unusable)?;
    let mut out = String::new();
    for c in &r.changes {
        let done = match (c.what, args.dry_run) {
            ("missing", false) => "written",
            ("missing", true) => "to write",
            ("extra", false) => "deleted",
            ("extra", true) => "to delete",
            (_, false) => "rewritten",
            (_, true) => "to rewrite",
        };
        out.push_str(&format!(
            "ledger {}: {} {}: {}, {done}\n",
            c.seq, c.table, c.key, c.what
        ));
    }
    let (a, b) = r.ledgers;
    let n = r.changes.len();
    out.push_str(&match (n, args.dry_run) {
        (0, _) => format!(
            "ledgers {a}..{b} of {}: every row is the store's, nothing to repair\n",
            r.location
        ),
        (_, true) => format!(
            "dry run: {} of ledgers {a}..{b} of {} would change\n",
            plural(n, "row", "rows"),
            r.location
        ),
        (_, false) => format!(
            "repaired ledgers {a}..{b} of {}: {} changed\n",
            r.location,
            plural(n, "row", "rows")
        ),
    });
    print_text(&out)?;
    Ok(Exit::Done)
}

pub fn insert_floor_cmd(args: &ClioLoadArgs) -> Result<Exit, Failure> {
    let (from, to) = args.ledgers;
    if args.anchor.resolve()?.is_some() {
        return Err(Failure::unusable(
            "clio insert-floor authenticates nothing: give the anchor to clio load",
        ));
    }
    let store = source_store(&args.from)?;
    let opts = args.to.options();
    let (rows, took) = insert_floor(&*store, &args.to.db, &opts, from, to).map_err(unusable)?;
    print_text(&format!(
        "insert floor of ledgers {from}..{to}: {rows} rows in {:.2} s\n",
        took.as_secs_f64()
    ))?;
    Ok(Exit::Done)
}
