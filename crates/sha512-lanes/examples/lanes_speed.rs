//! Throughput of SHA512Half on 516-byte messages (SHAMap inner nodes):
//! `sha2` single-stream vs this crate's scalar, AVX2 x4 and AVX-512 x8 paths.
//!
//! Run: `cargo run --release -p sha512-lanes --example lanes_speed`
//! Optional arguments: message count per pass (default 256) and length
//! (default 516).
//!
//! The variants are timed round-robin (one short window each per round, best
//! window kept), so a burst of other load on the machine hits them alike;
//! the AVX-512 variants in a round-robin of their own (see below).
//!
//! The `sha2` here is built with its `asm` feature (dev-dependency), but on a
//! CPU with AVX2, sha2 0.10 uses its own AVX2 SHA-512 compressor whatever the
//! `asm` setting; `asm` only replaces its non-AVX2 fallback.

use std::hint::black_box;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha512};
use sha512_lanes::{backend, sha512_half_batch, sha512_half_batch_with, Backend};

/// Rounds of the round-robin.
const ROUNDS: usize = 200;
/// Minimum length of one timing window.
const WINDOW: Duration = Duration::from_millis(1);

type Variant<'a> = Box<dyn FnMut() + 'a>;

/// Best ns per call of each variant, timed round-robin.
fn time_round_robin(variants: &mut [Variant<'_>]) -> Vec<f64> {
    let mut best = vec![f64::INFINITY; variants.len()];
    for round in 0..=ROUNDS {
        for (f, best) in variants.iter_mut().zip(best.iter_mut()) {
            let mut calls = 0u64;
            let t = Instant::now();
            while t.elapsed() < WINDOW {
                f();
                calls += 1;
            }
            // Round 0 is warm-up (caches, clocks, lazy backend choice).
            if round > 0 {
                *best = best.min(t.elapsed().as_nanos() as f64 / calls as f64);
            }
        }
    }
    best
}

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

fn main() {
    let mut args = std::env::args().skip(1);
    let count: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(256);
    let len: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(516);

    // Deterministic pseudo-random messages ("MIN\0" prefix like inner nodes).
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let owned: Vec<Vec<u8>> = (0..count)
        .map(|_| {
            let mut m: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            let n = m.len().min(4);
            m[..n].copy_from_slice(&b"MIN\0"[..n]);
            m
        })
        .collect();
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

    // Every variant must compute the same digests as sha2.
    let mut want = vec![[0u8; 32]; count];
    sha2_half(msgs, &mut want);
    let simd: Vec<Backend> = [Backend::Scalar, Backend::Avx2x4, Backend::Avx512x8]
        .into_iter()
        .filter(|b| b.is_supported())
        .collect();
    for &b in &simd {
        let mut out = vec![[0u8; 32]; count];
        sha512_half_batch_with(b, msgs, &mut out);
        assert_eq!(out, want, "{b} disagrees with sha2");
    }

    // Two round-robins: variants that run AVX-512 code, and the others. On
    // Intel server parts AVX-512 code lowers the core clock for a little
    // while after it stops, which would slow whichever scalar variant came
    // next; the second group also re-times sha2 interleaved with AVX-512 to
    // show that effect.
    let uses_avx512 = |b: Backend| b == Backend::Avx512x8;
    let mut rows: Vec<(String, f64)> = Vec::new();
    for avx512_group in [false, true] {
        let mut labels: Vec<String> = Vec::new();
        let mut variants: Vec<Variant<'_>> = Vec::new();
        let mut out0 = vec![[0u8; 32]; count];
        labels.push(if avx512_group {
            "sha2 single-stream, interleaved w/ AVX-512".to_string()
        } else {
            "sha2 single-stream".to_string()
        });
        variants.push(Box::new(move || {
            sha2_half(black_box(msgs), &mut out0);
            black_box(&mut out0);
        }));
        for &b in simd.iter().filter(|&&b| uses_avx512(b) == avx512_group) {
            labels.push(format!("sha512-lanes {}", lane_label(b)));
            let mut out = vec![[0u8; 32]; count];
            variants.push(Box::new(move || {
                sha512_half_batch_with(b, black_box(msgs), &mut out);
                black_box(&mut out);
            }));
        }
        if uses_avx512(backend()) == avx512_group {
            labels.push(format!("sha512_half_batch (backend() = {})", backend()));
            let mut out1 = vec![[0u8; 32]; count];
            variants.push(Box::new(move || {
                sha512_half_batch(black_box(msgs), &mut out1);
                black_box(&mut out1);
            }));
        }
        if avx512_group && variants.len() == 1 {
            break; // no AVX-512 on this CPU
        }
        let times = time_round_robin(&mut variants);
        rows.extend(
            labels
                .into_iter()
                .zip(times.into_iter().map(|t| t / count as f64)),
        );
    }
    // The undisturbed sha2 first, then the rest in a natural order.
    let order = |l: &str| -> usize {
        match l {
            "sha2 single-stream" => 0,
            l if l.starts_with("sha512-lanes scalar") => 1,
            l if l.starts_with("sha512-lanes AVX2") => 2,
            l if l.starts_with("sha512-lanes AVX-512") => 3,
            l if l.starts_with("sha512_half_batch") => 4,
            _ => 5,
        }
    };
    rows.sort_by_key(|(l, _)| order(l));
    let ns: Vec<f64> = rows.iter().map(|r| r.1).collect();
    let labels: Vec<String> = rows.into_iter().map(|r| r.0).collect();
    let base = ns[0];
    println!(
        "{:<44} {:>10} {:>10} {:>9}",
        "variant", "ns/msg", "MB/s", "vs sha2"
    );
    for (label, ns) in labels.iter().zip(&ns) {
        println!(
            "{label:<44} {ns:>10.1} {:>10.1} {:>8.2}x",
            len as f64 * 1e3 / ns,
            base / ns
        );
    }
    for b in [Backend::Avx2x4, Backend::Avx512x8] {
        if !b.is_supported() {
            println!(
                "{:<44} {:>10}",
                format!("sha512-lanes {}", lane_label(b)),
                "unsupported"
            );
        }
    }

    // Cost of one call with r messages (r = 1..=8): how small a leftover is
    // still worth a partly filled SIMD batch (see MIN_FILL_* in lib.rs).
    println!("\nns per call hashing r messages of {len} bytes (leftover handling):");
    print!("{:<40}", "r =");
    for r in 1..=8 {
        print!("{r:>7}");
    }
    println!();
    for &b in &simd {
        let mut variants: Vec<Variant<'_>> = Vec::new();
        for r in 1..=8.min(count) {
            let mut out = vec![[0u8; 32]; r];
            variants.push(Box::new(move || {
                sha512_half_batch_with(b, black_box(&msgs[..r]), &mut out);
                black_box(&mut out);
            }));
        }
        print!("{:<40}", format!("sha512-lanes {}", lane_label(b)));
        for t in time_round_robin(&mut variants) {
            print!("{t:>7.0}");
        }
        println!();
    }
}
