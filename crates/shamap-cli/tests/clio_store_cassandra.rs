//! `shamap clio verify` against a real Cassandra named by `SHAMAP_CASSANDRA`
//! (`HOST:PORT`; `scripts/cassandra.sh start` starts one at 127.0.0.1:9042).
//! Ledgers are written into Clio's schema by `shamap_store::clio::ClioLoader`
//! (as Clio's ETL writes them); the faults are made with plain CQL, as any
//! client of the cluster could. Without a cluster each test says it skips.

use std::collections::BTreeSet;
use std::time::Duration;

use shamap::Key;
use shamap_ledger::dump;
use shamap_store::clio::{random_chain, ChainShape, ClioLedger, ClioLoader};

use crate::store_cassandra::cluster;
use crate::support::{data, one_error_line, shamap, shamap_within, Run};

const ACCOUNT_38129: &str = "2C23D15B6B549123FB351E4B5CDE81C564318EB845449CD43C3EA7953C4DB452";
const TX_38129: &str = "DB83BF807416C5B3499A73130F843CF615AB8E797D79FE7D330ADF1BFA93951A";
const LEDGER_38129: &str = "E6DB7365949BF9814D76BCC730B01818EB9136A89DB224F3F9F5AAE4569D758E";

fn url(host: &str, name: &str) -> String {
    format!("cassandra://{host}/cli_clio_{name}_{}", std::process::id())
}

fn ledger_38129() -> ClioLedger {
    let bytes = std::fs::read(data("ledger-full-38129.json")).expect("read");
    let d = dump::parse(&bytes).expect("parse");
    ClioLedger {
        header: d.header.complete_header(),
        objects: d
            .state
            .expect("state")
            .into_iter()
            .map(|e| (e.key, e.data))
            .collect(),
        transactions: d
            .transactions
            .expect("txs")
            .into_iter()
            .map(|t| (t.tx, t.meta))
            .collect(),
    }
}

fn load(url: &str, chain: &[ClioLedger]) -> ClioLoader {
    let mut l = ClioLoader::create_fresh(url).expect("create the keyspace");
    l.load_initial(&chain[0]).expect("first ledger");
    for x in &chain[1..] {
        l.load_next(x).expect("next ledger");
    }
    l
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn verify(args: &[&str]) -> Run {
    let mut all = vec!["clio", "verify"];
    all.extend_from_slice(args);
    shamap(all, None)
}

/// Exit `status`, one `error:` line on stderr (returned), no panic.

#[test]
fn ledger_38129_verifies_in_text_and_json() {
    let Some(host) = cluster("ledger_38129_verifies_in_text_and_json") else {
        return;
    };
    let u = url(&host, "l38129");
    let loader = load(&u, &[ledger_38129()]);
    let r = verify(&["--db", &u]);
    assert_eq!(r.code, Some(0), "{} {}", r.stdout, r.stderr);
    assert_eq!(
        r.stdout,
        format!(
            "ledger 38129 (full build: 261 state entries, 1 transaction)\n\
             account_hash {ACCOUNT_38129} match\n\
             transaction_hash {TX_38129} match\n\
             ledger_hash {LEDGER_38129} match\n\
             audit of the state at ledger 38129: 261 live keys re-read, all match\n"
        )
    );
    let r = verify(&["--db", &u, "--ledger", "38129", "--json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    assert_eq!(v["ok"], true);
    assert_eq!(v["checked"], 3);
    assert_eq!(v["ledgers"][0]["account_hash"]["status"], "match");
    assert_eq!(v["ledgers"][0]["account_hash"]["computed"], ACCOUNT_38129);
    assert_eq!(v["ledgers"][0]["parent_hash"], serde_json::Value::Null);
    // Verified into --state, the store proves keys of ledger 38129 as the
    // file does, by ledger hash and account_hash, and check-proof accepts.
    let dir = tempfile::tempdir().expect("temp dir");
    let st = dir.path().join("state");
    let st = st.to_str().expect("path");
    let r = verify(&["--db", &u, "--state", st]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    const KEY: &str = "02CE52E3E46AD340B1C7900F86AFB959AE0C246916E3463905EDD61DE26FFFDD";
    let file = data("ledger-38129.json");
    let from_file = shamap(["prove", file.to_str().expect("path"), KEY], None);
    assert_eq!(from_file.code, Some(0), "{}", from_file.stderr);
    for root in [LEDGER_38129, ACCOUNT_38129] {
        let r = shamap(["prove", "--db", st, "--root", root, KEY], None);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        assert_eq!(r.stdout, from_file.stdout);
    }
    let proof = dir.path().join("p.json");
    std::fs::write(&proof, from_file.stdout.as_bytes()).expect("write");
    let r = shamap(
        [
            "check-proof",
            "--root",
            ACCOUNT_38129,
            "--key",
            KEY,
            proof.to_str().expect("path"),
        ],
        None,
    );
    assert_eq!(r.code, Some(0), "{} {}", r.stdout, r.stderr);
    // Outside the range: unusable.
    let e = one_error_line(&verify(&["--db", &u, "--ledger", "38130"]), 2);
    assert!(
        e.contains("not all within ledger_range 38129..38129"),
        "{e}"
    );
    loader.drop_keyspace().expect("drop");
}

const SHAPE: ChainShape = ChainShape {
    first_seq: 500,
    ledgers: 210,
    initial_objects: 200,
    changes: 8,
    max_transactions: 3,
};

#[test]
fn chain_verifies_from_start_middle_and_resumes_with_state() {
    let Some(host) = cluster("chain_verifies_from_start_middle_and_resumes_with_state") else {
        return;
    };
    let u = url(&host, "chain");
    let chain = random_chain(31, SHAPE);
    let loader = load(&u, &chain);
    let r = verify(&["--db", &u]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let headings = r
        .stdout
        .lines()
        .filter(|l| l.starts_with("ledger "))
        .count();
    assert_eq!(headings, 210);
    assert_eq!(r.stdout.matches(" match\n").count(), 630 + 1);
    assert!(r.stdout.ends_with("all match\n"), "{}", r.stdout);
    assert!(!r.stdout.contains("MISMATCH"));

    let r = verify(&["--db", &u, "--ledger", "600"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stdout.starts_with("ledger 600 (full build: "),
        "{}",
        r.stdout
    );

    let r = verify(&["--db", &u, "--from", "650", "--to", "709", "--json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    assert_eq!(v["ledgers"].as_array().map(Vec::len), Some(60));
    assert_eq!(v["mismatches"], 0);

    // --state: the first 100 ledgers, then a second run resumes.
    let dir = tempfile::tempdir().expect("temp dir");
    let state = dir.path().join("state");
    let st = state.to_str().expect("path");
    let r = verify(&["--db", &u, "--to", "599", "--state", st, "--cache-mb", "1"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(
        r.stdout
            .lines()
            .filter(|l| l.starts_with("ledger "))
            .count(),
        100
    );
    let r = verify(&["--db", &u, "--state", st, "--cache-mb", "1"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stdout.starts_with("resuming after ledger 599"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("\nledger 600 ("), "{}", r.stdout);
    assert!(!r.stdout.contains("full build"), "resumed, not rebuilt");
    assert_eq!(
        r.stdout
            .lines()
            .filter(|l| l.starts_with("ledger "))
            .count(),
        110
    );
    let r = verify(&["--db", &u, "--state", st]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("nothing to verify"), "{}", r.stdout);
    loader.drop_keyspace().expect("drop");
}

/// What ledger `seq` of `chain` did to the state.
struct Changes {
    created: Vec<Key>,
    modified: Vec<Key>,
    live_before: BTreeSet<Key>,
    live_after: BTreeSet<Key>,
}

fn changes_at(chain: &[ClioLedger], seq: u32) -> Changes {
    let mut live = BTreeSet::new();
    for l in chain {
        let s = l.header.expect("header").seq;
        let before = live.clone();
        let (mut created, mut modified) = (Vec::new(), Vec::new());
        for (k, v) in &l.objects {
            if v.is_empty() {
                live.remove(k);
            } else if live.insert(*k) {
                created.push(*k);
            } else {
                modified.push(*k);
            }
        }
        if s == seq {
            return Changes {
                created,
                modified,
                live_before: before,
                live_after: live,
            };
        }
    }
    panic!("no ledger {seq}");
}

const FAULT_SHAPE: ChainShape = ChainShape {
    first_seq: 100,
    ledgers: 12,
    initial_objects: 40,
    changes: 6,
    max_transactions: 3,
};

/// A ledger after the first with a created key, a modified key, a
/// deletion-free neighbourhood and a transaction, from seed 5's chain.
fn fault_ledger(chain: &[ClioLedger]) -> u32 {
    for l in &chain[3..] {
        let seq = l.header.expect("h").seq;
        let c = changes_at(chain, seq);
        if !c.created.is_empty() && !c.modified.is_empty() && !l.transactions.is_empty() {
            return seq;
        }
    }
    panic!("seed 5's chain has no ledger with a create, a modify and a transaction");
}

/// Loads seed 5's chain into its own keyspace, damages it with `cql`
/// (given the chain, the ledger k and the keyspace), and runs verify.
fn faulted(
    host: &str,
    name: &str,
    damage: impl FnOnce(&[ClioLedger], u32, &str) -> Vec<String>,
) -> (Run, u32, Vec<ClioLedger>, ClioLoader, tempfile::TempDir) {
    let u = url(host, name);
    let chain = random_chain(5, FAULT_SHAPE);
    let k = fault_ledger(&chain);
    let loader = load(&u, &chain);
    let ks = u.rsplit('/').next().expect("keyspace").to_owned();
    for cql in damage(&chain, k, &ks) {
        loader.execute(&cql).expect("damage");
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let st = dir.path().join("s");
    let r = shamap_within(
        [
            "clio",
            "verify",
            "--db",
            &u,
            "--state",
            st.to_str().expect("path"),
        ],
        None,
        Duration::from_secs(120),
    );
    (r, k, chain, loader, dir)
}

/// `--state` recorded ledger k-1 (the last good one), not k.
fn state_stopped_before(dir: &tempfile::TempDir, k: u32) {
    let store = shamap_store::LogStore::open(dir.path().join("s")).expect("state");
    let rec = shamap_store::clio::read_verified(&store)
        .expect("record")
        .expect("some ledgers verified");
    assert_eq!(rec.seq, k - 1);
}

#[test]
fn each_fault_is_caught_at_its_ledger() {
    let Some(host) = cluster("each_fault_is_caught_at_its_ledger") else {
        return;
    };
    // A flipped byte in an object modified at k.
    let (r, k, chain, l, dir) = faulted(&host, "flip", |chain, k, ks| {
        let c = changes_at(chain, k);
        let key = c.modified[0];
        let l = &chain[(k - 100) as usize];
        let mut v = l
            .objects
            .iter()
            .find(|(x, _)| *x == key)
            .expect("object")
            .1
            .clone();
        v[5] ^= 0x40;
        vec![format!(
            "UPDATE {ks}.objects SET object = 0x{} WHERE key = 0x{} AND sequence = {k}",
            hex(&v),
            hex(&key.0)
        )]
    });
    let e = one_error_line(&r, 1);
    let key = changes_at(&chain, k).modified[0];
    assert!(e.contains(&format!("ledger {k}: account_hash ")), "{e}");
    assert!(e.contains(&key.to_string()), "{e}");
    assert!(r.stdout.contains(&format!("ledger {k} (")), "{}", r.stdout);
    assert!(!r.stdout.contains(&format!("ledger {} (", k + 1)));
    state_stopped_before(&dir, k);
    l.drop_keyspace().expect("drop");

    // A diff row missing (of a key modified at k).
    let (r, k, _chain, l, dir) = faulted(&host, "nodiff", |chain, k, ks| {
        let key = changes_at(chain, k).modified[0];
        vec![format!(
            "DELETE FROM {ks}.diff WHERE seq = {k} AND key = 0x{}",
            hex(&key.0)
        )]
    });
    let e = one_error_line(&r, 1);
    assert!(
        e.starts_with(&format!("error: ledger {k}: account_hash ")),
        "{e}"
    );
    state_stopped_before(&dir, k);
    l.drop_keyspace().expect("drop");

    // An object written at k without its diff row (a key live, unchanged
    // at k): the ledger-by-ledger pass reads only diff keys, so every
    // ledger matches; the final audit finds the row, at k.
    let stray = |chain: &[ClioLedger], k: u32| {
        let changed: BTreeSet<Key> = chain[(k - 100) as usize]
            .objects
            .iter()
            .map(|(x, _)| *x)
            .collect();
        let last: BTreeSet<Key> = chain[(k - 100) as usize + 1..]
            .iter()
            .flat_map(|l| l.objects.iter().map(|(x, _)| *x))
            .collect();
        *changes_at(chain, k)
            .live_before
            .iter()
            .find(|x| !changed.contains(x) && !last.contains(x))
            .expect("a key unchanged from k on")
    };
    let (r, k, chain, l, dir) = faulted(&host, "nodiffobj", |chain, k, ks| {
        vec![format!(
            "INSERT INTO {ks}.objects (key, sequence, object) VALUES (0x{}, {k}, 0x{})",
            hex(&stray(chain, k).0),
            hex(&[7u8; 30])
        )]
    });
    let e = one_error_line(&r, 1);
    assert!(
        e.starts_with(&format!(
            "error: ledger {k}: key {}: an object written at ledger {k} that no diff row lists",
            stray(&chain, k)
        )),
        "{e}"
    );
    assert!(
        r.stdout.contains("audit of the state at ledger 111: "),
        "{}",
        r.stdout
    );
    state_stopped_before(&dir, 112);
    l.drop_keyspace().expect("drop");

    // A successor record removed (of a key created at k).
    let (r, k, chain, l, dir) = faulted(&host, "nosucc", |chain, k, ks| {
        let key = changes_at(chain, k).created[0];
        vec![format!(
            "DELETE FROM {ks}.successor WHERE key = 0x{} AND seq = {k}",
            hex(&key.0)
        )]
    });
    let e = one_error_line(&r, 1);
    let key = changes_at(&chain, k).created[0];
    assert!(
        e.starts_with(&format!("error: ledger {k}: key {key}: no successor row")),
        "{e}"
    );
    state_stopped_before(&dir, k);
    l.drop_keyspace().expect("drop");

    // A successor record pointing past a key (the predecessor of a key
    // created at k skips it).
    let (r, k, chain, l, dir) = faulted(&host, "pastsucc", |chain, k, ks| {
        let c = changes_at(chain, k);
        let key = c.created[0];
        let pred = c
            .live_after
            .range(..key)
            .next_back()
            .copied()
            .unwrap_or(Key([0; 32]));
        let after = c
            .live_after
            .range((std::ops::Bound::Excluded(key), std::ops::Bound::Unbounded))
            .next()
            .copied()
            .unwrap_or(Key([0xFF; 32]));
        vec![format!(
            "UPDATE {ks}.successor SET next = 0x{} WHERE key = 0x{} AND seq = {k}",
            hex(&after.0),
            hex(&pred.0)
        )]
    });
    let e = one_error_line(&r, 1);
    let c = changes_at(&chain, k);
    let key = c.created[0];
    let pred = c
        .live_after
        .range(..key)
        .next_back()
        .copied()
        .unwrap_or(Key([0; 32]));
    assert!(
        e.starts_with(&format!(
            "error: ledger {k}: key {pred}: its successor at ledger {k} is "
        )) && e.contains(&format!("but the next live key is {key}")),
        "{e}"
    );
    state_stopped_before(&dir, k);
    l.drop_keyspace().expect("drop");

    // A header whose stored hash differs from its fields.
    let (r, k, _chain, l, dir) = faulted(&host, "hdr", |chain, k, ks| {
        let h = chain[(k - 100) as usize].header.expect("h");
        let mut blob = h.serialize().to_vec();
        let mut wrong = h.hash().0;
        wrong[0] ^= 1;
        blob.extend_from_slice(&wrong);
        vec![format!(
            "UPDATE {ks}.ledgers SET header = 0x{} WHERE sequence = {k}",
            hex(&blob)
        )]
    });
    let e = one_error_line(&r, 1);
    assert!(
        e.starts_with(&format!("error: ledger {k}: the stored ledger hash ")),
        "{e}"
    );
    state_stopped_before(&dir, k);
    l.drop_keyspace().expect("drop");

    // A ledger missing from the range.
    let (r, k, _chain, l, dir) = faulted(&host, "noledger", |_, k, ks| {
        vec![format!("DELETE FROM {ks}.ledgers WHERE sequence = {k}")]
    });
    let e = one_error_line(&r, 2);
    assert!(
        e.starts_with(&format!("error: ledger {k}: no row in table ledgers")),
        "{e}"
    );
    state_stopped_before(&dir, k);
    l.drop_keyspace().expect("drop");

    // A transaction row missing.
    let (r, k, chain, l, dir) = faulted(&host, "notx", |chain, k, ks| {
        let (tx, _) = &chain[(k - 100) as usize].transactions[0];
        let id = shamap::xrpl::tx::transaction_id(tx);
        vec![format!(
            "DELETE FROM {ks}.transactions WHERE hash = 0x{}",
            hex(&id.0)
        )]
    });
    let e = one_error_line(&r, 2);
    let id = shamap::xrpl::tx::transaction_id(&chain[(k - 100) as usize].transactions[0].0);
    assert!(
        e.starts_with(&format!("error: ledger {k}: transaction {id}: ")),
        "{e}"
    );
    state_stopped_before(&dir, k);
    l.drop_keyspace().expect("drop");
}

#[test]
fn the_first_ledgers_successor_list_is_checked() {
    let Some(host) = cluster("the_first_ledgers_successor_list_is_checked") else {
        return;
    };
    // The list at the first ledger skips a key.
    let u = url(&host, "firstlist");
    let chain = random_chain(9, FAULT_SHAPE);
    let loader = load(&u, &chain);
    let ks = u.rsplit('/').next().expect("ks");
    let keys: Vec<Key> = chain[0]
        .objects
        .iter()
        .map(|(k, _)| *k)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    loader
        .execute(&format!(
            "UPDATE {ks}.successor SET next = 0x{} WHERE key = 0x{} AND seq = 100",
            hex(&keys[6].0),
            hex(&keys[4].0)
        ))
        .expect("damage");
    let r = verify(&["--db", &u, "--ledger", "100"]);
    let e = one_error_line(&r, 1);
    // The state misses a key: a scan of objects names it.
    assert_eq!(
        e,
        format!(
            "error: ledger 100: key {}: live at ledger 100 (its object is of ledger 100) but missing from the successor list\n",
            keys[5]
        )
    );
    assert!(r.stdout.contains(" MISMATCH expected "), "{}", r.stdout);
    // A key whose successor row is gone: the list stops there.
    loader
        .execute(&format!(
            "DELETE FROM {ks}.successor WHERE key = 0x{} AND seq = 100",
            hex(&keys[6].0)
        ))
        .expect("damage");
    let r = verify(&["--db", &u, "--ledger", "100"]);
    let e = one_error_line(&r, 1);
    assert!(
        e.starts_with(&format!(
            "error: ledger 100: key {}: the successor list stops here",
            keys[6]
        )),
        "{e}"
    );
    // A listed key without an object.
    loader
        .execute(&format!(
            "DELETE FROM {ks}.objects WHERE key = 0x{}",
            hex(&keys[4].0)
        ))
        .expect("damage");
    let r = verify(&["--db", &u, "--ledger", "100"]);
    let e = one_error_line(&r, 1);
    assert!(
        e.starts_with(&format!(
            "error: ledger 100: key {}: in the successor list",
            keys[4]
        )),
        "{e}"
    );
    loader.drop_keyspace().expect("drop");
}

#[test]
fn unusable_databases_are_one_line_and_status_2() {
    let Some(host) = cluster("unusable_databases_are_one_line_and_status_2") else {
        return;
    };
    // No such keyspace.
    let r = verify(&["--db", &format!("cassandra://{host}/no_such_clio_ks")]);
    let e = one_error_line(&r, 2);
    assert!(
        e.contains("keyspace 'no_such_clio_ks' does not exist"),
        "{e}"
    );
    // A keyspace without Clio's tables.
    let u = url(&host, "empty");
    let loader = ClioLoader::create_fresh(&u).expect("create");
    let ks = u.rsplit('/').next().expect("ks").to_owned();
    loader
        .execute(&format!("DROP TABLE {ks}.successor"))
        .expect("drop a table");
    let e = one_error_line(&verify(&["--db", &u]), 2);
    assert!(
        e.contains("not a Clio database: cannot query table 'successor'"),
        "{e}"
    );
    loader.drop_keyspace().expect("drop");
    // An empty range.
    let loader = ClioLoader::create_fresh(&u).expect("create");
    let e = one_error_line(&verify(&["--db", &u]), 2);
    assert!(e.contains("table ledger_range is empty"), "{e}");
    loader.drop_keyspace().expect("drop");
    // Nothing listening: bounded time.
    let r = shamap_within(
        ["clio", "verify", "--db", "cassandra://127.0.0.1:1/ks"],
        None,
        Duration::from_secs(60),
    );
    let e = one_error_line(&r, 2);
    assert!(e.contains("cannot connect to 127.0.0.1:1"), "{e}");
}

/// `--follow` verifies ledgers loaded after it started, each as it
/// appears, and records them in `--state`; Ctrl-C stops it cleanly.
#[test]
fn follow_verifies_new_ledgers_as_they_appear() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let Some(host) = cluster("follow_verifies_new_ledgers_as_they_appear") else {
        return;
    };
    let u = url(&host, "follow");
    let chain = random_chain(12, FAULT_SHAPE);
    let mut loader = load(&u, &chain[..5]);
    let dir = tempfile::tempdir().expect("temp dir");
    let st = dir.path().join("s");
    let mut child = Command::new(env!("CARGO_BIN_EXE_shamap"))
        .args(["clio", "verify", "--db", &u, "--follow", "--state"])
        .arg(&st)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let wait_for = |heading: &str| {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(l) if l.contains("MISMATCH") => panic!("{l}"),
                Ok(l) if l.starts_with(heading) => return,
                Ok(_) => {}
                Err(_) => panic!("no '{heading}' line within 60 s"),
            }
        }
    };
    wait_for("ledger 104 ");
    for l in &chain[5..12] {
        loader.load_next(l).expect("load");
    }
    wait_for("ledger 111 ");
    // Ctrl-C (SIGINT): the run stops cleanly, status 0, every ledger
    // verified recorded.
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(sent.success());
    wait_for("stopped (Ctrl-C) after ledger 111");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if std::time::Instant::now() > deadline {
            child.kill().expect("kill");
            panic!("no exit within 30 s of Ctrl-C");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
    let store = shamap_store::LogStore::open(&st).expect("state");
    let rec = shamap_store::clio::read_verified(&store)
        .expect("record")
        .expect("recorded");
    assert_eq!(rec.seq, 111);
    drop(store);
    loader.drop_keyspace().expect("drop");
}
