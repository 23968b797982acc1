//! The README's layout table names every workspace member and every fuzz
//! target, so that the map of the repository cannot fall behind it.

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The README's "## Layout" section.
fn layout_section() -> String {
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    let start = readme.find("\n## Layout").expect("a Layout section");
    let rest = &readme[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |e| e + 3);
    rest[..end].to_owned()
}

#[test]
fn the_readme_layout_names_every_member_and_fuzz_target() {
    let layout = layout_section();
    let manifest = std::fs::read_to_string(repo().join("Cargo.toml")).expect("Cargo.toml");
    let line = manifest
        .lines()
        .find(|l| l.trim_start().starts_with("members"))
        .expect("a members line");
    let members: Vec<&str> = line
        .split('"')
        .enumerate()
        .filter_map(|(i, s)| (i % 2 == 1).then_some(s))
        .collect();
    assert!(members.len() >= 10, "{members:?}");
    for m in members {
        let named = format!("`{m}`");
        let dir = format!("`{m}/`");
        assert!(
            layout.contains(&named) || layout.contains(&dir),
            "README's layout table does not name the workspace member {m}"
        );
    }
    let mut targets = 0;
    for e in std::fs::read_dir(repo().join("fuzz/fuzz_targets")).expect("fuzz targets") {
        let p = e.expect("entry").path();
        let Some(name) = p.file_stem().and_then(|n| n.to_str()) else {
            continue;
        };
        if name == "common" {
            continue;
        }
        targets += 1;
        assert!(
            layout.contains(&format!("`{name}`")) || layout.contains(&format!("run {name}`")),
            "README's layout table does not name the fuzz target {name}"
        );
    }
    assert!(targets >= 8, "{targets} fuzz targets found");
}
