//! The timing harness of the lanes crates' speed examples, shared by
//! sha512-lanes' `lanes_speed` and blake3-lanes' `blake3_lanes_speed` (which
//! includes this file by path).
//!
//! Variants are timed round-robin (one short window each per round, best
//! window kept), so a burst of other load on the machine hits them alike.

use std::fmt::Display;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Rounds of the round-robin.
pub const ROUNDS: usize = 200;
/// Minimum length of one timing window.
pub const WINDOW: Duration = Duration::from_millis(1);

/// One timed call.
pub type Variant<'a> = Box<dyn FnMut() + 'a>;

/// A batch hash with an explicit backend: `(backend, messages, digests)`.
pub type BatchWith<B> = fn(B, &[&[u8]], &mut [[u8; 32]]);

/// Best ns per call of each variant, timed round-robin.
pub fn time_round_robin(variants: &mut [Variant<'_>]) -> Vec<f64> {
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

/// `count` deterministic pseudo-random messages of `len` bytes (`"MIN\0"`
/// prefix like inner nodes).
pub fn messages(count: usize, len: usize) -> Vec<Vec<u8>> {
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

/// A variant hashing `msgs` with `hash` (into digests of its own).
pub fn variant<'a>(
    msgs: &'a [&'a [u8]],
    hash: impl Fn(&[&[u8]], &mut [[u8; 32]]) + 'a,
) -> Variant<'a> {
    let mut out = vec![[0u8; 32]; msgs.len()];
    Box::new(move || {
        hash(black_box(msgs), &mut out);
        black_box(&mut out);
    })
}

/// Each of `backends` computes `want`, the digests of `msgs` by
/// `reference` (named in a failure), with `batch`.
pub fn assert_backends_agree<B: Copy + Display>(
    msgs: &[&[u8]],
    backends: &[B],
    batch: BatchWith<B>,
    want: &[[u8; 32]],
    reference: &str,
) {
    for &b in backends {
        let mut out = vec![[0u8; 32]; msgs.len()];
        batch(b, msgs, &mut out);
        assert_eq!(out, want, "{b} disagrees with {reference}");
    }
}

/// A variant to time: its label, whether it runs AVX-512 code, the call.
pub struct Timed<'a> {
    pub label: String,
    pub avx512: bool,
    pub run: Variant<'a>,
}

/// Times the single-stream `baseline` and `variants` in two round-robins:
/// the variants that run AVX-512 code, and the others, each group with a
/// `baseline()` of its own. On Intel server parts AVX-512 code lowers the
/// core clock for a little while after it stops, which would slow whichever
/// variant came next; the baseline re-timed among the AVX-512 variants
/// shows that effect (no such group without them). Returns each label with
/// its ns per message (`per_call` messages a call): the baseline
/// (`labels[0]`), `variants` in their order, the re-timed baseline
/// (`labels[1]`).
pub fn time_in_two_groups<'a>(
    per_call: usize,
    labels: [&str; 2],
    mut baseline: impl FnMut() -> Variant<'a>,
    variants: Vec<Timed<'a>>,
) -> Vec<(String, f64)> {
    let mut labels_of = Vec::with_capacity(variants.len());
    let (mut other, mut avx512) = (Vec::new(), Vec::new());
    for (slot, v) in variants.into_iter().enumerate() {
        labels_of.push(v.label);
        if v.avx512 { &mut avx512 } else { &mut other }.push((slot, v.run));
    }
    let mut ns = vec![0.0; labels_of.len()];
    let mut baselines = Vec::new();
    for (label, group) in [(labels[0], other), (labels[1], avx512)] {
        if !baselines.is_empty() && group.is_empty() {
            break; // no AVX-512 on this CPU
        }
        let (slots, mut runs): (Vec<usize>, Vec<Variant<'a>>) = group.into_iter().unzip();
        runs.insert(0, baseline());
        let times = time_round_robin(&mut runs);
        baselines.push((label.to_string(), times[0] / per_call as f64));
        for (slot, t) in slots.into_iter().zip(&times[1..]) {
            ns[slot] = t / per_call as f64;
        }
    }
    let retimed = baselines.split_off(1);
    let mut rows = baselines;
    rows.extend(labels_of.into_iter().zip(ns));
    rows.extend(retimed);
    rows
}

/// Prints `rows` (label, ns per message of `len` bytes) as a table with a
/// speed-up against the first row in a column headed `vs`, then a row
/// saying "unsupported" for each label in `unsupported`. `widths`: of the
/// label column, the number columns and the last.
pub fn print_rows(
    rows: &[(String, f64)],
    len: usize,
    vs: &str,
    unsupported: &[String],
    (label_w, num_w, vs_w): (usize, usize, usize),
) {
    let base = rows[0].1;
    println!(
        "{:<label_w$} {:>num_w$} {:>num_w$} {:>vs_w$}",
        "variant", "ns/msg", "MB/s", vs
    );
    let x_w = vs_w - 1;
    for (label, ns) in rows {
        println!(
            "{label:<label_w$} {ns:>num_w$.1} {:>num_w$.1} {:>x_w$.2}x",
            len as f64 * 1e3 / ns,
            base / ns
        );
    }
    for label in unsupported {
        println!("{label:<label_w$} {:>num_w$}", "unsupported");
    }
}

/// Cost of one call with r messages (r = 1..=`max_r`): how small a leftover
/// is still worth a partly filled SIMD batch (see MIN_FILL_* in lib.rs). A
/// row per backend, labelled by `label`; `widths`: of the label column and
/// of the others.
pub fn print_leftover_costs<B: Copy>(
    msgs: &[&[u8]],
    len: usize,
    max_r: usize,
    backends: &[B],
    batch: BatchWith<B>,
    label: impl Fn(B) -> String,
    (label_width, col): (usize, usize),
) {
    println!("\nns per call hashing r messages of {len} bytes (leftover handling):");
    print!("{:<label_width$}", "r =");
    for r in 1..=max_r {
        print!("{r:>col$}");
    }
    println!();
    for &b in backends {
        let mut variants: Vec<Variant<'_>> = (1..=max_r.min(msgs.len()))
            .map(|r| variant(&msgs[..r], move |m, o| batch(b, m, o)))
            .collect();
        print!("{:<label_width$}", label(b));
        for t in time_round_robin(&mut variants) {
            print!("{t:>col$.0}");
        }
        println!();
    }
}
