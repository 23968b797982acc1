//! Bit-exactness against `sha2::Sha512` for every backend this CPU supports.

use sha2::{Digest, Sha512};
use sha512_lanes::{
    sha512_batch_with, sha512_half_batch, sha512_half_batch_with, sha512_half_many, sha512_many,
    Backend,
};

#[path = "support/lanes.rs"]
mod lanes;

/// Small deterministic PRNG (SplitMix64), so failures are reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }
}

lanes::lane_backend!(Backend);

fn supported() -> Vec<Backend> {
    lanes::supported()
}

fn reference(msg: &[u8]) -> [u8; 64] {
    Sha512::digest(msg).into()
}

/// [`check`] of the messages `owned` with every supported backend.
fn check_supported(owned: &[Vec<u8>], what: &str) {
    let msgs: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
    for backend in supported() {
        check(backend, &msgs, what);
    }
}

/// Checks both output widths of `backend` on `msgs` against `sha2`.
fn check(backend: Backend, msgs: &[&[u8]], what: &str) {
    let mut full = vec![[0u8; 64]; msgs.len()];
    let mut half = vec![[0u8; 32]; msgs.len()];
    sha512_batch_with(backend, msgs, &mut full);
    sha512_half_batch_with(backend, msgs, &mut half);
    for (i, msg) in msgs.iter().enumerate() {
        let want = reference(msg);
        assert_eq!(
            full[i],
            want,
            "{backend} {what}: message {i} of {} (len {})",
            msgs.len(),
            msg.len()
        );
        assert_eq!(
            half[i][..],
            want[..32],
            "{backend} {what}: half, message {i}"
        );
    }
}

/// Lengths that the issue asks for: every length 0..=300, block-boundary
/// neighbours, the 516-byte inner node, and a few longer messages.
fn length_classes() -> Vec<usize> {
    let mut v: Vec<usize> = (0..=300).collect();
    v.extend([
        111, 112, 127, 128, 239, 240, 255, 256, 367, 368, 516, 1000, 4096,
    ]);
    v
}

#[test]
fn equal_lengths_every_class() {
    let mut rng = Rng(1);
    // One buffer with slack so messages start at odd (unaligned) offsets.
    let pool = rng.bytes(4096 * 9 + 64);
    for backend in supported() {
        for len in length_classes() {
            // 9 messages: a full 8-lane batch plus one left over (and 2×4 + 1).
            let msgs: Vec<&[u8]> = (0..9)
                .map(|i| {
                    let start = i * (len + 3) % (pool.len() - len);
                    &pool[start..start + len]
                })
                .collect();
            check(backend, &msgs, &format!("len {len}"));
        }
    }
}

#[test]
fn mixed_lengths_batch_sizes_0_to_20() {
    let mut rng = Rng(2);
    let backends = supported();
    for round in 0..40 {
        for n in 0..=20 {
            // Some rounds draw from a few lengths (many equal-length groups,
            // including ones that pad to the same block count), others from a
            // wide range.
            let owned: Vec<Vec<u8>> = (0..n)
                .map(|_| {
                    let len = if round % 2 == 0 {
                        [0, 5, 111, 112, 120, 130, 200, 239, 240, 516][rng.below(10)]
                    } else {
                        rng.below(700)
                    };
                    rng.bytes(len)
                })
                .collect();
            let msgs: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
            for &backend in &backends {
                check(backend, &msgs, &format!("round {round}, n {n}"));
            }
        }
    }
}

#[test]
fn same_block_count_different_lengths_share_lanes() {
    // 112..=239 all pad to two blocks; 0..=111 to one; these mix both kinds of
    // lane (message block + tail, or two tail blocks) inside one SIMD call.
    let mut rng = Rng(3);
    let owned: Vec<Vec<u8>> = [112, 239, 128, 200, 113, 238, 129, 127, 150, 160, 170, 180]
        .iter()
        .map(|&len| rng.bytes(len))
        .collect();
    check_supported(&owned, "two-block mix");
}

/// Consecutive SIMD calls of one batch reuse their padding buffers; lengths
/// that shrink from call to call (same block count, so the fast path keeps
/// the order) must not leave a longer message's bytes in a shorter one's
/// padding.
#[test]
fn shrinking_lengths_across_calls_of_one_batch() {
    let mut rng = Rng(5);
    for range in [0..112usize, 112..240, 240..368, 496..624] {
        let mut lens: Vec<usize> = range.rev().collect();
        let owned: Vec<Vec<u8>> = lens.iter().map(|&len| rng.bytes(len)).collect();
        check_supported(&owned, "descending lengths");
        // And in a scrambled order.
        for i in (1..lens.len()).rev() {
            lens.swap(i, rng.below(i + 1));
        }
        let owned: Vec<Vec<u8>> = lens.iter().map(|&len| vec![0xFF; len]).collect();
        check_supported(&owned, "scrambled lengths of 0xFF bytes");
    }
}

#[test]
fn inner_node_516_bytes_large_batch() {
    let mut rng = Rng(4);
    let owned: Vec<Vec<u8>> = (0..67)
        .map(|_| {
            let mut m = b"MIN\0".to_vec();
            m.extend(rng.bytes(512));
            m
        })
        .collect();
    check_supported(&owned, "516-byte nodes");
}

#[test]
fn backends_agree_with_each_other() {
    let mut rng = Rng(5);
    let owned: Vec<Vec<u8>> = (0..37).map(|i| rng.bytes((i * 37) % 600)).collect();
    let msgs: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
    lanes::backends_agree(
        &msgs,
        sha512_half_batch_with,
        sha512_half_batch,
        "37 messages",
    );
}

#[test]
fn const_generic_api() {
    let msgs: [&[u8]; 10] = [
        b"",
        b"a",
        b"abc",
        &[7u8; 111],
        &[8u8; 112],
        &[9u8; 516],
        &[1u8; 516],
        &[2u8; 516],
        &[3u8; 516],
        &[4u8; 516],
    ];
    let full = sha512_many(&msgs);
    let half = sha512_half_many(&msgs);
    for (i, m) in msgs.iter().enumerate() {
        assert_eq!(full[i], reference(m));
        assert_eq!(half[i][..], reference(m)[..32]);
    }
    assert_eq!(sha512_many::<0>(&[]), [[0u8; 64]; 0]);
    assert_eq!(sha512_lanes::sha512(b"abc"), reference(b"abc"));
    assert_eq!(
        sha512_lanes::sha512_half(b"abc")[..],
        reference(b"abc")[..32]
    );
}

#[test]
fn known_answer() {
    // FIPS 180-4 example "abc" (SHA-512), first 16 bytes.
    let msgs: [&[u8]; 8] = [b"abc"; 8];
    for backend in supported() {
        let mut out = [[0u8; 64]; 8];
        sha512_batch_with(backend, &msgs, &mut out);
        for d in &out {
            assert_eq!(
                d[..16],
                [
                    0xdd, 0xaf, 0x35, 0xa1, 0x93, 0x61, 0x7a, 0xba, 0xcc, 0x41, 0x73, 0x49, 0xae,
                    0x20, 0x41, 0x31
                ]
            );
        }
    }
}

#[test]
#[should_panic(expected = "one output slot per message")]
fn length_mismatch_panics() {
    lanes::length_mismatch(sha512_half_batch);
}

#[test]
fn backend_selection() {
    lanes::backend_selection([Backend::Avx512x8, Backend::Avx2x4, Backend::Scalar]);
}
