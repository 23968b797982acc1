//! The lanes crates' `*_LANES_FORCE` end to end, shared by the `force_env`
//! tests of sha512-lanes and blake3-lanes (which includes this file by
//! path): the test binary re-runs its own `child_report` test with the
//! variable set to each backend name and compares the reports. The variable
//! is read once per process, hence the child processes.

use std::process::Command;

/// The child: hashes a batch of 29 messages of varied lengths below
/// `max_len` and `nodes` 516-byte nodes with `batch`, checks every digest
/// against `reference`, and prints `tag`, the `backend` in use and the
/// digests.
pub fn child_report(
    tag: &str,
    backend: &str,
    max_len: u32,
    nodes: usize,
    batch: impl Fn(&[&[u8]], &mut [[u8; 32]]),
    reference: impl Fn(&[u8]) -> [u8; 32],
) {
    let owned: Vec<Vec<u8>> = (0..29u32)
        .map(|i| (0..(i * 41 % max_len)).map(|j| (j * 7 + i) as u8).collect())
        .collect();
    let mut msgs: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
    let node = [0x5au8; 516];
    msgs.extend(std::iter::repeat_n(&node[..], nodes));
    let mut out = vec![[0u8; 32]; msgs.len()];
    batch(&msgs, &mut out);
    for (m, o) in msgs.iter().zip(&out) {
        assert_eq!(*o, reference(m), "len {}", m.len());
    }
    let hex: String = out.concat().iter().map(|b| format!("{b:02x}")).collect();
    println!("{tag} {backend} {hex}");
}

/// The parent: runs `child_report` with `force_env` set to each backend
/// name, a bad name and an empty one; each child must use the backend
/// `expected` names for that value, and all must print the same digests.
pub fn each_backend_gives_identical_output(
    force_env: &str,
    tag: &str,
    expected: impl Fn(&str) -> &'static str,
) {
    let exe = std::env::current_exe().expect("test binary path");
    let mut reports = Vec::new();
    for force in ["scalar", "avx2", "avx512", "nonsense", ""] {
        let output = Command::new(&exe)
            .args([
                "child_report",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(force_env, force)
            .output()
            .expect("spawn test binary");
        assert!(
            output.status.success(),
            "child failed for {force:?}: {output:?}"
        );
        let stdout = String::from_utf8_lossy(&output.stdout);
        let line = stdout
            .lines()
            .find_map(|l| l.split_once(tag).map(|(_, rest)| rest))
            .unwrap_or_else(|| panic!("no report for {force:?}: {stdout}"));
        let mut parts = line.split_whitespace();
        let (used, digests) = (parts.next().expect("name"), parts.next().expect("hex"));
        assert_eq!(used, expected(force), "{force_env}={force:?}");
        eprintln!("{force_env}={force:?} -> {used}");
        reports.push(digests.to_string());
    }
    assert!(reports.iter().all(|r| r == &reports[0]));
}
