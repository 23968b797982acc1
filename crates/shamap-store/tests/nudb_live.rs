//! rippled's node store as it is on a running node: a commit under way
//! (or stopped by a crash) read as the store before it, a store committed
//! to while it is audited, key file entries that lie, maps that hash
//! right but are built wrong, and a key file too large for its data file.

use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use shamap::node_hash::{inner_message, leaf_message};
use shamap::xrpl::sha512_half;
use shamap::{Hash256, Key, MapKind};
use shamap_nudb_writer::faults;
use shamap_nudb_writer::ledgers::{header_object, node_value};
use shamap_nudb_writer::{history, CodecType, Interrupt, Ledger, NudbOptions, NudbWriter, Written};
use shamap_store::backend::nudb::{AuditReport, NudbStore};

use crate::nudb::{audit_all, base, small, snapshot};

/// A state leaf of `l` (hash), for damaging its entry.
fn state_leaf(l: &Ledger) -> Hash256 {
    let mut leaf = None;
    l.state.for_each_node(|n| {
        if n.is_leaf && leaf.is_none() {
            leaf = Some(n.hash);
        }
    });
    leaf.expect("a leaf")
}

fn write(dir: &Path, opts: NudbOptions, ledgers: &[Ledger]) -> Written {
    let mut w = NudbWriter::create(dir, opts).expect("create");
    for l in ledgers {
        for (h, v) in l.objects() {
            w.insert(&h.0, &v).expect("insert");
        }
        w.commit().expect("commit");
    }
    w.finish().expect("finish")
}

fn damaged_ledgers(r: &AuditReport) -> usize {
    r.ledgers.iter().filter(|l| !l.is_whole()).count()
}

fn all_problems(r: &AuditReport) -> String {
    let mut s: Vec<String> = r
        .ledgers
        .iter()
        .flat_map(|l| l.problems.iter().map(|p| p.what.clone()))
        .collect();
    s.extend(r.damaged_records().iter().map(|d| d.what.clone()));
    s.join("\n")
}

#[test]
fn an_interrupted_commit_reads_as_the_store_before_it() {
    let ls = history(base(), 2, 3);
    for at in [Interrupt::BeforeKeyFile, Interrupt::AfterKeyFile] {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut w = NudbWriter::create(dir.path(), small()).expect("create");
        for (h, v) in ls[0].objects() {
            w.insert(&h.0, &v).expect("insert");
        }
        w.commit().expect("commit");
        let mut seen = std::collections::HashSet::new();
        ls[0].objects_new_to(&mut seen, &mut |_, _| {});
        ls[1].objects_new_to(&mut seen, &mut |h, v| {
            w.insert(&h.0, &v).expect("insert");
        });
        w.finish_interrupted(at).expect("interrupted");
        let before = snapshot(dir.path());
        let store = NudbStore::open(dir.path()).expect("a commit under way opens");
        assert!(
            store.notes().iter().any(|n| n.contains("commit under way")),
            "{at:?}: {:?}",
            store.notes()
        );
        let r = audit_all(&store);
        assert!(r.is_whole(), "{at:?}: {}", all_problems(&r));
        let seqs: Vec<Option<u32>> = r.ledgers.iter().map(|l| l.seq).collect();
        assert_eq!(
            seqs,
            vec![Some(ls[0].header.seq)],
            "{at:?}: only the committed ledger"
        );
        assert!(
            r.notes.iter().any(|n| n.contains("commit under way")),
            "{:?}",
            r.notes
        );
        assert_eq!(snapshot(dir.path()), before, "{at:?}: nothing written");
    }
}

/// The entry of `key` in `w`'s files: (file, offset of the 18-byte entry).
fn entry_place(w: &Written, key: &Hash256) -> (std::path::PathBuf, u64) {
    let at = faults::locate_entry(w, &key.0).expect("entry");
    (w.path(at.file), at.offset)
}

fn patch(path: &Path, offset: u64, bytes: &[u8]) {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open");
    f.write_all_at(bytes, offset).expect("patch");
}

fn read_at(path: &Path, offset: u64, len: usize) -> Vec<u8> {
    let f = std::fs::File::open(path).expect("open");
    let mut b = vec![0u8; len];
    f.read_exact_at(&mut b, offset).expect("read");
    b
}

fn u48(v: u64) -> [u8; 6] {
    let b = v.to_be_bytes();
    [b[2], b[3], b[4], b[5], b[6], b[7]]
}

fn get_u48(b: &[u8]) -> u64 {
    b.iter().take(6).fold(0, |a, &x| (a << 8) | u64::from(x))
}

/// Each lie of a leaf's bucket entry breaks the ledgers holding the leaf,
/// naming the entry: a size grown by kilobytes (still inside the file),
/// an offset past the end of the data file, a duplicated entry.
#[test]
fn a_leaf_entry_that_lies_breaks_its_ledgers() {
    let ls = history(base(), 3, 5);
    let leaf = state_leaf(&ls[0]);
    type Lie = fn(&Written, &Hash256);
    let lies: [(&str, Lie, &str); 3] = [
        (
            "grown",
            |w, k| {
                let (file, at) = entry_place(w, k);
                let size = get_u48(&read_at(&file, at + 6, 6));
                patch(&file, at + 6, &u48(size + 3000));
            },
            "bytes",
        ),
        (
            "past the end",
            |w, k| {
                let (file, at) = entry_place(w, k);
                patch(&file, at, &u48(w.dat_len + 10_000));
            },
            "past the end",
        ),
        (
            "duplicated",
            |w, k| {
                // A second copy of the entry in its own bucket (NuDB's
                // order kept: right after the first).
                let at = faults::locate_entry(w, &k.0).expect("entry");
                assert_eq!(at.file, "nudb.key", "small stores keep it in the bucket");
                let key = w.path("nudb.key");
                let bs = u64::from(w.headers.block_size);
                let start = (at.bucket + 1) * bs;
                let mut block = read_at(&key, start, bs as usize);
                let count = u16::from_be_bytes([block[0], block[1]]) as usize;
                let room = (bs as usize - 8) / 18;
                let i = ((at.offset - start - 8) / 18) as usize;
                if count < room {
                    let e: Vec<u8> = block[8 + i * 18..8 + (i + 1) * 18].to_vec();
                    block.splice(8 + (i + 1) * 18..8 + (i + 1) * 18, e);
                    block.truncate(bs as usize);
                    block[..2].copy_from_slice(&((count + 1) as u16).to_be_bytes());
                } else {
                    // A full bucket: the copy replaces its neighbour.
                    let j = if i + 1 < count { i + 1 } else { i - 1 };
                    let e: Vec<u8> = block[8 + i * 18..8 + (i + 1) * 18].to_vec();
                    block[8 + j * 18..8 + (j + 1) * 18].copy_from_slice(&e);
                }
                patch(&key, start, &block);
            },
            "entry",
        ),
    ];
    for (what, lie, says) in lies {
        let dir = tempfile::tempdir().expect("tempdir");
        let opts = NudbOptions {
            block_size: 4096,
            ..small()
        };
        let w = write(dir.path(), opts, &ls);
        lie(&w, &leaf);
        let store = NudbStore::open(dir.path()).expect("opens");
        let r = audit_all(&store);
        assert!(!r.is_whole(), "{what}: reported whole");
        assert!(
            damaged_ledgers(&r) >= 1,
            "{what}: no ledger damaged: {}",
            all_problems(&r)
        );
        let named = r
            .nodes
            .iter()
            .any(|n| n.key == leaf && n.what.contains(says));
        assert!(
            named,
            "{what}: the leaf's entry not named: {}",
            all_problems(&r)
        );
    }
}

/// A bucket whose spill chain runs through another bucket's spills:
/// entries in the wrong bucket, and the bucket's own spilled entries
/// lost; damage, never whole.
#[test]
fn a_spill_chain_through_foreign_spills_is_damage() {
    let ls = history(base(), 2, 9);
    let dir = tempfile::tempdir().expect("tempdir");
    let w = write(dir.path(), small(), &ls);
    let key = w.path("nudb.key");
    let bs = u64::from(w.headers.block_size);
    let spill_of = |n: u64| get_u48(&read_at(&key, (n + 1) * bs + 2, 6));
    let spilled: Vec<u64> = (0..w.buckets).filter(|&n| spill_of(n) != 0).collect();
    assert!(spilled.len() >= 2, "the small store spills");
    let (a, b) = (spilled[0], spilled[1]);
    patch(&key, (a + 1) * bs + 2, &u48(spill_of(b)));
    let store = NudbStore::open(dir.path()).expect("opens");
    let r = audit_all(&store);
    assert!(!r.is_whole());
    let all = all_problems(&r);
    assert!(all.contains("belongs to bucket"), "{all}");
}

/// A stored node: its hash and value.
type Stored = (Hash256, Vec<u8>);

/// A node for a hand-built map: (hash, stored value).
fn node(kind_type: u8, prefix: Vec<u8>) -> Stored {
    (sha512_half(&[&prefix]), node_value(kind_type, &prefix))
}

/// Maps whose hashes are consistent but which rippled could never have
/// built: a leaf off its key's path, a transaction leaf in the state map,
/// an inner node with no child. Each ledger is damaged, the check named.
#[test]
fn a_map_built_wrongly_is_not_whole() {
    let l = base();
    let key = Key([0x5A; 32]);
    let leaf = node(3, leaf_message(MapKind::AccountState, &key, b"some entry"));
    let tx_leaf = node(
        4,
        leaf_message(MapKind::TransactionWithMeta, &key, b"a transaction"),
    );
    let root_over = |child: Hash256, branch: usize| {
        let mut c = [Hash256::ZERO; 16];
        c[branch] = child;
        let m = inner_message(&c);
        node(3, m.as_ref().to_vec())
    };
    let cases: Vec<(&str, Vec<Stored>, Hash256, &str)> = {
        let off = root_over(leaf.0, 0x3); // key starts with nibble 5
        let kind = root_over(tx_leaf.0, 0x5);
        let empty = node(3, inner_message(&[Hash256::ZERO; 16]).as_ref().to_vec());
        let empty_parent = root_over(empty.0, 0x1);
        vec![
            (
                "off path",
                vec![leaf.clone(), off.clone()],
                off.0,
                "not on its path",
            ),
            (
                "tx leaf",
                vec![tx_leaf.clone(), kind.clone()],
                kind.0,
                "map",
            ),
            (
                "no child",
                vec![empty.clone(), empty_parent.clone()],
                empty_parent.0,
                "no children",
            ),
        ]
    };
    for (what, nodes, root, says) in cases {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut header = l.header;
        header.account_hash = root;
        let mut w = NudbWriter::create(dir.path(), small()).expect("create");
        for (h, v) in nodes.iter().cloned() {
            // Stored raw: the codec's inner forms cannot hold an empty
            // inner node, which is the point here.
            w.insert_as(&h.0, &v, CodecType::Raw).expect("insert");
        }
        let (h, v) = header_object(&header);
        w.insert(&h.0, &v).expect("insert");
        for (h, v) in l.objects() {
            if h != l.hash() {
                w.insert(&h.0, &v).expect("insert");
            }
        }
        w.finish().expect("finish");
        let store = NudbStore::open(dir.path()).expect("opens");
        let r = audit_all(&store);
        assert!(!r.is_whole(), "{what}: reported whole");
        let all = all_problems(&r);
        assert!(all.contains(says), "{what}: {all}");
    }
}

/// A key file far larger than its data file could fill (a sparse 256 GiB
/// file) is refused at opening, at once, naming both.
#[test]
fn a_key_file_too_large_for_its_data_is_refused_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), small(), &[base()]);
    let key = dir.path().join("nudb.key");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&key)
        .expect("open")
        .set_len(256 << 30)
        .expect("sparse");
    let t = std::time::Instant::now();
    let e = NudbStore::open(dir.path())
        .expect_err("refused")
        .to_string();
    assert!(t.elapsed() < std::time::Duration::from_secs(5), "bounded");
    assert!(e.contains("nudb.key") && e.contains("nudb.dat"), "{e}");
    assert!(e.contains("buckets"), "{e}");
    assert!(!e.contains('\n'));
}

/// A store committed to (NuDB's order of writes, `nudb.log` and all) five
/// times a second while it is audited again and again (at least 100 audits
/// and 25 commits): never reported damaged.
#[test]
fn a_store_committed_to_while_audited_is_never_damaged() {
    let seed = crate::support::seed(7);
    let ls = history(base(), 60, seed);
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = NudbOptions {
        log_commits: true,
        keep_empty_log: true,
        ..small()
    };
    let mut w = NudbWriter::create(dir.path(), opts).expect("create");
    for (h, v) in ls[0].objects() {
        w.insert(&h.0, &v).expect("insert");
    }
    w.commit().expect("commit");
    let done = Arc::new(AtomicBool::new(false));
    let committed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let writer = {
        let done = Arc::clone(&done);
        let committed = Arc::clone(&committed);
        let ls = ls.clone();
        std::thread::spawn(move || {
            let mut seen = std::collections::HashSet::new();
            ls[0].objects_new_to(&mut seen, &mut |_, _| {});
            let mut commits = 0;
            for l in &ls[1..] {
                if done.load(Ordering::Relaxed) {
                    break;
                }
                l.objects_new_to(&mut seen, &mut |h, v| {
                    w.insert(&h.0, &v).expect("insert");
                });
                w.commit().expect("commit");
                commits += 1;
                committed.store(commits, Ordering::Relaxed);
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
            w.finish().expect("finish");
            commits
        })
    };
    let mut reads_again = 0;
    let started = std::time::Instant::now();
    let mut i = 0;
    while i < 100 || (committed.load(Ordering::Relaxed) < 25 && started.elapsed().as_secs() < 60) {
        i += 1;
        let store = NudbStore::open(dir.path()).expect("opens");
        let r = shamap_store::backend::nudb::audit(
            &store,
            &shamap_store::backend::nudb::AuditOptions::default(),
            &crate::nudb::no_progress,
        );
        let r = match r {
            Ok(r) => r,
            Err(e) => panic!("audit {i} (seed {seed}): {e}"),
        };
        assert!(
            r.is_whole(),
            "audit {i} (seed {seed}): {}",
            all_problems(&r)
        );
        reads_again += r.notes.iter().filter(|n| n.contains("read again")).count();
    }
    done.store(true, Ordering::Relaxed);
    let commits = writer.join().expect("writer");
    println!("{commits} commits during {i} audits; {reads_again} reads made again (seed {seed})");
    assert!(commits >= 25, "the writer committed during the audits");
}

/// A `nudb.log` that is a directory is named as one, not read as a log.
#[test]
fn a_log_that_is_a_directory_is_named_as_such() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), small(), &[base()]);
    std::fs::create_dir(dir.path().join("nudb.log")).expect("mkdir");
    let e = NudbStore::open(dir.path())
        .expect_err("refused")
        .to_string();
    assert!(e.contains("nudb.log") && e.contains("a directory"), "{e}");
    assert!(!e.contains("bytes"), "{e}");
    assert!(!e.contains('\n'));
}
