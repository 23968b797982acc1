//! Four-lane SHA-512 with AVX2: lane `i` of every `__m256i` holds message
//! `i`'s copy of a state or schedule word. AVX2 has no 64-bit rotate, so
//! rotations are a right shift, a left shift and an XOR (the XORs of the three
//! terms of Σ/σ are merged), except ROTR8, which is a byte shuffle.
#![allow(unsafe_code)]

use core::arch::x86_64::*;

use crate::consts::IV;
use crate::pad::{LaneBlocks, BLOCK};

/// Messages hashed per kernel call.
pub(crate) const LANES: usize = 4;

/// Whether this CPU can run the kernel (cached by `std` after the first call).
#[inline]
pub(crate) fn is_supported() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
}

/// Hashes four messages of equal padded block count; returns each lane's
/// final SHA-512 state, or `None` if the CPU lacks AVX2.
#[inline]
pub(crate) fn hash(src: &LaneBlocks<'_, LANES>) -> Option<[[u64; 8]; LANES]> {
    if !is_supported() {
        return None;
    }
    // SAFETY: `hash_impl` only requires the `avx2` target feature, and we just
    // checked at run time that this CPU has it.
    Some(unsafe { hash_impl(src) })
}

#[target_feature(enable = "avx2")]
fn hash_impl(src: &LaneBlocks<'_, LANES>) -> [[u64; 8]; LANES] {
    let mut state = [_mm256_setzero_si256(); 8];
    for (s, iv) in state.iter_mut().zip(IV) {
        *s = splat(iv);
    }
    for b in 0..src.nblocks() {
        let mut w = load(src.block(b));
        compress(&mut state, &mut w);
    }
    // words[j][i] = state word j of lane i.
    let mut words = [[0u64; LANES]; 8];
    for (dst, v) in words.iter_mut().zip(state) {
        // SAFETY: `dst` is a `[u64; 4]`, exactly 32 writable bytes, the size of
        // one `__m256i`; `storeu` has no alignment requirement.
        unsafe { _mm256_storeu_si256(dst.as_mut_ptr().cast(), v) };
    }
    let mut out = [[0u64; 8]; LANES];
    for (j, row) in words.iter().enumerate() {
        for (lane, &word) in out.iter_mut().zip(row) {
            lane[j] = word;
        }
    }
    out
}

/// Loads block words: `w[j]` lane `i` = big-endian word `j` of `blocks[i]`.
/// Rows of four words are loaded, byte-swapped and transposed 4×4.
#[inline]
#[target_feature(enable = "avx2")]
fn load(blocks: [&[u8; BLOCK]; LANES]) -> [__m256i; 16] {
    let bswap = _mm256_setr_epi8(
        7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8, //
        7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8,
    );
    let mut w = [_mm256_setzero_si256(); 16];
    for quarter in 0..4 {
        let mut r = [_mm256_setzero_si256(); LANES];
        for (row, block) in r.iter_mut().zip(blocks) {
            // SAFETY: `block` is 128 readable bytes and
            // `32 * quarter + 32 <= 128`, so the 32-byte unaligned load stays
            // inside it.
            let v = unsafe { _mm256_loadu_si256(block.as_ptr().add(32 * quarter).cast()) };
            *row = _mm256_shuffle_epi8(v, bswap);
        }
        let t0 = _mm256_unpacklo_epi64(r[0], r[1]); // r0w0 r1w0 r0w2 r1w2
        let t1 = _mm256_unpackhi_epi64(r[0], r[1]); // r0w1 r1w1 r0w3 r1w3
        let t2 = _mm256_unpacklo_epi64(r[2], r[3]);
        let t3 = _mm256_unpackhi_epi64(r[2], r[3]);
        let base = 4 * quarter;
        w[base] = _mm256_permute2x128_si256::<0x20>(t0, t2);
        w[base + 1] = _mm256_permute2x128_si256::<0x20>(t1, t3);
        w[base + 2] = _mm256_permute2x128_si256::<0x31>(t0, t2);
        w[base + 3] = _mm256_permute2x128_si256::<0x31>(t1, t3);
    }
    w
}

#[inline]
#[target_feature(enable = "avx2")]
fn add(a: __m256i, b: __m256i) -> __m256i {
    _mm256_add_epi64(a, b)
}

#[inline]
#[target_feature(enable = "avx2")]
fn xor(a: __m256i, b: __m256i) -> __m256i {
    _mm256_xor_si256(a, b)
}

#[inline]
#[target_feature(enable = "avx2")]
fn splat(x: u64) -> __m256i {
    _mm256_set1_epi64x(x as i64)
}

/// Σ0(x) = ROTR28 ^ ROTR34 ^ ROTR39.
#[inline]
#[target_feature(enable = "avx2")]
fn bsig0(x: __m256i) -> __m256i {
    let r = xor(
        xor(_mm256_srli_epi64::<28>(x), _mm256_srli_epi64::<34>(x)),
        _mm256_srli_epi64::<39>(x),
    );
    let l = xor(
        xor(_mm256_slli_epi64::<36>(x), _mm256_slli_epi64::<30>(x)),
        _mm256_slli_epi64::<25>(x),
    );
    xor(r, l)
}

/// Σ1(x) = ROTR14 ^ ROTR18 ^ ROTR41.
#[inline]
#[target_feature(enable = "avx2")]
fn bsig1(x: __m256i) -> __m256i {
    let r = xor(
        xor(_mm256_srli_epi64::<14>(x), _mm256_srli_epi64::<18>(x)),
        _mm256_srli_epi64::<41>(x),
    );
    let l = xor(
        xor(_mm256_slli_epi64::<50>(x), _mm256_slli_epi64::<46>(x)),
        _mm256_slli_epi64::<23>(x),
    );
    xor(r, l)
}

/// σ0(x) = ROTR1 ^ ROTR8 ^ SHR7 (ROTR8 as a byte shuffle).
#[inline]
#[target_feature(enable = "avx2")]
fn ssig0(x: __m256i) -> __m256i {
    let ror8 = _mm256_setr_epi8(
        1, 2, 3, 4, 5, 6, 7, 0, 9, 10, 11, 12, 13, 14, 15, 8, //
        1, 2, 3, 4, 5, 6, 7, 0, 9, 10, 11, 12, 13, 14, 15, 8,
    );
    let a = xor(_mm256_srli_epi64::<1>(x), _mm256_slli_epi64::<63>(x));
    let b = xor(_mm256_shuffle_epi8(x, ror8), _mm256_srli_epi64::<7>(x));
    xor(a, b)
}

/// σ1(x) = ROTR19 ^ ROTR61 ^ SHR6.
#[inline]
#[target_feature(enable = "avx2")]
fn ssig1(x: __m256i) -> __m256i {
    let r = xor(
        xor(_mm256_srli_epi64::<19>(x), _mm256_srli_epi64::<61>(x)),
        _mm256_srli_epi64::<6>(x),
    );
    let l = xor(_mm256_slli_epi64::<45>(x), _mm256_slli_epi64::<3>(x));
    xor(r, l)
}

/// Ch(e, f, g) = ((f ^ g) & e) ^ g.
#[inline]
#[target_feature(enable = "avx2")]
fn ch(e: __m256i, f: __m256i, g: __m256i) -> __m256i {
    xor(_mm256_and_si256(xor(f, g), e), g)
}

/// Maj(a, b, c) = ((a ^ b) & (b ^ c)) ^ b; `b ^ c` is the previous round's
/// `a ^ b`, which the compiler reuses.
#[inline]
#[target_feature(enable = "avx2")]
fn maj(a: __m256i, b: __m256i, c: __m256i) -> __m256i {
    xor(_mm256_and_si256(xor(a, b), xor(b, c)), b)
}

define_compress!(__m256i, "avx2");
