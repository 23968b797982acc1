//! Bad arguments and unusable input: status 2, one `error:` line, nothing
//! on stdout, never a panic.

use crate::support::{assert_input_error, ledger_38129, shamap, testnet_42089779, Run};

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
    assert!(
        line.ends_with("no state entries in the input (try --kind tx)"),
        "{line}"
    );

    let run = shamap(["stats", "-"], Some(b"{not json"));
    assert_input_error(&run, "<stdin>");
}

#[test]
fn two_ledgers_at_once_are_refused() {
    let (a, b) = (ledger_38129(), testnet_42089779());
    let run = shamap(
        [std::ffi::OsStr::new("stats"), a.as_os_str(), b.as_os_str()],
        None,
    );
    let line = assert_one_line_usage_error(&run, &["stats", "a", "b"]);
    assert!(line.contains("2 ledgers"), "{line}");
}
