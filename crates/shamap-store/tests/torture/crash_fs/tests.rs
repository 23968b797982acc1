//! The crash file system itself, against what a power loss may and may not
//! do. Needs FUSE (root and `/dev/fuse`); says so and passes where it
//! cannot mount, as the tmpfs tests do.

use super::*;
use rand::SeedableRng;
use std::io::Write;

fn mounted() -> Option<Mounted> {
    match Mounted::mount(None, "db") {
        Ok(m) => Some(m),
        Err(why) => {
            eprintln!("crash_fs: FUSE not available here ({why}); skipped");
            None
        }
    }
}

/// Synced bytes are always whole; unsynced pages are each either the
/// new or the old bytes; a never-synced name may vanish, a synced one
/// never; every loss pattern appears over many power losses.
#[test]
fn power_loss_keeps_the_synced_and_drops_any_subset_of_the_rest() {
    let Some(m) = mounted() else { return };
    let db = m.path().join("db");
    let old: Vec<u8> = (0..8 * PAGE).map(|i| (i % 251) as u8).collect();
    let new: Vec<u8> = (0..8 * PAGE).map(|i| (i % 13) as u8 + 1).collect();
    {
        let mut f = std::fs::File::create(db.join("a")).expect("create");
        f.write_all(&old).expect("write");
        f.sync_data().expect("sync");
        std::fs::File::open(&db)
            .expect("dir")
            .sync_all()
            .expect("dir sync");
        // Pages 2..6 rewritten, four more pages appended, not synced.
        use std::os::unix::fs::FileExt;
        f.write_all_at(&new[2 * PAGE as usize..6 * PAGE as usize], 2 * PAGE)
            .expect("rewrite");
        f.write_all_at(&new[..4 * PAGE as usize], 8 * PAGE)
            .expect("append");
        let mut b = std::fs::File::create(db.join("b")).expect("create b");
        b.write_all(b"never synced name").expect("write b");
        b.sync_all().expect("sync b");
    }
    let out = tempfile::tempdir().expect("tempdir");
    let seed: u64 = rand::random();
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut patterns = std::collections::HashSet::new();
    let mut b_lost = 0;
    for _ in 0..200 {
        let to = out.path().join("img");
        m.power_loss(&mut rng, &to).expect("image");
        let a = std::fs::read(to.join("db/a")).expect("a survives: its name was synced");
        assert!(a.len() >= old.len(), "seed {seed}: synced length lost");
        assert!(
            (a.len() as u64).is_multiple_of(PAGE),
            "seed {seed}: {}",
            a.len()
        );
        assert_eq!(
            a[..2 * PAGE as usize],
            old[..2 * PAGE as usize],
            "seed {seed}"
        );
        assert_eq!(
            a[6 * PAGE as usize..8 * PAGE as usize],
            old[6 * PAGE as usize..],
            "seed {seed}"
        );
        let mut pattern = 0u32;
        let page_of = |v: &[u8], p: u64| v[(p * PAGE) as usize..((p + 1) * PAGE) as usize].to_vec();
        let zeros = vec![0u8; PAGE as usize];
        for page in (2..6).chain(8..(a.len() as u64 / PAGE)) {
            let got = page_of(&a, page);
            let (was, now) = if page < 6 {
                (page_of(&old, page), page_of(&new, page))
            } else {
                (zeros.clone(), page_of(&new, page - 8))
            };
            assert!(
                got == was || got == now,
                "seed {seed}: page {page} is neither"
            );
            if got == now && got != was {
                pattern |= 1 << page;
            }
        }
        patterns.insert((a.len(), pattern));
        match std::fs::read(to.join("db/b")) {
            Ok(b) => assert!(
                b == b"never synced name",
                "seed {seed}: b's data was synced"
            ),
            Err(_) => b_lost += 1,
        }
    }
    assert!(
        patterns.len() > 20,
        "seed {seed}: only {} loss patterns",
        patterns.len()
    );
    assert!(
        b_lost > 0 && b_lost < 200,
        "seed {seed}: b lost {b_lost} of 200 times"
    );
}

/// Writes `bytes` as the file `path` and syncs it.
fn write_synced(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).expect("write");
    std::fs::File::open(path)
        .expect("open")
        .sync_all()
        .expect("sync");
}

/// A rename made durable by a directory sync survives; the renamed
/// file's synced bytes with it.
#[test]
fn a_synced_rename_survives_and_an_unsynced_one_may_not() {
    let Some(m) = mounted() else { return };
    let db = m.path().join("db");
    write_synced(&db.join("x.tmp"), b"first");
    std::fs::rename(db.join("x.tmp"), db.join("x")).expect("rename");
    std::fs::File::open(&db)
        .expect("dir")
        .sync_all()
        .expect("dir sync");
    write_synced(&db.join("y.tmp"), b"second");
    std::fs::rename(db.join("y.tmp"), db.join("x")).expect("rename over");
    let out = tempfile::tempdir().expect("tempdir");
    let mut rng = SmallRng::seed_from_u64(41);
    let mut seen = std::collections::HashSet::new();
    for _ in 0..60 {
        let to = out.path().join("img");
        m.power_loss(&mut rng, &to).expect("image");
        let x = std::fs::read(to.join("db/x")).expect("x is durable");
        assert!(x == b"first" || x == b"second", "{x:?}");
        seen.insert(x);
        assert!(!to.join("db/x.tmp").exists());
    }
    assert_eq!(seen.len(), 2, "both outcomes of the unsynced rename");
}

/// The cut armed on a change: that change and every later one never
/// reach the image, every earlier synced one does, and the writer
/// held at the cut gets an error once the image is made.
#[test]
fn the_armed_cut_falls_on_its_change_and_holds_the_writer() {
    let Some(m) = mounted() else { return };
    let db = m.path().join("db");
    let mut f = std::fs::File::create(db.join("log")).expect("create");
    f.sync_all().expect("sync");
    std::fs::File::open(&db)
        .expect("dir")
        .sync_all()
        .expect("dir sync");
    // Each record: a write and a sync, two changes. The cut on the
    // 7th: the fourth record's write.
    m.arm(7);
    let writer = std::thread::spawn(move || {
        for i in 0u8..10 {
            let r = f.write_all(&[i + 1; 100]).and_then(|()| f.sync_data());
            if r.is_err() {
                return i;
            }
        }
        10
    });
    let start = std::time::Instant::now();
    while m.cut().is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the cut never fell"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // Three changes before arming (create, two syncs): the 7th from then
    // is the 10th.
    assert_eq!(m.cut().as_deref(), Some("on change 10 (a write)"));
    let out = tempfile::tempdir().expect("tempdir");
    let mut rng = SmallRng::seed_from_u64(7);
    for _ in 0..20 {
        let to = out.path().join("img");
        m.power_loss(&mut rng, &to).expect("image");
        let log = std::fs::read(to.join("db/log")).expect("log");
        let want: Vec<u8> = (1u8..=3).flat_map(|i| [i; 100]).collect();
        assert_eq!(log, want, "exactly the three synced records");
    }
    drop(m);
    assert_eq!(
        writer.join().expect("writer"),
        3,
        "the fourth record failed"
    );
}
