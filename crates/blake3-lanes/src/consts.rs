//! BLAKE3 constants for hashing a single chunk (at most 1024 bytes).
#![cfg_attr(not(any(test, target_arch = "x86_64")), allow(dead_code))]

/// Bytes per block.
pub(crate) const BLOCK: usize = 64;

/// Bytes per chunk; longer messages are not handled by the lane kernels.
pub(crate) const CHUNK: usize = 1024;

/// Blocks per chunk.
pub(crate) const MAX_BLOCKS: usize = CHUNK / BLOCK;

/// Initial chaining value (the SHA-256 IV words).
pub(crate) const IV: [u32; 8] = [
    0x6A09_E667,
    0xBB67_AE85,
    0x3C6E_F372,
    0xA54F_F53A,
    0x510E_527F,
    0x9B05_688C,
    0x1F83_D9AB,
    0x5BE0_CD19,
];

/// Flag of a chunk's first block.
pub(crate) const CHUNK_START: u32 = 1;
/// Flag of a chunk's last block.
pub(crate) const CHUNK_END: u32 = 2;
/// Flag of the block whose output is the hash (here: the chunk's last block,
/// since a one-chunk message's chunk is the root).
pub(crate) const ROOT: u32 = 8;

/// The permutation applied to the sixteen message words between rounds.
const MSG_PERMUTATION: [usize; 16] = [2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8];

/// `SCHEDULE[r][k]`: which original message word is word `k` of round `r`
/// (the permutation applied `r` times), so no round has to move words.
pub(crate) const SCHEDULE: [[usize; 16]; 7] = {
    let mut s = [[0usize; 16]; 7];
    let mut k = 0;
    while k < 16 {
        s[0][k] = k;
        k += 1;
    }
    let mut r = 1;
    while r < 7 {
        let mut k = 0;
        while k < 16 {
            s[r][k] = s[r - 1][MSG_PERMUTATION[k]];
            k += 1;
        }
        r += 1;
    }
    s
};

/// Flags of block `b` of a chunk of `nblocks` blocks.
#[inline]
pub(crate) const fn block_flags(b: usize, nblocks: usize) -> u32 {
    let mut f = 0;
    if b == 0 {
        f |= CHUNK_START;
    }
    if b + 1 == nblocks {
        f |= CHUNK_END | ROOT;
    }
    f
}

/// Blocks compressed for a message of `len` bytes: `ceil(len / 64)`, and 1
/// for the empty message (one block of length 0). Values above
/// [`MAX_BLOCKS`] mean the message has more than one chunk.
#[inline]
pub(crate) const fn block_count(len: usize) -> usize {
    if len == 0 {
        1
    } else {
        len.div_ceil(BLOCK)
    }
}
