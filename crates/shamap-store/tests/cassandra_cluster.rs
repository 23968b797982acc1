//! The Cassandra cluster of the tests that need one. Shared by the store's,
//! the Clio crate's and the CLI's tests (the others include this file by
//! path).

/// The cluster's `HOST:PORT`, or `None` (with a line saying the calling test
/// skips) when `SHAMAP_CASSANDRA` is not set. The test is named by its
/// thread, which the test harness names after it.
pub fn cluster() -> Option<String> {
    match std::env::var("SHAMAP_CASSANDRA") {
        Ok(v) if !v.trim().is_empty() => Some(v.trim().to_owned()),
        _ => {
            let thread = std::thread::current();
            let test = thread
                .name()
                .and_then(|n| n.rsplit("::").next())
                .unwrap_or("this test");
            eprintln!(
                "SKIPPED {test}: SHAMAP_CASSANDRA is not set (start a node with \
                 `scripts/cassandra.sh start` and set SHAMAP_CASSANDRA=127.0.0.1:9042)"
            );
            None
        }
    }
}

/// The cluster's `HOST:PORT` ([`cluster`]); without one, returns from the
/// calling test, which so skips.
macro_rules! cluster_or_skip {
    () => {
        match $crate::cassandra_cluster::cluster() {
            Some(host) => host,
            None => return,
        }
    };
}
pub(crate) use cluster_or_skip;

/// `scripts/cassandra.sh` with `args` (the cluster's state directory comes
/// from the environment, as the fault run sets it).
// Used by the store's and the Clio crate's tests, not the CLI's.
#[allow(dead_code)]
pub fn cluster_script(args: &[&str]) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/cassandra.sh");
    let status = std::process::Command::new(script)
        .args(args)
        .status()
        .expect("scripts/cassandra.sh runs");
    assert!(status.success(), "scripts/cassandra.sh {args:?}: {status}");
}
