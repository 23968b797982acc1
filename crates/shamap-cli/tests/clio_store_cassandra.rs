//! `shamap clio verify` against a real Cassandra named by `SHAMAP_CASSANDRA`
//! (`HOST:PORT`; `scripts/cassandra.sh start` starts one at 127.0.0.1:9042).
//! Ledgers are written into Clio's schema by `shamap_clio::ClioLoader`
//! (as Clio's ETL writes them); the faults are made with plain CQL, as any
//! client of the cluster could. Without a cluster each test says it skips.

use std::collections::BTreeSet;
use std::ops::Bound::{Excluded, Unbounded};
use std::time::Duration;

use shamap::Key;
use shamap_clio::{random_chain, ChainShape, ClioLedger, ClioLoader, Tables};

use crate::cassandra_cluster::cluster_or_skip;
use crate::clio_ledgers::{ledger_38129, load, load_with, shape};
use crate::support::{
    assert_contains, assert_starts_with, data, ledger_headings, one_error_line, shamap,
    shamap_within, Run, ACCOUNT_38129, LEDGER_38129, TX_38129,
};

fn url(host: &str, name: &str) -> String {
    format!("cassandra://{host}/cli_clio_{name}_{}", std::process::id())
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Keyspace `name` (its URL) with the chain of `seed` and `shape` (also
/// returned) loaded.
fn chain_in(
    host: &str,
    name: &str,
    seed: u64,
    shape: ChainShape,
) -> (String, Vec<ClioLedger>, ClioLoader) {
    let u = url(host, name);
    let chain = random_chain(seed, shape);
    let loader = load(&u, &chain);
    (u, chain, loader)
}

fn verify(args: &[&str]) -> Run {
    let mut all = vec!["clio", "verify"];
    all.extend_from_slice(args);
    shamap(all, None)
}

#[test]
fn ledger_38129_verifies_in_text_and_json() {
    let host = cluster_or_skip!();
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
        let r = shamap(["prove", "--db", st, "--root", root, "--key", KEY], None);
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
    assert_contains(&e, "not all within ledger_range 38129..38129");
    loader.drop_keyspace().expect("drop");
}

const SHAPE: ChainShape = shape(500, 210, 200, 8, 3);

#[test]
fn chain_verifies_from_start_middle_and_resumes_with_state() {
    let host = cluster_or_skip!();
    let (u, _, loader) = chain_in(&host, "chain", 31, SHAPE);
    let r = verify(&["--db", &u]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(ledger_headings(&r.stdout).len(), 210);
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
    assert_eq!(ledger_headings(&r.stdout).len(), 100);
    let r = verify(&["--db", &u, "--state", st, "--cache-mb", "1"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_starts_with(&r.stdout, "resuming after ledger 599");
    assert!(r.stdout.contains("\nledger 600 ("), "{}", r.stdout);
    assert!(!r.stdout.contains("full build"), "resumed, not rebuilt");
    assert_eq!(ledger_headings(&r.stdout).len(), 110);
    let r = verify(&["--db", &u, "--state", st]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("nothing to verify"), "{}", r.stdout);
    loader.drop_keyspace().expect("drop");
}

/// What ledger `seq` of `chain` did to the state.
pub(crate) struct Changes {
    pub(crate) created: Vec<Key>,
    pub(crate) modified: Vec<Key>,
    pub(crate) live_before: BTreeSet<Key>,
    pub(crate) live_after: BTreeSet<Key>,
}

pub(crate) fn changes_at(chain: &[ClioLedger], seq: u32) -> Changes {
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

const FAULT_SHAPE: ChainShape = shape(100, 12, 40, 6, 3);

/// Seed 5's chain, the ledger k its faults are made at (one after the first
/// with a created key, a modified key and a transaction), and what k did.
struct Target {
    chain: Vec<ClioLedger>,
    k: u32,
    changes: Changes,
}

impl Target {
    fn new() -> Target {
        let chain = random_chain(5, FAULT_SHAPE);
        for l in &chain[3..] {
            let k = l.header.expect("h").seq;
            let changes = changes_at(&chain, k);
            if !changes.created.is_empty()
                && !changes.modified.is_empty()
                && !l.transactions.is_empty()
            {
                return Target { chain, k, changes };
            }
        }
        panic!("seed 5's chain has no ledger with a create, a modify and a transaction");
    }

    /// Ledger k.
    fn ledger(&self) -> &ClioLedger {
        &self.chain[(self.k - FAULT_SHAPE.first_seq) as usize]
    }
}

/// A `clio verify --state` run over a damaged copy of a [`Target`].
struct Faulted {
    run: Run,
    k: u32,
    loader: ClioLoader,
    dir: tempfile::TempDir,
}

/// Loads `t`'s chain into keyspace `name`, damages it with the CQL `damage`
/// makes (given the keyspace), and runs verify with `--state`.
fn faulted(host: &str, t: &Target, name: &str, damage: impl FnOnce(&str) -> String) -> Faulted {
    let u = url(host, name);
    let loader = load(&u, &t.chain);
    let ks = u.rsplit('/').next().expect("keyspace");
    loader.execute(&damage(ks)).expect("damage");
    let dir = tempfile::tempdir().expect("temp dir");
    let st = dir.path().join("s");
    let st = st.to_str().expect("path");
    let args = ["clio", "verify", "--db", &u, "--state", st];
    let run = shamap_within(args, None, Duration::from_secs(120));
    Faulted {
        run,
        k: t.k,
        loader,
        dir,
    }
}

/// The last ledger the `--state` store in `dir` records as verified.
fn verified_through(dir: &std::path::Path) -> u32 {
    let store = shamap_store::LogStore::open(dir).expect("state");
    let rec = shamap_clio::read_verified(&store)
        .expect("record")
        .expect("some ledgers verified");
    rec.seq
}

impl Faulted {
    /// The run's one error line, after exit `status`.
    fn error(&self, status: i32) -> String {
        one_error_line(&self.run, status)
    }

    /// `--state` recorded ledger `last` (the last good one), not the
    /// ledger after it; then the keyspace is dropped.
    fn stopped_at(self, last: u32) {
        assert_eq!(verified_through(&self.dir.path().join("s")), last);
        self.loader.drop_keyspace().expect("drop");
    }

    /// Exit `status`, an error line starting with `prefix`, and `--state`
    /// stopped at ledger k-1.
    fn caught_at_k(self, status: i32, prefix: &str) {
        let e = self.error(status);
        assert!(e.starts_with(prefix), "{e}");
        let k = self.k;
        self.stopped_at(k - 1);
    }
}

#[test]
fn each_fault_is_caught_at_its_ledger() {
    let host = cluster_or_skip!();
    let t = Target::new();
    let (k, c) = (t.k, &t.changes);

    // A flipped byte in an object modified at k.
    let key = c.modified[0];
    let (_, object) = t
        .ledger()
        .objects
        .iter()
        .find(|(x, _)| *x == key)
        .expect("object");
    let mut v = object.clone();
    v[5] ^= 0x40;
    let (v, hex_key) = (hex(&v), hex(&key.0));
    let f = faulted(&host, &t, "flip", |ks| {
        format!("UPDATE {ks}.objects SET object = 0x{v} WHERE key = 0x{hex_key} AND sequence = {k}")
    });
    let e = f.error(1);
    assert!(e.contains(&format!("ledger {k}: account_hash ")), "{e}");
    assert!(e.contains(&key.to_string()), "{e}");
    let out = &f.run.stdout;
    assert!(out.contains(&format!("ledger {k} (")), "{out}");
    assert!(!out.contains(&format!("ledger {} (", k + 1)));
    f.stopped_at(k - 1);

    // A diff row missing (of a key modified at k).
    let f = faulted(&host, &t, "nodiff", |ks| {
        format!("DELETE FROM {ks}.diff WHERE seq = {k} AND key = 0x{hex_key}")
    });
    f.caught_at_k(1, &format!("error: ledger {k}: account_hash "));

    // An object written at k without its diff row (a key live, unchanged
    // at k): the ledger-by-ledger pass reads only diff keys, so every
    // ledger matches; the final audit finds the row, at k.
    let keys_of = |ls: &[ClioLedger]| -> BTreeSet<Key> {
        ls.iter()
            .flat_map(|l| l.objects.iter().map(|(x, _)| *x))
            .collect()
    };
    let from_k = keys_of(&t.chain[(k - FAULT_SHAPE.first_seq) as usize..]);
    let stray = *c
        .live_before
        .iter()
        .find(|x| !from_k.contains(x))
        .expect("a key unchanged from k on");
    let (hex_stray, object) = (hex(&stray.0), hex(&[7u8; 30]));
    let f = faulted(&host, &t, "nodiffobj", |ks| {
        format!("INSERT INTO {ks}.objects (key, sequence, object) VALUES (0x{hex_stray}, {k}, 0x{object})")
    });
    let e = f.error(1);
    let want = format!(
        "error: ledger {k}: key {stray}: an object written at ledger {k} that no diff row lists"
    );
    assert!(e.starts_with(&want), "{e}");
    let out = &f.run.stdout;
    assert!(out.contains("audit of the state at ledger 111: "), "{out}");
    f.stopped_at(111);

    // A successor record removed (of a key created at k).
    let key = c.created[0];
    let hex_key = hex(&key.0);
    let f = faulted(&host, &t, "nosucc", |ks| {
        format!("DELETE FROM {ks}.successor WHERE key = 0x{hex_key} AND seq = {k}")
    });
    f.caught_at_k(
        1,
        &format!("error: ledger {k}: key {key}: no successor row"),
    );

    // A successor record pointing past a key (the predecessor of a key
    // created at k skips it).
    let live = &c.live_after;
    let pred = live.range(..key).next_back().copied();
    let pred = pred.unwrap_or(Key([0; 32]));
    let after = live.range((Excluded(key), Unbounded)).next().copied();
    let after = after.unwrap_or(Key([0xFF; 32]));
    let (hex_pred, hex_after) = (hex(&pred.0), hex(&after.0));
    let f = faulted(&host, &t, "pastsucc", |ks| {
        format!(
            "UPDATE {ks}.successor SET next = 0x{hex_after} WHERE key = 0x{hex_pred} AND seq = {k}"
        )
    });
    let e = f.error(1);
    let want = format!("error: ledger {k}: key {pred}: its successor at ledger {k} is ");
    let names = format!("but the next live key is {key}");
    assert!(e.starts_with(&want) && e.contains(&names), "{e}");
    f.stopped_at(k - 1);

    // A header whose stored hash differs from its fields.
    let h = t.ledger().header.expect("h");
    let mut blob = h.serialize().to_vec();
    let mut wrong = h.hash().0;
    wrong[0] ^= 1;
    blob.extend_from_slice(&wrong);
    let blob = hex(&blob);
    let f = faulted(&host, &t, "hdr", |ks| {
        format!("UPDATE {ks}.ledgers SET header = 0x{blob} WHERE sequence = {k}")
    });
    f.caught_at_k(1, &format!("error: ledger {k}: the stored ledger hash "));

    // A ledger_hashes row naming another ledger.
    let hash = h.hash();
    let hex_hash = hex(&hash.0);
    let f = faulted(&host, &t, "hashrow", |ks| {
        format!(
            "UPDATE {ks}.ledger_hashes SET sequence = {} WHERE hash = 0x{hex_hash}",
            k + 5
        )
    });
    f.caught_at_k(
        1,
        &format!(
            "error: ledger {k}: key {hash}: ledger_hashes maps the ledger's hash to ledger {}, not {k}",
            k + 5
        ),
    );

    // A ledger missing from the range.
    let f = faulted(&host, &t, "noledger", |ks| {
        format!("DELETE FROM {ks}.ledgers WHERE sequence = {k}")
    });
    f.caught_at_k(2, &format!("error: ledger {k}: no row in table ledgers"));

    // A transaction row missing.
    let id = shamap::xrpl::tx::transaction_id(&t.ledger().transactions[0].0);
    let hex_id = hex(&id.0);
    let f = faulted(&host, &t, "notx", |ks| {
        format!("DELETE FROM {ks}.transactions WHERE hash = 0x{hex_id}")
    });
    f.caught_at_k(2, &format!("error: ledger {k}: transaction {id}: "));
}

#[test]
fn the_first_ledgers_successor_list_is_checked() {
    let host = cluster_or_skip!();
    let (u, chain, loader) = chain_in(&host, "firstlist", 9, FAULT_SHAPE);
    let ks = u.rsplit('/').next().expect("ks");
    let keys: Vec<Key> = chain[0]
        .objects
        .iter()
        .map(|(k, _)| *k)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let hex_key = |i: usize| hex(&keys[i].0);
    // Damages the keyspace with `cql`, then verifies ledger 100: the run and
    // its one error line (exit 1).
    let damaged = |cql: String| {
        loader.execute(&cql).expect("damage");
        let r = verify(&["--db", &u, "--ledger", "100"]);
        let e = one_error_line(&r, 1);
        (r, e)
    };
    // The list at the first ledger skips a key.
    let (a, b) = (hex_key(6), hex_key(4));
    let (r, e) = damaged(format!(
        "UPDATE {ks}.successor SET next = 0x{a} WHERE key = 0x{b} AND seq = 100"
    ));
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
    let (_, e) = damaged(format!(
        "DELETE FROM {ks}.successor WHERE key = 0x{a} AND seq = 100"
    ));
    let want = format!(
        "error: ledger 100: key {}: the successor list stops here",
        keys[6]
    );
    assert!(e.starts_with(&want), "{e}");
    // A listed key without an object.
    let (_, e) = damaged(format!("DELETE FROM {ks}.objects WHERE key = 0x{b}"));
    let want = format!("error: ledger 100: key {}: in the successor list", keys[4]);
    assert!(e.starts_with(&want), "{e}");
    loader.drop_keyspace().expect("drop");
}

#[test]
fn unusable_databases_are_one_line_and_status_2() {
    let host = cluster_or_skip!();
    // No such keyspace.
    let r = verify(&["--db", &format!("cassandra://{host}/no_such_clio_ks")]);
    let e = one_error_line(&r, 2);
    assert_contains(&e, "keyspace 'no_such_clio_ks' does not exist");
    // A keyspace without Clio's tables.
    let u = url(&host, "empty");
    let loader = ClioLoader::create_fresh(&u).expect("create");
    let ks = u.rsplit('/').next().expect("ks").to_owned();
    loader
        .execute(&format!("DROP TABLE {ks}.successor"))
        .expect("drop a table");
    let e = one_error_line(&verify(&["--db", &u]), 2);
    let ks_lacks = format!("not a Clio database: keyspace '{ks}' lacks table successor (no table prefix); tables there that end in a Clio table's name: diff, ledger_hashes, ledger_range, ledger_transactions, ledgers, objects, transactions");
    assert_contains(&e, &ks_lacks);
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
    let host = cluster_or_skip!();
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
    assert_eq!(verified_through(&st), 111);
    loader.drop_keyspace().expect("drop");
}

/// A keyspace with a table prefix and Clio's whole schema (release 2.6's
/// index tables and the development branch's MPT history tables, with
/// rows; `migrator_status` rows) verifies with the prefix, from
/// `--table-prefix` or the URL, naming the tables it does not check; without
/// the prefix, or with another, the one error line lists the tables found.
#[test]
fn a_prefixed_keyspace_with_clio_26_tables_verifies() {
    let host = cluster_or_skip!();
    let u = url(&host, "prefixed");
    let ks = u.rsplit('/').next().expect("ks").to_owned();
    let chain = random_chain(3, FAULT_SHAPE);
    let loader = load_with(&u, "clio_", Tables::Full, &chain);
    for cql in [
        format!("INSERT INTO {ks}.clio_migrator_status (migrator_name, status) VALUES ('ExampleDropTableMigrator', 'Migrated')"),
        format!("INSERT INTO {ks}.clio_nf_tokens (token_id, sequence, owner, is_burned) VALUES (0x01, 101, 0x02, false)"),
        format!("INSERT INTO {ks}.clio_mp_token_holders (mpt_id, holder) VALUES (0x03, 0x04)"),
        format!("INSERT INTO {ks}.clio_mptoken_issuance_transactions (mptoken_issuance_id, seq_idx, hash) VALUES (0x03, (101, 0), 0x05)"),
        format!("INSERT INTO {ks}.clio_account_mptoken_issuance_transactions (mptoken_issuance_id, account, seq_idx, hash) VALUES (0x03, 0x04, (101, 0), 0x05)"),
    ] {
        loader.execute(&cql).expect("a row of an index table");
    }
    let extra = "clio_account_mptoken_issuance_transactions, clio_account_tx, \
                 clio_issuer_nf_tokens_v2, clio_migrator_status, clio_mp_token_holders, \
                 clio_mptoken_issuance_transactions, clio_nf_token_transactions, \
                 clio_nf_token_uris, clio_nf_tokens, clio_nodes_chat";
    let r = verify(&["--db", &u, "--table-prefix", "clio_"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_starts_with(
        &r.stdout,
        &format!("not checked (tables clio verify does not read): {extra}\nledger 100 (full build"),
    );
    assert_eq!(ledger_headings(&r.stdout).len(), 12);
    assert!(r.stdout.ends_with("all match\n"), "{}", r.stdout);
    let with_url = format!("{u}?table_prefix=clio_");
    let r = verify(&[
        "--db", &with_url, "--json", "--ledger", "105", "--scan", "objects",
    ]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    assert_eq!(v["ok"], true);
    assert_eq!(v["not_checked"].as_array().map(Vec::len), Some(10));
    assert_eq!(v["not_checked"][3], "clio_migrator_status");
    assert_eq!(v["scan"], "objects");
    let r = verify(&["--db", &with_url, "--json", "--ledger", "105"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    assert_eq!(
        v["scan"], "partition",
        "auto: Cassandra runs the partition scan"
    );
    let e = one_error_line(&verify(&["--db", &with_url, "--scan", "sideways"]), 2);
    assert_contains(
        &e,
        "'sideways' is not a scan (auto, partition, objects or successor)",
    );
    // The prefix forgotten: the tables that look like Clio's are listed.
    let e = one_error_line(&verify(&["--db", &u]), 2);
    let mut all: Vec<String> = shamap_clio::CLIO_TABLES
        .iter()
        .map(|t| format!("clio_{t}"))
        .collect();
    all.sort();
    assert_contains(
        &e,
        &format!("not a Clio database: keyspace '{ks}' has none of Clio's tables with no table prefix; tables there that end in a Clio table's name: {} (is --table-prefix right?)", all.join(", ")),
    );
    // Another prefix; a prefix that is not a name; two that disagree.
    let e = one_error_line(&verify(&["--db", &u, "--table-prefix", "other_"]), 2);
    assert_contains(&e, "has none of Clio's tables with table prefix 'other_'");
    let e = one_error_line(&verify(&["--db", &u, "--table-prefix", "a-b"]), 2);
    assert_contains(&e, "table prefix 'a-b': only letters, digits and _");
    let e = one_error_line(&verify(&["--db", &with_url, "--table-prefix", "x_"]), 2);
    assert_contains(
        &e,
        "the URL says table_prefix=clio_ but --table-prefix says 'x_'",
    );
    loader.drop_keyspace().expect("drop");
}

#[test]
fn a_verified_chain_is_authenticated_from_an_anchor() {
    let host = cluster_or_skip!();
    let (u, chain, loader) = chain_in(&host, "anchor", 47, SHAPE);
    let last = chain
        .last()
        .and_then(|l| l.header)
        .expect("a header")
        .hash()
        .to_hex();
    // From the last ledger's hash: every verified ledger through parent links.
    let r = verify(&["--db", &u, "--from", "600", "--anchor", &last]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stdout.contains(&format!("anchor {last} (--anchor)")),
        "{}",
        r.stdout
    );
    assert_eq!(
        r.stdout.matches(" authenticated (via ").count(),
        110,
        "{}",
        r.stdout
    );
    let r = verify(&["--db", &u, "--from", "690", "--json", "--anchor", &last]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    let ledgers = v["authentication"]["ledgers"].as_array().expect("ledgers");
    assert_eq!(ledgers.len(), 20);
    assert!(
        ledgers.iter().all(|l| l["authenticated"] == true),
        "{ledgers:?}"
    );
    // An anchor the run did not verify: nothing is authenticated, status 1.
    let r = verify(&["--db", &u, "--from", "690", "--anchor", &"AB".repeat(32)]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("20 of 20 verified ledgers not authenticated"),
        "{}",
        r.stderr
    );
    loader.drop_keyspace().expect("drop");
}
