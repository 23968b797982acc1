//! Message padding and per-lane block sourcing (safe code only).
//!
//! A SIMD kernel advances all of its lanes one 128-byte block at a time, so the
//! messages sharing a kernel call must have the same number of *padded* blocks
//! (not necessarily the same length: 120 and 130 bytes both pad to 2 blocks).
//! [`LaneBlocks`] serves, for block index `b`, one `&[u8; 128]` per lane: the
//! message's own bytes while it has full blocks left, then the one or two
//! padded tail blocks (leftover bytes, `0x80`, zeros, 128-bit big-endian bit
//! length) built in a small per-lane buffer.

/// SHA-512 block size in bytes.
pub(crate) const BLOCK: usize = 128;

/// Number of 128-byte blocks SHA-512 compresses for a message of `len` bytes
/// (the message, one `0x80` byte and the 16-byte length, rounded up).
#[inline]
pub(crate) const fn block_count(len: usize) -> usize {
    // `len` is a slice length, so `len <= isize::MAX` and `len + 17` cannot
    // overflow `usize`.
    (len + 1 + 16).div_ceil(BLOCK)
}

/// The padded blocks of `L` messages that all have the same block count.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) struct LaneBlocks<'a, const L: usize> {
    /// Full 128-byte blocks taken straight from each message.
    full: [&'a [[u8; BLOCK]]; L],
    /// The last one or two blocks of each lane, padding included.
    tails: [[[u8; BLOCK]; 2]; L],
    /// Blocks per lane (equal for all lanes).
    nblocks: usize,
}

#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
impl<'a, const L: usize> LaneBlocks<'a, L> {
    /// Prepares the padded block sequence of every lane.
    ///
    /// # Panics
    /// If the messages do not all have the same [`block_count`].
    pub(crate) fn new(msgs: [&'a [u8]; L]) -> Self {
        let mut s = Self {
            full: [&[]; L],
            tails: [[[0u8; BLOCK]; 2]; L],
            nblocks: 1,
        };
        s.load(msgs);
        s
    }

    /// The buffer in `slot` loaded with `msgs`, made on first use: one
    /// buffer serves all the calls of a group.
    pub(crate) fn reuse<'s>(slot: &'s mut Option<Self>, msgs: [&'a [u8]; L]) -> &'s mut Self {
        match slot {
            Some(b) => {
                b.load(msgs);
                b
            }
            None => slot.insert(Self::new(msgs)),
        }
    }

    /// Reuses this value for another `L` messages. Only the bytes the new
    /// tails use are written (leftover bytes, `0x80`, the zeros up to the
    /// length field, the length), so a batch of calls does not clear the
    /// whole 2 KiB of tails each time (for one-block messages that
    /// clearing cost about as much as the padding itself).
    ///
    /// # Panics
    /// If the messages do not all have the same [`block_count`].
    pub(crate) fn load(&mut self, msgs: [&'a [u8]; L]) {
        let nblocks = msgs.first().map_or(1, |m| block_count(m.len()));
        assert!(
            msgs.iter().all(|m| block_count(m.len()) == nblocks),
            "lanes must have equal padded block counts"
        );
        for ((msg, full), tail) in msgs
            .iter()
            .zip(self.full.iter_mut())
            .zip(self.tails.iter_mut())
        {
            let (blocks, rest) = msg.as_chunks::<BLOCK>();
            *full = blocks;
            let tail_blocks = nblocks - blocks.len(); // 1 or 2
            let flat = tail.as_flattened_mut();
            let end = tail_blocks * BLOCK;
            flat[..rest.len()].copy_from_slice(rest);
            flat[rest.len()] = 0x80;
            flat[rest.len() + 1..end - 16].fill(0);
            let bits = (msg.len() as u128) * 8;
            flat[end - 16..end].copy_from_slice(&bits.to_be_bytes());
        }
        self.nblocks = nblocks;
    }

    /// Blocks per lane.
    #[inline]
    pub(crate) fn nblocks(&self) -> usize {
        self.nblocks
    }

    /// Block `b` (`b < nblocks`) of every lane.
    #[inline]
    pub(crate) fn block(&self, b: usize) -> [&[u8; BLOCK]; L] {
        core::array::from_fn(|i| {
            let full = self.full[i];
            match full.get(b) {
                Some(block) => block,
                None => &self.tails[i][b - full.len()],
            }
        })
    }
}

/// Serialises the first `out.len() / 8` words of a SHA-512 state big-endian
/// (64 bytes for SHA-512, 32 for SHA512Half).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[inline]
pub(crate) fn write_digest(state: &[u64; 8], out: &mut [u8]) {
    for (chunk, word) in out.chunks_exact_mut(8).zip(state) {
        chunk.copy_from_slice(&word.to_be_bytes());
    }
}
