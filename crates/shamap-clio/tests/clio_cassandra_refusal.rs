//! The scan choice against a server that refuses Clio's ledger-page scan
//! (feature `cassandra`), as AWS Keyspaces refuses `PER PARTITION LIMIT`:
//! the real node behind a proxy of the CQL protocol (version 4, as the
//! driver speaks it) that answers any statement holding `PER PARTITION
//! LIMIT` with an `Invalid` error, and passes every other frame through.
//! `--scan auto` falls back to the token-range scans of `objects` and says
//! why; `--scan partition` is refused in one line; the keyspace verifies
//! through the proxy with the scan chosen.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use shamap_clio::{random_chain, ClioReader, ClioVerifier, ReadOptions, ScanMode};
use shamap_store::{BackedOptions, MemStore};

use crate::cassandra_cluster::cluster_or_skip;
use crate::clio_ledgers::{load, shape};

/// What the proxy refuses.
const REFUSED: &[u8] = b"PER PARTITION LIMIT";
/// The opcodes of a statement's text: QUERY and PREPARE.
const QUERY: u8 = 0x07;
const PREPARE: u8 = 0x09;

/// One frame: the 9-byte header (version, flags, stream, opcode, body
/// length) and the body.
fn read_frame(s: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut f = vec![0u8; 9];
    s.read_exact(&mut f)?;
    let len = u32::from_be_bytes([f[5], f[6], f[7], f[8]]) as usize;
    f.resize(9 + len, 0);
    s.read_exact(&mut f[9..])?;
    Ok(f)
}

/// An ERROR frame answering request `req`: code 0x2200 (Invalid) and a
/// message, as a server that does not support the statement answers.
fn invalid(req: &[u8]) -> Vec<u8> {
    let msg = b"PER PARTITION LIMIT is not supported (refused by the test's proxy)";
    let mut body = 0x2200u32.to_be_bytes().to_vec();
    body.extend((msg.len() as u16).to_be_bytes());
    body.extend(msg);
    let mut f = vec![req[0] | 0x80, 0, req[2], req[3], 0x00];
    f.extend((body.len() as u32).to_be_bytes());
    f.extend(body);
    f
}

/// Starts the proxy in front of `upstream` (`HOST:PORT`): its address,
/// and the count of statements it refused.
fn refusing_proxy(upstream: &str) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let refused = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&refused);
    let upstream = upstream.to_owned();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let (Ok(mut client), Ok(mut server)) = (client, TcpStream::connect(&upstream)) else {
                continue;
            };
            let to_client = Arc::new(Mutex::new(client.try_clone().expect("clone")));
            let mut from_server = server.try_clone().expect("clone");
            let back = Arc::clone(&to_client);
            // Server to client, frame by frame (so that a refusal written
            // meanwhile does not land inside a frame).
            std::thread::spawn(move || {
                while let Ok(f) = read_frame(&mut from_server) {
                    if back.lock().expect("lock").write_all(&f).is_err() {
                        break;
                    }
                }
            });
            let count = Arc::clone(&count);
            std::thread::spawn(move || {
                while let Ok(f) = read_frame(&mut client) {
                    let statement = matches!(f[4], QUERY | PREPARE);
                    let hit = statement && f[9..].windows(REFUSED.len()).any(|w| w == REFUSED);
                    let sent = if hit {
                        count.fetch_add(1, Ordering::SeqCst);
                        to_client.lock().expect("lock").write_all(&invalid(&f))
                    } else {
                        server.write_all(&f)
                    };
                    if sent.is_err() {
                        break;
                    }
                }
                let _ = server.shutdown(std::net::Shutdown::Both);
            });
        }
    });
    (addr, refused)
}

#[test]
fn auto_falls_back_when_the_server_refuses_the_partition_scan() {
    let host = cluster_or_skip!();
    let ks = format!("clio_refusal_{}", std::process::id());
    let chain = random_chain(crate::seed(616), shape(30, 8, 80, 6, 2));
    let loader = load(&format!("cassandra://{host}/{ks}"), &chain);
    let (proxy, refused) = refusing_proxy(&host);
    let u = format!("cassandra://{proxy}/{ks}");

    // The node itself runs the partition scan.
    let direct = ClioReader::open(&format!("cassandra://{host}/{ks}")).expect("open");
    assert_eq!(direct.scan_mode(), ScanMode::Partition);
    assert_eq!(direct.scan_note(), None);

    // Through the proxy: auto falls back, and says why.
    let reader = ClioReader::open(&u).expect("open through the proxy");
    assert_eq!(reader.scan_mode(), ScanMode::Objects);
    let note = reader.scan_note().expect("a note");
    assert!(
        note.starts_with("scan: objects (the server refuses the PER PARTITION LIMIT scan: ")
            && note.contains("PER PARTITION LIMIT is not supported"),
        "{note}"
    );
    assert!(refused.load(Ordering::SeqCst) >= 1);

    // Asked for by name, the partition scan is an error line.
    let opts = ReadOptions {
        scan: ScanMode::Partition,
        ..ReadOptions::default()
    };
    let e = ClioReader::open_with(&u, &opts)
        .expect_err("refused")
        .to_string();
    assert!(
        e.contains("--scan partition: the server refuses Clio's ledger-page scan")
            && !e.contains('\n'),
        "{e}"
    );

    // The keyspace verifies through the proxy with the scan chosen: the
    // first ledger built from the objects scan, then ledger by ledger.
    let store = MemStore::new();
    let bopts = BackedOptions {
        budget_bytes: usize::MAX / 8,
        ..BackedOptions::default()
    };
    let mut v = ClioVerifier::new(&reader, &store, bopts, false).expect("verifier");
    v.prefetch_until(37);
    for seq in 30..=37 {
        let c = v.verify(seq).expect("verifies");
        assert!(c.is_match(), "{c:?}");
        assert_eq!(c.full_build, seq == 30);
    }
    drop(v);
    drop(reader);
    loader.drop_keyspace().expect("drop");
}
