//! Multi-lane SHA-512: several independent messages hashed at once, one per
//! 64-bit SIMD lane (4 lanes with AVX2, 8 with AVX-512), with the backend
//! chosen at run time.
//!
//! A single SHA-512 stream is a serial chain of 80 rounds per block, but
//! independent messages have no data dependency between them, so the same
//! round code run on vectors advances 4 or 8 hashes per instruction. The
//! SHAMap engine rehashes many independent 516-byte inner nodes
//! (`"MIN\0"` + 16 × 32-byte child hashes), which is the intended workload.
//!
//! ```
//! let msgs: [&[u8]; 3] = [b"abc", b"", b"MIN\0"];
//! let mut out = [[0u8; 32]; 3];
//! sha512_lanes::sha512_half_batch(&msgs, &mut out);
//! # use sha2::Digest;
//! assert_eq!(out[0][..], sha2::Sha512::digest(b"abc")[..32]);
//! ```
//!
//! Messages that pad to the same number of 128-byte blocks share SIMD
//! batches (equal lengths are the common case); the others, and leftovers too
//! few to fill a batch profitably, go through the `sha2` crate.
//!
//! Backends: [`backend()`] picks the widest one the CPU supports, once per
//! process; the environment variable `SHA512_LANES_FORCE`
//! (`scalar` | `avx2` | `avx512`) overrides it when the named backend is
//! supported. Non-x86_64 targets always use [`Backend::Scalar`].
#![deny(unsafe_code)]

use std::fmt;
use std::sync::OnceLock;

use sha2::{Digest, Sha512};

mod consts;
mod pad;

#[cfg(target_arch = "x86_64")]
#[macro_use]
mod rounds;

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;

use pad::block_count;
#[cfg(target_arch = "x86_64")]
use pad::{write_digest, LaneBlocks};

/// Name of the environment variable that forces a backend
/// (`scalar`, `avx2` or `avx512`; read once, on the first [`backend()`] call).
pub const FORCE_ENV: &str = "SHA512_LANES_FORCE";

/// An implementation of the batch hash functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    /// Eight lanes of AVX-512 (needs AVX-512F and AVX-512BW).
    Avx512x8,
    /// Four lanes of AVX2.
    Avx2x4,
    /// One message at a time through the `sha2` crate.
    Scalar,
}

impl Backend {
    /// All backends, widest first.
    pub const ALL: [Backend; 3] = [Backend::Avx512x8, Backend::Avx2x4, Backend::Scalar];

    /// Messages hashed per kernel call.
    pub const fn lanes(self) -> usize {
        match self {
            Backend::Avx512x8 => 8,
            Backend::Avx2x4 => 4,
            Backend::Scalar => 1,
        }
    }

    /// Short name, as accepted by `SHA512_LANES_FORCE`.
    pub const fn name(self) -> &'static str {
        match self {
            Backend::Avx512x8 => "avx512",
            Backend::Avx2x4 => "avx2",
            Backend::Scalar => "scalar",
        }
    }

    /// Parses a [`Backend::name`] (ASCII case-insensitive, surrounding
    /// whitespace ignored).
    pub fn from_name(name: &str) -> Option<Backend> {
        let name = name.trim();
        Backend::ALL
            .into_iter()
            .find(|b| b.name().eq_ignore_ascii_case(name))
    }

    /// Whether this CPU can run the backend.
    pub fn is_supported(self) -> bool {
        match self {
            Backend::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            Backend::Avx2x4 => avx2::is_supported(),
            #[cfg(target_arch = "x86_64")]
            Backend::Avx512x8 => avx512::is_supported(),
            #[cfg(not(target_arch = "x86_64"))]
            Backend::Avx2x4 | Backend::Avx512x8 => false,
        }
    }

    /// The widest supported backend, ignoring `SHA512_LANES_FORCE`.
    pub fn detect() -> Backend {
        Backend::ALL
            .into_iter()
            .find(|b| b.is_supported())
            .unwrap_or(Backend::Scalar)
    }

    /// The backend to use given the value of `SHA512_LANES_FORCE`: the named
    /// backend if it is known and supported, otherwise [`Backend::detect`].
    pub fn choose(force: Option<&str>) -> Backend {
        match force.and_then(Backend::from_name) {
            Some(b) if b.is_supported() => b,
            _ => Backend::detect(),
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The backend used by the functions without an explicit backend: chosen on
/// the first call from the CPU's features and `SHA512_LANES_FORCE` (see
/// [`Backend::choose`]), then cached for the life of the process.
pub fn backend() -> Backend {
    static CHOICE: OnceLock<Backend> = OnceLock::new();
    *CHOICE.get_or_init(|| {
        let force = std::env::var(FORCE_ENV).ok();
        Backend::choose(force.as_deref())
    })
}

/// SHA-512 of one message (the `sha2` crate; for API symmetry).
pub fn sha512(msg: &[u8]) -> [u8; 64] {
    Sha512::digest(msg).into()
}

/// SHA512Half (the first 32 bytes of SHA-512) of one message.
pub fn sha512_half(msg: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(&Sha512::digest(msg)[..32]);
    out
}

/// SHA-512 of each of `N` messages (any lengths).
pub fn sha512_many<const N: usize>(msgs: &[&[u8]; N]) -> [[u8; 64]; N] {
    let mut out = [[0u8; 64]; N];
    sha512_batch(msgs, &mut out);
    out
}

/// SHA512Half of each of `N` messages (any lengths).
pub fn sha512_half_many<const N: usize>(msgs: &[&[u8]; N]) -> [[u8; 32]; N] {
    let mut out = [[0u8; 32]; N];
    sha512_half_batch(msgs, &mut out);
    out
}

/// `out[i]` = SHA512Half(`msgs[i]`), for any number of messages of any
/// lengths, with the [`backend()`] in use.
///
/// # Panics
/// If `msgs.len() != out.len()`.
pub fn sha512_half_batch(msgs: &[&[u8]], out: &mut [[u8; 32]]) {
    batch(backend(), msgs, out);
}

/// `out[i]` = SHA-512(`msgs[i]`), for any number of messages of any lengths,
/// with the [`backend()`] in use.
///
/// # Panics
/// If `msgs.len() != out.len()`.
pub fn sha512_batch(msgs: &[&[u8]], out: &mut [[u8; 64]]) {
    batch(backend(), msgs, out);
}

/// [`sha512_half_batch`] with an explicit backend; an unsupported backend
/// silently falls back to [`Backend::Scalar`] (check
/// [`Backend::is_supported`] first if that matters).
///
/// # Panics
/// If `msgs.len() != out.len()`.
pub fn sha512_half_batch_with(backend: Backend, msgs: &[&[u8]], out: &mut [[u8; 32]]) {
    batch(backend, msgs, out);
}

/// [`sha512_batch`] with an explicit backend; an unsupported backend silently
/// falls back to [`Backend::Scalar`].
///
/// # Panics
/// If `msgs.len() != out.len()`.
pub fn sha512_batch_with(backend: Backend, msgs: &[&[u8]], out: &mut [[u8; 64]]) {
    batch(backend, msgs, out);
}

/// A leftover group of at least this many messages (of one block count) is
/// still hashed in an 8-lane AVX-512 call, the empty lanes hashing a copy of
/// one of the messages; smaller ones go to the 4-lane kernel or to `sha2`.
/// Tuned with `examples/lanes_speed.rs` (see README).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const MIN_FILL_X8: usize = 2;
/// The same threshold for the 4-lane AVX2 kernel.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const MIN_FILL_X4: usize = 2;

/// Hashes `msgs` into `out` (`D` = 32 or 64 output bytes) with `backend`.
fn batch<const D: usize>(backend: Backend, msgs: &[&[u8]], out: &mut [[u8; D]]) {
    assert_eq!(
        msgs.len(),
        out.len(),
        "sha512-lanes: one output slot per message"
    );
    let backend = if backend.is_supported() {
        backend
    } else {
        Backend::Scalar
    };
    if backend == Backend::Scalar || msgs.len() < 2 {
        for (msg, out) in msgs.iter().zip(out.iter_mut()) {
            scalar_into(msg, out);
        }
        return;
    }
    // Fast path: every message has the same padded block count (e.g. all
    // 516-byte inner nodes): take them in order, no allocation.
    let nb = block_count(msgs[0].len());
    if msgs.iter().all(|m| block_count(m.len()) == nb) {
        group(backend, msgs.len(), |k| k, msgs, out);
        return;
    }
    // General case: sort by length so equal block counts are contiguous.
    let mut order: Vec<usize> = (0..msgs.len()).collect();
    order.sort_unstable_by_key(|&i| msgs[i].len());
    let mut start = 0;
    while start < order.len() {
        let nb = block_count(msgs[order[start]].len());
        let len = order[start..]
            .iter()
            .take_while(|&&i| block_count(msgs[i].len()) == nb)
            .count();
        let run = &order[start..start + len];
        group(backend, len, |k| run[k], msgs, out);
        start += len;
    }
}

/// Hashes the `n` messages `msgs[at(0)], .., msgs[at(n - 1)]`, which all have
/// the same padded block count, into the matching `out` slots.
fn group<const D: usize>(
    backend: Backend,
    n: usize,
    at: impl Fn(usize) -> usize,
    msgs: &[&[u8]],
    out: &mut [[u8; D]],
) {
    #[cfg(target_arch = "x86_64")]
    let k = simd_prefix(backend, n, &at, msgs, out);
    #[cfg(not(target_arch = "x86_64"))]
    let k = {
        let _ = backend;
        0
    };
    for j in k..n {
        let i = at(j);
        scalar_into(msgs[i], &mut out[i]);
    }
}

/// Hashes as many of the `n` messages as the SIMD `backend` should take (full
/// batches, then one partly filled batch if at least the `MIN_FILL_*` count is
/// left); returns how many it hashed, always a prefix `at(0)..at(k)`.
#[cfg(target_arch = "x86_64")]
fn simd_prefix<const D: usize>(
    backend: Backend,
    n: usize,
    at: &impl Fn(usize) -> usize,
    msgs: &[&[u8]],
    out: &mut [[u8; D]],
) -> usize {
    let (lanes, min_fill) = match backend {
        Backend::Avx512x8 => (8, MIN_FILL_X8),
        Backend::Avx2x4 => (4, MIN_FILL_X4),
        Backend::Scalar => return 0,
    };
    let mut k = 0;
    // One padding buffer per group, reloaded for each call.
    let mut x8 = None;
    let mut x4 = None;
    while n - k >= min_fill {
        let take = (n - k).min(lanes);
        let done = match backend {
            Backend::Avx512x8 => lanes_call(avx512::hash, &mut x8, (k, take), at, msgs, out),
            _ => lanes_call(avx2::hash, &mut x4, (k, take), at, msgs, out),
        };
        if !done {
            break;
        }
        k += take;
    }
    k
}

/// Hashes `take` (1..=`L`) messages `at(k)..` in one `L`-lane call of
/// `hash` (the AVX-512 or AVX2 kernel); `false` if the CPU cannot (nothing
/// written).
#[cfg(target_arch = "x86_64")]
#[inline]
fn lanes_call<'a, const L: usize, const D: usize>(
    hash: impl Fn(&LaneBlocks<'a, L>) -> Option<[[u64; 8]; L]>,
    buf: &mut Option<LaneBlocks<'a, L>>,
    (k, take): (usize, usize),
    at: &impl Fn(usize) -> usize,
    msgs: &[&'a [u8]],
    out: &mut [[u8; D]],
) -> bool {
    let first = msgs[at(k)];
    let lanes: [&[u8]; L] =
        core::array::from_fn(|j| if j < take { msgs[at(k + j)] } else { first });
    let src = LaneBlocks::reuse(buf, lanes);
    let Some(states) = hash(src) else {
        return false;
    };
    for (j, state) in states.iter().enumerate().take(take) {
        write_digest(state, &mut out[at(k + j)]);
    }
    true
}

/// One message through `sha2`, truncated to `D` bytes.
fn scalar_into<const D: usize>(msg: &[u8], out: &mut [u8; D]) {
    out.copy_from_slice(&Sha512::digest(msg)[..D]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_arch = "x86_64")]
    fn reference(msg: &[u8]) -> [u64; 8] {
        let d = Sha512::digest(msg);
        core::array::from_fn(|j| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&d[8 * j..8 * j + 8]);
            u64::from_be_bytes(w)
        })
    }

    #[test]
    fn block_counts() {
        for (len, nb) in [
            (0, 1),
            (111, 1),
            (112, 2),
            (127, 2),
            (128, 2),
            (239, 2),
            (240, 3),
            (516, 5),
        ] {
            assert_eq!(block_count(len), nb, "len {len}");
        }
    }

    /// Calls the kernels directly, so a kernel that silently declined (and let
    /// the scalar fallback answer) would fail here.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn kernels_directly() {
        let data: Vec<u8> = (0..4200u32).map(|i| (i * 31 + i / 7) as u8).collect();
        for len in [0, 1, 111, 112, 127, 128, 129, 239, 240, 516, 1000] {
            let lanes8: [&[u8]; 8] = core::array::from_fn(|i| &data[i * 3..i * 3 + len]);
            if avx512::is_supported() {
                let got = avx512::hash(&LaneBlocks::new(lanes8)).expect("avx512 kernel ran");
                for (g, m) in got.iter().zip(lanes8) {
                    assert_eq!(*g, reference(m), "avx512 len {len}");
                }
            }
            let lanes4: [&[u8]; 4] = core::array::from_fn(|i| lanes8[i]);
            if avx2::is_supported() {
                let got = avx2::hash(&LaneBlocks::new(lanes4)).expect("avx2 kernel ran");
                for (g, m) in got.iter().zip(lanes4) {
                    assert_eq!(*g, reference(m), "avx2 len {len}");
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "equal padded block counts")]
    fn lane_blocks_reject_mixed_block_counts() {
        let _ = pad::LaneBlocks::new([&[0u8; 111][..], &[0u8; 112][..]]);
    }
}
