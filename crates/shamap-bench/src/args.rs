//! The bench's command line: [`Args`], the `--huge-pages` choice and the
//! step a `--durable-child` process runs ([`ChildStep`]).

use clap::Parser;
use shamap::{HashFunction, MapOptions};

/// The default of `--engines`.
pub(crate) const DEFAULT_ENGINES: [&str; 7] = [
    "ours",
    "ours-sorted",
    "ours-blake3",
    "ours-sorted-blake3",
    "nomt",
    "jmt",
    "alloy-trie",
];

/// Workload benchmarks for shamap.
#[derive(Debug, Parser)]
#[command(name = "shamap-bench", version, about)]
pub(crate) struct Args {
    /// Entries in the base map.
    #[arg(long, default_value_t = 1_000_000)]
    pub(crate) entries: usize,
    /// Bytes of data per entry.
    #[arg(long, default_value_t = 64)]
    pub(crate) data_len: usize,
    /// RNG seed (keys, data, operations).
    #[arg(long, default_value_t = 7)]
    pub(crate) seed: u64,
    /// Operations per update block.
    #[arg(long, default_value_t = 10_000)]
    pub(crate) block: usize,
    /// Seconds each timed loop may run (after warm-up).
    #[arg(long, default_value_t = 3.0)]
    pub(crate) time_limit: f64,
    /// Comma-separated workloads: build, update, get, proof, snapshot, session, diff;
    /// `peers` (with the `peers` feature) runs the peer comparison instead;
    /// `durable` the on-disk comparison (ours on fjall, nomt with the
    /// `peer-nomt` feature, and the disk floor), each step in a child process.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_values = ["build", "update", "get", "proof", "snapshot", "session", "diff"]
    )]
    pub(crate) workloads: Vec<Workload>,
    /// Print JSON instead of a markdown table.
    #[arg(long)]
    pub(crate) json: bool,
    /// Where our maps' node memory comes from (`MapOptions::huge_pages`):
    /// `auto` is the library default (huge-page regions once a map holds
    /// more than 32 MiB of nodes), `never` base pages only, `always`
    /// huge-page regions from the start.
    #[arg(long, value_enum, default_value = "auto")]
    pub(crate) huge_pages: HugeMode,
    /// Node hash function of our maps: `sha512half` (the XRPL's) or
    /// `blake3`. The floors use the same function: one message at a time
    /// (`sha2` / the `blake3` crate) and multi-lane (`sha512-lanes` /
    /// `blake3-lanes`).
    #[arg(long, default_value = "sha512half")]
    pub(crate) hash: HashFunction,
    /// Our maps in the hashless-leaf mode (`MapOptions::hashless_leaves`:
    /// leaves keep no hash and are hashed again whenever their parent is),
    /// to price it beside a run without.
    // `--compact`, its old name, is a hidden alias.
    #[arg(long, alias = "compact")]
    pub(crate) hashless_leaves: bool,
    /// Fixed operation counts instead of time limits, no warm-up, no floors,
    /// one thread: repeatable instruction counts for `scripts/callgrind.sh`.
    /// Runs build (+ root), the same build from sorted keys (+ root), one
    /// update block (+ root), `--gets` gets (one by
    /// one, then the same keys with `get_many`) and
    /// `--proofs` proofs, each in its own non-inlined function.
    #[arg(long)]
    pub(crate) quick: bool,
    /// Random gets in `--quick` mode and in the peer comparison.
    #[arg(long, default_value_t = 100_000)]
    pub(crate) gets: usize,
    /// Proofs in `--quick` mode.
    #[arg(long, default_value_t = 10_000)]
    pub(crate) proofs: usize,
    /// Update blocks per engine in the peer comparison (fixed, so every
    /// engine applies the same operations).
    #[arg(long, default_value_t = 10)]
    pub(crate) peer_blocks: usize,
    /// Engines in the peer comparison (comma-separated): ours, ours-sorted
    /// (sort + from_sorted build, get_many gets), ours-blake3,
    /// ours-sorted-blake3 (the same with BLAKE3 maps), nomt, jmt, alloy-trie.
    /// In the `durable` workload: ours (the node log), ours-fjall,
    /// ours-rocks (feature `rocksdb`), nomt; the default runs every one
    /// built in.
    #[arg(long, value_delimiter = ',', default_values = DEFAULT_ENGINES)]
    pub(crate) engines: Vec<String>,
    /// Blocks of `--block` writes the `durable` workload commits.
    #[arg(long, default_value_t = 20)]
    pub(crate) blocks: usize,
    /// Rounds of the `durable` workload's imports (every engine, then the
    /// disk floor, each from an empty directory); each row reports its
    /// fastest round. More than one, because this machine's first touch of
    /// memory after a pause costs host page faults that whichever step
    /// runs first would pay alone.
    #[arg(long, default_value_t = 2)]
    pub(crate) import_rounds: usize,
    /// Node budget (MiB) of our backed map in the `durable` workload
    /// (default: the library's default, `BackedOptions::default()`).
    #[arg(long)]
    pub(crate) cache_mb: Option<u64>,
    /// fjall block cache (MiB) of our store in the `durable` workload
    /// (default: `FjallOptions::beside_node_cache()`, 8 MiB).
    #[arg(long)]
    pub(crate) fjall_cache_mb: Option<u64>,
    /// fjall write buffer (MiB) of our store in the `durable` workload
    /// (default: `FjallOptions::beside_node_cache()`, 4 MiB).
    #[arg(long)]
    pub(crate) memtable_mb: Option<u64>,
    /// In the `durable` workload, apply each block without first loading
    /// its keys' paths on every core (`BackedMap::prefetch`).
    #[arg(long)]
    pub(crate) no_prefetch: bool,
    /// Directory of the `durable` workload's stores (default: a new one
    /// under the system's temporary directory; cleared first, removed after).
    #[arg(long)]
    pub(crate) dir: Option<std::path::PathBuf>,
    /// Keep the `durable` workload's directory afterwards.
    #[arg(long)]
    pub(crate) keep_dir: bool,
    /// Internal: run one step of the `durable` workload (`ENGINE/STEP`) and
    /// print its row.
    #[arg(long, hide = true, value_parser = ChildStep::parse)]
    pub(crate) durable_child: Option<ChildStep>,
}

/// `--workloads` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Workload {
    Build,
    Update,
    Get,
    Proof,
    Snapshot,
    Session,
    Diff,
    Peers,
    Durable,
}

/// `--huge-pages` values.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub(crate) enum HugeMode {
    Never,
    Always,
    Auto,
}

impl Args {
    /// Options for our maps: the `--huge-pages` policy, the `--hash`
    /// function and `--hashless-leaves`.
    pub(crate) fn map_options(&self) -> MapOptions {
        let o = MapOptions::default()
            .with_huge_pages_policy(self.huge_pages.policy())
            .with_hash(self.hash);
        if self.hashless_leaves {
            o.hashless_leaves()
        } else {
            o
        }
    }
}

impl HugeMode {
    fn policy(self) -> shamap::HugePages {
        match self {
            HugeMode::Never => shamap::HugePages::Never,
            HugeMode::Always => shamap::HugePages::Always,
            HugeMode::Auto => shamap::HugePages::default(),
        }
    }
}

/// What a child process is told to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    Import,
    Commit,
    Read,
    ReadWithWriter,
}

impl Step {
    pub fn name(self) -> &'static str {
        match self {
            Step::Import => "import",
            Step::Commit => "commit_10k",
            Step::Read => "read",
            Step::ReadWithWriter => "read_with_writer",
        }
    }

    fn parse(s: &str) -> Option<Step> {
        [Step::Import, Step::Commit, Step::Read, Step::ReadWithWriter]
            .into_iter()
            .find(|w| w.name() == s)
    }
}

/// The step a child process runs: `--durable-child ENGINE/STEP`.
#[derive(Clone, Debug)]
pub struct ChildStep {
    pub engine: String,
    pub step: Step,
}

impl ChildStep {
    /// Parses `ENGINE/STEP` (the command-line value).
    pub fn parse(spec: &str) -> Result<ChildStep, String> {
        let (engine, step) = spec.split_once('/').unwrap_or((spec, ""));
        match Step::parse(step) {
            Some(step) => Ok(ChildStep {
                engine: engine.to_owned(),
                step,
            }),
            None => Err(format!("unknown durable step {spec:?}")),
        }
    }
}
