//! rippled's NuDB value codec (XRPLF/rippled
//! `include/xrpl/nodestore/detail/codec.h`, `varint.h`, `EncodedBlob.h`),
//! decoded into this crate's value format (`8 zero bytes ‖ type ‖ prefix
//! format`, [`crate::node`]).
//!
//! A value starts with a varint codec type. The varint is rippled's own:
//! base **127** digits, least significant first, each byte's high bit set
//! when another follows.
//!
//! | type | body | decoded |
//! |---|---|---|
//! | 0 | the encoded blob as is | the blob |
//! | 1 | varint decoded size ‖ LZ4 block | the LZ4 block's output, exactly that size |
//! | 2 | u16 big-endian branch mask (0x8000 = branch 0, not 0) ‖ one 32-byte hash per set bit | an inner node |
//! | 3 | 16 × 32-byte hashes | an inner node |
//!
//! The encoded blob is 8 bytes (zero today; the ledger index in early
//! versions, which rippled ignores: zeroed here), the object type
//! (1 ledger, 3 account-state node, 4 transaction node) and the object's
//! data (its prefix format). An inner node stored as type 2 or 3 has no
//! object type (rippled writes `hotUNKNOWN`, 0): rippled's codec drops it,
//! so which map an inner node belongs to is not recorded, and the decoded
//! value carries type byte 0 (see [`crate::node`]).

use shamap::node_hash::INNER_MESSAGE_LEN;

use crate::node::VALUE_HEADER_LEN;

/// The largest decoded value accepted (64 MiB): an LZ4 value declaring
/// more is refused before anything is allocated.
pub const MAX_DECODED_LEN: usize = 64 << 20;

/// rippled's varint (`varint.h` `read_varint`): the value and the bytes
/// it takes, or `None` when `b` ends inside it, it overflows, or its last
/// digit is a needless zero.
pub fn read_varint(b: &[u8]) -> Option<(u64, usize)> {
    let n = b.iter().position(|&x| x & 0x80 == 0)? + 1;
    if n > 10 {
        return None;
    }
    if n > 1 && b[n - 1] == 0 {
        return None;
    }
    let mut t: u64 = 0;
    for &d in b[..n].iter().rev() {
        t = t.checked_mul(127)?.checked_add(u64::from(d & 0x7f))?;
    }
    Some((t, n))
}

/// Writes rippled's varint of `v` (for tests and fixtures).
pub fn write_varint(mut v: u64, out: &mut Vec<u8>) {
    loop {
        let d = (v % 127) as u8;
        v /= 127;
        if v == 0 {
            out.push(d);
            return;
        }
        out.push(d | 0x80);
    }
}

/// The codec type of a stored value, without decoding it.
pub fn codec_type(raw: &[u8]) -> Option<u64> {
    read_varint(raw).map(|(t, _)| t)
}

/// Decodes a stored value into `out` (cleared first) in this crate's
/// value format. The error says what is wrong; the caller names the key,
/// the file and the offset.
pub fn decode_value(raw: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    out.clear();
    let (ty, n) = read_varint(raw).ok_or("the codec type is not a varint")?;
    let body = &raw[n..];
    match ty {
        0 => {
            if body.len() < VALUE_HEADER_LEN {
                return Err(format!(
                    "an uncompressed value of {} bytes is shorter than its 9-byte header",
                    body.len()
                ));
            }
            out.extend_from_slice(body);
        }
        1 => {
            let (size, m) = read_varint(body).ok_or("the LZ4 value's size is not a varint")?;
            if m >= body.len() {
                return Err("the LZ4 value has no compressed bytes".to_owned());
            }
            if size < VALUE_HEADER_LEN as u64 || size > MAX_DECODED_LEN as u64 {
                return Err(format!(
                    "the LZ4 value declares {size} decompressed bytes (accepted: {VALUE_HEADER_LEN} to {MAX_DECODED_LEN})"
                ));
            }
            let size = size as usize;
            out.resize(size, 0);
            match lz4_flex::block::decompress_into(&body[m..], out) {
                Ok(got) if got == size => {}
                Ok(got) => {
                    return Err(format!(
                        "the LZ4 value declares {size} decompressed bytes and decompresses to {got}"
                    ))
                }
                Err(e) => {
                    return Err(format!(
                    "the LZ4 value (declaring {size} decompressed bytes) does not decompress: {e}"
                ))
                }
            }
        }
        2 => {
            if body.len() < 2 {
                return Err("a compressed inner node has no branch mask".to_owned());
            }
            let mask = u16::from_be_bytes([body[0], body[1]]);
            if mask == 0 {
                return Err("a compressed inner node with no branch".to_owned());
            }
            let hashes = &body[2..];
            let want = 32 * mask.count_ones() as usize;
            if hashes.len() != want {
                return Err(format!(
                    "a compressed inner node with mask {mask:#06x} holds {} hash bytes, not {want}",
                    hashes.len()
                ));
            }
            inner_children(&raw[n - 1..], out)?;
        }
        3 => {
            if body.len() != 16 * 32 {
                return Err(format!(
                    "a full inner node of {} bytes, not 512",
                    body.len()
                ));
            }
            inner_children(&raw[n - 1..], out)?;
        }
        t => return Err(format!("unknown codec type {t}")),
    }
    out[..8].fill(0);
    Ok(())
}

/// An inner node's value from its sparse encoding (`encoded`: the codec
/// type byte, then the body; decoded by the one home of that codec,
/// [`crate::inner_codec`]): 8 zero bytes, type 0 (rippled's codec does not
/// record it), the prefix format.
fn inner_children(encoded: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    let children = crate::inner_codec::decode_children(encoded)
        .ok_or_else(|| "an inner node that does not decode".to_owned())?;
    out.reserve(VALUE_HEADER_LEN + INNER_MESSAGE_LEN);
    out.extend_from_slice(&[0; VALUE_HEADER_LEN]);
    out.extend_from_slice(&shamap::node_hash::inner_message(&children));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// `value` as rippled's codec type 1 (LZ4) declaring `declared` bytes.
    fn lz4_value(value: &[u8], declared: u64) -> Vec<u8> {
        let mut out = Vec::new();
        write_varint(1, &mut out);
        write_varint(declared, &mut out);
        out.extend_from_slice(&lz4_flex::block::compress(value));
        out
    }

    #[test]
    fn varints_are_base_127() {
        let cases: [(u64, &[u8]); 5] = [
            (0, &[0]),
            (126, &[126]),
            (127, &[0x80, 1]),
            (128, &[0x81, 1]),
            (127 * 127, &[0x80, 0x80, 1]),
        ];
        for (v, bytes) in cases {
            let mut out = Vec::new();
            write_varint(v, &mut out);
            assert_eq!(out, bytes, "{v}");
            assert_eq!(read_varint(bytes), Some((v, bytes.len())));
        }
        assert_eq!(read_varint(&[0x80]), None);
        assert_eq!(read_varint(&[0x81, 0]), None);
        assert_eq!(read_varint(&[0xff; 12]), None);
    }

    #[test]
    fn random_values_round_trip_and_lying_sizes_are_refused() {
        let seed = crate::test_support::seed();
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut out = Vec::new();
        for _ in 0..200 {
            let len = rng.gen_range(9..3000);
            let mut v: Vec<u8> = (0..len).map(|_| rng.gen_range(0..4u8)).collect();
            v[..8].fill(0);
            let enc = lz4_value(&v, len as u64);
            decode_value(&enc, &mut out).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            assert_eq!(out, v, "seed {seed}");
            // The declared size lying either way.
            for delta in [-1i64, 1] {
                let lie = lz4_value(&v, (len as i64 + delta) as u64);
                let e = decode_value(&lie, &mut out).expect_err("a lying size");
                assert!(e.contains("LZ4"), "seed {seed}: {e}");
            }
        }
        let mut huge = vec![1];
        write_varint(1 << 40, &mut huge);
        huge.push(0);
        assert!(decode_value(&huge, &mut out)
            .expect_err("huge")
            .contains("declares"));
    }

    #[test]
    fn inner_nodes_decode_with_type_zero() {
        let mut compressed = vec![2, 0x40, 0x01];
        compressed.extend_from_slice(&[5; 32]);
        compressed.extend_from_slice(&[6; 32]);
        let mut out = Vec::new();
        decode_value(&compressed, &mut out).expect("decodes");
        assert_eq!(out.len(), 9 + 4 + 512);
        assert_eq!(out[8], 0);
        assert_eq!(&out[9..13], b"MIN\0");
        assert_eq!(&out[13 + 32..13 + 64], &[5; 32]);
        assert_eq!(&out[13 + 15 * 32..], &[6; 32]);
        assert!(decode_value(&[2, 0, 0], &mut out).is_err());
        assert!(decode_value(&compressed[..40], &mut out).is_err());
        let mut full = vec![3];
        full.extend_from_slice(&[7; 512]);
        decode_value(&full, &mut out).expect("full");
        assert!(decode_value(&full[..500], &mut out).is_err());
        assert!(decode_value(&[9, 1, 2], &mut out).is_err());
    }
}
