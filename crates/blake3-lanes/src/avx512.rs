//! Sixteen-lane BLAKE3 with AVX-512 (F + BW): lane `i` of every `__m512i`
//! holds message `i`'s copy of a state or message word, so each instruction
//! advances sixteen independent hashes. Rotations are native (`vprord`).
//!
//! Blocks are read straight from the messages: every block but the last with
//! a plain 64-byte load, the last one with a byte-masked load
//! (`vmovdqu8` with a zeroing mask, AVX-512BW) that reads only the message's
//! own bytes and zero-fills the rest, so no padded copy is ever built.
#![allow(unsafe_code)]

use core::arch::x86_64::*;

use crate::consts::{block_count, block_flags, BLOCK, IV, MAX_BLOCKS};

/// Messages hashed per kernel call.
pub(crate) const LANES: usize = 16;

/// Whether this CPU can run the kernel (cached by `std` after the first call).
#[inline]
pub(crate) fn is_supported() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
}

/// Hashes sixteen single-chunk messages of equal block count; returns each
/// lane's 32-byte hash, or `None` if the CPU lacks AVX-512F/BW.
///
/// # Panics
/// If the messages are longer than one chunk or their block counts differ.
#[inline]
pub(crate) fn hash(msgs: &[&[u8]; LANES]) -> Option<[[u8; 32]; LANES]> {
    if !is_supported() {
        return None;
    }
    // SAFETY: `hash_impl` only requires the `avx512f` and `avx512bw` target
    // features, and we just checked at run time that this CPU has both.
    Some(unsafe { hash_impl(msgs) })
}

#[target_feature(enable = "avx512f,avx512bw")]
fn hash_impl(msgs: &[&[u8]; LANES]) -> [[u8; 32]; LANES] {
    let nblocks = block_count(msgs[0].len());
    assert!(
        nblocks <= MAX_BLOCKS && msgs.iter().all(|m| block_count(m.len()) == nblocks),
        "lanes must be single-chunk messages of equal block counts"
    );
    let mut cv = [zero(); 8];
    for (c, iv) in cv.iter_mut().zip(IV) {
        *c = splat(iv);
    }
    let last = nblocks - 1;
    for b in 0..last {
        let m = load(msgs, b);
        compress(
            &mut cv,
            &m,
            splat(BLOCK as u32),
            splat(block_flags(b, nblocks)),
        );
    }
    // The last block: its length differs per lane (0..=64).
    let mut last_len = [0u32; LANES];
    for (l, msg) in last_len.iter_mut().zip(msgs) {
        *l = (msg.len() - BLOCK * last) as u32;
    }
    // SAFETY: `last_len` is a `[u32; 16]`, exactly 64 readable bytes, the
    // size of one `__m512i`; `loadu` has no alignment requirement.
    let block_len = unsafe { _mm512_loadu_si512(last_len.as_ptr().cast()) };
    let m = load_last(msgs, last);
    compress(&mut cv, &m, block_len, splat(block_flags(last, nblocks)));
    store(&cv)
}

/// Transposes the final chaining values (`cv[j]` lane `i` = word `j` of
/// message `i`) into each message's 32-byte little-endian hash: unpacks give,
/// per 128-bit lane, four words of one message; 128-bit lane shuffles then
/// pair each message's two halves and put messages `c` and `c + 4` (and
/// `c + 8`, `c + 12`) side by side in one vector.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn store(cv: &[__m512i; 8]) -> [[u8; 32]; LANES] {
    let mut out = [[0u8; 32]; LANES];
    // s[g][c], 128-bit lane k: words 4g..4g+4 of message 4k + c.
    let mut s = [[zero(); 4]; 2];
    for (g, sg) in s.iter_mut().enumerate() {
        let t0 = _mm512_unpacklo_epi32(cv[4 * g], cv[4 * g + 1]);
        let t1 = _mm512_unpackhi_epi32(cv[4 * g], cv[4 * g + 1]);
        let t2 = _mm512_unpacklo_epi32(cv[4 * g + 2], cv[4 * g + 3]);
        let t3 = _mm512_unpackhi_epi32(cv[4 * g + 2], cv[4 * g + 3]);
        sg[0] = _mm512_unpacklo_epi64(t0, t2);
        sg[1] = _mm512_unpackhi_epi64(t0, t2);
        sg[2] = _mm512_unpacklo_epi64(t1, t3);
        sg[3] = _mm512_unpackhi_epi64(t1, t3);
    }
    for (c, (&x, &y)) in s[0].iter().zip(&s[1]).enumerate() {
        // (x0, x1, y0, y1) and (x2, x3, y2, y3), x = words 0..4, y = 4..8.
        let lo = _mm512_shuffle_i32x4::<0x44>(x, y);
        let hi = _mm512_shuffle_i32x4::<0xEE>(x, y);
        // 0xD8 reorders 128-bit lanes to (0, 2, 1, 3): (x0, y0, x1, y1) is
        // message c then message c + 4.
        let pairs = [
            (_mm512_shuffle_i32x4::<0xD8>(lo, lo), c),
            (_mm512_shuffle_i32x4::<0xD8>(hi, hi), c + 8),
        ];
        for (v, first) in pairs {
            let (a, b) = (_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64::<1>(v));
            // SAFETY: each destination is a `[u8; 32]`, exactly 32 writable
            // bytes, the size of one `__m256i`; `storeu` has no alignment
            // requirement.
            unsafe {
                _mm256_storeu_si256(out[first].as_mut_ptr().cast(), a);
                _mm256_storeu_si256(out[first + 4].as_mut_ptr().cast(), b);
            }
        }
    }
    out
}

/// Block `b` of every lane, which must be a full block (`b` is not the
/// last block), transposed (see [`transpose`]).
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn load(msgs: &[&[u8]; LANES], b: usize) -> [__m512i; 16] {
    let mut r = [zero(); LANES];
    for (row, msg) in r.iter_mut().zip(msgs) {
        let block = &msg[BLOCK * b..BLOCK * (b + 1)];
        // SAFETY: `block` is a 64-byte slice (the indexing above is bounds
        // checked), the size of one `__m512i`; `loadu` has no alignment
        // requirement.
        *row = unsafe { _mm512_loadu_si512(block.as_ptr().cast()) };
    }
    transpose(r)
}

/// The last block `b` of every lane (0..=64 bytes of it in the message),
/// zero-padded, transposed (see [`transpose`]).
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn load_last(msgs: &[&[u8]; LANES], b: usize) -> [__m512i; 16] {
    let mut r = [zero(); LANES];
    for (row, msg) in r.iter_mut().zip(msgs) {
        let tail = msg.get(BLOCK * b..).unwrap_or_default();
        let n = tail.len().min(BLOCK);
        let mask: __mmask64 = if n == BLOCK { !0 } else { (1u64 << n) - 1 };
        // SAFETY: the mask selects exactly the first `n` bytes at
        // `tail.as_ptr()`, and `n <= tail.len()`, so only bytes of `tail` are
        // read; masked-off bytes are not accessed (the instruction suppresses
        // faults on them) and are zeroed. No alignment requirement.
        *row = unsafe { _mm512_maskz_loadu_epi8(mask, tail.as_ptr().cast()) };
    }
    transpose(r)
}

/// Transposes sixteen rows (row `i` = the sixteen little-endian words of
/// lane `i`'s block) into `w[j]` lane `i` = word `j` of lane `i`'s block:
/// 32-bit and 64-bit unpacks transpose 4×4 tiles inside each 128-bit lane,
/// then two rounds of 128-bit lane shuffles move the tiles into place.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
#[allow(clippy::needless_range_loop)] // `c` indexes both `s[g]` and `w`
fn transpose(r: [__m512i; LANES]) -> [__m512i; 16] {
    // s[g][c], 128-bit lane k: word 4k + c of rows 4g..4g+4.
    let mut s = [[zero(); 4]; 4];
    for (g, sg) in s.iter_mut().enumerate() {
        let t0 = _mm512_unpacklo_epi32(r[4 * g], r[4 * g + 1]);
        let t1 = _mm512_unpackhi_epi32(r[4 * g], r[4 * g + 1]);
        let t2 = _mm512_unpacklo_epi32(r[4 * g + 2], r[4 * g + 3]);
        let t3 = _mm512_unpackhi_epi32(r[4 * g + 2], r[4 * g + 3]);
        sg[0] = _mm512_unpacklo_epi64(t0, t2);
        sg[1] = _mm512_unpackhi_epi64(t0, t2);
        sg[2] = _mm512_unpacklo_epi64(t1, t3);
        sg[3] = _mm512_unpackhi_epi64(t1, t3);
    }
    // w[4k + c] = (s[0][c].lane k, s[1][c].lane k, s[2][c].lane k, s[3][c].lane k):
    // a 4×4 transpose of 128-bit lanes for each c.
    let mut w = [zero(); 16];
    for c in 0..4 {
        // 0x44 picks 128-bit lanes (a0, a1, b0, b1); 0xEE picks (a2, a3, b2, b3).
        let x0 = _mm512_shuffle_i32x4::<0x44>(s[0][c], s[1][c]);
        let x1 = _mm512_shuffle_i32x4::<0xEE>(s[0][c], s[1][c]);
        let x2 = _mm512_shuffle_i32x4::<0x44>(s[2][c], s[3][c]);
        let x3 = _mm512_shuffle_i32x4::<0xEE>(s[2][c], s[3][c]);
        // 0x88 picks (a0, a2, b0, b2); 0xDD picks (a1, a3, b1, b3).
        w[c] = _mm512_shuffle_i32x4::<0x88>(x0, x2);
        w[4 + c] = _mm512_shuffle_i32x4::<0xDD>(x0, x2);
        w[8 + c] = _mm512_shuffle_i32x4::<0x88>(x1, x3);
        w[12 + c] = _mm512_shuffle_i32x4::<0xDD>(x1, x3);
    }
    w
}

#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn zero() -> __m512i {
    _mm512_setzero_si512()
}

#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn splat(x: u32) -> __m512i {
    _mm512_set1_epi32(x as i32)
}

#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn add(a: __m512i, b: __m512i) -> __m512i {
    _mm512_add_epi32(a, b)
}

#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn xor(a: __m512i, b: __m512i) -> __m512i {
    _mm512_xor_si512(a, b)
}

#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn rot16(x: __m512i) -> __m512i {
    _mm512_ror_epi32::<16>(x)
}

#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn rot12(x: __m512i) -> __m512i {
    _mm512_ror_epi32::<12>(x)
}

#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn rot8(x: __m512i) -> __m512i {
    _mm512_ror_epi32::<8>(x)
}

#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn rot7(x: __m512i) -> __m512i {
    _mm512_ror_epi32::<7>(x)
}

define_compress!(__m512i, "avx512f,avx512bw");
