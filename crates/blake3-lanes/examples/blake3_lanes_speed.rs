//! Throughput of BLAKE3 on batches of short messages: `blake3::hash` one at a
//! time vs this crate's backends, with the engine's current hash
//! (`sha512_lanes::sha512_half_batch`) for comparison.
//!
//! Run: `cargo run --release -p blake3-lanes --example blake3_lanes_speed`
//! Optional arguments: message count per call (default 512), then message
//! lengths (default 516 100).
//!
//! The variants are timed round-robin (one short window each per round, best
//! window kept), so a burst of other load on the machine hits them alike; the
//! variants that run 512-bit AVX-512 code in a round-robin of their own (see
//! sha512-lanes' `examples/support/speed.rs`, shared by both crates).

use blake3_lanes::{backend, hash_batch, hash_batch_with, Backend};
use clap::Parser;

#[path = "../../sha512-lanes/examples/support/speed.rs"]
mod speed;
use speed::{messages, print_rows, time_in_two_groups, variant, LaneCrate, Timed, ROUNDS, WINDOW};

fn lane_label(b: Backend) -> &'static str {
    match b {
        Backend::Scalar => "scalar (blake3::hash per msg)",
        Backend::Avx2x8 => "AVX2 x8",
        Backend::Avx512x16 => "AVX-512 x16",
    }
}

fn blake3_one_by_one(msgs: &[&[u8]], out: &mut [[u8; 32]]) {
    for (m, o) in msgs.iter().zip(out.iter_mut()) {
        *o = *blake3::hash(m).as_bytes();
    }
}

fn run(count: usize, len: usize) {
    let owned = messages(count, len);
    let msgs: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
    let msgs = &msgs[..];

    println!("== {count} x {len}-byte messages per call ==");

    let lanes = LaneCrate::new(
        [Backend::Scalar, Backend::Avx2x8, Backend::Avx512x16],
        Backend::is_supported,
        hash_batch_with,
        |b| format!("hash_batch_with {}", lane_label(b)),
    );
    // Every variant must compute the same digests as blake3::hash.
    lanes.assert_agree(msgs, (blake3_one_by_one, "blake3::hash"));

    // The variants that run 512-bit AVX-512 code are timed apart.
    let in_use = format!("hash_batch (backend() = {})", backend());
    let mut variants = lanes.variants(msgs, in_use, (hash_batch, backend()));
    let sha = sha512_lanes::backend();
    variants.push(Timed {
        label: format!("sha512_lanes::sha512_half_batch ({sha})"),
        avx512: sha == sha512_lanes::Backend::Avx512x8,
        run: variant(msgs, sha512_lanes::sha512_half_batch),
    });
    let labels = [
        "blake3::hash one at a time",
        "blake3::hash, interleaved w/ AVX-512",
    ];
    let rows = time_in_two_groups(count, labels, || variant(msgs, blake3_one_by_one), variants);
    print_rows(&rows, len, "vs blake3", &lanes.unsupported(), (46, 9, 13));

    let label = |b| lane_label(b).to_string();
    lanes.print_leftover_costs(msgs, len, 16.min(count), label, (30, 6));
    println!();
}

/// Throughput of BLAKE3 on batches of short messages.
#[derive(Parser)]
#[command(about)]
struct Args {
    /// Messages per call.
    #[arg(default_value_t = 512)]
    count: usize,
    /// Message lengths, one run each.
    #[arg(default_values_t = [516usize, 100])]
    lens: Vec<usize>,
}

fn main() {
    let Args { count, lens } = Args::parse();
    println!(
        "BLAKE3 (32-byte output); detected backend: {}, backend() in use: {}; \
         sha512-lanes backend: {}",
        Backend::detect(),
        backend(),
        sha512_lanes::backend()
    );
    println!(
        "(round-robin, best of {ROUNDS} windows of >= {} us each)\n",
        WINDOW.as_micros()
    );
    for len in lens {
        run(count, len);
    }
}
