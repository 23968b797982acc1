//! `shamap stats --random`: deterministic for a seed, and the advisor's
//! slot counts are what the engine then allocates.

use std::ffi::OsStr;

use serde_json::Value;

use crate::support::{assert_contains, shamap};

fn random_json(extra: &[&str]) -> Value {
    let mut args = vec!["stats", "--json"];
    args.extend_from_slice(extra);
    let run = shamap(args.iter().map(OsStr::new), None);
    assert_eq!(run.code, Some(0), "{args:?}: {}", run.stderr);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    let mut v: Value = serde_json::from_str(&run.stdout).expect("stdout is JSON");
    // Timings vary from run to run; everything else must not.
    v.as_object_mut().expect("an object").remove("timing");
    v
}

/// [`random_json`] of `entries` random entries from `seed`, without
/// timings, with the `extra` arguments.
fn seeded_json(entries: u32, seed: u64, extra: &[&str]) -> Value {
    let (entries, seed) = (entries.to_string(), seed.to_string());
    let mut args = vec!["--random", &entries, "--seed", &seed, "--no-timing"];
    args.extend_from_slice(extra);
    random_json(&args)
}

#[test]
fn same_seed_gives_the_same_report() {
    let a = seeded_json(3000, 9, &[]);
    let b = seeded_json(3000, 9, &[]);
    assert_eq!(a, b);
    assert_eq!(a["entries"], 3000);
    assert_eq!(a["input"]["seed"], 9);
    assert_eq!(a["input"]["data"], "mainnet");
    let c = seeded_json(3000, 10, &[]);
    assert_ne!(a["root_hash"], c["root_hash"]);
    // Mainnet-shaped sizes: a mean in the neighbourhood of 167 bytes.
    let mean = a["data"]["mean_bytes"].as_f64().expect("mean");
    assert!((130.0..210.0).contains(&mean), "{mean}");
    assert!(a["data"]["by_type"]
        .as_array()
        .is_some_and(|t| t.len() >= 4));
}

#[test]
fn data_length_changes_the_data_not_the_tree() {
    let a = seeded_json(2000, 3, &[]);
    let b = seeded_json(2000, 3, &["--data-len", "32"]);
    assert_eq!(a["child_histogram"], b["child_histogram"]);
    assert_eq!(a["depth_histogram"], b["depth_histogram"]);
    assert_eq!(b["data"]["mean_bytes"], 32.0);
    assert_eq!(b["bytes"]["leaf_padding"], 0);
    assert_eq!(b["input"]["data_len"], 32);
}

#[test]
fn advised_classes_allocate_the_predicted_slots() {
    let a = seeded_json(4000, 5, &[]);
    let plan = &a["advisor"]["best"][2];
    let caps: Vec<String> = plan["classes"]
        .as_array()
        .expect("classes")
        .iter()
        .map(|c| c.to_string())
        .collect();
    let caps = caps.join(",");
    let b = seeded_json(4000, 5, &["--classes", &caps]);
    assert_eq!(b["classes"], plan["classes"]);
    assert_eq!(b["root_hash"], a["root_hash"]);
    let slots = b["bytes"]["child_slots_used"].as_u64().unwrap_or(0)
        + b["bytes"]["child_slots_unused"].as_u64().unwrap_or(0);
    assert_eq!(Some(slots), plan["slots"].as_u64().map(|s| 8 * s));
    assert_eq!(b["advisor"]["current"]["slots"], plan["slots"]);
}

#[test]
fn an_empty_map_has_one_childless_root() {
    let v = random_json(&["--random", "0"]);
    assert_eq!(v["entries"], 0);
    assert_eq!(v["inner_nodes"], 1);
    assert_eq!(v["child_histogram"][0], 1);
    assert_eq!(v["root_hash"], "0".repeat(64));
    assert_eq!(v["bytes"]["overhead_per_entry"], 0.0);
    assert!(v["models"]["rippled"]["ratio_to_ours"].is_f64());
}

#[test]
fn text_report_of_a_random_map_names_its_seed() {
    let run = shamap(
        ["stats", "--random", "500", "--seed", "4", "--kind", "txset"],
        None,
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stdout.starts_with(
            "transaction-set (no metadata) map of 500 entries from random keys, seed 4, mainnet-shaped data sizes\n"
        ),
        "{}",
        run.stdout
    );
    assert!(
        !run.stdout.contains("entry type"),
        "no type table for txset"
    );
}

#[test]
fn blake3_changes_the_root_and_nothing_else_of_the_tree() {
    let sha = seeded_json(2000, 4, &[]);
    let b3 = seeded_json(2000, 4, &["--hash", "blake3"]);
    assert_eq!(sha["hash_function"], "sha512half");
    assert_eq!(b3["hash_function"], "blake3");
    assert_ne!(sha["root_hash"], b3["root_hash"]);
    for field in ["entries", "child_histogram", "depth_histogram", "data"] {
        assert_eq!(sha[field], b3[field], "{field}");
    }
    // The byte table too, but for what large leaves cost: they live in
    // malloc'd chunks, measured with `malloc_usable_size`, which depends on
    // the allocator's state (glibc hands out a free chunk up to 31 bytes
    // larger than asked), not on the tree.
    let malloc_dependent = ["leaf_padding", "overhead", "overhead_per_entry", "total"];
    let (mut a, mut b) = (sha["bytes"].clone(), b3["bytes"].clone());
    for f in malloc_dependent {
        a.as_object_mut().expect("bytes").remove(f);
        b.as_object_mut().expect("bytes").remove(f);
    }
    assert_eq!(a, b, "bytes");
    let large = sha["bytes"]["large_leaves"].as_i64().expect("large leaves");
    let padding = |v: &Value| v["bytes"]["leaf_padding"].as_i64().expect("padding");
    assert!(
        (padding(&sha) - padding(&b3)).abs() < 32 * large.max(1),
        "leaf padding {} vs {} with {large} large leaves",
        padding(&sha),
        padding(&b3)
    );
    // With timing, the floor is measured with the map's function.
    let mut args = vec!["stats", "--json", "--random", "2000", "--hash", "blake3"];
    let run = shamap(args.drain(..).map(OsStr::new), None);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let v: Value = serde_json::from_str(&run.stdout).expect("JSON");
    let floor = &v["timing"]["hashing"];
    assert!(
        floor["hash_floor_seconds"]
            .as_f64()
            .is_some_and(|s| s > 0.0),
        "{v}"
    );
}

#[test]
fn the_hashless_leaf_mode_keeps_the_root_and_drops_the_leaf_hashes() {
    let full = seeded_json(3000, 9, &[]);
    let hashless = seeded_json(3000, 9, &["--hashless-leaves"]);
    assert_eq!(full["leaf_hashes"], "stored");
    assert_eq!(hashless["leaf_hashes"], "recomputed");
    for field in [
        "root_hash",
        "entries",
        "child_histogram",
        "depth_histogram",
        "data",
    ] {
        assert_eq!(full[field], hashless[field], "{field}");
    }
    let bytes = |v: &Value, f: &str| v["bytes"][f].as_i64().expect("a byte count");
    assert_eq!(bytes(&full, "leaf_hashes"), 32 * 3000);
    assert_eq!(bytes(&hashless, "leaf_hashes"), 0);
    for f in [
        "inner_hashes",
        "child_slots_used",
        "child_slots_unused",
        "leaf_keys",
        "leaf_data",
    ] {
        assert_eq!(bytes(&full, f), bytes(&hashless, f), "{f}");
    }
    // About 32 bytes an entry less in all (padding and slack move a little
    // with the chunk sizes).
    let per = |v: &Value| v["bytes"]["overhead_per_entry"].as_f64().expect("overhead");
    let saved = per(&full) - per(&hashless);
    assert!((30.0..34.0).contains(&saved), "saved {saved} B/entry");
    // `--compact`, the flag's old name, still works.
    let text = shamap(
        ["stats", "--random", "300", "--compact", "--no-timing"].map(OsStr::new),
        None,
    );
    assert_eq!(text.code, Some(0), "{}", text.stderr);
    assert_contains(&text.stdout, "hashless-leaf mode: leaf hashes recomputed");
}
