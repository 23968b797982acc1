//! `shamap diff`: the keys whose data differ between two ledgers' maps.
//!
//! Builds the chosen map (`--kind state`, the default, or `tx`) of each
//! file and lists the differences in ascending key order, skipping equal
//! subtrees (cost grows with the differences, not the map size). FILE_A is
//! the left side: a key only in FILE_B is `added`, only in FILE_A
//! `removed`, in both with other data `modified`.
//!
//! With `--db DB`, the two sides come from a store instead: each is a
//! ledger hash (its state map, or with `--kind tx` its transaction map), a
//! map root the store knows, or a ledger sequence number (the ledger the
//! store lists with it), resolved by the store crate's one rule
//! (`shamap_store::map::ledger`); the maps are compared in the store
//! ([`shamap_store::diff_stored`]: equal subtrees skipped, every node
//! verified as it is read). Their `entries` are `null` in the JSON report
//! (counting them would read both maps whole).
//!
//! Text output: one line per key, then a summary line:
//!
//! ```text
//! added 0A1B…
//! modified 02CE…
//! removed 7F00…
//! 3 differences: 1 added, 1 removed, 1 modified
//! ```
//!
//! `--json` prints one object:
//!
//! ```json
//! {"kind": "state",
//!  "left": {"source": "a.json", "root": "…", "entries": 261},
//!  "right": {"source": "b.json", "root": "…", "entries": 260},
//!  "added": 0, "removed": 1, "modified": 1,
//!  "differences": [{"key": "…", "change": "modified", "left": "HEX", "right": "HEX"},
//!                  {"key": "…", "change": "removed", "left": "HEX", "right": null}]}
//! ```
//!
//! Exit status: 0 when the differences were listed (whether or not there
//! are any); 1 when there are more than `--max`; 2 on unreadable input or a
//! map that cannot be built. Errors are one line on stderr.

use std::path::PathBuf;

use serde_json::{json, Value};
use shamap::hash::encode_hex_upper;
use shamap::{Difference, Hash256, MapKind};
use shamap_store::map::audit::plural;

mod store;

use crate::input::read_ledger;
use crate::input::KindArg;
use crate::maps::build_map;
use crate::output::{print_json, print_text, Exit, Failure};

/// Arguments of `shamap diff`.
#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    /// The left (older) ledger dump; `-` reads standard input. With --db:
    /// a ledger hash, a map root, or a ledger sequence number.
    #[arg(value_name = "FILE_A")]
    pub file_a: PathBuf,
    /// The right (newer) ledger dump; `-` reads standard input. With --db:
    /// a ledger hash, a map root, or a ledger sequence number.
    #[arg(value_name = "FILE_B")]
    pub file_b: PathBuf,
    #[arg(long, value_name = "DB", help = crate::input::db_help("Compare two maps of a store instead of two files"))]
    pub db: Option<PathBuf>,
    /// Print one JSON object, with the data of each key, instead of text.
    #[arg(long)]
    pub json: bool,
    /// Give up (status 1) past this many differences, like rippled's
    /// `compare`. No limit by default.
    #[arg(long, value_name = "N")]
    pub max: Option<usize>,
    /// Which map to compare: state (the default) or tx. With --db and map
    /// roots, their own kind by default.
    #[arg(long, value_parser = KindArg::header_maps())]
    pub kind: Option<KindArg>,
}

/// How a key changed from the left side to the right.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Only on the right.
    Added,
    /// Only on the left.
    Removed,
    /// On both sides, with different data.
    Modified,
}

impl Change {
    /// Classifies one difference.
    pub fn of(d: &Difference<'_>) -> Change {
        match (d.left, d.right) {
            (None, _) => Change::Added,
            (_, None) => Change::Removed,
            _ => Change::Modified,
        }
    }

    /// The word used in both outputs.
    pub fn name(self) -> &'static str {
        match self {
            Change::Added => "added",
            Change::Removed => "removed",
            Change::Modified => "modified",
        }
    }
}

/// One side of the comparison, for the JSON report.
pub struct Side {
    /// The file's name.
    pub source: String,
    /// The map's root hash.
    pub root: Hash256,
    /// Entries in the map (`None` for a stored map: not counted).
    pub entries: Option<usize>,
}

fn counts(diffs: &[Difference<'_>]) -> [usize; 3] {
    let mut c = [0; 3];
    for d in diffs {
        c[Change::of(d) as usize] += 1;
    }
    c
}

/// The text report (see the module docs).
pub fn render_text(diffs: &[Difference<'_>]) -> String {
    let mut out = String::new();
    for d in diffs {
        out.push_str(Change::of(d).name());
        out.push(' ');
        out.push_str(&d.key.to_hex());
        out.push('\n');
    }
    let [added, removed, modified] = counts(diffs);
    let n = diffs.len();
    out.push_str(&format!(
        "{}: {added} added, {removed} removed, {modified} modified\n",
        plural(n, "difference", "differences")
    ));
    out
}

/// The JSON report (see the module docs).
pub fn render_json(kind: MapKind, left: &Side, right: &Side, diffs: &[Difference<'_>]) -> Value {
    let side =
        |s: &Side| json!({"source": s.source, "root": s.root.to_hex(), "entries": s.entries});
    let [added, removed, modified] = counts(diffs);
    let list: Vec<Value> = diffs
        .iter()
        .map(|d| {
            json!({
                "key": d.key.to_hex(),
                "change": Change::of(d).name(),
                "left": d.left.map(encode_hex_upper),
                "right": d.right.map(encode_hex_upper),
            })
        })
        .collect();
    json!({
        "kind": kind.name(),
        "left": side(left),
        "right": side(right),
        "added": added,
        "removed": removed,
        "modified": modified,
        "differences": list,
    })
}

/// Runs `shamap diff`.
pub fn run(args: &DiffArgs) -> Result<Exit, Failure> {
    if let Some(db) = &args.db {
        return store::run(args, db).map_err(|f| f.about_store(db));
    }
    let kind = args.kind.unwrap_or(KindArg::State);
    if args.file_a.as_os_str() == "-" && args.file_b.as_os_str() == "-" {
        return Err(Failure::unusable(
            "only one of FILE_A and FILE_B can be standard input",
        ));
    }
    let mut built = Vec::with_capacity(2);
    for path in [&args.file_a, &args.file_b] {
        let input = read_ledger(path)?;
        let b = build_map(&input, kind)?;
        built.push((input.name, b.map));
    }
    let (Some((name_b, mut b)), Some((name_a, mut a))) = (built.pop(), built.pop()) else {
        return Err(Failure::unusable("internal error: two maps expected"));
    };
    let left = Side {
        source: name_a,
        root: a.root_hash(),
        entries: Some(a.len()),
    };
    let right = Side {
        source: name_b,
        root: b.root_hash(),
        entries: Some(b.len()),
    };
    let max = args.max.unwrap_or(usize::MAX);
    let diffs = a
        .diff(&mut b, max)
        .map_err(|e| Failure::negative(format!("{e} (raise --max to see them)")))?;
    if args.json {
        print_json(&render_json(kind.kind(), &left, &right, &diffs))?;
    } else {
        print_text(&render_text(&diffs))?;
    }
    Ok(Exit::Done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use shamap::{Key, ShaMap};

    #[test]
    fn reports_name_each_change_and_count_them() {
        let mut a = ShaMap::new(MapKind::AccountState);
        let mut b = ShaMap::new(MapKind::AccountState);
        a.insert(Key([1; 32]), &[1; 12]).expect("new");
        a.insert(Key([2; 32]), &[2; 12]).expect("new");
        b.insert(Key([2; 32]), &[9; 12]).expect("new");
        b.insert(Key([3; 32]), &[3; 12]).expect("new");
        let side = |m: &mut ShaMap, s: &str| Side {
            source: s.to_owned(),
            root: m.root_hash(),
            entries: Some(m.len()),
        };
        let (l, r) = (side(&mut a, "a"), side(&mut b, "b"));
        let diffs = a.diff(&mut b, 10).expect("few");
        let text = render_text(&diffs);
        assert_eq!(
            text,
            format!(
                "removed {}\nmodified {}\nadded {}\n3 differences: 1 added, 1 removed, 1 modified\n",
                Key([1; 32]),
                Key([2; 32]),
                Key([3; 32])
            )
        );
        let v = render_json(MapKind::AccountState, &l, &r, &diffs);
        assert_eq!(v["removed"], 1);
        assert_eq!(v["differences"][0]["change"], "removed");
        assert_eq!(v["differences"][0]["right"], Value::Null);
        assert_eq!(v["differences"][1]["right"], encode_hex_upper(&[9; 12]));
        assert_eq!(v["left"]["source"], "a");
        assert_eq!(
            render_text(&[]),
            "0 differences: 0 added, 0 removed, 0 modified\n"
        );
    }
}
