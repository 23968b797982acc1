//! `shamap bench hash`: the cost of one hash, SHA512Half against BLAKE3, on
//! the input sizes a SHAMap hashes.
//!
//! | input | bytes | what |
//! |---|---|---|
//! | keylet | 22 | AccountRoot keylet preimage: 2-byte space key + 20-byte account |
//! | keylet | 62 | trust-line keylet preimage: space + two accounts + currency |
//! | keylet | 102 | the large end of keylet preimages |
//! | leaf | 203 | a state leaf of 167 data bytes: `MLN\0` + data + 32-byte key |
//! | inner | 516 | an inner node: `MIN\0` + 16 child hashes |
//!
//! Three functions: SHA512Half one message at a time
//! ([`shamap::xrpl::sha512_half`], the `sha2` crate), SHA512Half in batches
//! of 512 messages through [`sha512_lanes::sha512_half_batch`] (what the
//! engine's rehash calls: several messages per SIMD kernel), and BLAKE3 (the
//! `blake3` crate, one message at a time, its SIMD back end chosen at run
//! time; one thread). Each cell cycles over 512 different buffers (so no call
//! sees the previous call's input) for about `--millis` milliseconds after a
//! short warm-up, in three rounds; the fastest round is reported, as time
//! per message.

use std::hint::black_box;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use shamap::xrpl::sha512_half;

use crate::output::{print_json, print_text, Exit, Failure};

/// Arguments of `shamap bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Which benchmark.
    #[command(subcommand)]
    pub what: BenchCommand,
}

/// The benchmarks.
#[derive(Debug, clap::Subcommand)]
pub enum BenchCommand {
    /// Nanoseconds and MB/s per hash: SHA512Half and BLAKE3 on keylet-,
    /// leaf- and inner-node-sized inputs.
    Hash(HashArgs),
}

/// Arguments of `shamap bench hash`.
#[derive(Debug, clap::Args)]
pub struct HashArgs {
    /// Time per input and function, in milliseconds (split over 3 rounds).
    #[arg(long, value_name = "MS", default_value_t = 300, value_parser = clap::value_parser!(u64).range(3..=60_000))]
    pub millis: u64,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// The inputs measured: (label, bytes).
pub const INPUTS: [(&str, usize); 5] = [
    ("keylet", 22),
    ("keylet", 62),
    ("keylet", 102),
    ("leaf (167 B data)", 203),
    ("inner node", shamap::node_hash::INNER_MESSAGE_LEN),
];

/// Buffers each cell cycles through, and messages per batch call.
const RING: usize = 512;

/// One measured cell.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    /// Nanoseconds per hash.
    pub ns: f64,
    /// Input megabytes (10^6 bytes) hashed per second.
    pub mb_per_s: f64,
}

/// One input's row.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// What the input stands for.
    pub label: &'static str,
    /// Input length.
    pub bytes: usize,
    /// SHA512Half, one message per call.
    pub sha512_half: Cell,
    /// SHA512Half, 512 messages per multi-lane batch call.
    pub batch: Cell,
    /// BLAKE3 (32-byte output).
    pub blake3: Cell,
}

impl Row {
    /// SHA512Half time over BLAKE3 time (one message per call each).
    pub fn ratio(&self) -> f64 {
        self.sha512_half.ns / self.blake3.ns
    }

    /// Batched SHA512Half time over BLAKE3 time.
    pub fn batch_ratio(&self) -> f64 {
        self.batch.ns / self.blake3.ns
    }
}

/// Times `f` over the ring of `RING` buffers of `bytes` bytes: `f` gets the
/// whole ring and hashes every buffer once. Returns the time per message.
fn time_ring(bytes: usize, budget: Duration, mut f: impl FnMut(&[&[u8]])) -> Cell {
    let ring: Vec<Vec<u8>> = (0..RING)
        .map(|i| (0..bytes).map(|j| (i * 31 + j * 7) as u8).collect())
        .collect();
    let msgs: Vec<&[u8]> = ring.iter().map(Vec::as_slice).collect();
    let mut round = |limit: Duration| {
        let t = Instant::now();
        let mut n = 0u64;
        loop {
            f(black_box(&msgs));
            n += RING as u64;
            let e = t.elapsed();
            if e >= limit {
                return e.as_secs_f64() * 1e9 / n as f64;
            }
        }
    };
    round(budget / 10);
    let ns = (0..3)
        .map(|_| round(budget / 3))
        .fold(f64::INFINITY, f64::min);
    Cell {
        ns,
        mb_per_s: bytes as f64 / ns * 1e3,
    }
}

/// Measures every input.
pub fn measure(millis: u64) -> Vec<Row> {
    let budget = Duration::from_millis(millis);
    let mut out = vec![[0u8; 32]; RING];
    INPUTS
        .iter()
        .map(|&(label, bytes)| Row {
            label,
            bytes,
            sha512_half: time_ring(bytes, budget, |msgs| {
                for m in msgs {
                    black_box(sha512_half(&[m]));
                }
            }),
            batch: time_ring(bytes, budget, |msgs| {
                sha512_lanes::sha512_half_batch(msgs, &mut out);
                black_box(&out);
            }),
            blake3: time_ring(bytes, budget, |msgs| {
                for m in msgs {
                    black_box(blake3::hash(m));
                }
            }),
        })
        .collect()
}

/// The table.
pub fn render_text(rows: &[Row]) -> String {
    let backend = sha512_lanes::backend();
    let mut out = format!(
        "ns per hash, one thread; batch = 512 messages per call through sha512-lanes ({}, {} lanes)\n\n",
        backend.name(),
        backend.lanes()
    );
    out.push_str(&format!(
        "{:<18} {:>5} {:>11} {:>6} {:>9} {:>6} {:>9} {:>6} {:>15} {:>13}\n",
        "input",
        "bytes",
        "SHA512Half",
        "MB/s",
        "batch",
        "MB/s",
        "BLAKE3",
        "MB/s",
        "SHA512H/BLAKE3",
        "batch/BLAKE3"
    ));
    for r in rows {
        out.push_str(&format!(
            "{:<18} {:>5} {:>11.1} {:>6.0} {:>9.1} {:>6.0} {:>9.1} {:>6.0} {:>14.2}x {:>12.2}x\n",
            r.label,
            r.bytes,
            r.sha512_half.ns,
            r.sha512_half.mb_per_s,
            r.batch.ns,
            r.batch.mb_per_s,
            r.blake3.ns,
            r.blake3.mb_per_s,
            r.ratio(),
            r.batch_ratio()
        ));
    }
    out
}

/// The JSON form: `{"backend", "lanes", "inputs": [{"label", "bytes",
/// "sha512_half": {"ns", "mb_per_s"}, "sha512_half_batch": {…}, "blake3":
/// {…}, "ratio", "batch_ratio"}]}`.
pub fn render_json(rows: &[Row]) -> Value {
    let cell = |c: &Cell| json!({"ns": c.ns, "mb_per_s": c.mb_per_s});
    let backend = sha512_lanes::backend();
    json!({
        "backend": backend.name(),
        "lanes": backend.lanes(),
        "inputs": rows.iter().map(|r| json!({
            "label": r.label,
            "bytes": r.bytes,
            "sha512_half": cell(&r.sha512_half),
            "sha512_half_batch": cell(&r.batch),
            "blake3": cell(&r.blake3),
            "ratio": r.ratio(),
            "batch_ratio": r.batch_ratio(),
        })).collect::<Vec<_>>(),
    })
}

/// Runs `shamap bench`.
pub fn run(args: &BenchArgs) -> Result<Exit, Failure> {
    let BenchCommand::Hash(h) = &args.what;
    let rows = measure(h.millis);
    if h.json {
        print_json(&render_json(&rows))?;
    } else {
        print_text(&render_text(&rows))?;
    }
    Ok(Exit::Done)
}
