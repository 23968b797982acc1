//! Damaged fjall files give an error of one line, never a panic or an
//! abort. lsm-tree asserts on some damaged keyspace version files (`level
//! count should be 7`, `filter_hash_type should be XXH3`) inside a lock its
//! own `Drop` then takes, so the process aborts; the torture harness found
//! it (3 of 323 bit flips on fjall at 541da3d). `FjallStore` checks each
//! version file against the checksum its `current` file records before
//! fjall opens anything, and contains a panic from fjall's opening.
//!
//! Sampled bit flips, each on a fresh copy of one store: in its keyspace
//! version files (every one refused, naming the file), in their `current`
//! files and in the first 4 KiB of its journal (the store opens, and
//! verifies or reports damage in one line, or is refused in one line).

use std::path::{Path, PathBuf};

use shamap::MapKind;
use shamap_store::{import_ledger, verify_all, FjallStore};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::support::{copy_store_dir, files_under, random_map, seed};

/// Files under `dir` (relative paths) that `want` picks.
fn files(dir: &Path, want: &dyn Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = files_under(dir)
        .into_iter()
        .filter(|p| want(p))
        .map(|p| p.strip_prefix(dir).expect("under dir").to_path_buf())
        .collect();
    out.sort();
    out
}

#[test]
fn a_flipped_bit_in_fjalls_version_files_current_files_or_journal_is_one_line_never_a_panic() {
    let seed = seed(0xF1A11);
    let root = tempfile::tempdir().expect("tempdir");
    let pristine = root.path().join("store");
    let (mut map, _) = random_map(MapKind::AccountState, 300, seed);
    let want = map.root_hash();
    {
        let store = FjallStore::open(&pristine).expect("create");
        import_ledger(
            &store,
            "head",
            Some(&map.snapshot()),
            None,
            None,
            &mut |_| {},
        )
        .expect("import");
    }
    // The version file each keyspace's `current` names (older ones may
    // linger; fjall reads only this one).
    let version_files: Vec<PathBuf> = files(&pristine, &|p| {
        p.file_name().is_some_and(|n| n == "current")
    })
    .iter()
    .map(|c| {
        let bytes = std::fs::read(pristine.join(c)).expect("read current");
        let id = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
        c.with_file_name(format!("v{id}"))
    })
    .collect();
    let journals = files(&pristine, &|p| p.extension().is_some_and(|e| e == "jnl"));
    assert!(
        !version_files.is_empty(),
        "seed {seed}: no keyspace version file"
    );
    assert!(!journals.is_empty(), "seed {seed}: no journal");

    let currents = files(&pristine, &|p| {
        p.file_name().is_some_and(|n| n == "current")
    });
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut sample = |list: &[PathBuf], cap: usize, n: usize| -> Vec<(PathBuf, usize, u8)> {
        (0..n)
            .map(|_| {
                let f = &list[rng.gen_range(0..list.len())];
                let len = std::fs::metadata(pristine.join(f)).expect("stat").len() as usize;
                (
                    f.clone(),
                    rng.gen_range(0..len.min(cap)),
                    rng.gen_range(0..8u8),
                )
            })
            .collect()
    };
    let in_versions = sample(&version_files, usize::MAX, 120);
    let mut targets = in_versions.clone();
    targets.extend(sample(&currents, usize::MAX, 30));
    targets.extend(sample(&journals, 4096, 100));

    let (mut opened, mut refused) = (0usize, 0usize);
    for (n, (file, byte, bit)) in targets.iter().enumerate() {
        let copy = root.path().join(format!("case{n}"));
        copy_store_dir(&pristine, &copy);
        let path = copy.join(file);
        let mut bytes = std::fs::read(&path).expect("read");
        bytes[*byte] ^= 1 << bit;
        std::fs::write(&path, &bytes).expect("write");
        let case = format!(
            "seed {seed}: bit {bit} of byte {byte} of {} flipped",
            file.display()
        );
        let in_version_file = n < in_versions.len();
        match FjallStore::open(&copy) {
            Err(e) => {
                let line = e.to_string();
                assert_eq!(line.lines().count(), 1, "{case}: {line}");
                if in_version_file {
                    assert!(
                        line.contains(&file.display().to_string())
                            && line.contains("fails the checksum"),
                        "{case}: {line}"
                    );
                }
                refused += 1;
            }
            Ok(store) => {
                assert!(!in_version_file, "{case}: a damaged version file opened");
                opened += 1;
                // What opens is whole or says where it is not, in one line.
                if let Err(e) = verify_all(&store, &want) {
                    assert_eq!(e.to_string().lines().count(), 1, "{case}: {e}");
                }
                drop(store);
            }
        }
        std::fs::remove_dir_all(&copy).expect("rm");
    }
    assert!(
        refused > 0,
        "seed {seed}: no flip refused in {} cases",
        targets.len()
    );
    assert!(
        opened > 0,
        "seed {seed}: every flip refused in {} cases",
        targets.len()
    );
}
