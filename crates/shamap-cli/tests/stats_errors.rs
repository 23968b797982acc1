//! Bad arguments and unusable input: status 2, one `error:` line, nothing
//! on stdout, never a panic.

use crate::support::{
    assert_ends_with, assert_input_error, ledger_38129, on_both_ledgers, shamap, shamap_limited,
    testnet_42089779, Run,
};

fn assert_one_line_usage_error(run: &Run, args: &[&str]) -> String {
    assert_eq!(run.code, Some(2), "{args:?}: {}", run.stderr);
    assert!(run.stdout.is_empty(), "{args:?}: {}", run.stdout);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{args:?}: {}", run.stderr);
    assert!(lines[0].starts_with("error: "), "{}", lines[0]);
    lines[0].to_owned()
}

#[test]
fn bad_arguments_exit_two_with_one_line() {
    let ledger = ledger_38129();
    let ledger = ledger.to_str().expect("UTF-8 path");
    let cases: &[(&[&str], &str)] = &[
        (&["stats"], "nothing to read"),
        (&["stats", "--random", "10", ledger], "cannot be used with"),
        (&["stats", "--random", "ten"], "invalid value 'ten'"),
        (
            &["stats", "--random", "10", "--classes", "2,4"],
            "end with 16",
        ),
        (
            &["stats", "--random", "10", "--classes", "4,2,16"],
            "strictly increasing",
        ),
        (
            &["stats", "--random", "10", "--classes", "2,x,16"],
            "not a capacity",
        ),
        (
            &["stats", "--random", "10", "--kind", "ledger"],
            "invalid value 'ledger'",
        ),
        (&["stats", "--data-len", "8", ledger], "--random"),
        (
            &["stats", "--random", "10", "--hash", "md5"],
            "unknown hash function",
        ),
        (
            &["stats", "--random", "1", "--frobnicate"],
            "unexpected argument",
        ),
        (&["bench", "hash", "--millis", "0"], "invalid value '0'"),
        (&["bench"], "subcommand"),
    ];
    for (args, needle) in cases {
        let run = shamap(*args, None);
        let line = assert_one_line_usage_error(&run, args);
        assert!(line.contains(needle), "{args:?}: {line}");
    }
}

#[test]
fn unusable_input_names_the_file() {
    let run = shamap(["stats", "/nonexistent/x.json"], None);
    let line = assert_input_error(&run, "/nonexistent/x.json");
    assert!(line.contains("cannot read"), "{line}");

    let testnet = testnet_42089779();
    let name = testnet.to_str().expect("UTF-8 path");
    let run = shamap(["stats", name, "--kind", "state"], None);
    let line = assert_input_error(&run, name);
    assert_ends_with(&line, "no state entries in the input (try --kind tx)");

    let run = shamap(["stats", "-"], Some(b"{not json"));
    assert_input_error(&run, "<stdin>");
}

#[test]
fn two_ledgers_at_once_are_refused() {
    let run = on_both_ledgers(&["stats"]);
    let line = assert_one_line_usage_error(&run, &["stats", "a", "b"]);
    assert!(line.contains("2 ledgers"), "{line}");
}

/// Address-space limit (KiB) for runs that must stop before allocating:
/// 1 GiB, far above what a small build needs.
const LIMIT_KIB: u64 = 1 << 20;

/// `--random` past its documented maximum (the count, or the estimated
/// memory with `--data-len`) is refused before anything is built: status 2,
/// one line, at once. Under the 1 GiB limit an unbounded build dies of an
/// allocation failure instead (as it did before the bound).
#[test]
fn random_past_its_maximum_is_refused_before_building() {
    let small = ["stats", "--random", "1000", "--no-timing"];
    let run = shamap_limited(&small, LIMIT_KIB);
    assert_eq!(
        run.code,
        Some(0),
        "a small build fits the limit: {}",
        run.stderr
    );
    let cases: &[(&[&str], &str)] = &[
        (&["stats", "--random", "1000000000000"], "100000000"),
        (&["stats", "--random", "100000001"], "100000000"),
        (
            &["stats", "--random", "1000000", "--data-len", "65536"],
            "memory",
        ),
    ];
    for (args, needle) in cases {
        let t = std::time::Instant::now();
        let run = shamap_limited(args, LIMIT_KIB);
        let line = assert_one_line_usage_error(&run, args);
        assert!(line.contains(needle), "{args:?}: {line}");
        assert!(
            t.elapsed() < std::time::Duration::from_secs(10),
            "{args:?} took {:?}",
            t.elapsed()
        );
    }
}

/// Every numeric argument of every subcommand has a bound, checked before
/// anything is read or allocated: out of range is status 2 and one line.
#[test]
fn every_numeric_argument_is_bounded() {
    let ledger = ledger_38129();
    let ledger = ledger.to_str().expect("UTF-8 path");
    let too_big = "18446744073709551616";
    let cases: &[&[&str]] = &[
        &["stats", "--random=-1"],
        &["stats", "--random", too_big],
        &["stats", "--random", "10", "--seed=-1"],
        &["stats", "--random", "10", "--seed", too_big],
        &["stats", "--random", "10", "--data-len", "65537"],
        &["stats", "--random", "10", "--data-len=-1"],
        &["bench", "hash", "--millis", "60001"],
        &["bench", "hash", "--millis", too_big],
        &["diff", ledger, ledger, "--max=-1"],
        &["diff", ledger, ledger, "--max", too_big],
        &["get", "--db", "/nonexistent", "--cache-mb", too_big, "00"],
        &["get", "--db", "/nonexistent", "--cache-mb=-1", "00"],
        &["scan", "--db", "/nonexistent", "--cache-mb", too_big],
        &["apply", "--db", "/nonexistent", "--cache-mb", too_big, "-"],
        &["get", "--db", "/nonexistent", "--cache-mb", "1048577", "00"],
        &["scan", "--db", "/nonexistent", "--cache-mb", "1048577"],
        &[
            "apply",
            "--db",
            "/nonexistent",
            "--cache-mb",
            "1048577",
            "-",
        ],
    ];
    for args in cases {
        let run = shamap_limited(args, LIMIT_KIB);
        let line = assert_one_line_usage_error(&run, args);
        assert!(line.contains("invalid value"), "{args:?}: {line}");
    }
}
