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

/// A batch hash: `(messages, digests)`.
pub type Batch = fn(&[&[u8]], &mut [[u8; 32]]);

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

/// One lanes crate as its speed example compares it.
pub struct LaneCrate<B> {
    /// The backends, narrowest first: scalar, AVX2, AVX-512.
    pub all: [B; 3],
    /// The backends this CPU supports, narrowest first.
    pub supported: Vec<B>,
    /// The batch hash with an explicit backend.
    pub batch_with: BatchWith<B>,
    /// A backend's row label.
    pub label: fn(B) -> String,
}

impl<B: Copy + PartialEq + Display + 'static> LaneCrate<B> {
    /// The crate of backends `all` (narrowest first), of which this CPU
    /// runs those `is_supported` accepts.
    pub fn new(
        all: [B; 3],
        is_supported: fn(B) -> bool,
        batch_with: BatchWith<B>,
        label: fn(B) -> String,
    ) -> LaneCrate<B> {
        let supported = all.into_iter().filter(|&b| is_supported(b)).collect();
        LaneCrate {
            all,
            supported,
            batch_with,
            label,
        }
    }

    /// The labels of the SIMD backends this CPU does not support.
    pub fn unsupported(&self) -> Vec<String> {
        self.all[1..]
            .iter()
            .filter(|b| !self.supported.contains(b))
            .map(|&b| (self.label)(b))
            .collect()
    }

    /// Each supported backend computes the digests of `msgs` that
    /// `reference` (named in a failure) does.
    pub fn assert_agree(&self, msgs: &[&[u8]], reference: (Batch, &str)) {
        let mut want = vec![[0u8; 32]; msgs.len()];
        (reference.0)(msgs, &mut want);
        for &b in &self.supported {
            let mut out = vec![[0u8; 32]; msgs.len()];
            (self.batch_with)(b, msgs, &mut out);
            assert_eq!(out, want, "{b} disagrees with {}", reference.1);
        }
    }

    /// A variant per supported backend, then the crate's batch hash with
    /// the backend in use, `batch` on `backend` (row `batch_label`).
    pub fn variants<'a>(
        &self,
        msgs: &'a [&'a [u8]],
        batch_label: String,
        (batch, backend): (Batch, B),
    ) -> Vec<Timed<'a>> {
        let batch_with = self.batch_with;
        let mut v: Vec<Timed<'a>> = self
            .supported
            .iter()
            .map(|&b| Timed {
                label: (self.label)(b),
                avx512: b == self.all[2],
                run: variant(msgs, move |m, o| batch_with(b, m, o)),
            })
            .collect();
        v.push(Timed {
            label: batch_label,
            avx512: backend == self.all[2],
            run: variant(msgs, batch),
        });
        v
    }

    /// Cost of one call with r messages (r = 1..=`max_r`): how small a
    /// leftover is still worth a partly filled SIMD batch (see MIN_FILL_* in
    /// lib.rs). A row per supported backend, labelled by `label`; `widths`:
    /// of the label column and of the others.
    pub fn print_leftover_costs(
        &self,
        msgs: &[&[u8]],
        len: usize,
        max_r: usize,
        label: impl Fn(B) -> String,
        (label_width, col): (usize, usize),
    ) {
        println!("\nns per call hashing r messages of {len} bytes (leftover handling):");
        print!("{:<label_width$}", "r =");
        for r in 1..=max_r {
            print!("{r:>col$}");
        }
        println!();
        let batch_with = self.batch_with;
        for &b in &self.supported {
            let mut variants: Vec<Variant<'_>> = (1..=max_r.min(msgs.len()))
                .map(|r| variant(&msgs[..r], move |m, o| batch_with(b, m, o)))
                .collect();
            print!("{:<label_width$}", label(b));
            for t in time_round_robin(&mut variants) {
                print!("{t:>col$.0}");
            }
            println!();
        }
    }
}
