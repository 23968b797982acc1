//! `BLAKE3_LANES_FORCE` end to end: this test binary re-runs itself with the
//! variable set to each backend name and compares the reports. The variable is
//! read once per process, hence the child processes. The child entry point is
//! `#[ignore]`d (a normal run shows why): the parent runs it with `--ignored`.

use std::process::Command;

use blake3_lanes::{backend, hash_batch, Backend, FORCE_ENV};

const TAG: &str = "BLAKE3_LANES_REPORT";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The child: prints the backend in use and digests of a batch.
#[test]
#[ignore = "child process of forcing_each_backend_gives_identical_output"]
fn child_report() {
    let owned: Vec<Vec<u8>> = (0..29u32)
        .map(|i| (0..(i * 41 % 1100)).map(|j| (j * 7 + i) as u8).collect())
        .collect();
    let mut msgs: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
    let node = [0x5au8; 516];
    msgs.extend([&node[..]; 21]);
    let mut out = vec![[0u8; 32]; msgs.len()];
    hash_batch(&msgs, &mut out);
    for (m, o) in msgs.iter().zip(&out) {
        assert_eq!(o, blake3::hash(m).as_bytes(), "len {}", m.len());
    }
    let all: Vec<u8> = out.concat();
    println!("{TAG} {} {}", backend().name(), hex(&all));
}

#[test]
fn forcing_each_backend_gives_identical_output() {
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
            .env(FORCE_ENV, force)
            .output()
            .expect("spawn test binary");
        assert!(
            output.status.success(),
            "child failed for {force:?}: {output:?}"
        );
        let stdout = String::from_utf8_lossy(&output.stdout);
        let line = stdout
            .lines()
            .find_map(|l| l.split_once(TAG).map(|(_, rest)| rest))
            .unwrap_or_else(|| panic!("no report for {force:?}: {stdout}"));
        let mut parts = line.split_whitespace();
        let (used, digests) = (parts.next().expect("name"), parts.next().expect("hex"));
        let expected = Backend::choose(Some(force));
        assert_eq!(used, expected.name(), "{FORCE_ENV}={force:?}");
        eprintln!("{FORCE_ENV}={force:?} -> {used}");
        reports.push(digests.to_string());
    }
    assert!(reports.iter().all(|r| r == &reports[0]));
}
