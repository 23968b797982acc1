//! Throughput of SHA512Half on 516-byte messages (SHAMap inner nodes):
//! `sha2` single-stream vs this crate's scalar, AVX2 x4 and AVX-512 x8 paths.
//!
//! Run: `cargo run --release -p sha512-lanes --example lanes_speed`
//! Optional arguments: message count per pass (default 256) and length
//! (default 516).
//!
//! The variants are timed round-robin (one short window each per round, best
//! window kept), so a burst of other load on the machine hits them alike;
//! the AVX-512 variants in a round-robin of their own (see
//! `examples/support/speed.rs`, shared with blake3-lanes).
//!
//! The `sha2` here is built with its `asm` feature (dev-dependency), but on a
//! CPU with AVX2, sha2 0.10 uses its own AVX2 SHA-512 compressor whatever the
//! `asm` setting; `asm` only replaces its non-AVX2 fallback.

use clap::Parser;
use sha2::{Digest, Sha512};
use sha512_lanes::{backend, sha512_half_batch, sha512_half_batch_with, Backend};

#[path = "support/speed.rs"]
mod speed;
use speed::{messages, print_rows, time_in_two_groups, variant, LaneCrate, ROUNDS, WINDOW};

fn lane_label(b: Backend) -> &'static str {
    match b {
        Backend::Scalar => "scalar (sha2 per message)",
        Backend::Avx2x4 => "AVX2 x4",
        Backend::Avx512x8 => "AVX-512 x8",
    }
}

fn sha2_half(msgs: &[&[u8]], out: &mut [[u8; 32]]) {
    for (m, o) in msgs.iter().zip(out.iter_mut()) {
        o.copy_from_slice(&Sha512::digest(m)[..32]);
    }
}

/// Throughput of SHA512Half: `sha2` single-stream against this crate's
/// backends.
#[derive(Parser)]
#[command(about)]
struct Args {
    /// Messages per pass.
    #[arg(default_value_t = 256)]
    count: usize,
    /// Bytes per message.
    #[arg(default_value_t = 516)]
    len: usize,
}

fn main() {
    let Args { count, len } = Args::parse();

    let owned = messages(count, len);
    let msgs: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
    let msgs = &msgs[..];

    println!(
        "SHA512Half of {count} x {len}-byte messages per call; detected backend: {}, backend() in use: {}",
        Backend::detect(),
        backend()
    );
    println!(
        "(sha2 0.10 with feature \"asm\"; round-robin, best of {ROUNDS} windows of >= {} us each)\n",
        WINDOW.as_micros()
    );

    let lanes = LaneCrate::new(
        [Backend::Scalar, Backend::Avx2x4, Backend::Avx512x8],
        Backend::is_supported,
        sha512_half_batch_with,
        |b| format!("sha512-lanes {}", lane_label(b)),
    );
    // Every variant must compute the same digests as sha2.
    lanes.assert_agree(msgs, (sha2_half, "sha2"));

    let in_use = format!("sha512_half_batch (backend() = {})", backend());
    let variants = lanes.variants(msgs, in_use, (sha512_half_batch, backend()));
    let labels = [
        "sha2 single-stream",
        "sha2 single-stream, interleaved w/ AVX-512",
    ];
    let rows = time_in_two_groups(count, labels, || variant(msgs, sha2_half), variants);
    print_rows(&rows, len, "vs sha2", &lanes.unsupported(), (44, 10, 9));

    lanes.print_leftover_costs(msgs, len, 8, lanes.label, (40, 7));
}
