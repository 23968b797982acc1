//! `shamap clio verify`: verify a Clio database (Cassandra or ScyllaDB)
//! ledger by ledger ([`shamap_store::clio::ClioVerifier`]).
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
//! `--state` run started after, or null), `audit` (`ledger_index`,
//! `findings`: `ledger_index`, `key`, `what`; null when not run) and `ledgers`, each with
//! `ledger_index`, `full_build`, `state_entries`, `diff_keys`,
//! `transactions`, `account_hash` / `transaction_hash` / `ledger_hash` /
//! `parent_hash` (as `verify --json`: `computed`, `expected`, `status`;
//! `parent_hash` null when there is no previous ledger) and `problems`
//! (`key`, `what`).

use std::io::IsTerminal;
use std::path::PathBuf;

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Value};
use shamap_ledger::verify::Checked;
use shamap_store::clio::{
    random_chain, read_floor, AuditFinding, ChainShape, ClioLoader, ClioReader, ClioVerifier,
    LedgerCheck, Pair,
};
use shamap_store::{BackedOptions, MemStore, NodeStore};

use crate::output::{print_json, print_text, Exit, Failure};

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
    /// For benchmarks: read the rows `clio verify` reads for a range, with
    /// the same queries and concurrency, building and hashing nothing, and
    /// print the time (the floor a verification's time is compared with).
    /// Exit status: 0, or 2.
    ReadFloor(ReadFloorArgs),
}

/// Arguments of `shamap clio load-test-chain`.
#[derive(Debug, clap::Args)]
pub struct LoadTestChainArgs {
    /// The keyspace to create: cassandra://HOST[:PORT]/KEYSPACE.
    #[arg(long, value_name = "URL")]
    pub db: String,
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
}

/// Arguments of `shamap clio verify`.
#[derive(Debug, clap::Args)]
pub struct ClioVerifyArgs {
    /// The Clio keyspace: cassandra://HOST[:PORT][,HOST...]/KEYSPACE
    /// (options as for --db elsewhere: ?consistency=..&inflight=..).
    #[arg(long, value_name = "URL")]
    pub db: String,
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
}

/// Arguments of `shamap clio read-floor`.
#[derive(Debug, clap::Args)]
pub struct ReadFloorArgs {
    /// The Clio keyspace: cassandra://HOST[:PORT][,HOST...]/KEYSPACE.
    #[arg(long, value_name = "URL")]
    pub db: String,
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
    let mut loader = ClioLoader::create_fresh(&args.db).map_err(unusable)?;
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

fn unusable(e: impl std::fmt::Display) -> Failure {
    Failure::unusable(e.to_string())
}

fn status_word(p: &Pair) -> String {
    if p.0 == p.1 {
        format!("{} match", p.0)
    } else {
        format!("{} MISMATCH expected {}", p.0, p.1)
    }
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Keys listed on one line, at most `max`.
fn key_list(keys: &[impl std::fmt::Display], max: usize) -> String {
    let mut s: Vec<String> = keys.iter().take(max).map(|k| k.to_string()).collect();
    if keys.len() > max {
        s.push(format!("… and {} more", keys.len() - max));
    }
    s.join(" ")
}

/// One ledger's text report.
pub fn render_text(c: &LedgerCheck) -> String {
    let what = if c.full_build {
        format!(
            "full build: {}, {}",
            plural(c.state_entries, "state entry", "state entries"),
            plural(c.transactions as u64, "transaction", "transactions")
        )
    } else {
        format!(
            "{}, {}, {}",
            plural(c.diff_keys.len() as u64, "diff key", "diff keys"),
            plural(c.state_entries, "state entry", "state entries"),
            plural(c.transactions as u64, "transaction", "transactions")
        )
    };
    let mut out = format!("ledger {} ({what})\n", c.seq);
    out.push_str(&format!("account_hash {}\n", status_word(&c.account_hash)));
    out.push_str(&format!(
        "transaction_hash {}\n",
        status_word(&c.transaction_hash)
    ));
    out.push_str(&format!("ledger_hash {}\n", status_word(&c.ledger_hash)));
    if let Some(p) = c.parent_hash.filter(|p| p.0 != p.1) {
        out.push_str(&format!("parent_hash {}\n", status_word(&p)));
    }
    for p in &c.problems {
        out.push_str(&format!("key {}: {}\n", p.key, p.what));
    }
    if c.account_hash.0 != c.account_hash.1 && !c.full_build {
        out.push_str(&format!(
            "diff keys at ledger {}: {}\n",
            c.seq,
            if c.diff_keys.is_empty() {
                "none".to_owned()
            } else {
                key_list(&c.diff_keys, 64)
            }
        ));
    }
    out
}

/// The one line saying why a ledger did not match: its first problem by
/// key, else the first value that differs.
pub fn summary(c: &LedgerCheck) -> String {
    let n = c.seq;
    if let Some(p) = c.problems.first() {
        let more = match c.problems.len() {
            1 => String::new(),
            k => format!(" (and {} more)", k - 1),
        };
        return format!("ledger {n}: key {}: {}{more}", p.key, p.what);
    }
    if c.account_hash.0 != c.account_hash.1 {
        if c.full_build {
            return format!(
                "ledger {n}: account_hash {} MISMATCH expected {} (state built whole from the successor list: {})",
                c.account_hash.0,
                c.account_hash.1,
                plural(c.state_entries, "entry", "entries")
            );
        }
        return format!(
            "ledger {n}: account_hash {} MISMATCH expected {}; the ledger's diff keys: {}",
            c.account_hash.0,
            c.account_hash.1,
            if c.diff_keys.is_empty() {
                "none".to_owned()
            } else {
                key_list(&c.diff_keys, 8)
            }
        );
    }
    if c.transaction_hash.0 != c.transaction_hash.1 {
        return format!(
            "ledger {n}: transaction_hash {} MISMATCH expected {}",
            c.transaction_hash.0, c.transaction_hash.1
        );
    }
    if c.ledger_hash.0 != c.ledger_hash.1 {
        return format!(
            "ledger {n}: the stored ledger hash {} is not the hash of the header's fields {}",
            c.ledger_hash.1, c.ledger_hash.0
        );
    }
    if let Some(p) = c.parent_hash.filter(|p| p.0 != p.1) {
        return format!(
            "ledger {n}: parent_hash {} is not ledger {}'s hash {}",
            p.0,
            n.saturating_sub(1),
            p.1
        );
    }
    format!("ledger {n}: does not match")
}

fn checked(p: &Pair) -> Value {
    Checked::computed(p.0, Some(p.1)).to_json()
}

/// One ledger as JSON.
pub fn ledger_json(c: &LedgerCheck) -> Value {
    json!({
        "ledger_index": c.seq,
        "full_build": c.full_build,
        "state_entries": c.state_entries,
        "diff_keys": c.diff_keys.iter().map(|k| k.to_string()).collect::<Vec<_>>(),
        "transactions": c.transactions,
        "account_hash": checked(&c.account_hash),
        "transaction_hash": checked(&c.transaction_hash),
        "ledger_hash": checked(&c.ledger_hash),
        "parent_hash": c.parent_hash.as_ref().map(checked),
        "problems": c.problems.iter().map(|p| json!({"key": p.key.to_string(), "what": p.what})).collect::<Vec<_>>(),
    })
}

/// The final audit's text: one line, and one per finding.
pub fn render_audit(seq: u32, entries: u64, found: &[AuditFinding]) -> String {
    let mut out = format!(
        "audit of the state at ledger {seq}: {} re-read, {}\n",
        plural(entries, "live key", "live keys"),
        if found.is_empty() {
            "all match".to_owned()
        } else {
            plural(found.len() as u64, "finding", "findings")
        }
    );
    for f in found {
        out.push_str(&format!("ledger {} key {}: {}\n", f.seq, f.key, f.what));
    }
    out
}

fn progress(len: u64) -> ProgressBar {
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

/// The ledgers to verify: `(from, to)`, from the arguments and the range.
fn wanted(args: &ClioVerifyArgs, range: Option<(u32, u32)>) -> Result<(u32, u32), Failure> {
    let (from, to) = match (args.ledger, args.from, args.to, range) {
        (Some(n), ..) => (n, n),
        (None, Some(a), Some(b), _) => (a, b),
        (None, a, b, Some((r0, r1))) => (a.unwrap_or(r0), b.unwrap_or(r1)),
        (None, ..) => return Err(Failure::unusable(
            "table ledger_range is empty: no ledgers to verify (give --ledger or --from and --to)",
        )),
    };
    if from > to {
        return Err(Failure::unusable(format!(
            "--from {from} is after --to {to}"
        )));
    }
    if let Some((r0, r1)) = range {
        if from < r0 || to > r1 {
            return Err(Failure::unusable(format!(
                "ledgers {from}..{to} are not all within ledger_range {r0}..{r1}"
            )));
        }
    }
    Ok((from, to))
}

/// `--json` output, written as the run goes: the `ledgers` array a ledger
/// at a time, then the other fields, so a long run holds no report of its
/// ledgers in memory.
#[derive(Default)]
struct JsonOut {
    started: bool,
    checked: usize,
    mismatches: usize,
}

impl JsonOut {
    fn open(&mut self) -> Result<(), Failure> {
        if !self.started {
            self.started = true;
            print_text("{\n  \"ledgers\": [")?;
        }
        Ok(())
    }

    fn ledger(&mut self, c: &LedgerCheck) -> Result<(), Failure> {
        let first = !self.started;
        self.open()?;
        let pairs = [&c.account_hash, &c.transaction_hash, &c.ledger_hash]
            .into_iter()
            .chain(c.parent_hash.as_ref());
        for p in pairs {
            self.checked += 1;
            self.mismatches += usize::from(p.0 != p.1);
        }
        let body = serde_json::to_string_pretty(&ledger_json(c)).unwrap_or_default();
        let mut out = String::from(if first { "\n" } else { ",\n" });
        for (i, line) in body.lines().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            out.push_str("    ");
            out.push_str(line);
        }
        print_text(&out)
    }

    /// Closes the array and writes the other fields.
    fn finish(mut self, rest: Value) -> Result<(), Failure> {
        let had_ledgers = self.started && self.checked > 0;
        self.open()?;
        let mut rest = rest;
        if let Value::Object(m) = &mut rest {
            m.insert("checked".into(), json!(self.checked));
            m.insert("mismatches".into(), json!(self.mismatches));
        }
        let body = serde_json::to_string_pretty(&rest).unwrap_or_default();
        // `{\n  "a": …\n}` without its opening brace, after the array.
        let tail = body
            .strip_prefix('{')
            .unwrap_or(&body)
            .trim_start_matches('\n');
        let close = if had_ledgers { "\n  ]" } else { "]" };
        if tail.starts_with('}') {
            print_text(&format!("{close}\n}}\n"))
        } else {
            print_text(&format!("{close},\n{tail}\n"))
        }
    }
}

/// Set by Ctrl-C during `--follow`: stop after the ledger in progress.
static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn stop_requested() -> bool {
    STOP.load(std::sync::atomic::Ordering::SeqCst)
}

fn verify(args: &ClioVerifyArgs) -> Result<Exit, Failure> {
    let reader = ClioReader::open(&args.db).map_err(unusable)?;
    let range = reader.range().map_err(unusable)?;
    let (from, to) = wanted(args, range)?;
    let mem;
    let log;
    let (store, opts, persist): (&dyn NodeStore, BackedOptions, bool) = match &args.state {
        Some(dir) => {
            log = crate::input::open_or_create(dir).map_err(|f| f.about_store(dir))?;
            // A ledger's changes are a few hundred KiB of dirty nodes; only
            // the first ledger's build spills, and it peaks lower spilling
            // a sixteenth of the budget at a time than a quarter.
            // The budget covers the process heap's growth, not only the
            // map's own accounting (rows read ahead, the allocator's
            // metadata): see `BackedOptions::heap_probe`.
            let opts = BackedOptions {
                dirty_share: 16,
                heap_probe: crate::heap::probe(),
                ..BackedOptions::with_budget_mb(args.cache_mb)
            };
            let opts = if args.keep_history {
                opts
            } else {
                opts.pruning()
            };
            (&*log, opts, true)
        }
        None => {
            mem = MemStore::new();
            // In memory: a budget that never spills to the store.
            let opts = BackedOptions {
                budget_bytes: usize::MAX / 8,
                ..BackedOptions::default()
            };
            (&mem, opts, false)
        }
    };
    let about_state = |f: Failure| match &args.state {
        Some(dir) => f.about_store(dir),
        None => f,
    };
    let mut verifier =
        ClioVerifier::new(&reader, store, opts, persist).map_err(|e| about_state(unusable(e)))?;
    let resumed_after = verifier.last_verified();
    let start = match resumed_after {
        None => from,
        Some(s) if from > s + 1 => {
            return Err(about_state(Failure::unusable(format!(
                "the state holds ledgers verified up to {s}; starting at {from} would skip {}..{}",
                s + 1,
                from - 1
            ))))
        }
        Some(s) => s + 1,
    };
    if let Some(s) = resumed_after {
        if !args.json {
            print_text(&format!(
                "resuming after ledger {s}, verified before into the state\n"
            ))?;
        }
    }
    if args.follow {
        // Ctrl-C: the ledger in progress is finished (and, with --state,
        // recorded), then the run stops. A handler that cannot be set
        // leaves Ctrl-C as it is: every ledger verified is recorded anyway.
        let _ = ctrlc::set_handler(|| STOP.store(true, std::sync::atomic::Ordering::SeqCst));
    }
    verifier.prefetch_until(to);
    let mut json = JsonOut::default();
    let mut verified = 0u64;
    let mut last_checked = None;
    let bar = progress(u64::from(to.saturating_sub(start)) + u64::from(start <= to));
    let mut failure = None;
    let mut stopped = false;
    let mut seq = start;
    let mut to = to;
    loop {
        while seq <= to {
            if stop_requested() {
                stopped = true;
                break;
            }
            match verifier.verify(seq) {
                Err(e) => {
                    failure = Some(about_state(unusable(e)));
                    break;
                }
                Ok(check) => {
                    bar.inc(1);
                    if args.json {
                        json.ledger(&check)?;
                    } else {
                        bar.suspend(|| print_text(&render_text(&check)))?;
                    }
                    let ok = check.is_match();
                    verified += 1;
                    last_checked = Some(check.seq);
                    if !ok {
                        failure = Some(Failure::negative(summary(&check)));
                        break;
                    }
                }
            }
            seq += 1;
        }
        if failure.is_some() || !args.follow || stopped {
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
        if stop_requested() {
            stopped = true;
            break;
        }
        match reader.range() {
            Ok(Some((_, end))) if end > to => {
                bar.inc_length(u64::from(end - to));
                to = end;
                verifier.prefetch_until(to);
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
        let last = verifier.last_verified();
        print_text(&match (last, persist) {
            (Some(l), true) => {
                format!("stopped (Ctrl-C) after ledger {l}: every ledger verified is recorded in the state\n")
            }
            (Some(l), false) => format!("stopped (Ctrl-C) after ledger {l}\n"),
            (None, _) => "stopped (Ctrl-C) before any ledger was verified\n".to_owned(),
        })?;
        return Ok(Exit::Done);
    }
    let audited_at = last_checked.unwrap_or(to);
    let mut audit = None;
    if failure.is_none() && verified > 0 && !args.no_audit {
        match verifier.audit() {
            Err(e) => failure = Some(about_state(unusable(e))),
            Ok(found) => {
                if !args.json {
                    print_text(&render_audit(audited_at, verifier.map_entries(), &found))?;
                }
                if let Some(f) = found.first() {
                    let more = match found.len() {
                        1 => String::new(),
                        n => format!(" (and {} more)", n - 1),
                    };
                    failure = Some(Failure::negative(format!(
                        "ledger {}: key {}: {}{more}",
                        f.seq, f.key, f.what
                    )));
                }
                audit = Some(found);
            }
        }
    }
    if args.json {
        let errors: Vec<&str> = failure.iter().map(|f| f.line.as_str()).collect();
        json.finish(json!({
            "ok": failure.is_none(),
            "errors": errors,
            "resumed_after": resumed_after,
            "audit": audit.as_ref().map(|found| json!({
                "ledger_index": audited_at,
                "findings": found.iter().map(|f| json!({"ledger_index": f.seq, "key": f.key.to_string(), "what": f.what})).collect::<Vec<_>>(),
            })),
        }))?;
    }
    match failure {
        Some(f) => Err(f),
        None => {
            if verified == 0 && !args.json {
                print_text(&format!(
                    "nothing to verify: ledgers up to {} are verified in the state\n",
                    resumed_after.unwrap_or(to)
                ))?;
            }
            Ok(Exit::Done)
        }
    }
}

fn read_floor_cmd(args: &ReadFloorArgs) -> Result<Exit, Failure> {
    let reader = ClioReader::open(&args.db).map_err(unusable)?;
    let range = reader.range().map_err(unusable)?;
    let (from, to) = match (args.from, args.to, range) {
        (Some(a), Some(b), _) => (a, b),
        (a, b, Some((r0, r1))) => (a.unwrap_or(r0), b.unwrap_or(r1)),
        _ => {
            return Err(Failure::unusable(
                "table ledger_range is empty: give --from and --to",
            ))
        }
    };
    if from > to {
        return Err(Failure::unusable(format!(
            "--from {from} is after --to {to}"
        )));
    }
    let f = read_floor(&reader, from, to).map_err(unusable)?;
    let secs = |d: std::time::Duration| d.as_secs_f64();
    if args.json {
        print_json(&json!({
            "from": from,
            "to": to,
            "inflight": reader.inflight(),
            "first_seconds": secs(f.first),
            "first_rows": f.first_rows,
            "rest_seconds": secs(f.rest),
            "rest_rows": f.rest_rows,
        }))?;
    } else {
        print_text(&format!(
            "read floor of ledgers {from}..{to} (inflight {}):\n\
             first ledger's state scans: {:.2} s, {} rows\n\
             following {} ledgers' rows: {:.2} s, {} rows\n",
            reader.inflight(),
            secs(f.first),
            f.first_rows,
            to - from,
            secs(f.rest),
            f.rest_rows
        ))?;
    }
    Ok(Exit::Done)
}
