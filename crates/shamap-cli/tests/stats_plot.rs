//! `--plot DIR` writes the four SVG charts; `bench hash` measures.

use std::ffi::OsStr;

use crate::support::{ledger_38129, shamap};

const CHARTS: [&str; 4] = ["children.svg", "depth.svg", "savings.svg", "memory.svg"];

fn assert_charts(dir: &std::path::Path) {
    for name in CHARTS {
        let svg = std::fs::read_to_string(dir.join(name)).expect("chart written");
        assert!(
            svg.starts_with("<svg"),
            "{name}: {}",
            &svg[..svg.len().min(80)]
        );
        assert!(svg.trim_end().ends_with("</svg>"), "{name}");
        assert!(svg.contains("<text"), "{name} has labels");
        assert!(
            svg.contains("<rect") || svg.contains("<polyline"),
            "{name} has marks"
        );
    }
}

#[test]
fn plot_writes_four_svg_charts() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("charts");
    let path = ledger_38129();
    let run = shamap(
        [
            OsStr::new("stats"),
            path.as_os_str(),
            OsStr::new("--no-timing"),
            OsStr::new("--plot"),
            out.as_os_str(),
        ],
        None,
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_charts(&out);
    let svg = std::fs::read_to_string(out.join("children.svg")).expect("chart");
    assert!(svg.contains("children"), "axis named");
}

#[test]
fn plot_of_an_empty_map_still_draws() {
    let dir = tempfile::tempdir().expect("temp dir");
    let run = shamap(
        [
            OsStr::new("stats"),
            OsStr::new("--random"),
            OsStr::new("0"),
            OsStr::new("--plot"),
            dir.path().as_os_str(),
        ],
        None,
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_charts(dir.path());
}

#[test]
fn plot_into_an_unwritable_place_is_one_error_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"x").expect("write");
    let run = shamap(
        [
            OsStr::new("stats"),
            OsStr::new("--random"),
            OsStr::new("10"),
            OsStr::new("--plot"),
            file.as_os_str(),
        ],
        None,
    );
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.starts_with("error: "), "{}", run.stderr);
}

#[test]
fn bench_hash_reports_both_functions() {
    let run = shamap(["bench", "hash", "--millis", "3", "--json"], None);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    let inputs = v["inputs"].as_array().expect("inputs");
    let sizes: Vec<u64> = inputs.iter().filter_map(|i| i["bytes"].as_u64()).collect();
    assert_eq!(sizes, [22, 62, 102, 203, 516]);
    assert!(v["backend"].is_string());
    for i in inputs {
        assert!(i["sha512_half"]["ns"].as_f64() > Some(0.0));
        assert!(i["sha512_half_batch"]["ns"].as_f64() > Some(0.0));
        assert!(i["blake3"]["mb_per_s"].as_f64() > Some(0.0));
        assert!(i["ratio"].as_f64() > Some(0.0));
    }
}
