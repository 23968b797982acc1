//! Listing the shipped data files. Shared by the store's and the CLI's
//! tests (the CLI's include this file by path).

use std::path::{Path, PathBuf};

/// The `*.json` files directly in `dir`, sorted.
pub fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    v
}
