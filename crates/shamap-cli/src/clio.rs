//! `shamap clio verify`: verify a Clio database (Cassandra or ScyllaDB)
//! ledger by ledger ([`shamap_clio::ClioVerifier`]).
//!
//! Text output, per ledger, as it is verified:
//!
//! ```text
//! ledger 38129 (full build: 261 state entries, 1 transaction)
//! account_hash 2C23…B452 match
//! transaction_hash DB83…951A match
//! ledger_hash E6DB…758E match
//! ```
//!
//! A following ledger's heading says `(12 diff keys, 270 state entries,
//! 3 transactions)`. A value that differs is `MISMATCH expected <HEX>`; a
//! `parent_hash … MISMATCH` line appears when the header does not name the
//! previous ledger; each disagreement inside Clio's data is a line
//! `key <KEY>: <what>`; after a state mismatch, `diff keys at ledger N:`
//! lists the keys the ledger changed. The run stops at the first ledger
//! that does not match (later ledgers would be built on unverified state),
//! with one `error: ledger N: …` line on stderr naming the ledger and key.
//!
//! Exit status, as `verify`'s: 0 every ledger matched; 1 a mismatch; 2
//! unusable input (unreachable cluster, no Clio tables, a missing header or
//! transaction row, a ledger missing from the range, a bad `--state`).
//!
//! `--follow` goes on after the end of `ledger_range`: it reads the range
//! every second and verifies each new ledger as it appears, until stopped
//! (Ctrl-C) or a ledger does not match.
//!
//! After the last ledger, unless `--no-audit`, every live key's newest
//! object is read again and compared with the verified state:
//! `audit of the state at ledger N: K live keys re-read, all match`, or a
//! line per object row written without its diff row (`ledger S key K: …`),
//! which the ledger-by-ledger pass cannot see (exit 1).
//!
//! `--json` prints one object at the end: `ok`, `checked` (values
//! compared), `mismatches`, `errors`, `resumed_after` (the ledger a
//! `--state` run started after, or null), `not_checked` (the keyspace's
//! tables under the prefix that are not read), `scan` (how a whole state
//! is listed: `partition`, `objects` or `successor`), `audit` (`ledger_index`,
//! `findings`: `ledger_index`, `key`, `what`; null when not run) and `ledgers`, each with
//! `ledger_index`, `full_build`, `state_entries`, `diff_keys`,
//! `transactions`, `account_hash` / `transaction_hash` / `ledger_hash` /
//! `parent_hash` (as `verify --json`: `computed`, `expected`, `status`;
//! `parent_hash` null when there is no previous ledger) and `problems`
//! (`key`, `what`).

use std::path::PathBuf;

use serde_json::{json, Value};
use shamap_clio::report::{audit_json, render_audit, render_text, JsonReport};
use shamap_clio::{
    ledgers_wanted, random_chain, read_floor, ChainShape, ClioLoader, ClioReader, ClioRun,
    ClioVerifier, ReadOptions, ScanMode, StatePolicy, Stop, Tables,
};
use shamap_store::{MemStore, NodeStore};

use crate::clio_anchor::{self, ClioLedgers};
use crate::clio_load::{
    insert_floor_cmd, load_cmd, progress, repair_cmd, unusable, ClioLoadArgs, ClioRepairArgs,
    ClioTarget,
};
use crate::output::{print_json, print_json_streamed, print_text, Exit, Failure};
use shamap_auth::anchor::Anchor;

/// Arguments of `shamap clio`.
#[derive(Debug, clap::Args)]
pub struct ClioArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: ClioCommand,
}

/// The `clio` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ClioCommand {
    /// Rebuild each ledger's state and transaction maps from a Clio
    /// database and check its header's account_hash, transaction_hash and
    /// ledger hash, and Clio's successor list on the way.
    ///
    /// Exit status: 0 all matched, 1 a mismatch, 2 unusable input.
    Verify(ClioVerifyArgs),
    /// For tests and benchmarks: write a generated chain of ledgers into a
    /// fresh Clio keyspace (dropped first if it exists), with the rows
    /// Clio's ETL writes. Exit status: 0, or 2.
    LoadTestChain(LoadTestChainArgs),
    /// Write ledgers of a node store (rippled's NuDB with ledger.db, a node
    /// log, a Cassandra node store) into a Clio keyspace, each ledger read
    /// and verified (its maps against its header, its parent link) before
    /// any of its rows is written, with the rows Clio's ETL writes and
    /// ledger_range moved last. A keyspace without Clio's tables gets
    /// Clio's schema; one with a range is extended after its end only.
    /// Resumable: a killed run is run again. Exit status: 0, or 2.
    Load(ClioLoadArgs),
    /// Rewrite the rows of the named ledgers of a Clio keyspace from a
    /// verified node store: wrong rows rewritten, missing ones written,
    /// extra ones deleted, in every core table (objects, diff, successor,
    /// ledgers, ledger_hashes, ledger_transactions, transactions) and
    /// account_tx; prints each row changed. Exit status: 0, or 2.
    Repair(ClioRepairArgs),
    /// For benchmarks: the rows `clio load` would write for a range into a
    /// new keyspace, read and verified first (untimed, in memory), then
    /// written alone with the same statements and concurrency, and the
    /// time printed (the floor a load's time is compared with).
    /// Exit status: 0, or 2.
    InsertFloor(ClioLoadArgs),
    /// For benchmarks: read the rows `clio verify` reads for a range, with
    /// the same queries and concurrency, building and hashing nothing, and
    /// print the time (the floor a verification's time is compared with).
    /// Exit status: 0, or 2.
    ReadFloor(ReadFloorArgs),
}

/// Arguments of `shamap clio load-test-chain`.
#[derive(Debug, clap::Args)]
pub struct LoadTestChainArgs {
    /// The keyspace to create.
    #[command(flatten)]
    pub to: ClioTarget,
    /// Seed of the generator.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The first ledger's sequence.
    #[arg(long, default_value_t = 1)]
    pub first: u32,
    /// Ledgers in all.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub ledgers: u64,
    /// Objects of the first ledger.
    #[arg(long, default_value_t = 1000)]
    pub objects: usize,
    /// Changed keys per following ledger.
    #[arg(long, default_value_t = 100)]
    pub changes: usize,
    /// Most transactions per ledger.
    #[arg(long, default_value_t = 3)]
    pub transactions: usize,
    /// Create Clio's whole schema (account_tx, the NFT and MPT index and
    /// history tables, migrator_status, nodes_chat), not only the tables
    /// `clio verify` reads.
    #[arg(long)]
    pub full_schema: bool,
}

/// How `clio verify` and `clio read-floor` read the keyspace: its table
/// prefix and how a whole state is listed.
#[derive(Debug, clap::Args)]
pub struct ClioReadArgs {
    /// Clio's `table_prefix`: its tables are KEYSPACE.<P><name> (also
    /// `table_prefix=P` in the URL).
    #[arg(long, value_name = "P")]
    pub table_prefix: Option<String>,
    /// How a ledger's whole state is listed (a first ledger's build, the
    /// audit): `partition` (Clio's ledger-page scan, PER PARTITION LIMIT
    /// and ALLOW FILTERING), `objects` (token-range scans of every row,
    /// newest per key kept here: no filtering on the server), `successor`
    /// (the successor list walked key by key: point reads only, one round
    /// trip per key), or `auto`, the default: `partition` unless the
    /// server refuses it (AWS Keyspaces), then `objects`.
    #[arg(long, value_name = "HOW", default_value = "auto", value_parser = parse_scan)]
    pub scan: ScanMode,
}

impl ClioReadArgs {
    /// Opens the keyspace `db` names for reading.
    fn open(&self, db: &str) -> Result<ClioReader, Failure> {
        let opts = ReadOptions {
            table_prefix: self.table_prefix.clone(),
            scan: self.scan,
        };
        ClioReader::open_with(db, &opts).map_err(unusable)
    }
}

/// Arguments of `shamap clio verify`.
#[derive(Debug, clap::Args)]
pub struct ClioVerifyArgs {
    /// The Clio keyspace: cassandra://HOST[:PORT][,HOST...]/KEYSPACE
    /// (options as for --db elsewhere: ?consistency=..&inflight=..).
    #[arg(long, value_name = "URL")]
    pub db: String,
    #[command(flatten)]
    pub read: ClioReadArgs,
    /// Verify this one ledger (built whole from the successor list).
    #[arg(long, value_name = "N", conflicts_with_all = ["from", "to"])]
    pub ledger: Option<u32>,
    /// First ledger (default: the start of ledger_range).
    #[arg(long, value_name = "A")]
    pub from: Option<u32>,
    /// Last ledger (default: the end of ledger_range).
    #[arg(long, value_name = "B")]
    pub to: Option<u32>,
    /// Keep the verified state in this node-log directory: committed after
    /// each ledger that matched; a later run resumes after the last one.
    /// It holds the last verified ledger (its header and state map, for
    /// `get`/`prove --db`): each commit deletes the nodes it replaced, so
    /// the store and its index in memory stay the size of one state.
    #[arg(long, value_name = "DIR")]
    pub state: Option<PathBuf>,
    /// With --state: keep every verified ledger's header and state map
    /// instead of the last one's (each ledger's changed nodes stay: the
    /// store, and the node log's index in memory, grow with the range).
    #[arg(long, requires = "state")]
    pub keep_history: bool,
    /// With --state: memory budget of the state's node cache, MiB.
    #[arg(long, value_name = "MB", default_value_t = 64, requires = "state",
          value_parser = clap::value_parser!(u64).range(1..=1_048_576))]
    pub cache_mb: u64,
    /// After the last ledger of ledger_range, wait for new ones and verify
    /// each as it appears (polled every second; stop with Ctrl-C: with
    /// --state every ledger verified is already recorded).
    #[arg(long, conflicts_with_all = ["ledger", "to", "json"])]
    pub follow: bool,
    /// Skip the final audit (re-reading every live key's newest object
    /// after the last ledger, to find object rows written without their
    /// diff rows; it reads as much as a full build).
    #[arg(long)]
    pub no_audit: bool,
    /// Print one JSON object instead of text (its `ledgers` written as
    /// they are verified).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub anchor: crate::anchor::AnchorArgs,
}

/// Arguments of `shamap clio read-floor`.
#[derive(Debug, clap::Args)]
pub struct ReadFloorArgs {
    /// The Clio keyspace: cassandra://HOST[:PORT][,HOST...]/KEYSPACE.
    #[arg(long, value_name = "URL")]
    pub db: String,
    #[command(flatten)]
    pub read: ClioReadArgs,
    /// First ledger (default: the start of ledger_range).
    #[arg(long, value_name = "A")]
    pub from: Option<u32>,
    /// Last ledger (default: the end of ledger_range).
    #[arg(long, value_name = "B")]
    pub to: Option<u32>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// How often `--follow` reads `ledger_range`.
const FOLLOW_POLL: std::time::Duration = std::time::Duration::from_secs(1);

/// Runs `shamap clio …`.
pub fn run(args: &ClioArgs) -> Result<Exit, Failure> {
    match &args.command {
        ClioCommand::Verify(a) => verify(a),
        ClioCommand::LoadTestChain(a) => load_test_chain(a),
        ClioCommand::ReadFloor(a) => read_floor_cmd(a),
        ClioCommand::Load(a) => load_cmd(a),
        ClioCommand::Repair(a) => repair_cmd(a),
        ClioCommand::InsertFloor(a) => insert_floor_cmd(a),
    }
}

fn load_test_chain(args: &LoadTestChainArgs) -> Result<Exit, Failure> {
    let shape = ChainShape {
        first_seq: args.first,
        ledgers: usize::try_from(args.ledgers).unwrap_or(usize::MAX),
        initial_objects: args.objects,
        changes: args.changes,
        max_transactions: args.transactions,
    };
    let chain = random_chain(args.seed, shape);
    let tables = if args.full_schema {
        Tables::Full
    } else {
        Tables::Core
    };
    let mut loader =
        ClioLoader::create_fresh_with(&args.to.db, args.to.table_prefix.as_deref(), tables)
            .map_err(unusable)?;
    let bar = progress(args.ledgers);
    for (i, l) in chain.iter().enumerate() {
        if i == 0 {
            loader.load_initial(l).map_err(unusable)?;
        } else {
            loader.load_next(l).map_err(unusable)?;
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    let last = args.first as u64 + args.ledgers - 1;
    print_text(&format!(
        "loaded ledgers {}..{last} into {} ({} live objects at the end)\n",
        args.first,
        loader.location(),
        loader.live().len()
    ))?;
    Ok(Exit::Done)
}

/// Set by Ctrl-C during `--follow`: stop after the ledger in progress.
static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn stop_requested() -> bool {
    STOP.load(std::sync::atomic::Ordering::SeqCst)
}

fn parse_scan(s: &str) -> Result<ScanMode, String> {
    ScanMode::parse(s)
        .ok_or_else(|| format!("'{s}' is not a scan (auto, partition, objects or successor)"))
}

fn verify(args: &ClioVerifyArgs) -> Result<Exit, Failure> {
    let anchor = args.anchor.resolve()?;
    let reader = args.read.open(&args.db)?;
    let held = std::cell::RefCell::new(ClioLedgers::new(&reader));
    let range = reader.range().map_err(unusable)?;
    let (from, to) =
        ledgers_wanted(args.ledger, args.from, args.to, range).map_err(Failure::unusable)?;
    let mem;
    let log;
    let (store, policy): (&dyn NodeStore, StatePolicy) = match &args.state {
        Some(dir) => {
            log = crate::input::open_or_create(dir).map_err(|f| f.about_store(dir))?;
            let policy = StatePolicy::Stored {
                cache_mb: args.cache_mb,
                keep_history: args.keep_history,
                heap_probe: crate::heap::probe(),
            };
            (&*log, policy)
        }
        None => {
            mem = MemStore::new();
            (&mem, StatePolicy::InMemory)
        }
    };
    let about_state = |f: Failure| match &args.state {
        Some(dir) => f.about_store(dir),
        None => f,
    };
    let mut verifier =
        ClioVerifier::with_state(&reader, store, policy).map_err(|e| about_state(unusable(e)))?;
    let mut run =
        ClioRun::new(&mut verifier, from, to).map_err(|e| about_state(Failure::unusable(e)))?;
    let resumed_after = run.resumed_after();
    if args.json {
        let about_reader = vec![
            ("not_checked", json!(reader.not_checked())),
            ("scan", json!(reader.scan_mode().name())),
        ];
        return verify_json(
            args,
            run,
            resumed_after,
            about_reader,
            &about_state,
            anchor.as_ref(),
            &held,
        );
    }
    if let Some(note) = reader.scan_note() {
        print_text(&format!("{note}\n"))?;
    }
    if !reader.not_checked().is_empty() {
        print_text(&format!(
            "not checked (tables clio verify does not read): {}\n",
            reader.not_checked().join(", ")
        ))?;
    }
    if let Some(s) = resumed_after {
        print_text(&format!(
            "resuming after ledger {s}, verified before into the state\n"
        ))?;
    }
    if args.follow {
        // Ctrl-C: the ledger in progress is finished (and, with --state,
        // recorded), then the run stops. A handler that cannot be set
        // leaves Ctrl-C as it is: every ledger verified is recorded anyway.
        let _ = ctrlc::set_handler(|| STOP.store(true, std::sync::atomic::Ordering::SeqCst));
    }
    let bar = progress(u64::from(to.saturating_sub(run.first())) + u64::from(run.first() <= to));
    let mut stopped = false;
    let mut failure = None;
    loop {
        while !stop_requested() {
            let Some(check) = run.next_check() else {
                break;
            };
            bar.inc(1);
            if anchor.is_some() && check.is_match() {
                held.borrow_mut().verified(check.seq, check.ledger_hash.0);
            }
            bar.suspend(|| print_text(&render_text(&check)))?;
        }
        if stop_requested() {
            stopped = true;
            break;
        }
        if run.stop().is_some() || !args.follow {
            break;
        }
        // --follow: wait for the range to grow, a second at most between
        // looks at Ctrl-C.
        let mut waited = std::time::Duration::ZERO;
        while waited < FOLLOW_POLL && !stop_requested() {
            let step = std::time::Duration::from_millis(100);
            std::thread::sleep(step);
            waited += step;
        }
        match reader.range() {
            Ok(Some((_, end))) if end > run.last() => {
                bar.inc_length(u64::from(end - run.last()));
                run.extend_to(end);
            }
            Ok(_) => {}
            Err(e) => {
                failure = Some(unusable(e));
                break;
            }
        }
    }
    bar.finish_and_clear();
    if stopped {
        print_text(&match (run.last_verified(), policy.persists()) {
            (Some(l), true) => {
                format!("stopped (Ctrl-C) after ledger {l}: every ledger verified is recorded in the state\n")
            }
            (Some(l), false) => format!("stopped (Ctrl-C) after ledger {l}\n"),
            (None, _) => "stopped (Ctrl-C) before any ledger was verified\n".to_owned(),
        })?;
        return Ok(Exit::Done);
    }
    if failure.is_none() && !args.no_audit {
        if let Some(found) = run.audit() {
            print_text(&render_audit(run.audited_at(), run.map_entries(), &found))?;
        }
    }
    if let Some(f) = failure.or_else(|| run.stop().map(|s| stop_failure(s, &about_state))) {
        return Err(f);
    }
    if run.verified() == 0 {
        print_text(&format!(
            "nothing to verify: ledgers up to {} are verified in the state\n",
            resumed_after.unwrap_or(to)
        ))?;
    }
    if let Some(anchor) = &anchor {
        let held = held.borrow();
        let (found, a) = held.authenticate(&anchor.hash);
        let (text, not) = clio_anchor::render(anchor, &found, &a);
        print_text(&text)?;
        if not > 0 {
            return Err(Failure::negative(format!(
                "{not} of {} verified ledgers not authenticated from the anchor {}",
                found.len(),
                anchor.hash
            )));
        }
    }
    Ok(Exit::Done)
}

/// The failure of a run that stopped early.
fn stop_failure(stop: &Stop, about_state: &dyn Fn(Failure) -> Failure) -> Failure {
    match stop {
        Stop::Unusable(line) => about_state(Failure::unusable(line.clone())),
        Stop::Mismatch(line) => Failure::negative(line.clone()),
    }
}

/// `--json`: one document, its ledgers written as they are verified
/// ([`JsonReport`]).
fn verify_json(
    args: &ClioVerifyArgs,
    run: ClioRun<'_, '_, '_>,
    resumed_after: Option<u32>,
    about_reader: Vec<(&'static str, Value)>,
    about_state: &dyn Fn(Failure) -> Failure,
    anchor: Option<&Anchor>,
    held: &std::cell::RefCell<ClioLedgers<'_>>,
) -> Result<Exit, Failure> {
    let run = std::cell::RefCell::new(run);
    let failure = std::cell::RefCell::new(None);
    let not_authenticated = std::cell::Cell::new(0usize);
    let report = JsonReport::new(
        || {
            let check = run.borrow_mut().next_check();
            if let (Some(c), Some(_)) = (&check, anchor) {
                if c.is_match() {
                    held.borrow_mut().verified(c.seq, c.ledger_hash.0);
                }
            }
            check
        },
        || {
            let mut r = run.borrow_mut();
            let audit = if args.no_audit { None } else { r.audit() };
            let f = r.stop().map(|s| stop_failure(s, about_state));
            let errors: Vec<String> = f.iter().map(|f| f.line.clone()).collect();
            *failure.borrow_mut() = f;
            let authentication = anchor.map_or(Value::Null, |anchor| {
                let held = held.borrow();
                let (found, a) = held.authenticate(&anchor.hash);
                let (_, not) = clio_anchor::render(anchor, &found, &a);
                not_authenticated.set(not);
                clio_anchor::to_json(anchor, &found, &a)
            });
            vec![
                ("authentication", authentication),
                ("ok", json!(errors.is_empty())),
                ("errors", json!(errors)),
                ("resumed_after", json!(resumed_after)),
                ("not_checked", about_reader[0].1.clone()),
                ("scan", about_reader[1].1.clone()),
                (
                    "audit",
                    audit.map_or(Value::Null, |found| audit_json(r.audited_at(), &found)),
                ),
            ]
        },
    );
    print_json_streamed(&report)?;
    match failure.into_inner() {
        Some(f) => Err(f),
        None if not_authenticated.get() > 0 => Err(Failure::negative(format!(
            "{} verified ledgers not authenticated from the anchor",
            not_authenticated.get()
        ))),
        None => Ok(Exit::Done),
    }
}

fn read_floor_cmd(args: &ReadFloorArgs) -> Result<Exit, Failure> {
    let reader = args.read.open(&args.db)?;
    let range = reader.range().map_err(unusable)?;
    let (from, to) = ledgers_wanted(None, args.from, args.to, range).map_err(Failure::unusable)?;
    let f = read_floor(&reader, from, to).map_err(unusable)?;
    let secs = |d: std::time::Duration| d.as_secs_f64();
    if args.json {
        print_json(&json!({
            "from": from,
            "to": to,
            "inflight": reader.inflight(),
            "scan": reader.scan_mode().name(),
            "first_seconds": secs(f.first),
            "first_rows": f.first_rows,
            "rest_seconds": secs(f.rest),
            "rest_rows": f.rest_rows,
        }))?;
    } else {
        print_text(&format!(
            "read floor of ledgers {from}..{to} (inflight {}, scan {}):\n\
             first ledger's state scans: {:.2} s, {} rows\n\
             following {} ledgers' rows: {:.2} s, {} rows\n",
            reader.inflight(),
            reader.scan_mode().name(),
            secs(f.first),
            f.first_rows,
            to - from,
            secs(f.rest),
            f.rest_rows
        ))?;
    }
    Ok(Exit::Done)
}
