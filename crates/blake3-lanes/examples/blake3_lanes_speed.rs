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
//! below).

use std::hint::black_box;
use std::time::{Duration, Instant};

use blake3_lanes::{backend, hash_batch, hash_batch_with, Backend};

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

/// Deterministic pseudo-random messages (`"MIN\0"` prefix like inner nodes).
fn messages(count: usize, len: usize) -> Vec<Vec<u8>> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    (0..count)
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
        .collect()
}

fn run(count: usize, len: usize) {
    let owned = messages(count, len);
    let msgs: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
    let msgs = &msgs[..];

    println!("== {count} x {len}-byte messages per call ==");

    // Every variant must compute the same digests as blake3::hash.
    let mut want = vec![[0u8; 32]; count];
    blake3_one_by_one(msgs, &mut want);
    let supported: Vec<Backend> = [Backend::Scalar, Backend::Avx2x8, Backend::Avx512x16]
        .into_iter()
        .filter(|b| b.is_supported())
        .collect();
    for &b in &supported {
        let mut out = vec![[0u8; 32]; count];
        hash_batch_with(b, msgs, &mut out);
        assert_eq!(out, want, "{b} disagrees with blake3::hash");
    }

    // Two round-robins: variants that run 512-bit AVX-512 code, and the
    // others. On Intel server parts 512-bit code lowers the core clock for a
    // little while after it stops, which would slow whichever variant came
    // next; the second group re-times blake3::hash interleaved with AVX-512
    // to show that effect.
    let sha_uses_avx512 = sha512_lanes::backend() == sha512_lanes::Backend::Avx512x8;
    let uses_avx512 = |b: Backend| b == Backend::Avx512x16;
    let mut rows: Vec<(String, f64)> = Vec::new();
    for avx512_group in [false, true] {
        let mut labels: Vec<String> = Vec::new();
        let mut variants: Vec<Variant<'_>> = Vec::new();
        labels.push(if avx512_group {
            "blake3::hash, interleaved w/ AVX-512".to_string()
        } else {
            "blake3::hash one at a time".to_string()
        });
        let mut out0 = vec![[0u8; 32]; count];
        variants.push(Box::new(move || {
            blake3_one_by_one(black_box(msgs), &mut out0);
            black_box(&mut out0);
        }));
        for &b in supported
            .iter()
            .filter(|&&b| uses_avx512(b) == avx512_group)
        {
            labels.push(format!("hash_batch_with {}", lane_label(b)));
            let mut out = vec![[0u8; 32]; count];
            variants.push(Box::new(move || {
                hash_batch_with(b, black_box(msgs), &mut out);
                black_box(&mut out);
            }));
        }
        if uses_avx512(backend()) == avx512_group {
            labels.push(format!("hash_batch (backend() = {})", backend()));
            let mut out = vec![[0u8; 32]; count];
            variants.push(Box::new(move || {
                hash_batch(black_box(msgs), &mut out);
                black_box(&mut out);
            }));
        }
        if sha_uses_avx512 == avx512_group {
            labels.push(format!(
                "sha512_lanes::sha512_half_batch ({})",
                sha512_lanes::backend()
            ));
            let mut out = vec![[0u8; 32]; count];
            variants.push(Box::new(move || {
                sha512_lanes::sha512_half_batch(black_box(msgs), &mut out);
                black_box(&mut out);
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
    let order = |l: &str| -> usize {
        match l {
            "blake3::hash one at a time" => 0,
            l if l.contains("scalar") => 1,
            l if l.contains("AVX2") => 2,
            l if l.contains("AVX-512 x16") => 3,
            l if l.starts_with("hash_batch (") => 4,
            l if l.starts_with("sha512") => 5,
            _ => 6,
        }
    };
    rows.sort_by_key(|(l, _)| order(l));
    let base = rows[0].1;
    println!(
        "{:<46} {:>9} {:>9} {:>13}",
        "variant", "ns/msg", "MB/s", "vs blake3"
    );
    for (label, ns) in &rows {
        println!(
            "{label:<46} {ns:>9.1} {:>9.1} {:>12.2}x",
            len as f64 * 1e3 / ns,
            base / ns
        );
    }
    for b in [Backend::Avx2x8, Backend::Avx512x16] {
        if !b.is_supported() {
            println!(
                "{:<46} {:>9}",
                format!("hash_batch_with {}", lane_label(b)),
                "unsupported"
            );
        }
    }

    // Cost of one call with r messages: how small a leftover is still worth a
    // partly filled SIMD batch (see MIN_FILL_* in lib.rs).
    let max_r = 16.min(count);
    println!("\nns per call hashing r messages of {len} bytes (leftover handling):");
    print!("{:<30}", "r =");
    for r in 1..=max_r {
        print!("{r:>6}");
    }
    println!();
    for &b in &supported {
        let mut variants: Vec<Variant<'_>> = Vec::new();
        for r in 1..=max_r {
            let mut out = vec![[0u8; 32]; r];
            variants.push(Box::new(move || {
                hash_batch_with(b, black_box(&msgs[..r]), &mut out);
                black_box(&mut out);
            }));
        }
        print!("{:<30}", lane_label(b));
        for t in time_round_robin(&mut variants) {
            print!("{t:>6.0}");
        }
        println!();
    }
    println!();
}

fn main() {
    let mut args = std::env::args().skip(1);
    let count: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(512);
    let mut lens: Vec<usize> = args.filter_map(|a| a.parse().ok()).collect();
    if lens.is_empty() {
        lens = vec![516, 100];
    }
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
