//! Eight-lane BLAKE3 with AVX2: lane `i` of every `__m256i` holds message
//! `i`'s copy of a state or message word. AVX2 has no vector rotate: the
//! 16- and 8-bit rotations are byte shuffles (`vpshufb`), the 12- and 7-bit
//! ones shift/shift/OR.
#![allow(unsafe_code)]

use core::arch::x86_64::*;

use crate::consts::{block_flags, BLOCK, IV};
use crate::lanes::LaneBlocks;

/// Messages hashed per kernel call.
pub(crate) const LANES: usize = 8;

/// Whether this CPU can run the kernel (cached by `std` after the first call).
#[inline]
pub(crate) fn is_supported() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
}

/// Hashes eight single-chunk messages of equal block count; returns each
/// lane's 32-byte hash, or `None` if the CPU lacks AVX2.
///
/// # Panics
/// If the messages are longer than one chunk or their block counts differ.
#[inline]
pub(crate) fn hash(msgs: &[&[u8]; LANES]) -> Option<[[u8; 32]; LANES]> {
    if !is_supported() {
        return None;
    }
    // SAFETY: `hash_impl` only requires the `avx2` target feature, and we
    // just checked at run time that this CPU has it.
    Some(unsafe { hash_impl(msgs) })
}

#[target_feature(enable = "avx2")]
fn hash_impl(msgs: &[&[u8]; LANES]) -> [[u8; 32]; LANES] {
    let src = LaneBlocks::new(*msgs);
    let mut cv = [zero(); 8];
    for (c, iv) in cv.iter_mut().zip(IV) {
        *c = splat(iv);
    }
    let nblocks = src.nblocks();
    for b in 0..nblocks {
        let m = load(src.block(b));
        let block_len = if b + 1 == nblocks {
            // SAFETY: `last_len()` is a `[u32; 8]`, exactly 32 readable bytes,
            // the size of one `__m256i`; `loadu` has no alignment requirement.
            unsafe { _mm256_loadu_si256(src.last_len().as_ptr().cast()) }
        } else {
            splat(BLOCK as u32)
        };
        compress(&mut cv, &m, block_len, splat(block_flags(b, nblocks)));
    }
    store(&cv)
}

/// Transposes the final chaining values (`cv[j]` lane `i` = word `j` of
/// message `i`) into each message's 32-byte little-endian hash (the 8×8
/// transpose of [`load`] run backwards).
#[inline]
#[target_feature(enable = "avx2")]
fn store(cv: &[__m256i; 8]) -> [[u8; 32]; LANES] {
    let mut out = [[0u8; 32]; LANES];
    // s[g][c], 128-bit lane k: words 4g..4g+4 of message 4k + c.
    let mut s = [[zero(); 4]; 2];
    for (g, sg) in s.iter_mut().enumerate() {
        let t0 = _mm256_unpacklo_epi32(cv[4 * g], cv[4 * g + 1]);
        let t1 = _mm256_unpackhi_epi32(cv[4 * g], cv[4 * g + 1]);
        let t2 = _mm256_unpacklo_epi32(cv[4 * g + 2], cv[4 * g + 3]);
        let t3 = _mm256_unpackhi_epi32(cv[4 * g + 2], cv[4 * g + 3]);
        sg[0] = _mm256_unpacklo_epi64(t0, t2);
        sg[1] = _mm256_unpackhi_epi64(t0, t2);
        sg[2] = _mm256_unpacklo_epi64(t1, t3);
        sg[3] = _mm256_unpackhi_epi64(t1, t3);
    }
    for c in 0..4 {
        let a = _mm256_permute2x128_si256::<0x20>(s[0][c], s[1][c]);
        let b = _mm256_permute2x128_si256::<0x31>(s[0][c], s[1][c]);
        // SAFETY: each destination is a `[u8; 32]`, exactly 32 writable
        // bytes, the size of one `__m256i`; `storeu` has no alignment
        // requirement.
        unsafe {
            _mm256_storeu_si256(out[c].as_mut_ptr().cast(), a);
            _mm256_storeu_si256(out[c + 4].as_mut_ptr().cast(), b);
        }
    }
    out
}

/// Loads block words: `w[j]` lane `i` = little-endian word `j` of
/// `blocks[i]`. Each block is loaded as two rows of eight words and each
/// 8×8 word matrix is transposed in registers (unpacks inside 128-bit
/// lanes, then 128-bit lane permutes).
#[inline]
#[target_feature(enable = "avx2")]
fn load(blocks: [&[u8; BLOCK]; LANES]) -> [__m256i; 16] {
    let mut w = [zero(); 16];
    for half in 0..2 {
        let mut r = [zero(); LANES];
        for (row, block) in r.iter_mut().zip(blocks) {
            // SAFETY: `block` is 64 readable bytes and `32 * half + 32 <= 64`,
            // so the 32-byte unaligned load stays inside it.
            *row = unsafe { _mm256_loadu_si256(block.as_ptr().add(32 * half).cast()) };
        }
        // s[g][c], 128-bit lane k: word 4k + c of rows 4g..4g+4.
        let mut s = [[zero(); 4]; 2];
        for (g, sg) in s.iter_mut().enumerate() {
            let t0 = _mm256_unpacklo_epi32(r[4 * g], r[4 * g + 1]);
            let t1 = _mm256_unpackhi_epi32(r[4 * g], r[4 * g + 1]);
            let t2 = _mm256_unpacklo_epi32(r[4 * g + 2], r[4 * g + 3]);
            let t3 = _mm256_unpackhi_epi32(r[4 * g + 2], r[4 * g + 3]);
            sg[0] = _mm256_unpacklo_epi64(t0, t2);
            sg[1] = _mm256_unpackhi_epi64(t0, t2);
            sg[2] = _mm256_unpacklo_epi64(t1, t3);
            sg[3] = _mm256_unpackhi_epi64(t1, t3);
        }
        let base = 8 * half;
        for c in 0..4 {
            // 0x20 = (a.lane0, b.lane0); 0x31 = (a.lane1, b.lane1).
            w[base + c] = _mm256_permute2x128_si256::<0x20>(s[0][c], s[1][c]);
            w[base + 4 + c] = _mm256_permute2x128_si256::<0x31>(s[0][c], s[1][c]);
        }
    }
    w
}

#[inline]
#[target_feature(enable = "avx2")]
fn zero() -> __m256i {
    _mm256_setzero_si256()
}

#[inline]
#[target_feature(enable = "avx2")]
fn splat(x: u32) -> __m256i {
    _mm256_set1_epi32(x as i32)
}

#[inline]
#[target_feature(enable = "avx2")]
fn add(a: __m256i, b: __m256i) -> __m256i {
    _mm256_add_epi32(a, b)
}

#[inline]
#[target_feature(enable = "avx2")]
fn xor(a: __m256i, b: __m256i) -> __m256i {
    _mm256_xor_si256(a, b)
}

/// Rotate right by 16: swap the two 16-bit halves of each word (byte shuffle).
#[inline]
#[target_feature(enable = "avx2")]
fn rot16(x: __m256i) -> __m256i {
    let m = _mm256_setr_epi8(
        2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13, //
        2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13,
    );
    _mm256_shuffle_epi8(x, m)
}

#[inline]
#[target_feature(enable = "avx2")]
fn rot12(x: __m256i) -> __m256i {
    _mm256_or_si256(_mm256_srli_epi32::<12>(x), _mm256_slli_epi32::<20>(x))
}

/// Rotate right by 8: new byte `k` of each word is old byte `(k + 1) % 4`.
#[inline]
#[target_feature(enable = "avx2")]
fn rot8(x: __m256i) -> __m256i {
    let m = _mm256_setr_epi8(
        1, 2, 3, 0, 5, 6, 7, 4, 9, 10, 11, 8, 13, 14, 15, 12, //
        1, 2, 3, 0, 5, 6, 7, 4, 9, 10, 11, 8, 13, 14, 15, 12,
    );
    _mm256_shuffle_epi8(x, m)
}

#[inline]
#[target_feature(enable = "avx2")]
fn rot7(x: __m256i) -> __m256i {
    _mm256_or_si256(_mm256_srli_epi32::<7>(x), _mm256_slli_epi32::<25>(x))
}

define_compress!(__m256i, "avx2");
