//! Multi-lane BLAKE3: many independent short messages hashed at once, one
//! message per 32-bit SIMD lane (16 lanes with AVX-512F/BW, 8 with AVX2), with
//! the backend chosen at run time. Output is bit-exact with
//! [`blake3::hash`] (the 32-byte default output).
//!
//! A message of at most 1024 bytes is a single BLAKE3 chunk, compressed one
//! 64-byte block after another — a serial chain that one message cannot
//! spread over wide vectors (the `blake3` crate's SIMD only helps for many
//! chunks). Independent messages have no data dependency between them, so the
//! same compression code run on vectors advances 8 or 16 hashes per
//! instruction. The SHAMap engine rehashes many independent 516-byte inner
//! nodes (`"MIN\0"` + 16 × 32-byte child hashes) and ~100–250-byte leaves,
//! which is the intended workload.
//!
//! ```
//! let msgs: [&[u8]; 3] = [b"abc", b"", &[7u8; 516]];
//! let mut out = [[0u8; 32]; 3];
//! blake3_lanes::hash_batch(&msgs, &mut out);
//! for (m, o) in msgs.iter().zip(&out) {
//!     assert_eq!(o, blake3::hash(m).as_bytes());
//! }
//! ```
//!
//! How a batch is split:
//!
//! * Messages of at most 1024 bytes are grouped by block count
//!   (`ceil(len / 64)`, the empty message counting as one block): messages
//!   with equal block counts (not necessarily equal lengths) share SIMD
//!   calls. Each group is hashed in full batches of the backend's lane count;
//!   a leftover of at least 4 messages still takes one SIMD call (the empty
//!   lanes hash a copy of a message; with AVX-512, a leftover of at most 8
//!   takes the cheaper 8-lane AVX2 call), a smaller one goes to
//!   [`blake3::hash`].
//! * Messages longer than 1024 bytes (more than one chunk) go to
//!   [`blake3::hash`] one at a time; the `blake3` crate's own SIMD handles
//!   their chunks well.
//!
//! Backends: [`backend()`] picks the widest one the CPU supports, once per
//! process; the environment variable `BLAKE3_LANES_FORCE`
//! (`scalar` | `avx2` | `avx512`) overrides it when the named backend is
//! supported. Non-x86_64 targets always use [`Backend::Scalar`].
#![deny(unsafe_code)]

use std::fmt;
use std::sync::OnceLock;

mod consts;
#[cfg(test)]
mod portable;

#[cfg(target_arch = "x86_64")]
mod lanes;

#[cfg(target_arch = "x86_64")]
#[macro_use]
mod rounds;

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;

use consts::{block_count, MAX_BLOCKS};

/// Name of the environment variable that forces a backend
/// (`scalar`, `avx2` or `avx512`; read once, on the first [`backend()`] call).
pub const FORCE_ENV: &str = "BLAKE3_LANES_FORCE";

/// An implementation of the batch hash functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    /// Sixteen lanes of AVX-512 (needs AVX-512F and AVX-512BW).
    Avx512x16,
    /// Eight lanes of AVX2.
    Avx2x8,
    /// One message at a time through the `blake3` crate.
    Scalar,
}

impl Backend {
    /// All backends, widest first.
    pub const ALL: [Backend; 3] = [Backend::Avx512x16, Backend::Avx2x8, Backend::Scalar];

    /// Messages hashed per kernel call.
    pub const fn lanes(self) -> usize {
        match self {
            Backend::Avx512x16 => 16,
            Backend::Avx2x8 => 8,
            Backend::Scalar => 1,
        }
    }

    /// Short name, as accepted by `BLAKE3_LANES_FORCE`.
    pub const fn name(self) -> &'static str {
        match self {
            Backend::Avx512x16 => "avx512",
            Backend::Avx2x8 => "avx2",
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
            Backend::Avx2x8 => avx2::is_supported(),
            #[cfg(target_arch = "x86_64")]
            Backend::Avx512x16 => avx512::is_supported(),
            #[cfg(not(target_arch = "x86_64"))]
            Backend::Avx2x8 | Backend::Avx512x16 => false,
        }
    }

    /// The widest supported backend, ignoring `BLAKE3_LANES_FORCE`.
    pub fn detect() -> Backend {
        Backend::ALL
            .into_iter()
            .find(|b| b.is_supported())
            .unwrap_or(Backend::Scalar)
    }

    /// The backend to use given the value of `BLAKE3_LANES_FORCE`: the named
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

/// The backend used by [`hash_batch`]: chosen on the first call from the
/// CPU's features and `BLAKE3_LANES_FORCE` (see [`Backend::choose`]), then
/// cached for the life of the process.
pub fn backend() -> Backend {
    static CHOICE: OnceLock<Backend> = OnceLock::new();
    *CHOICE.get_or_init(|| {
        let force = std::env::var(FORCE_ENV).ok();
        Backend::choose(force.as_deref())
    })
}

/// `out[i]` = BLAKE3(`msgs[i]`) (32-byte output, as [`blake3::hash`]), for
/// any number of messages of any lengths, with the [`backend()`] in use.
///
/// Messages longer than 1024 bytes are hashed one at a time by
/// [`blake3::hash`].
///
/// # Panics
/// If `msgs.len() != out.len()`.
pub fn hash_batch(msgs: &[&[u8]], out: &mut [[u8; 32]]) {
    hash_batch_with(backend(), msgs, out);
}

/// [`hash_batch`] with an explicit backend; an unsupported backend silently
/// falls back to [`Backend::Scalar`] (check [`Backend::is_supported`] first if
/// that matters).
///
/// # Panics
/// If `msgs.len() != out.len()`.
pub fn hash_batch_with(backend: Backend, msgs: &[&[u8]], out: &mut [[u8; 32]]) {
    assert_eq!(
        msgs.len(),
        out.len(),
        "blake3-lanes: one output slot per message (msgs.len() != out.len())"
    );
    let backend = if backend.is_supported() {
        backend
    } else {
        Backend::Scalar
    };
    if backend == Backend::Scalar || msgs.len() < 2 {
        for (msg, out) in msgs.iter().zip(out.iter_mut()) {
            *out = scalar(msg);
        }
        return;
    }
    // Fast path: every message has the same block count (e.g. all 516-byte
    // inner nodes): take them in order, no allocation.
    let nb = block_count(msgs[0].len());
    if msgs.iter().all(|m| block_count(m.len()) == nb) {
        group(backend, nb, msgs.len(), |k| k, msgs, out);
        return;
    }
    // General case: a counting sort by block count (bucket MAX_BLOCKS + 1 =
    // longer than a chunk), so equal block counts are contiguous.
    const BUCKETS: usize = MAX_BLOCKS + 2;
    let bucket = |m: &[u8]| block_count(m.len()).min(MAX_BLOCKS + 1);
    let mut starts = [0usize; BUCKETS + 1];
    for m in msgs {
        starts[bucket(m) + 1] += 1;
    }
    for b in 1..=BUCKETS {
        starts[b] += starts[b - 1];
    }
    let bounds = starts;
    let mut order = vec![0usize; msgs.len()];
    for (i, m) in msgs.iter().enumerate() {
        let b = bucket(m);
        order[starts[b]] = i;
        starts[b] += 1;
    }
    for nb in 1..BUCKETS {
        let run = &order[bounds[nb]..bounds[nb + 1]];
        if !run.is_empty() {
            group(backend, nb, run.len(), |k| run[k], msgs, out);
        }
    }
}

/// One message with the `blake3` crate.
#[inline]
fn scalar(msg: &[u8]) -> [u8; 32] {
    *blake3::hash(msg).as_bytes()
}

/// Hashes the `n` messages `msgs[at(0)], .., msgs[at(n - 1)]`, which all have
/// block count `nb`, into the matching `out` slots.
fn group(
    backend: Backend,
    nb: usize,
    n: usize,
    at: impl Fn(usize) -> usize,
    msgs: &[&[u8]],
    out: &mut [[u8; 32]],
) {
    #[cfg(target_arch = "x86_64")]
    let k = if nb <= MAX_BLOCKS {
        simd_prefix(backend, n, &at, msgs, out)
    } else {
        0
    };
    #[cfg(not(target_arch = "x86_64"))]
    let k = {
        let _ = (backend, nb);
        0
    };
    for j in k..n {
        let i = at(j);
        out[i] = scalar(msgs[i]);
    }
}

/// A leftover group of at least this many messages (of one block count) is
/// still hashed in one partly filled SIMD call, the empty lanes hashing a
/// copy of one of the messages; a smaller one goes to `blake3::hash`. One
/// 8-lane AVX2 or 16-lane AVX-512 call costs about as much as 4 single
/// `blake3::hash` calls at 100 and at 516 bytes. Tuned with
/// `examples/blake3_lanes_speed.rs` (see README).
#[cfg(target_arch = "x86_64")]
const MIN_FILL: usize = 4;

/// Hashes as many of the `n` messages as the SIMD `backend` should take (full
/// batches, then one partly filled batch if at least [`MIN_FILL`] are left);
/// returns how many it hashed, always a prefix `at(0)..at(k)`.
///
/// With AVX-512, a leftover of at most 8 messages goes to the 8-lane AVX2
/// kernel, whose call is cheaper than a 16-lane one (see README).
#[cfg(target_arch = "x86_64")]
fn simd_prefix(
    backend: Backend,
    n: usize,
    at: &impl Fn(usize) -> usize,
    msgs: &[&[u8]],
    out: &mut [[u8; 32]],
) -> usize {
    let mut k = 0;
    while n - k >= MIN_FILL {
        let left = n - k;
        let (take, done) = match backend {
            Backend::Avx512x16 => {
                if left <= avx2::LANES && run_kernel(avx2::hash, k, left, at, msgs, out) {
                    (left, true)
                } else {
                    let take = left.min(avx512::LANES);
                    (take, run_kernel(avx512::hash, k, take, at, msgs, out))
                }
            }
            Backend::Avx2x8 => {
                let take = left.min(avx2::LANES);
                (take, run_kernel(avx2::hash, k, take, at, msgs, out))
            }
            Backend::Scalar => (0, false),
        };
        if !done {
            break;
        }
        k += take;
    }
    k
}

/// An `L`-lane kernel: the hashes of `L` single-chunk messages of equal block
/// count, or `None` if the CPU lacks the needed features.
#[cfg(target_arch = "x86_64")]
type Kernel<const L: usize> = fn(&[&[u8]; L]) -> Option<[[u8; 32]; L]>;

/// Hashes `take` (1..=`L`) messages `at(k)..` in one `L`-lane `kernel` call
/// (spare lanes repeat the first message); `false` if the CPU cannot
/// (nothing written).
#[cfg(target_arch = "x86_64")]
#[inline]
fn run_kernel<const L: usize>(
    kernel: Kernel<L>,
    k: usize,
    take: usize,
    at: &impl Fn(usize) -> usize,
    msgs: &[&[u8]],
    out: &mut [[u8; 32]],
) -> bool {
    let first = msgs[at(k)];
    let lanes: [&[u8]; L] =
        core::array::from_fn(|j| if j < take { msgs[at(k + j)] } else { first });
    let Some(hashes) = kernel(&lanes) else {
        return false;
    };
    for (lane, hash) in hashes.iter().enumerate().take(take) {
        out[at(k + lane)] = *hash;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(len: usize) -> Vec<u8> {
        (0..len as u32).map(|i| (i * 31 + i / 7) as u8).collect()
    }

    #[test]
    fn schedule_matches_repeated_permutation() {
        let perm = [2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8];
        let mut m: [usize; 16] = core::array::from_fn(|k| k);
        for r in 0..7 {
            assert_eq!(consts::SCHEDULE[r], m, "round {r}");
            m = core::array::from_fn(|k| m[perm[k]]);
        }
    }

    #[test]
    fn block_counts() {
        for (len, nb) in [(0, 1), (1, 1), (64, 1), (65, 2), (128, 2), (516, 9)] {
            assert_eq!(block_count(len), nb, "len {len}");
        }
        assert_eq!(block_count(1024), MAX_BLOCKS);
        assert_eq!(block_count(1025), MAX_BLOCKS + 1);
    }

    #[test]
    fn portable_matches_blake3() {
        let d = data(1400);
        for len in 0..=1024 {
            let got = portable::hash_chunk(&d[len / 3..len / 3 + len]);
            assert_eq!(
                got.as_ref(),
                Some(blake3::hash(&d[len / 3..len / 3 + len]).as_bytes()),
                "len {len}"
            );
        }
        assert_eq!(portable::hash_chunk(&d[..1025]), None);
    }

    /// Calls the kernels directly, so a kernel that silently declined (and let
    /// the scalar fallback answer) would fail here.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn kernels_directly() {
        let d = data(1024 + 16 * 5);
        for len in [
            0, 1, 3, 4, 63, 64, 65, 100, 127, 128, 129, 516, 960, 1000, 1024,
        ] {
            let lanes16: [&[u8]; 16] = core::array::from_fn(|i| &d[i * 5..i * 5 + len]);
            let want: Vec<[u8; 32]> = lanes16.iter().map(|m| scalar(m)).collect();
            let check = |got: &[[u8; 32]], what: &str| {
                for (lane, g) in got.iter().enumerate() {
                    assert_eq!(*g, want[lane], "{what} len {len} lane {lane}");
                }
            };
            if avx512::is_supported() {
                let got = avx512::hash(&lanes16).expect("avx512 kernel ran");
                check(&got, "avx512");
            }
            if avx2::is_supported() {
                let lanes8: [&[u8]; 8] = core::array::from_fn(|i| lanes16[i]);
                let got = avx2::hash(&lanes8).expect("avx2 kernel ran");
                check(&got, "avx2");
            }
        }
    }

    #[test]
    #[should_panic(expected = "equal block counts")]
    fn lane_blocks_reject_mixed_block_counts() {
        let _ = lanes::LaneBlocks::new([&[0u8; 64][..], &[0u8; 65][..]]);
    }
}
