//! Fuzz target: a node log's index checkpoint (`nodes.idx`) is bytes from
//! disk, which may be damaged, cut short or not ours. For any input,
//! decoding returns a checkpoint or an error, never a panic, a hang or an
//! allocation beyond the input's size (the index's form, that every probe
//! ends and finds its entry, is checked by `Index::from_slots`).
//!
//! Half the inputs get their last four bytes replaced by the checksum of
//! the rest, so that the fuzzer gets past the checksum to the fields.

#![no_main]

use libfuzzer_sys::fuzz_target;
use shamap_store::backend::log_store::checkpoint;

fuzz_target!(|data: &[u8]| {
    let mut bytes = data.to_vec();
    if bytes.first().is_some_and(|b| b & 1 == 1) && bytes.len() >= 4 {
        let n = bytes.len() - 4;
        let crc = crc32c::crc32c(&bytes[..n]);
        bytes[n..].copy_from_slice(&crc.to_le_bytes());
    }
    let _ = checkpoint::decode(&bytes);
});
