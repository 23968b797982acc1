//! rippled's NuDB value codec (`include/xrpl/nodestore/detail/codec.h`,
//! `varint.h`): a NodeStore value (`8 zero bytes ‖ type byte ‖ prefix
//! format`, `EncodedBlob.h`) becomes a base-127 varint codec type and a
//! body.
//!
//! | type | body | decodes to |
//! |---|---|---|
//! | 0 raw | the value | the value |
//! | 1 LZ4 | varint decompressed size ‖ LZ4 block | the value |
//! | 2 compressed inner | u16 mask (0x8000 = branch 0) ‖ the present hashes | `8 zero ‖ 0 ‖ MIN\0 ‖ 16 hashes` |
//! | 3 full inner | 16 hashes | `8 zero ‖ 0 ‖ MIN\0 ‖ 16 hashes` |
//!
//! rippled's `nodeobject_compress` writes an inner node (a 525-byte value
//! whose prefix is `MIN\0`) as type 3 when all sixteen branches are set,
//! else type 2, and everything else as type 1; the inner-node types decode
//! with type byte 0 (`hotUNKNOWN`), whatever the type byte was. Our LZ4
//! blocks come from `lz4_flex`, not liblz4: the same format, other bytes.

/// The varint digits of `v`: base 127, least significant first, every
/// digit but the last with bit 0x80 (`write_varint`).
pub fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(2);
    loop {
        let mut d = (v % 127) as u8;
        v /= 127;
        if v != 0 {
            d |= 0x80;
        }
        out.push(d);
        if v == 0 {
            return out;
        }
    }
}

/// The varint at the start of `b` and its length, read as rippled's
/// `read_varint` does (`None` where it returns 0).
pub fn read_varint(b: &[u8]) -> Option<(u64, usize)> {
    let n = b.iter().position(|&d| d & 0x80 == 0)? + 1;
    if n == 1 && b[0] == 0 {
        return Some((0, 1));
    }
    let mut t: u64 = 0;
    for &d in b[..n].iter().rev() {
        let t0 = t;
        t = t.checked_mul(127)?.checked_add(u64::from(d & 0x7F))?;
        if t <= t0 {
            return None;
        }
    }
    Some((t, n))
}

/// Bytes of a NodeStore value before its prefix format.
pub const VALUE_HEADER_LEN: usize = 9;
/// Bytes of an inner node's NodeStore value.
pub const INNER_VALUE_LEN: usize = VALUE_HEADER_LEN + 4 + 16 * 32;

/// One of rippled's four codec types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CodecType {
    /// 0: the value as it is.
    Raw = 0,
    /// 1: an LZ4 block.
    Lz4 = 1,
    /// 2: an inner node's mask and present hashes.
    InnerCompressed = 2,
    /// 3: an inner node's sixteen hashes.
    InnerFull = 3,
}

impl CodecType {
    /// The type of a codec type number.
    pub fn from_number(n: u64) -> Option<CodecType> {
        match n {
            0 => Some(CodecType::Raw),
            1 => Some(CodecType::Lz4),
            2 => Some(CodecType::InnerCompressed),
            3 => Some(CodecType::InnerFull),
            _ => None,
        }
    }
}

/// Which codec type each value gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodecPolicy {
    /// As rippled writes: inner nodes type 3 (full) or 2, the rest LZ4.
    Rippled,
    /// Every value raw (type 0).
    Raw,
    /// Every value LZ4 (type 1), inner nodes too.
    Lz4,
    /// Inner nodes type 2 even when full (valid: mask 0xFFFF and sixteen
    /// hashes), the rest LZ4.
    InnerCompressed,
    /// Each value one of the types that can encode it, picked by its key's
    /// last byte: stores with all four types side by side.
    Mixed,
}

/// Why a value cannot be encoded as asked.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CodecError {
    /// Types 2 and 3 encode inner nodes only.
    #[error("codec type {0:?} encodes inner nodes only; this value is not one")]
    NotInner(CodecType),
    /// Type 3 needs all sixteen branches.
    #[error("codec type 3 needs sixteen children; this inner node has {0}")]
    NotFull(u32),
    /// The LZ4 block codec failed.
    #[error("LZ4 compression failed: {0}")]
    Lz4(String),
}

/// The sixteen child hashes of a NodeStore value, if it is an inner node
/// as rippled's codec recognises one (525 bytes, prefix `MIN\0`; the type
/// byte is not looked at).
pub fn inner_children(value: &[u8]) -> Option<[[u8; 32]; 16]> {
    if value.len() != INNER_VALUE_LEN || &value[9..13] != b"MIN\0" {
        return None;
    }
    let mut out = [[0u8; 32]; 16];
    for (o, c) in out.iter_mut().zip(value[13..].chunks_exact(32)) {
        o.copy_from_slice(c);
    }
    Some(out)
}

/// The codec type `policy` picks for `value` stored under `key`.
pub fn choose(policy: CodecPolicy, key: &[u8], value: &[u8]) -> CodecType {
    let children = inner_children(value);
    let full = children.is_some_and(|c| c.iter().all(|h| *h != [0; 32]));
    let inner_default = if full {
        CodecType::InnerFull
    } else {
        CodecType::InnerCompressed
    };
    match policy {
        CodecPolicy::Rippled if children.is_some() => inner_default,
        CodecPolicy::Rippled => CodecType::Lz4,
        CodecPolicy::Raw => CodecType::Raw,
        CodecPolicy::Lz4 => CodecType::Lz4,
        CodecPolicy::InnerCompressed if children.is_some() => CodecType::InnerCompressed,
        CodecPolicy::InnerCompressed => CodecType::Lz4,
        CodecPolicy::Mixed => {
            let pick = usize::from(key.last().copied().unwrap_or(0));
            let choices: &[CodecType] = match (children.is_some(), full) {
                (true, true) => &[
                    CodecType::InnerFull,
                    CodecType::InnerCompressed,
                    CodecType::Lz4,
                    CodecType::Raw,
                ],
                (true, false) => &[CodecType::InnerCompressed, CodecType::Lz4, CodecType::Raw],
                _ => &[CodecType::Lz4, CodecType::Raw],
            };
            choices[pick % choices.len()]
        }
    }
}

/// `value` encoded as codec type `t`.
pub fn encode(value: &[u8], t: CodecType) -> Result<Vec<u8>, CodecError> {
    let mut out = varint(t as u64);
    match t {
        CodecType::Raw => out.extend_from_slice(value),
        CodecType::Lz4 => {
            out.extend_from_slice(&varint(value.len() as u64));
            out.extend_from_slice(&lz4_flex::block::compress(value));
        }
        CodecType::InnerCompressed | CodecType::InnerFull => {
            let children = inner_children(value).ok_or(CodecError::NotInner(t))?;
            let mut mask: u16 = 0;
            for (b, h) in children.iter().enumerate() {
                if *h != [0; 32] {
                    mask |= 0x8000 >> b;
                }
            }
            if t == CodecType::InnerFull {
                if mask != 0xFFFF {
                    return Err(CodecError::NotFull(mask.count_ones()));
                }
            } else {
                out.extend_from_slice(&mask.to_be_bytes());
            }
            for h in children.iter().filter(|h| **h != [0; 32]) {
                out.extend_from_slice(h);
            }
        }
    }
    Ok(out)
}

/// A type-1 value whose varint declares `declared` bytes while its LZ4
/// block holds `value` (for tests of readers given a size that lies).
pub fn lz4_declaring(value: &[u8], declared: u64) -> Vec<u8> {
    let mut out = varint(CodecType::Lz4 as u64);
    out.extend_from_slice(&varint(declared));
    out.extend_from_slice(&lz4_flex::block::compress(value));
    out
}

/// Decodes a stored value back to its NodeStore value, as rippled's
/// `nodeobject_decompress` does: for checking what this crate writes.
pub fn decode(encoded: &[u8]) -> Result<Vec<u8>, String> {
    let (t, n) = read_varint(encoded).ok_or("no codec type varint")?;
    let body = &encoded[n..];
    match CodecType::from_number(t).ok_or(format!("codec type {t}"))? {
        CodecType::Raw => Ok(body.to_vec()),
        CodecType::Lz4 => {
            let (size, m) = read_varint(body).ok_or("no size varint")?;
            if m >= body.len() || size == 0 || size > 1 << 31 {
                return Err(format!("bad LZ4 size {size}"));
            }
            let out = lz4_flex::block::decompress(&body[m..], size as usize)
                .map_err(|e| e.to_string())?;
            if out.len() as u64 != size {
                return Err(format!("LZ4 gave {} bytes, not {size}", out.len()));
            }
            Ok(out)
        }
        t @ (CodecType::InnerCompressed | CodecType::InnerFull) => {
            let (mask, hashes) = if t == CodecType::InnerFull {
                (0xFFFFu16, body)
            } else {
                if body.len() < 2 {
                    return Err("short inner node".into());
                }
                (u16::from_be_bytes([body[0], body[1]]), &body[2..])
            };
            if mask == 0 || hashes.len() != 32 * mask.count_ones() as usize {
                return Err("inner node size".into());
            }
            let mut out = vec![0u8; 9];
            out.extend_from_slice(b"MIN\0");
            let mut present = hashes.chunks_exact(32);
            for b in 0..16 {
                if mask & (0x8000 >> b) != 0 {
                    out.extend_from_slice(present.next().ok_or("inner node size")?);
                } else {
                    out.extend_from_slice(&[0; 32]);
                }
            }
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_are_base_127() {
        assert_eq!(varint(0), [0]);
        assert_eq!(varint(1), [1]);
        assert_eq!(varint(126), [126]);
        assert_eq!(varint(127), [0x80, 1]);
        assert_eq!(varint(525), [0x80 | (525 % 127) as u8, 4]);
        for v in [0u64, 1, 3, 126, 127, 128, 525, 16128, 16129, 1 << 31] {
            assert_eq!(read_varint(&varint(v)), Some((v, varint(v).len())), "{v}");
        }
        // A zero top digit overflows in rippled's reader.
        assert_eq!(read_varint(&[0x81, 0]), None);
        assert_eq!(read_varint(&[0x81]), None);
    }

    fn inner(present: &[usize]) -> Vec<u8> {
        let mut v = vec![0u8; 8];
        v.push(3);
        v.extend_from_slice(b"MIN\0");
        for b in 0..16 {
            let fill = if present.contains(&b) { b as u8 + 1 } else { 0 };
            v.extend_from_slice(&[fill; 32]);
        }
        v
    }

    #[test]
    fn every_type_decodes_as_rippled_would() {
        let full = inner(&(0..16).collect::<Vec<_>>());
        let sparse = inner(&[0, 5, 15]);
        let leaf = [&[0u8; 8][..], &[3], b"MLN\0", &[7u8; 100]].concat();
        let as_unknown = |v: &[u8]| {
            let mut v = v.to_vec();
            v[8] = 0;
            v
        };
        for (v, t, want) in [
            (&full, CodecType::InnerFull, as_unknown(&full)),
            (&full, CodecType::InnerCompressed, as_unknown(&full)),
            (&sparse, CodecType::InnerCompressed, as_unknown(&sparse)),
            (&sparse, CodecType::Lz4, sparse.clone()),
            (&leaf, CodecType::Lz4, leaf.clone()),
            (&leaf, CodecType::Raw, leaf.clone()),
        ] {
            let e = encode(v, t).expect("encodes");
            assert_eq!(e[0], t as u8);
            assert_eq!(decode(&e).expect("decodes"), want, "{t:?}");
        }
        assert_eq!(
            encode(&full, CodecType::InnerFull).expect("full").len(),
            513
        );
        assert_eq!(
            encode(&sparse, CodecType::InnerCompressed)
                .expect("sparse")
                .len(),
            3 + 3 * 32
        );
        assert_eq!(
            encode(&sparse, CodecType::InnerFull),
            Err(CodecError::NotFull(3))
        );
        assert_eq!(
            encode(&leaf, CodecType::InnerCompressed),
            Err(CodecError::NotInner(CodecType::InnerCompressed))
        );
        assert_eq!(
            choose(CodecPolicy::Rippled, &[0], &full),
            CodecType::InnerFull
        );
        assert_eq!(
            choose(CodecPolicy::Rippled, &[0], &sparse),
            CodecType::InnerCompressed
        );
        assert_eq!(choose(CodecPolicy::Rippled, &[0], &leaf), CodecType::Lz4);
    }

    #[test]
    fn a_lying_lz4_size_does_not_decode() {
        let leaf = [&[0u8; 8][..], &[3], b"MLN\0", &[7u8; 100]].concat();
        for declared in [leaf.len() as u64 + 1, leaf.len() as u64 - 1, 1 << 40] {
            assert!(
                decode(&lz4_declaring(&leaf, declared)).is_err(),
                "{declared}"
            );
        }
        assert_eq!(
            decode(&lz4_declaring(&leaf, leaf.len() as u64)).expect("true size"),
            leaf
        );
    }
}
