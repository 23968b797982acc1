//! `shamap stats`: where a map's memory and hashing time go.
//!
//! The map is built from a ledger dump (the readers of `shamap verify`) or
//! from `--random N` synthetic entries ([`synth`]); the report comes from
//! the engine's own counters ([`shamap::ShaMap::mem_stats`]) and a walk of
//! the tree ([`shamap::ShaMap::shape_stats`]), plus per-type data sizes from
//! iterating the map. Nothing that can be counted is estimated; the two
//! layout models and the advisor's predictions are labelled as such. That
//! part of the report, and its JSON, come from [`shamap_ledger::map_stats`]
//! (shared with the Python module's `stats()`); this command adds the
//! input, the build time and the hashing measurement ([`timing`]). The
//! report is a [`Report`]; its output formats: [`text`], [`json`] and SVG
//! charts ([`plot`]). Field-by-field documentation: `docs/stats.md`.
//!
//! Memory discipline: random entries are generated one at a time and dump
//! entries are dropped as they are inserted, so the process holds one copy
//! of the data (the map's) and peak RSS tracks the counted total.

mod json;
mod plot;
mod report;
mod synth;
mod text;
mod timing;

use std::io::{self, IsTerminal};
use std::path::PathBuf;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use shamap::xrpl::{transaction_id, tx_with_meta_item};
use shamap::{HashFunction, Key, MapError, MapOptions, ShaMap, SizeClasses};
use shamap_ledger::map_stats::MapStats;

use crate::input;
use crate::input::KindArg;
use crate::output::{print_json, print_text, Exit, Failure};
use report::{InputInfo, Report};

/// Arguments of `shamap stats`.
#[derive(Debug, clap::Args)]
pub struct StatsArgs {
    /// Ledger JSON files as for `verify` (pages of one ledger are merged);
    /// `-` reads standard input. Not with --random.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Build a map of N uniformly random keys instead, with data sized like
    /// mainnet state (mean about 167 bytes; see docs/stats.md).
    ///
    /// N is at most 100,000,000, and N entries may take at most an
    /// estimated 32 GiB: each entry costs its data plus about 104 bytes (the
    /// 32-byte key, and 60-65 bytes of nodes as this report counts them,
    /// with room for the allocator), so 100 million mainnet-shaped entries
    /// need about 27 GB. Both are checked before anything is built.
    #[arg(long, value_name = "N", conflicts_with = "files",
          value_parser = clap::value_parser!(u64).range(0..=MAX_RANDOM))]
    pub random: Option<u64>,
    /// Seed of --random.
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub seed: u64,
    /// With --random: every datum exactly LEN pseudo-random bytes instead
    /// of mainnet-shaped sizes (LEN at most 65536).
    #[arg(long, value_name = "LEN", value_parser = clap::value_parser!(u32).range(0..=synth::MAX_DATA as i64))]
    pub data_len: Option<u32>,
    /// Which map: state (default when the input has state entries), tx
    /// (transactions with metadata) or txset (transactions without).
    #[arg(long, value_enum)]
    pub kind: Option<KindArg>,
    /// Child-array size classes to build with, e.g. 2,4,10,16 (increasing,
    /// at most 7, the last 16). Default: 2,3,4,6,9,12,16.
    #[arg(long, value_name = "CAPS", value_parser = parse_classes)]
    pub classes: Option<SizeClasses>,
    /// Print one JSON object instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Also write SVG charts into DIR (created if missing): all four whole
    /// or none (on failure, charts already there are left as they were).
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    /// Skip the hashing-time measurement (the root is still computed).
    #[arg(long)]
    pub no_timing: bool,
    /// Node hash function: sha512half (the XRPL's, default) or blake3, to
    /// see what hashing would cost with it. A BLAKE3 root is not the
    /// ledger's.
    #[arg(long, value_name = "FN", default_value = "sha512half")]
    pub hash: HashFunction,
    /// Build the map in the hashless-leaf mode: leaves keep no hash (32
    /// bytes less per entry), which is computed again whenever a parent is
    /// rehashed. The root is the same.
    // `--compact`, its old name, is a hidden alias.
    #[arg(long, alias = "compact")]
    pub hashless_leaves: bool,
}

/// Parses `2,4,10,16` into size classes.
fn parse_classes(s: &str) -> Result<SizeClasses, String> {
    let caps = s
        .split(',')
        .map(|x| {
            x.trim()
                .parse::<u8>()
                .map_err(|_| format!("{x:?} is not a capacity (1..=16)"))
        })
        .collect::<Result<Vec<u8>, String>>()?;
    SizeClasses::new(&caps).map_err(|e| e.to_string())
}

/// The most entries `--random` builds (see its help).
pub const MAX_RANDOM: u64 = 100_000_000;
/// The most memory a `--random` build may need, by [`random_bytes`]'s
/// estimate: 32 GiB.
pub const MAX_RANDOM_BYTES: u64 = 32 << 30;
/// Estimated bytes per entry besides its data: the 32-byte key, and 72 for
/// the nodes (this report counts 58-65 bytes per entry beyond key and data,
/// leaf padding and pool slack included; README, "Memory benchmark"), with
/// about 10% more for what the allocator holds beyond that.
const RANDOM_BYTES_BEYOND_DATA: u64 = 32 + 72;
/// The mean datum of mainnet-shaped `--random` data (167 bytes), rounded
/// up to the 8 bytes a leaf's data is padded to.
const RANDOM_MEAN_DATA: u64 = 168;

/// The estimated memory of a `--random` map of `n` entries whose data are
/// `data_len` bytes each (mainnet-shaped when `None`).
pub fn random_bytes(n: u64, data_len: Option<u32>) -> u64 {
    let data = data_len.map_or(RANDOM_MEAN_DATA, |l| u64::from(l).next_multiple_of(8));
    n.saturating_mul(data + RANDOM_BYTES_BEYOND_DATA)
}

/// Fails when a `--random` map of `n` entries with `data_len`-byte data
/// (see [`random_bytes`]) would need more than [`MAX_RANDOM_BYTES`]; the
/// count itself is bounded by [`MAX_RANDOM`] when the argument is parsed.
fn check_random_size(n: u64, data_len: Option<u32>) -> Result<(), Failure> {
    let need = random_bytes(n, data_len);
    if n <= MAX_RANDOM && need <= MAX_RANDOM_BYTES {
        return Ok(());
    }
    let gib = |b: u64| b as f64 / f64::from(1u32 << 30);
    let data = data_len.map_or_else(
        || "mainnet-shaped data".to_owned(),
        |l| format!("--data-len {l}"),
    );
    Err(Failure::unusable(format!(
        "--random {n}: with {data} the map would need about {:.1} GiB of memory, more than the {:.0} GiB --random builds at most (and at most {MAX_RANDOM} entries); give fewer entries or shorter data",
        gib(need),
        gib(MAX_RANDOM_BYTES)
    )))
}

/// Entries inserted between progress-bar updates (a power of two).
const PROGRESS_STEP: u64 = 1 << 14;
/// Builds at least this large show a progress bar (on a terminal).
const PROGRESS_MIN: u64 = 200_000;

/// A progress bar on stderr for long builds, only when stderr is a terminal.
fn progress(total: u64) -> Option<ProgressBar> {
    if total < PROGRESS_MIN || !io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template(
        "building {bar:40} {human_pos}/{human_len} entries, {elapsed} elapsed, about {eta} left",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    Some(bar)
}

/// A spinner naming the current phase after a long build (terminal only).
fn phases(entries: usize) -> Option<ProgressBar> {
    if (entries as u64) < PROGRESS_MIN || !io::stderr().is_terminal() {
        return None;
    }
    let s = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
        s.set_style(style);
    }
    s.enable_steady_tick(std::time::Duration::from_millis(120));
    Some(s)
}

fn phase(spinner: Option<&ProgressBar>, what: &'static str) {
    if let Some(s) = spinner {
        s.set_message(what);
    }
}

/// Inserts one entry, naming it in the error.
fn insert(map: &mut ShaMap, key: Key, data: &[u8], what: &str, i: usize) -> Result<(), String> {
    map.insert(key, data).map_err(|e| match e {
        MapError::KeyExists(k) => format!("duplicate key {k} at {what} {i}"),
        other => format!("{what} {i}: {other}"),
    })
}

/// Builds the map the arguments ask for; returns it, where it came from
/// and the build time.
fn build(args: &StatsArgs, options: MapOptions) -> Result<(ShaMap, InputInfo, f64), Failure> {
    let usage = Failure::unusable;
    if args.data_len.is_some() && args.random.is_none() {
        return Err(usage("--data-len applies to --random maps only".into()));
    }
    match (args.random, args.files.is_empty()) {
        (Some(_), false) => Err(usage("give either FILE... or --random N, not both".into())),
        (None, true) => Err(usage("nothing to read: give FILE... or --random N".into())),
        (Some(n), true) => {
            check_random_size(n, args.data_len)?;
            let kind = args.kind.unwrap_or(KindArg::State).kind();
            let mut map = ShaMap::with_options(kind, options);
            let bar = progress(n);
            let t = Instant::now();
            let size = args.data_len.map_or(synth::DataSize::Mainnet, |l| {
                synth::DataSize::Fixed(l as usize)
            });
            let mut synth = synth::Synth::new(args.seed, size);
            for i in 0..n {
                let (key, data) = synth.next_entry();
                insert(&mut map, key, data, "random entry", i as usize).map_err(usage)?;
                tick(bar.as_ref(), i + 1);
            }
            let secs = t.elapsed().as_secs_f64();
            if let Some(b) = bar {
                b.finish_and_clear();
            }
            let info = InputInfo::Random {
                seed: args.seed,
                data_len: args.data_len,
            };
            Ok((map, info, secs))
        }
        (None, false) => build_from_files(args, options),
    }
}

fn build_from_files(
    args: &StatsArgs,
    options: MapOptions,
) -> Result<(ShaMap, InputInfo, f64), Failure> {
    let groups = input::read_ledgers(&args.files)?;
    let count = groups.len();
    let Some(group) = groups.into_iter().next().filter(|_| count == 1) else {
        return Err(Failure::unusable(format!(
            "the files hold {count} ledgers; stats reads one ledger at a time"
        )));
    };
    let sources: Vec<String> = group.sources.iter().map(|s| s.name.clone()).collect();
    let first = sources.first().cloned().unwrap_or_default();
    let dump = group.dump;
    let kind = args.kind.unwrap_or(if dump.state.is_some() {
        KindArg::State
    } else {
        KindArg::Tx
    });
    let missing = |what: &str, hint: &str| {
        Failure::unusable(format!("{first}: no {what} in the input{hint}"))
    };
    let at = |m: String| Failure::unusable(format!("{first}: {m}"));
    let mut map = ShaMap::with_options(kind.kind(), options);
    let secs = match kind {
        KindArg::State => {
            let entries = dump
                .state
                .ok_or_else(|| missing("state entries", " (try --kind tx)"))?;
            timed_inserts(entries, |i, e| {
                insert(&mut map, e.key, &e.data, "state entry", i).map_err(at)
            })?
        }
        KindArg::Tx | KindArg::Txset => {
            let txs = dump
                .transactions
                .ok_or_else(|| missing("transaction list", " (try --kind state)"))?;
            timed_inserts(txs, |i, tx| {
                if kind == KindArg::Tx {
                    let (key, data) = tx_with_meta_item(&tx.tx, &tx.meta)
                        .map_err(|e| at(format!("transactions entry {i}: {e}")))?;
                    insert(&mut map, key, &data, "transactions entry", i).map_err(at)
                } else {
                    let key = Key(transaction_id(&tx.tx).0);
                    insert(&mut map, key, &tx.tx, "transactions entry", i).map_err(at)
                }
            })?
        }
    };
    let info = InputInfo::Dump {
        sources,
        ledger_index: dump.header.ledger_index,
    };
    Ok((map, info, secs))
}

/// Puts each of `items` (with its index) with `put`, consuming the list
/// (each item's data is freed once put), with a progress bar; the seconds
/// it took.
fn timed_inserts<T>(
    items: Vec<T>,
    mut put: impl FnMut(usize, T) -> Result<(), Failure>,
) -> Result<f64, Failure> {
    let bar = progress(items.len() as u64);
    let t = Instant::now();
    for (i, item) in items.into_iter().enumerate() {
        put(i, item)?;
        tick(bar.as_ref(), i as u64 + 1);
    }
    finish(bar);
    Ok(t.elapsed().as_secs_f64())
}

fn tick(bar: Option<&ProgressBar>, done: u64) {
    // PROGRESS_STEP is a power of two.
    if let Some(b) = bar.filter(|_| done & (PROGRESS_STEP - 1) == 0) {
        b.set_position(done);
    }
}

fn finish(bar: Option<ProgressBar>) {
    if let Some(b) = bar {
        b.finish_and_clear();
    }
}

/// Builds the map and gathers the report.
pub fn collect(args: &StatsArgs) -> Result<Report, Failure> {
    let classes = args.classes.unwrap_or_default();
    let mut options = MapOptions::default()
        .with_size_classes(classes)
        .with_hash(args.hash);
    if args.hashless_leaves {
        options = options.hashless_leaves();
    }
    let (mut map, input, build_seconds) = build(args, options)?;
    let spinner = phases(map.len());
    phase(spinner.as_ref(), "hashing the root");
    let root_hash = map.root_hash();
    phase(spinner.as_ref(), "counting");
    let stats = MapStats::of_map(&mut map);
    phase(
        spinner.as_ref(),
        "timing the root from scratch and the hash floor",
    );
    let hashing = if args.no_timing {
        None
    } else {
        let (t, again) = timing::measure(&mut map, &stats.data.lengths);
        if again != root_hash {
            return Err(Failure::unusable(format!(
                "internal error: the serial root {again} differs from {root_hash} (please report this bug)"
            )));
        }
        Some(t)
    };
    if let Some(s) = spinner {
        s.finish_and_clear();
    }
    Ok(Report {
        input,
        stats,
        build_seconds,
        hashing,
    })
}

/// Runs `shamap stats`: exit 0, or 2 with one `error:` line on bad
/// arguments, unreadable input or unwritable output.
pub fn run(args: &StatsArgs) -> Result<Exit, Failure> {
    let report = collect(args)?;
    if let Some(dir) = &args.plot {
        plot::write_all(&report, dir)?;
    }
    if args.json {
        print_json(&json::render(&report))?;
    } else {
        print_text(&text::render(&report))?;
    }
    Ok(Exit::Done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_size_bounds_count_and_memory() {
        assert!(check_random_size(MAX_RANDOM, None).is_ok());
        assert!(random_bytes(MAX_RANDOM, None) <= MAX_RANDOM_BYTES);
        assert!(check_random_size(MAX_RANDOM + 1, None).is_err());
        assert!(check_random_size(u64::MAX, Some(65536)).is_err());
        let e = check_random_size(1_000_000, Some(65536)).expect_err("64 GB");
        assert!(
            e.line.starts_with(
                "--random 1000000: with --data-len 65536 the map would need about 61."
            ),
            "{}",
            e.line
        );
        assert!(check_random_size(100_000, Some(65536)).is_ok());
    }

    #[test]
    fn classes_parse_or_say_why_not() {
        assert_eq!(
            parse_classes("2,4,10,16").map(|c| c.capacities().to_vec()),
            Ok(vec![2, 4, 10, 16])
        );
        assert!(parse_classes("2,4").is_err());
        assert!(parse_classes("2,x,16")
            .expect_err("not a number")
            .contains("\"x\""));
    }
}
