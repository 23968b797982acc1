//! Per-lane block sourcing for the AVX2 kernel (safe code only; the AVX-512
//! kernel reads the messages directly with masked loads).
//!
//! A kernel advances all of its lanes one 64-byte block at a time, so the
//! messages sharing a kernel call must have the same block count (not the
//! same length: 65 and 128 bytes are both two blocks). [`LaneBlocks`] serves,
//! for block index `b`, one `&[u8; 64]` per lane: straight from the message
//! for every block but the last, and for the last block a zero-padded copy in
//! a small per-lane buffer, whose real length (0..=64) is that lane's
//! `block_len`.

use crate::consts::{block_count, BLOCK, MAX_BLOCKS};

/// The blocks of `L` single-chunk messages that all have the same block count.
pub(crate) struct LaneBlocks<'a, const L: usize> {
    /// The `nblocks - 1` full blocks before the last, per lane.
    full: [&'a [[u8; BLOCK]]; L],
    /// The last block of each lane, zero-padded.
    last: [[u8; BLOCK]; L],
    /// Real bytes in each lane's last block (0 only for the empty message).
    last_len: [u32; L],
    /// Blocks per lane (equal for all lanes), 1..=16.
    nblocks: usize,
}

impl<'a, const L: usize> LaneBlocks<'a, L> {
    /// Prepares the block sequence of every lane.
    ///
    /// # Panics
    /// If the messages do not all have the same [`block_count`], or are
    /// longer than one chunk.
    pub(crate) fn new(msgs: [&'a [u8]; L]) -> Self {
        let nblocks = msgs.first().map_or(1, |m| block_count(m.len()));
        assert!(
            nblocks <= MAX_BLOCKS && msgs.iter().all(|m| block_count(m.len()) == nblocks),
            "lanes must be single-chunk messages of equal block counts"
        );
        let split = (nblocks - 1) * BLOCK;
        let mut full: [&'a [[u8; BLOCK]]; L] = [&[]; L];
        let mut last = [[0u8; BLOCK]; L];
        let mut last_len = [0u32; L];
        for (((msg, full), last), last_len) in msgs
            .iter()
            .zip(full.iter_mut())
            .zip(last.iter_mut())
            .zip(last_len.iter_mut())
        {
            let (head, tail) = msg.split_at(split);
            *full = head.as_chunks::<BLOCK>().0;
            copy_short(tail, last);
            *last_len = tail.len() as u32;
        }
        Self {
            full,
            last,
            last_len,
            nblocks,
        }
    }

    /// Blocks per lane.
    #[inline]
    pub(crate) fn nblocks(&self) -> usize {
        self.nblocks
    }

    /// Block `b` (`b < nblocks`) of every lane.
    #[inline]
    pub(crate) fn block(&self, b: usize) -> [&[u8; BLOCK]; L] {
        if b + 1 < self.nblocks {
            core::array::from_fn(|i| &self.full[i][b])
        } else {
            core::array::from_fn(|i| &self.last[i])
        }
    }

    /// The `block_len` of every lane's last block.
    #[inline]
    pub(crate) fn last_len(&self) -> &[u32; L] {
        &self.last_len
    }
}

/// Copies `src` (at most 64 bytes) to the start of `dst` with a few
/// fixed-size, possibly overlapping moves instead of a `memcpy` call: for
/// `n` in `[w, 2w]` the first `w` and the last `w` bytes cover everything.
#[inline(always)]
fn copy_short(src: &[u8], dst: &mut [u8; BLOCK]) {
    let n = src.len();
    debug_assert!(n <= BLOCK);
    if n == BLOCK {
        dst.copy_from_slice(src);
    } else if n >= 32 {
        copy_ends::<32>(src, dst);
    } else if n >= 16 {
        copy_ends::<16>(src, dst);
    } else if n >= 8 {
        copy_ends::<8>(src, dst);
    } else if n >= 4 {
        copy_ends::<4>(src, dst);
    } else if n > 0 {
        // 1..=3 bytes: first, middle and last cover them all.
        dst[0] = src[0];
        dst[n / 2] = src[n / 2];
        dst[n - 1] = src[n - 1];
    }
}

/// `dst[..n] = src` for `W <= n <= 2W`, as two `W`-byte moves.
#[inline(always)]
fn copy_ends<const W: usize>(src: &[u8], dst: &mut [u8; BLOCK]) {
    let n = src.len();
    dst[..W].copy_from_slice(&src[..W]);
    dst[n - W..n].copy_from_slice(&src[n - W..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_short_every_length() {
        let src: Vec<u8> = (1..=64).collect();
        for n in 0..=BLOCK {
            let mut dst = [0u8; BLOCK];
            copy_short(&src[..n], &mut dst);
            assert_eq!(dst[..n], src[..n], "n {n}");
            assert!(
                dst[n..].iter().all(|&b| b == 0),
                "n {n}: bytes past the end"
            );
        }
    }
}
