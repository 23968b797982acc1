//! Byte-for-byte against databases the real NuDB 2.0.9 wrote (with
//! rippled's codec), when `SHAMAP_REAL_NUDB` names a directory of them
//! (`NAME/nudb/{nudb.dat,nudb.key}`): each database's records are replayed
//! into this writer, stored values as they are (liblz4's blocks), with the
//! same uid, salt and block size, commit by commit, and both files must
//! come out identical. Without the variable the test says so and passes:
//! the C++ library is not part of the repository.

use std::path::{Path, PathBuf};

use shamap_nudb_writer::format::{self, get_u48};
use shamap_nudb_writer::{NudbOptions, NudbWriter};

/// One commit's records, as the data file holds them: key, stored value.
type Commit = Vec<(Vec<u8>, Vec<u8>)>;

/// The commits of a data file: a commit's data records are in key order
/// and its spill records follow them, so a new commit starts at a data
/// record after a spill record or at a key below the one before.
/// (Two commits without spills whose keys happen to ascend across the
/// boundary read as one, which writes the same bytes within a session.)
fn commits(dat: &[u8], key_size: usize) -> Vec<Commit> {
    let mut out: Vec<Commit> = vec![Vec::new()];
    let mut at = format::DAT_HEADER_LEN;
    let mut after_spill = false;
    while at < dat.len() {
        let size = get_u48(&dat[at..]) as usize;
        if size == 0 {
            let n = usize::from(u16::from_be_bytes([dat[at + 6], dat[at + 7]]));
            at += 8 + n;
            after_spill = true;
            continue;
        }
        let key = dat[at + 6..at + 6 + key_size].to_vec();
        let value = dat[at + 6 + key_size..at + 6 + key_size + size].to_vec();
        let last = out.last().and_then(|c| c.last()).map(|(k, _)| k.clone());
        if after_spill || last.is_some_and(|l| key < l) {
            out.push(Vec::new());
        }
        after_spill = false;
        out.last_mut().expect("a commit").push((key, value));
        at += 6 + key_size + size;
    }
    out
}

fn be(b: &[u8]) -> u64 {
    b.iter().fold(0, |a, &x| (a << 8) | u64::from(x))
}

/// Replays the database in `real` into `out` (a session per commit when
/// `reopen`) and compares the files; the first differing offset if any.
fn replay(real: &Path, out: &Path, reopen: bool) -> Result<(), String> {
    let dat = std::fs::read(real.join("nudb.dat")).map_err(|e| e.to_string())?;
    let key = std::fs::read(real.join("nudb.key")).map_err(|e| e.to_string())?;
    let opts = NudbOptions {
        uid: be(&key[10..18]),
        appnum: be(&key[18..26]),
        key_size: be(&key[26..28]) as u16,
        salt: be(&key[28..36]),
        block_size: be(&key[44..46]) as u16,
        load_factor: be(&key[46..48]) as f32 / 65536.0,
        ..NudbOptions::default()
    };
    let mut w = NudbWriter::create(out, opts).map_err(|e| e.to_string())?;
    assert_eq!(w.headers().load_factor as u64, be(&key[46..48]));
    for c in commits(&dat, usize::from(opts.key_size)) {
        for (k, v) in c {
            w.insert_raw(&k, &v).map_err(|e| e.to_string())?;
        }
        if reopen {
            w.reopen().map_err(|e| e.to_string())?;
        } else {
            w.commit().map_err(|e| e.to_string())?;
        }
    }
    let written = w.finish().map_err(|e| e.to_string())?;
    for (name, real_bytes) in [("nudb.dat", &dat), ("nudb.key", &key)] {
        let ours = std::fs::read(written.path(name)).map_err(|e| e.to_string())?;
        if &ours != real_bytes {
            let first = ours
                .iter()
                .zip(real_bytes.iter())
                .position(|(a, b)| a != b)
                .unwrap_or(ours.len().min(real_bytes.len()));
            return Err(format!(
                "{name}: {} vs {} bytes, first difference at {first}",
                ours.len(),
                real_bytes.len()
            ));
        }
    }
    Ok(())
}

fn real_stores() -> Option<PathBuf> {
    let dir = std::env::var_os("SHAMAP_REAL_NUDB").map(PathBuf::from);
    if dir.is_none() {
        eprintln!("SHAMAP_REAL_NUDB unset: no databases of the real NuDB to compare with");
    }
    dir
}

#[test]
fn databases_of_the_real_nudb_are_rewritten_byte_for_byte() {
    let Some(root) = real_stores() else { return };
    let mut compared = 0;
    let names = std::env::var("SHAMAP_REAL_NUDB_STORES")
        .unwrap_or_else(|_| "mainnet:session,history:reopen".to_owned());
    for spec in names.split(',') {
        let (name, mode) = spec.split_once(':').unwrap_or((spec, "session"));
        let real = root.join(name).join("nudb");
        assert!(real.join("nudb.dat").exists(), "{}", real.display());
        let out = tempfile::tempdir().expect("tempdir");
        let r = replay(&real, out.path(), mode == "reopen");
        assert_eq!(r, Ok(()), "{name} ({mode})");
        compared += 1;
    }
    assert!(compared > 0);
}
