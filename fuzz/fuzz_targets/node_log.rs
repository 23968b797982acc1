//! Fuzz target: a node log (`nodes.log`) is bytes from disk, which may be
//! damaged, cut short or not ours. For any input, the batch and record
//! decoders return values or errors, and opening a store on it (read-only
//! and read-write) returns a store or one error, never a panic or a hang;
//! an opened store iterates, reads and (read-write) writes without
//! panicking, and never hands out a node whose bytes do not hash to its
//! key through `get`.
//!
//! The input is the log itself. Half the inputs get a valid file header in
//! front, so that the fuzzer spends its time on batches and records; a
//! quarter also get an acknowledgment record (`nodes.ack`) made of the
//! input's last 32 bytes. The audit opening (`open_audit`) reads every
//! input too. A durable write that the store acknowledged is found again
//! by the next opening: never lost without an error.

#![no_main]

use std::ops::ControlFlow;

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

use shamap::xrpl::sha512_half;
use shamap_store::backend::ack;
use shamap_store::backend::log_store::{format, LogStore, LOG_FILE};
use shamap_store::{Batch, NodeObject, NodeStore, NodeStoreExt, NodeType};

/// The decoders alone, over the input as a sequence of batches.
fn decode(mut data: &[u8]) {
    while data.len() >= format::BATCH_HEADER_LEN {
        let (h, rest) = data.split_at(format::BATCH_HEADER_LEN);
        let h: &[u8; format::BATCH_HEADER_LEN] = h.try_into().expect("header length");
        let Ok(header) = format::decode_batch_header(h) else {
            return;
        };
        let n = (header.body_len as usize).min(rest.len());
        for r in format::records(&rest[..n]) {
            match r {
                Ok((
                    _,
                    format::Record::PutNode {
                        value, encoding, ..
                    },
                )) => {
                    let _ = format::expand(encoding, value);
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        data = &rest[n..];
    }
}

/// Whatever an opened store holds, read every way it can be.
fn exercise(store: &LogStore) {
    let mut hashes = Vec::new();
    let _ = store.for_each_value(&mut |h, _| {
        hashes.push(h);
        if hashes.len() > 10_000 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    for h in &hashes {
        if let Ok(Some(obj)) = store.get(h) {
            assert_eq!(
                sha512_half(&[obj.prefix_bytes()]),
                *h,
                "get returned a node that does not hash to its key"
            );
        }
        let _ = store.contains(h);
    }
    let _ = shamap_store::meta::retained(store);
    let _ = store.usage();
}

fuzz_target!(|data: &[u8]| {
    decode(data);
    let dir = common::scratch_dir("node-log");
    let mut log = Vec::new();
    if data.first().is_some_and(|b| b % 2 == 0) {
        log.extend_from_slice(&format::file_header());
        log.extend_from_slice(&data[1..]);
    } else {
        log.extend_from_slice(data);
    }
    std::fs::write(dir.join(LOG_FILE), &log).expect("write the log");
    let tail = &data[data.len().saturating_sub(ack::ACK_LEN)..];
    let _ = ack::decode(tail);
    if data.first().is_some_and(|b| b % 4 < 2) && tail.len() == ack::ACK_LEN {
        std::fs::write(dir.join(ack::ACK_FILE), tail).expect("write the record");
    }
    if let Ok(store) = LogStore::open_read_only(&dir) {
        exercise(&store);
    }
    if let Ok((store, _audit)) = LogStore::open_audit(&dir) {
        exercise(&store);
    }
    if let Ok(store) = LogStore::open(&dir) {
        exercise(&store);
        // A write after whatever the scan cut off or kept.
        let mut b = Batch::new();
        b.put_node(NodeObject::from_prefix(
            NodeType::AccountNode,
            b"MLN\0fuzz leaf 0123456789abcdef0123456789abcdef",
        ));
        b.put_meta("fuzz", vec![1, 2, 3]);
        let acknowledged = store.write_durably(b).is_ok();
        drop(store);
        match LogStore::open(&dir) {
            Ok(store) => {
                exercise(&store);
                if acknowledged {
                    assert_eq!(
                        store.get_meta("fuzz").ok().flatten(),
                        Some(vec![1, 2, 3]),
                        "an acknowledged write was lost"
                    );
                }
            }
            Err(e) => assert!(
                !acknowledged,
                "an acknowledged write made the store refuse: {e}"
            ),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
});
