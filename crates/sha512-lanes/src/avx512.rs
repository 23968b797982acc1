//! Eight-lane SHA-512 with AVX-512 (F + BW): lane `i` of every `__m512i` holds
//! message `i`'s copy of a state or schedule word, so each instruction advances
//! eight independent hashes. Rotations are native (`vprorq`), and the
//! three-input boolean functions (Σ/σ XORs, Ch, Maj) are single `vpternlogq`s.
#![allow(unsafe_code)]

use core::arch::x86_64::*;

use crate::consts::IV;
use crate::pad::{LaneBlocks, BLOCK};

/// Messages hashed per kernel call.
pub(crate) const LANES: usize = 8;

/// Whether this CPU can run the kernel (cached by `std` after the first call).
#[inline]
pub(crate) fn is_supported() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
}

/// Hashes eight messages of equal padded block count; returns each lane's
/// final SHA-512 state, or `None` if the CPU lacks AVX-512F/BW.
#[inline]
pub(crate) fn hash(src: &LaneBlocks<'_, LANES>) -> Option<[[u64; 8]; LANES]> {
    if !is_supported() {
        return None;
    }
    // SAFETY: `hash_impl` only requires the `avx512f` and `avx512bw` target
    // features, and we just checked at run time that this CPU has both.
    Some(unsafe { hash_impl(src) })
}

#[target_feature(enable = "avx512f,avx512bw")]
fn hash_impl(src: &LaneBlocks<'_, LANES>) -> [[u64; 8]; LANES] {
    let mut state = [_mm512_setzero_si512(); 8];
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
        // SAFETY: `dst` is a `[u64; 8]`, exactly 64 writable bytes, the size of
        // one `__m512i`; `storeu` has no alignment requirement.
        unsafe { _mm512_storeu_si512(dst.as_mut_ptr().cast(), v) };
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
/// Each block is loaded as two rows of eight words, byte-swapped, and the
/// 8×8 word matrices are transposed with unpack + 128-bit-lane shuffles.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn load(blocks: [&[u8; BLOCK]; LANES]) -> [__m512i; 16] {
    // Reverses the bytes of each 64-bit word (per 128-bit lane pattern).
    let bswap = _mm512_broadcast_i32x4(_mm_set_epi64x(0x08090a0b0c0d0e0f, 0x0001020304050607));
    let mut w = [_mm512_setzero_si512(); 16];
    for half in 0..2 {
        let mut r = [_mm512_setzero_si512(); LANES];
        for (row, block) in r.iter_mut().zip(blocks) {
            // SAFETY: `block` is 128 readable bytes and `64 * half + 64 <= 128`,
            // so the 64-byte unaligned load stays inside it.
            let v = unsafe { _mm512_loadu_si512(block.as_ptr().add(64 * half).cast()) };
            *row = _mm512_shuffle_epi8(v, bswap);
        }
        let t0 = _mm512_unpacklo_epi64(r[0], r[1]);
        let t1 = _mm512_unpackhi_epi64(r[0], r[1]);
        let t2 = _mm512_unpacklo_epi64(r[2], r[3]);
        let t3 = _mm512_unpackhi_epi64(r[2], r[3]);
        let t4 = _mm512_unpacklo_epi64(r[4], r[5]);
        let t5 = _mm512_unpackhi_epi64(r[4], r[5]);
        let t6 = _mm512_unpacklo_epi64(r[6], r[7]);
        let t7 = _mm512_unpackhi_epi64(r[6], r[7]);
        // 0x88 picks 128-bit lanes (a0, a2, b0, b2); 0xDD picks (a1, a3, b1, b3).
        let u0 = _mm512_shuffle_i64x2::<0x88>(t0, t2); // columns 0,4 of rows 0-3
        let u1 = _mm512_shuffle_i64x2::<0xDD>(t0, t2); // columns 2,6
        let u2 = _mm512_shuffle_i64x2::<0x88>(t1, t3); // columns 1,5
        let u3 = _mm512_shuffle_i64x2::<0xDD>(t1, t3); // columns 3,7
        let u4 = _mm512_shuffle_i64x2::<0x88>(t4, t6); // same for rows 4-7
        let u5 = _mm512_shuffle_i64x2::<0xDD>(t4, t6);
        let u6 = _mm512_shuffle_i64x2::<0x88>(t5, t7);
        let u7 = _mm512_shuffle_i64x2::<0xDD>(t5, t7);
        let base = 8 * half;
        w[base] = _mm512_shuffle_i64x2::<0x88>(u0, u4);
        w[base + 4] = _mm512_shuffle_i64x2::<0xDD>(u0, u4);
        w[base + 2] = _mm512_shuffle_i64x2::<0x88>(u1, u5);
        w[base + 6] = _mm512_shuffle_i64x2::<0xDD>(u1, u5);
        w[base + 1] = _mm512_shuffle_i64x2::<0x88>(u2, u6);
        w[base + 5] = _mm512_shuffle_i64x2::<0xDD>(u2, u6);
        w[base + 3] = _mm512_shuffle_i64x2::<0x88>(u3, u7);
        w[base + 7] = _mm512_shuffle_i64x2::<0xDD>(u3, u7);
    }
    w
}

#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn add(a: __m512i, b: __m512i) -> __m512i {
    _mm512_add_epi64(a, b)
}

#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn splat(x: u64) -> __m512i {
    _mm512_set1_epi64(x as i64)
}

/// `a ^ b ^ c`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn xor3(a: __m512i, b: __m512i, c: __m512i) -> __m512i {
    _mm512_ternarylogic_epi64::<0x96>(a, b, c)
}

/// Σ0(x) = ROTR28 ^ ROTR34 ^ ROTR39.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn bsig0(x: __m512i) -> __m512i {
    xor3(
        _mm512_ror_epi64::<28>(x),
        _mm512_ror_epi64::<34>(x),
        _mm512_ror_epi64::<39>(x),
    )
}

/// Σ1(x) = ROTR14 ^ ROTR18 ^ ROTR41.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn bsig1(x: __m512i) -> __m512i {
    xor3(
        _mm512_ror_epi64::<14>(x),
        _mm512_ror_epi64::<18>(x),
        _mm512_ror_epi64::<41>(x),
    )
}

/// σ0(x) = ROTR1 ^ ROTR8 ^ SHR7.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn ssig0(x: __m512i) -> __m512i {
    xor3(
        _mm512_ror_epi64::<1>(x),
        _mm512_ror_epi64::<8>(x),
        _mm512_srli_epi64::<7>(x),
    )
}

/// σ1(x) = ROTR19 ^ ROTR61 ^ SHR6.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn ssig1(x: __m512i) -> __m512i {
    xor3(
        _mm512_ror_epi64::<19>(x),
        _mm512_ror_epi64::<61>(x),
        _mm512_srli_epi64::<6>(x),
    )
}

/// Ch(e, f, g) = (e & f) ^ (!e & g): truth table 0xCA.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn ch(e: __m512i, f: __m512i, g: __m512i) -> __m512i {
    _mm512_ternarylogic_epi64::<0xCA>(e, f, g)
}

/// Maj(a, b, c) = majority bit: truth table 0xE8.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn maj(a: __m512i, b: __m512i, c: __m512i) -> __m512i {
    _mm512_ternarylogic_epi64::<0xE8>(a, b, c)
}

define_compress!(__m512i, "avx512f,avx512bw");
