//! Bit-exactness against `blake3::hash` for every backend this CPU supports.
//!
//! Inputs come from a seeded `SmallRng`; every assertion message carries the
//! seed, so a failure can be replayed.

use blake3_lanes::{hash_batch, hash_batch_with, Backend};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, RngCore, SeedableRng};

#[path = "../../sha512-lanes/tests/support/lanes.rs"]
mod lanes;

/// Longest message tested: past one chunk (1024 bytes), so the
/// `blake3::hash` fallback for multi-chunk messages is covered too.
const MAX_LEN: usize = 1100;

lanes::lane_backend!(Backend);

fn supported() -> Vec<Backend> {
    lanes::supported()
}

fn reference(msg: &[u8]) -> [u8; 32] {
    *blake3::hash(msg).as_bytes()
}

fn bytes(rng: &mut SmallRng, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    rng.fill_bytes(&mut v);
    v
}

/// Checks `backend` on `msgs` against `blake3::hash`.
fn check(backend: Backend, msgs: &[&[u8]], seed: u64, what: &str) {
    let mut out = vec![[0u8; 32]; msgs.len()];
    hash_batch_with(backend, msgs, &mut out);
    for (i, msg) in msgs.iter().enumerate() {
        assert_eq!(
            out[i],
            reference(msg),
            "{backend} {what} (seed {seed:#x}): message {i} of {} (len {})",
            msgs.len(),
            msg.len()
        );
    }
}

/// [`check`] of every backend of `backends` on the messages `owned`.
fn check_owned(backends: &[Backend], owned: &[Vec<u8>], seed: u64, what: &str) {
    let msgs: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
    for &backend in backends {
        check(backend, &msgs, seed, what);
    }
}

/// Every length 0..=MAX_LEN in batches of equal lengths: one batch of
/// `1 + len % 40` messages (sizes 1..=40: full, partial and tiny batches)
/// and one of 33 (two full 16-lane batches or four 8-lane ones, plus a lone
/// leftover). Messages start at varying (unaligned) offsets of one pool.
#[test]
fn equal_lengths_every_length() {
    let seed = 0xB1A4_E300_0001u64;
    let mut rng = SmallRng::seed_from_u64(seed);
    let pool = bytes(&mut rng, MAX_LEN + 64 * 40);
    for backend in supported() {
        for len in 0..=MAX_LEN {
            for n in [1 + len % 40, 33] {
                let msgs: Vec<&[u8]> = (0..n)
                    .map(|i| {
                        let start = (i * 61 + len) % (pool.len() - len);
                        &pool[start..start + len]
                    })
                    .collect();
                check(backend, &msgs, seed, &format!("equal len {len}, n {n}"));
            }
        }
    }
}

/// Every length 0..=MAX_LEN inside mixed-length batches of random sizes
/// 1..=40 (lengths shuffled, so each batch mixes block counts and has
/// partial groups of every size).
#[test]
fn mixed_lengths_every_length() {
    let seed = 0xB1A4_E300_0002u64;
    let mut rng = SmallRng::seed_from_u64(seed);
    let backends = supported();
    for pass in 0..3 {
        let mut lens: Vec<usize> = (0..=MAX_LEN).collect();
        lens.shuffle(&mut rng);
        let mut rest = &lens[..];
        while !rest.is_empty() {
            let n = rng.gen_range(1..=40).min(rest.len());
            let owned: Vec<Vec<u8>> = rest[..n].iter().map(|&l| bytes(&mut rng, l)).collect();
            rest = &rest[n..];
            check_owned(
                &backends,
                &owned,
                seed,
                &format!("mixed pass {pass}, n {n}"),
            );
        }
    }
}

/// Batches drawn from a few lengths (many groups of equal block count, equal
/// and different lengths within a group), every batch size 1..=40.
#[test]
fn few_lengths_many_groups() {
    let seed = 0xB1A4_E300_0003u64;
    let mut rng = SmallRng::seed_from_u64(seed);
    let backends = supported();
    let choices = [
        0, 1, 63, 64, 65, 100, 127, 128, 129, 200, 250, 516, 1000, 1024, 1025,
    ];
    for round in 0..20 {
        for n in 1..=40 {
            let owned: Vec<Vec<u8>> = (0..n)
                .map(|_| {
                    let len = choices[rng.gen_range(0..choices.len())];
                    bytes(&mut rng, len)
                })
                .collect();
            check_owned(&backends, &owned, seed, &format!("round {round}, n {n}"));
        }
    }
}

/// Lanes of different lengths but the same block count share one SIMD call:
/// 65..=128 bytes are all two blocks, with last-block lengths 1..=64.
#[test]
fn same_block_count_different_lengths() {
    let seed = 0xB1A4_E300_0004u64;
    let mut rng = SmallRng::seed_from_u64(seed);
    let owned: Vec<Vec<u8>> = (65..=128).map(|len| bytes(&mut rng, len)).collect();
    check_owned(&supported(), &owned, seed, "two-block lengths 65..=128");
}

/// The engine's shapes: 512 inner nodes of 516 bytes ("MIN\0" + 16 child
/// hashes), and 512 leaves of 100 bytes.
#[test]
fn all_equal_516_and_100_byte_batches_of_512() {
    let seed = 0xB1A4_E300_0005u64;
    let mut rng = SmallRng::seed_from_u64(seed);
    for len in [516, 100] {
        let owned: Vec<Vec<u8>> = (0..512)
            .map(|_| {
                let mut m = bytes(&mut rng, len);
                m[..4].copy_from_slice(b"MIN\0");
                m
            })
            .collect();
        let msgs: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        for backend in supported() {
            check(backend, &msgs, seed, &format!("512 x {len} bytes"));
        }
        let mut out = vec![[0u8; 32]; msgs.len()];
        hash_batch(&msgs, &mut out);
        for (i, m) in msgs.iter().enumerate() {
            assert_eq!(out[i], reference(m), "hash_batch {len} bytes, message {i}");
        }
    }
}

#[test]
fn backends_agree_with_each_other_and_default() {
    let seed = 0xB1A4_E300_0006u64;
    let mut rng = SmallRng::seed_from_u64(seed);
    let owned: Vec<Vec<u8>> = (0..77).map(|i| bytes(&mut rng, (i * 37) % 1100)).collect();
    let msgs: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
    lanes::backends_agree(
        &msgs,
        hash_batch_with,
        hash_batch,
        &format!("seed {seed:#x}"),
    );
}

#[test]
fn known_answers_and_empty_batch() {
    // BLAKE3 of the empty message and of "abc" (published test values).
    let empty = "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262";
    let abc = "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85";
    let hex = |d: &[u8; 32]| d.iter().map(|b| format!("{b:02x}")).collect::<String>();
    for backend in supported() {
        let msgs: [&[u8]; 20] =
            core::array::from_fn(|i| if i % 2 == 0 { &b""[..] } else { b"abc" });
        let mut out = [[0u8; 32]; 20];
        hash_batch_with(backend, &msgs, &mut out);
        for (i, d) in out.iter().enumerate() {
            assert_eq!(
                hex(d),
                if i % 2 == 0 { empty } else { abc },
                "{backend} {i}"
            );
        }
        let mut none: [[u8; 32]; 0] = [];
        hash_batch_with(backend, &[], &mut none);
    }
}

#[test]
#[should_panic(expected = "one output slot per message")]
fn length_mismatch_panics() {
    lanes::length_mismatch(hash_batch);
}

#[test]
#[should_panic(expected = "one output slot per message")]
fn length_mismatch_panics_with_backend() {
    let msgs: [&[u8]; 1] = [b"a"];
    let mut out = [[0u8; 32]; 3];
    hash_batch_with(Backend::Scalar, &msgs, &mut out);
}

#[test]
fn backend_selection() {
    lanes::backend_selection([Backend::Avx512x16, Backend::Avx2x8, Backend::Scalar]);
    assert_eq!(
        Backend::ALL.map(Backend::lanes),
        [16, 8, 1],
        "lanes per backend"
    );
}
