//! What the backed map's tests share with the `backed_differential` fuzz
//! target (which includes this file with `#[path]`).

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use shamap::Key;
use shamap_store::BackedMap;

/// A key from a space of 256 that share long prefixes: bits 0-1 set byte
/// 0, bits 2-3 byte 15, bits 4-7 byte 31, so keys part at the first, the
/// middle or the last nibbles and the trees grow deep inner chains.
pub fn small_key(b: u8) -> Key {
    let mut k = [0x5a; 32];
    k[0] = b & 0x03;
    k[15] = (b >> 2) & 0x03;
    k[31] = b >> 4;
    Key(k)
}

/// A backed map's items, checked to come in ascending key order.
pub fn contents(m: &BackedMap<'_>) -> BTreeMap<Key, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut last: Option<Key> = None;
    m.for_each(&mut |k, v| {
        assert!(last.is_none_or(|l| l < *k), "keys ascend");
        last = Some(*k);
        out.insert(*k, v.to_vec());
        ControlFlow::Continue(())
    })
    .expect("scan");
    out
}
