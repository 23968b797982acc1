//! `BLAKE3_LANES_FORCE` end to end: this test binary re-runs itself with the
//! variable set to each backend name and compares the reports. The variable is
//! read once per process, hence the child processes. The child entry point is
//! `#[ignore]`d (a normal run shows why): the parent runs it with `--ignored`.

use blake3_lanes::{backend, hash_batch, Backend, FORCE_ENV};

#[path = "../../sha512-lanes/tests/support/force.rs"]
mod force;

const TAG: &str = "BLAKE3_LANES_REPORT";

/// The child: prints the backend in use and digests of a batch.
#[test]
#[ignore = "child process of forcing_each_backend_gives_identical_output"]
fn child_report() {
    let blake3 = |m: &[u8]| *blake3::hash(m).as_bytes();
    force::child_report(TAG, backend().name(), 1100, 21, hash_batch, blake3);
}

#[test]
fn forcing_each_backend_gives_identical_output() {
    force::each_backend_gives_identical_output(FORCE_ENV, TAG, |force| {
        Backend::choose(Some(force)).name()
    });
}
