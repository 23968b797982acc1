//! `SHA512_LANES_FORCE` end to end: this test binary re-runs itself with the
//! variable set to each backend name and compares the reports. The variable is
//! read once per process, hence the child processes. The child entry point is
//! `#[ignore]`d (a normal run shows why): the parent runs it with `--ignored`.

use sha2::{Digest, Sha512};
use sha512_lanes::{backend, sha512_half_batch, Backend, FORCE_ENV};

#[path = "support/force.rs"]
mod force;

const TAG: &str = "SHA512_LANES_REPORT";

/// The child: prints the backend in use and digests of a batch.
#[test]
#[ignore = "child process of forcing_each_backend_gives_identical_output"]
fn child_report() {
    let sha512_half = |m: &[u8]| -> [u8; 32] { Sha512::digest(m)[..32].try_into().expect("32") };
    force::child_report(
        TAG,
        backend().name(),
        700,
        11,
        sha512_half_batch,
        sha512_half,
    );
}

#[test]
fn forcing_each_backend_gives_identical_output() {
    force::each_backend_gives_identical_output(FORCE_ENV, TAG, |force| {
        Backend::choose(Some(force)).name()
    });
}
