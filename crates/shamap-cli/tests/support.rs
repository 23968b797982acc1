//! Running the binary and reading the shipped ledger data.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Ledger 38129's hash, and its state and transaction roots (the file's, as
/// rippled computed them).
pub const LEDGER_38129: &str = "E6DB7365949BF9814D76BCC730B01818EB9136A89DB224F3F9F5AAE4569D758E";
pub const ACCOUNT_38129: &str = "2C23D15B6B549123FB351E4B5CDE81C564318EB845449CD43C3EA7953C4DB452";
pub const TX_38129: &str = "DB83BF807416C5B3499A73130F843CF615AB8E797D79FE7D330ADF1BFA93951A";
/// A state key of ledger 38129.
pub const KEY_38129: &str = "093DB18D8C4149E47B18BB66FF32707D1DE48558D130A7C3CA6726D20C89BA69";
/// Testnet ledger 42089779's hash and transaction root.
pub const LEDGER_TESTNET: &str = "B5DAF827112ABCA37CE03C01353F62B5F12514EC04A16FCA11A229C450DA9264";
pub const TX_TESTNET: &str = "A9BB9AA12E16175C714677CB8A9557D29F3E506C7A1A92997CA57A0DCB3EBEE1";

/// Writes `ls` as a NuDB store at `db`, and their headers as rippled's
/// `ledger.db` at `ledger_db`.
pub fn nudb_with_ledger_db(db: &Path, ledger_db: &Path, ls: &[shamap_nudb_writer::Ledger]) {
    shamap_nudb_writer::write_ledgers(db, shamap_nudb_writer::NudbOptions::default(), ls)
        .expect("write");
    let headers: Vec<_> = ls.iter().map(|l| l.header).collect();
    shamap_nudb_writer::write_ledger_db(ledger_db, &headers).expect("ledger.db");
}

/// Ledger 38129 and what follows it: [`shamap_nudb_writer::history`] of
/// `count` ledgers from `seed`.
pub fn history_38129(count: usize, seed: u64) -> Vec<shamap_nudb_writer::Ledger> {
    shamap_nudb_writer::history(
        shamap_nudb_writer::Ledger::from_dump(&ledger_38129()).expect("ledger"),
        count,
        seed,
    )
}

/// `ls` written as a NuDB store at `dir/nudb`: its path.
pub fn nudb_in(dir: &Path, ls: &[shamap_nudb_writer::Ledger]) -> PathBuf {
    let db = dir.join("nudb");
    shamap_nudb_writer::write_ledgers(&db, shamap_nudb_writer::NudbOptions::default(), ls)
        .expect("write");
    db
}

/// The files directly in `dir` (not below it), by path, with their bytes.
pub fn files_in(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_file())
        .map(|p| (p.clone(), std::fs::read(&p).expect("read")))
        .collect()
}

/// Path of a file in the project's `data/` directory.
pub fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data")
        .join(name)
}

/// `shamap ARGS… <ledger 38129> <testnet ledger 42089779>`: a command on
/// both shipped ledgers at once.
pub fn on_both_ledgers(args: &[&str]) -> Run {
    let mut all: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
    all.extend([ledger_38129(), testnet_42089779()].map(PathBuf::into_os_string));
    shamap(all, None)
}

/// Mainnet ledger 38129: 261 state entries, one transaction, full header.
pub fn ledger_38129() -> PathBuf {
    data("ledger-38129.json")
}

/// Testnet ledger 42089779: header and ten transactions.
pub fn testnet_42089779() -> PathBuf {
    data("ledger-testnet-42089779.json")
}

/// What a run of the binary produced.
pub struct Run {
    /// Exit status code (`None` if killed by a signal).
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(o: Output) -> Run {
        Run {
            code: o.status.code(),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

/// Runs `shamap` with `args`, feeding `stdin` (empty when `None`); fails
/// the test if the run takes more than five minutes (no test may hang CI).
pub fn shamap<I, S>(args: I, stdin: Option<&[u8]>) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    shamap_within(args, stdin, Duration::from_secs(300))
}

/// [`shamap`], failing the test (after killing the process) if it has not
/// ended within `limit`: for the cases that must end in bounded time.
pub fn shamap_within<I, S>(args: I, stdin: Option<&[u8]>, limit: Duration) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let args: Vec<std::ffi::OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
    let mut child = Command::new(env!("CARGO_BIN_EXE_shamap"))
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let pid = child.id();
    let mut pipe = child.stdin.take().expect("stdin is piped");
    let input = stdin.unwrap_or_default().to_vec();
    let writer = std::thread::spawn(move || {
        // The binary may exit without reading; a broken pipe is fine then.
        let _ = pipe.write_all(&input);
    });
    // Output is drained by `wait_with_output` on its own thread, so a
    // child that writes much never blocks on a full pipe while we wait.
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(limit) {
        Ok(out) => out.expect("the binary runs to the end"),
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            panic!("`shamap {args:?}` still running after {limit:?}");
        }
    };
    writer.join().expect("stdin writer finishes");
    out.into()
}

/// Runs `shamap` with `args` (no input) under an address-space limit of
/// `kib` KiB (`ulimit -v`), so that a run that grows without bound dies at
/// the limit instead of taking the machine's memory.
pub fn shamap_limited(args: &[&str], kib: u64) -> Run {
    Command::new("sh")
        .arg("-c")
        .arg(r#"ulimit -v "$1" && shift && exec "$@""#)
        .arg("sh")
        .arg(kib.to_string())
        .arg(env!("CARGO_BIN_EXE_shamap"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("sh runs the binary")
        .into()
}

/// Asserts a clean failure with status 2: nothing on stdout, exactly one
/// `error: <file>: …` line on stderr, and no panic. Returns that line.
pub fn assert_input_error(run: &Run, file: &str) -> String {
    assert_eq!(run.code, Some(2), "stderr: {}", run.stderr);
    assert!(run.stdout.is_empty(), "stdout: {}", run.stdout);
    assert!(!run.stderr.contains("panicked"), "stderr: {}", run.stderr);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "stderr: {}", run.stderr);
    let prefix = format!("error: {file}: ");
    assert!(
        lines[0].starts_with(&prefix),
        "expected {prefix:?}, got {:?}",
        lines[0]
    );
    lines[0].to_owned()
}

/// Writes `bytes` to a new temporary file named `name`.
pub fn temp_file(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).expect("temp file is writable");
    path
}

/// `v` written to a file `name` in `dir`.
pub fn temp_json(dir: &tempfile::TempDir, name: &str, v: &serde_json::Value) -> PathBuf {
    temp_file(dir, name, v.to_string().as_bytes())
}

/// `shamap verify FILE`.
pub fn verify_file(path: &Path) -> Run {
    shamap([std::ffi::OsStr::new("verify"), path.as_os_str()], None)
}

/// `verify` of the file at `path` refused as unusable input naming it
/// ([`assert_input_error`]): the error line.
pub fn verify_input_error(path: &Path) -> String {
    assert_input_error(&verify_file(path), &path.display().to_string())
}

/// `v` written to a file `name` in `dir` and verified: refused as
/// unusable input naming the file ([`verify_input_error`]); what the
/// error line says after `error: FILE: `.
pub fn json_input_error(dir: &tempfile::TempDir, name: &str, v: &serde_json::Value) -> String {
    let path = temp_json(dir, name, v);
    let line = verify_input_error(&path);
    line[format!("error: {}: ", path.display()).len()..].to_owned()
}

/// The 38129 dump as a JSON value, to be altered by a test.
pub fn ledger_38129_json() -> serde_json::Value {
    let bytes = std::fs::read(ledger_38129()).expect("data file is readable");
    serde_json::from_slice(&bytes).expect("data file is JSON")
}

/// Mutable access to the string at `pointer` (RFC 6901) in `v`.
pub fn string_at<'a>(v: &'a mut serde_json::Value, pointer: &str) -> &'a mut String {
    match v.pointer_mut(pointer) {
        Some(serde_json::Value::String(s)) => s,
        other => panic!("{pointer} is not a string: {other:?}"),
    }
}

/// `r` ended with `status`, without a panic, and wrote one line to stderr:
/// that line.
pub fn one_error_line(r: &Run, status: i32) -> String {
    assert_eq!(
        r.code,
        Some(status),
        "stdout: {} stderr: {}",
        r.stdout,
        r.stderr
    );
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    r.stderr.clone()
}

/// `shamap import FILES --db DB`, which must succeed: its stdout.
pub fn import<F: AsRef<std::ffi::OsStr>>(files: &[F], db: impl AsRef<std::ffi::OsStr>) -> String {
    let mut args = vec![std::ffi::OsStr::new("import")];
    args.extend(files.iter().map(AsRef::as_ref));
    args.extend([std::ffi::OsStr::new("--db"), db.as_ref()]);
    ok(&shamap(args, None)).to_owned()
}

/// Imports ledger 38129 and testnet ledger 42089779 into `db`; the report
/// names their roots as stored.
pub fn import_both(db: impl AsRef<std::ffi::OsStr>) {
    let out = import(&[ledger_38129(), testnet_42089779()], db);
    assert_contains(&out, &format!("account_hash {ACCOUNT_38129} stored"));
    assert_contains(&out, &format!("ledger_hash {LEDGER_38129} stored"));
    assert_contains(&out, &format!("transaction_hash {TX_TESTNET} stored"));
}

/// `r` succeeded: its stdout.
pub fn ok(r: &Run) -> &str {
    assert_eq!(r.code, Some(0), "stdout: {} stderr: {}", r.stdout, r.stderr);
    &r.stdout
}

/// The `ledger …` heading lines of a verify report.
pub fn ledger_headings(report: &str) -> Vec<&str> {
    report
        .lines()
        .filter(|l| l.starts_with("ledger "))
        .collect()
}

/// Asserts that `text` contains `part`; a failure shows `text`.
#[track_caller]
pub fn assert_contains(text: &str, part: &str) {
    assert!(text.contains(part), "{part:?} is not in: {text}");
}

/// Asserts that `text` starts with `prefix`; a failure shows `text`.
#[track_caller]
pub fn assert_starts_with(text: &str, prefix: &str) {
    assert!(
        text.starts_with(prefix),
        "{prefix:?} does not start: {text}"
    );
}

/// Asserts that `text` ends with `suffix`; a failure shows `text`.
#[track_caller]
pub fn assert_ends_with(text: &str, suffix: &str) {
    assert!(text.ends_with(suffix), "{suffix:?} does not end: {text}");
}
