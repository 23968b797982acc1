//! `--plot DIR` writes the four SVG charts; `bench hash` measures.

use std::ffi::OsStr;

use crate::support::{ledger_38129, shamap, Run};

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

/// `shamap stats ARGS --plot DIR`.
fn plot(args: &[&OsStr], dir: &std::path::Path) -> Run {
    let mut all = vec![OsStr::new("stats")];
    all.extend_from_slice(args);
    all.extend([OsStr::new("--plot"), dir.as_os_str()]);
    shamap(all, None)
}

#[test]
fn plot_writes_four_svg_charts() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("charts");
    let path = ledger_38129();
    let run = plot(&[path.as_os_str(), OsStr::new("--no-timing")], &out);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_charts(&out);
    let svg = std::fs::read_to_string(out.join("children.svg")).expect("chart");
    assert!(svg.contains("children"), "axis named");
}

#[test]
fn plot_of_an_empty_map_still_draws() {
    let dir = tempfile::tempdir().expect("temp dir");
    let run = plot(&["--random", "0"].map(OsStr::new), dir.path());
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_charts(dir.path());
}

#[test]
fn plot_into_an_unwritable_place_is_one_error_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"x").expect("write");
    let run = plot(&["--random", "10"].map(OsStr::new), &file);
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

/// Whether this process runs as root (effective user 0).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

/// A small tmpfs mounted at a directory, unmounted on drop.
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn mount(at: &std::path::Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(at).expect("mount point");
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .status()
            .expect("mount runs");
        assert!(status.success(), "mount a tmpfs at {}", at.display());
        Tmpfs(at.to_owned())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// Fills the file system of `dir` but for about `leave` bytes.
fn fill_leaving(dir: &std::path::Path, leave: u64) {
    use std::io::Write;
    let path = dir.join("filler");
    let mut f = std::fs::File::create(&path).expect("filler");
    let chunk = [0xA5u8; 4096];
    let mut len = 0u64;
    while f.write_all(&chunk).is_ok() {
        len += chunk.len() as u64;
    }
    f.set_len(len.saturating_sub(leave)).expect("truncate");
    f.sync_all().expect("sync");
}

/// On a full disk `--plot` writes nothing: no chart, no partial SVG, no
/// temporary file left, and a chart already there unchanged; status 2 and
/// one line naming the file. Needs root (a 1 MB tmpfs).
#[test]
fn plot_on_a_full_disk_leaves_no_partial_file() {
    if !is_root() {
        eprintln!("skipped: mounting a tmpfs needs root");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let mnt = dir.path().join("mnt");
    let _fs = Tmpfs::mount(&mnt, "1m");
    let charts = mnt.join("charts");
    std::fs::create_dir(&charts).expect("charts dir");
    let old = b"<svg>an earlier chart</svg>\n";
    std::fs::write(charts.join("children.svg"), old).expect("earlier chart");
    // The four charts take about 80 kB; the first two fit in 40 kB.
    fill_leaving(&mnt, 40 << 10);
    let run = plot(
        &["--random", "1000", "--no-timing"].map(OsStr::new),
        &charts,
    );
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr
            .starts_with(&format!("error: {}/", charts.display())),
        "{}",
        run.stderr
    );
    let mut left: Vec<String> = std::fs::read_dir(&charts)
        .expect("charts dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["children.svg"], "only the earlier chart is left");
    assert_eq!(
        std::fs::read(charts.join("children.svg")).expect("earlier chart"),
        old
    );
}
