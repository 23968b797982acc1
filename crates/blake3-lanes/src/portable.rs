//! Single-message, single-chunk BLAKE3 in plain Rust: the reference the lane
//! kernels are written after (the same round structure on `u32` instead of
//! vectors), checked against the `blake3` crate by the unit tests. Compiled
//! for the unit tests only: the `Scalar` backend uses the `blake3` crate,
//! whose single-message compression (SSE4.1/AVX-512 on 128-bit rows) is
//! faster than this plain version.

use crate::consts::{block_count, block_flags, BLOCK, CHUNK, IV, SCHEDULE};

/// The quarter-round `G` on state words `a, b, c, d` with message words
/// `mx, my`.
#[inline(always)]
fn g(v: &mut [u32; 16], a: usize, b: usize, c: usize, d: usize, mx: u32, my: u32) {
    v[a] = v[a].wrapping_add(v[b]).wrapping_add(mx);
    v[d] = (v[d] ^ v[a]).rotate_right(16);
    v[c] = v[c].wrapping_add(v[d]);
    v[b] = (v[b] ^ v[c]).rotate_right(12);
    v[a] = v[a].wrapping_add(v[b]).wrapping_add(my);
    v[d] = (v[d] ^ v[a]).rotate_right(8);
    v[c] = v[c].wrapping_add(v[d]);
    v[b] = (v[b] ^ v[c]).rotate_right(7);
}

/// One compression of a block of chunk 0 (counter 0): updates `cv` in place
/// to the first half of the output (`v[i] ^ v[i + 8]`).
pub(crate) fn compress(cv: &mut [u32; 8], m: &[u32; 16], block_len: u32, flags: u32) {
    let mut v = [
        cv[0], cv[1], cv[2], cv[3], cv[4], cv[5], cv[6], cv[7], IV[0], IV[1], IV[2], IV[3], 0, 0,
        block_len, flags,
    ];
    for s in &SCHEDULE {
        g(&mut v, 0, 4, 8, 12, m[s[0]], m[s[1]]);
        g(&mut v, 1, 5, 9, 13, m[s[2]], m[s[3]]);
        g(&mut v, 2, 6, 10, 14, m[s[4]], m[s[5]]);
        g(&mut v, 3, 7, 11, 15, m[s[6]], m[s[7]]);
        g(&mut v, 0, 5, 10, 15, m[s[8]], m[s[9]]);
        g(&mut v, 1, 6, 11, 12, m[s[10]], m[s[11]]);
        g(&mut v, 2, 7, 8, 13, m[s[12]], m[s[13]]);
        g(&mut v, 3, 4, 9, 14, m[s[14]], m[s[15]]);
    }
    for i in 0..8 {
        cv[i] = v[i] ^ v[i + 8];
    }
}

/// Serialises a chaining value little-endian: the 32-byte hash.
#[inline]
pub(crate) fn cv_bytes(cv: &[u32; 8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (dst, w) in out.chunks_exact_mut(4).zip(cv) {
        dst.copy_from_slice(&w.to_le_bytes());
    }
    out
}

/// BLAKE3 of a message of at most one chunk (1024 bytes); `None` if longer.
pub(crate) fn hash_chunk(msg: &[u8]) -> Option<[u8; 32]> {
    if msg.len() > CHUNK {
        return None;
    }
    let nblocks = block_count(msg.len());
    let mut cv = IV;
    for b in 0..nblocks {
        let start = b * BLOCK;
        let bytes = &msg[start..msg.len().min(start + BLOCK)];
        let mut block = [0u8; BLOCK];
        block[..bytes.len()].copy_from_slice(bytes);
        let m: [u32; 16] = core::array::from_fn(|k| {
            u32::from_le_bytes([
                block[4 * k],
                block[4 * k + 1],
                block[4 * k + 2],
                block[4 * k + 3],
            ])
        });
        compress(&mut cv, &m, bytes.len() as u32, block_flags(b, nblocks));
    }
    Some(cv_bytes(&cv))
}
