//! The store README says what the code has: its `StoreError` row names
//! every variant of `src/error.rs`, and its `NodeStore` row gives the
//! trait's method count.

use std::path::Path;

fn read(rel: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The README's table row for `item`.
fn row<'a>(readme: &'a str, item: &str) -> &'a str {
    readme
        .lines()
        .find(|l| l.starts_with(&format!("| `{item}` |")))
        .unwrap_or_else(|| panic!("no README row for {item}"))
}

#[test]
fn the_error_table_names_every_store_error_variant() {
    let source = read("src/error.rs");
    let body = &source[source.find("pub enum StoreError").expect("the enum")..];
    let body = &body[..body.find("\n}\n").expect("its end")];
    // Each variant follows its `#[error(...)]` line.
    let variants: Vec<&str> = body
        .split("#[error(")
        .skip(1)
        .filter_map(|part| {
            let after = &part[part.find('\n')? + 1..];
            after.split_whitespace().next()
        })
        .map(|v| v.trim_end_matches([',', '{']))
        .collect();
    assert!(variants.len() >= 13, "the variants read: {variants:?}");
    let readme = read("README.md");
    let errors = row(&readme, "StoreError");
    for v in &variants {
        assert!(
            errors.contains(&format!("`{v}")),
            "the README's StoreError row does not name {v}"
        );
    }
}

#[test]
fn the_trait_row_counts_the_trait_s_methods() {
    let source = read("src/store.rs");
    let body = &source[source.find("pub trait NodeStore:").expect("the trait")..];
    let body = &body[..body.find("\n}\n").expect("its end")];
    let methods = body.matches("\n    fn ").count();
    let readme = read("README.md");
    assert!(
        row(&readme, "NodeStore").contains(&format!("({methods} methods)")),
        "the README's NodeStore row does not say {methods} methods"
    );
}
