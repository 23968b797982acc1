//! What the equivalence tests of sha512-lanes and blake3-lanes (which
//! includes this file by path) check alike of a lanes crate: its backend
//! selection, and that every backend gives the same digests.

use std::fmt::{Debug, Display};

/// A lanes crate's `Backend`, for the checks here (implemented by
/// [`lane_backend!`]).
pub trait LaneBackend: Copy + PartialEq + Debug + Display {
    /// `Backend::ALL`: widest first, `Scalar` last.
    const ALL: [Self; 3];
    fn name(self) -> &'static str;
    fn from_name(name: &str) -> Option<Self>;
    fn is_supported(self) -> bool;
    fn detect() -> Self;
    fn choose(force: Option<&str>) -> Self;
}

/// Implements [`LaneBackend`] for a crate's `Backend` by its own methods.
macro_rules! lane_backend {
    ($backend:ty) => {
        impl $crate::lanes::LaneBackend for $backend {
            const ALL: [Self; 3] = <$backend>::ALL;
            fn name(self) -> &'static str {
                <$backend>::name(self)
            }
            fn from_name(name: &str) -> Option<Self> {
                <$backend>::from_name(name)
            }
            fn is_supported(self) -> bool {
                <$backend>::is_supported(self)
            }
            fn detect() -> Self {
                <$backend>::detect()
            }
            fn choose(force: Option<&str>) -> Self {
                <$backend>::choose(force)
            }
        }
    };
}
pub(crate) use lane_backend;

/// A batch hash with an explicit backend: `(backend, messages, digests)`.
pub type BatchWith<B> = fn(B, &[&[u8]], &mut [[u8; 32]]);

/// `batch` of two messages into one digest slot: it must panic with "one
/// output slot per message" (the caller's `#[should_panic]`).
pub fn length_mismatch(batch: fn(&[&[u8]], &mut [[u8; 32]])) {
    let msgs: [&[u8]; 2] = [b"a", b"b"];
    let mut out = [[0u8; 32]; 1];
    batch(&msgs, &mut out);
}

/// The backends this CPU supports (printed).
pub fn supported<B: LaneBackend>() -> Vec<B> {
    let b: Vec<B> = B::ALL.into_iter().filter(|b| b.is_supported()).collect();
    eprintln!("backends under test: {b:?}");
    b
}

/// Every supported backend gives the same digests of `msgs`, and so does
/// `batch` (the default, detected or forced, backend). `what` names the
/// inputs in a failure.
pub fn backends_agree<B: LaneBackend>(
    msgs: &[&[u8]],
    batch_with: BatchWith<B>,
    batch: fn(&[&[u8]], &mut [[u8; 32]]),
    what: &str,
) {
    let outputs: Vec<Vec<[u8; 32]>> = supported::<B>()
        .into_iter()
        .map(|b| {
            let mut out = vec![[0u8; 32]; msgs.len()];
            batch_with(b, msgs, &mut out);
            out
        })
        .collect();
    for o in &outputs[1..] {
        assert_eq!(o, &outputs[0], "{what}");
    }
    let mut out = vec![[0u8; 32]; msgs.len()];
    batch(msgs, &mut out);
    assert_eq!(out, outputs[0], "{what}");
}

/// `Backend::ALL` is `[avx512, avx2, scalar]`; `Backend::from_name`,
/// `choose` and `detect`: names in any case and with surrounding space,
/// unknown and unsupported names falling back to the detected backend,
/// which is supported (and scalar off x86_64).
pub fn backend_selection<B: LaneBackend>([avx512, avx2, scalar]: [B; 3]) {
    assert_eq!(B::ALL, [avx512, avx2, scalar]);
    assert_eq!(B::from_name("AVX512"), Some(avx512));
    assert_eq!(B::from_name(" avx2 "), Some(avx2));
    assert_eq!(B::from_name("scalar"), Some(scalar));
    assert_eq!(B::from_name("sse"), None);
    assert_eq!(avx512.to_string(), "avx512");
    assert!(scalar.is_supported());
    assert_eq!(B::choose(None), B::detect());
    assert_eq!(B::choose(Some("bogus")), B::detect());
    assert_eq!(B::choose(Some("scalar")), scalar);
    for b in B::ALL {
        let want = if b.is_supported() { b } else { B::detect() };
        assert_eq!(B::choose(Some(b.name())), want);
    }
    assert!(B::detect().is_supported());
    #[cfg(not(target_arch = "x86_64"))]
    assert_eq!(B::detect(), scalar);
}
