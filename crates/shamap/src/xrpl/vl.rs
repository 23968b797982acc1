//! The XRPL variable-length (VL) prefix that precedes blobs in serialized
//! objects, e.g. the transaction and metadata inside a transaction leaf.
//!
//! | length n        | bytes | encoding                                                   |
//! |-----------------|-------|------------------------------------------------------------|
//! | 0..=192         | 1     | n                                                          |
//! | 193..=12480     | 2     | 193 + (n-193)/256, (n-193)%256                             |
//! | 12481..=918744  | 3     | 241 + (n-12481)/65536, ((n-12481)/256)%256, (n-12481)%256 |

/// The longest blob a VL prefix can describe.
pub const MAX_VL_LEN: usize = 918_744;

/// A VL prefix that could not be written or read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VlError {
    /// Longer than [`MAX_VL_LEN`].
    #[error("blob of {0} bytes exceeds the VL maximum of 918744")]
    TooLong(usize),
    /// The prefix or the blob it announces runs past the end of the input.
    #[error("VL blob truncated: needs {needed} bytes, {available} available")]
    Truncated {
        /// Bytes the prefix announces (including itself).
        needed: usize,
        /// Bytes present.
        available: usize,
    },
    /// A first byte above 254 is not a valid VL prefix.
    #[error("invalid VL prefix byte {0}")]
    BadPrefix(u8),
}

/// Appends the VL prefix for a blob of `len` bytes to `out`.
pub fn encode_vl_len(len: usize, out: &mut Vec<u8>) -> Result<(), VlError> {
    // The `as u8` casts below are exact: each value is range-limited by the
    // branch it is in (documented in the table above).
    if len <= 192 {
        out.push(len as u8);
    } else if len <= 12_480 {
        let n = len - 193;
        out.extend_from_slice(&[193 + (n >> 8) as u8, (n & 0xFF) as u8]);
    } else if len <= MAX_VL_LEN {
        let n = len - 12_481;
        out.extend_from_slice(&[
            241 + (n >> 16) as u8,
            ((n >> 8) & 0xFF) as u8,
            (n & 0xFF) as u8,
        ]);
    } else {
        return Err(VlError::TooLong(len));
    }
    Ok(())
}

/// Appends `VL(blob) ‖ blob` to `out`.
pub fn append_vl(blob: &[u8], out: &mut Vec<u8>) -> Result<(), VlError> {
    encode_vl_len(blob.len(), out)?;
    out.extend_from_slice(blob);
    Ok(())
}

/// Reads one VL-prefixed blob from the front of `input`; returns the blob and
/// the rest of the input.
pub fn split_vl(input: &[u8]) -> Result<(&[u8], &[u8]), VlError> {
    let trunc = |needed| VlError::Truncated {
        needed,
        available: input.len(),
    };
    let (&b0, rest) = input.split_first().ok_or(trunc(1))?;
    let (len, hdr) = match b0 {
        0..=192 => (usize::from(b0), 1),
        193..=240 => {
            let b1 = *rest.first().ok_or(trunc(2))?;
            (193 + (usize::from(b0 - 193) << 8) + usize::from(b1), 2)
        }
        241..=254 => {
            if rest.len() < 2 {
                return Err(trunc(3));
            }
            let n =
                (usize::from(b0 - 241) << 16) + (usize::from(rest[0]) << 8) + usize::from(rest[1]);
            (12_481 + n, 3)
        }
        255 => return Err(VlError::BadPrefix(b0)),
    };
    if input.len() < hdr + len {
        return Err(trunc(hdr + len));
    }
    Ok((&input[hdr..hdr + len], &input[hdr + len..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundaries_round_trip() {
        for len in [
            0, 1, 192, 193, 194, 448, 12_480, 12_481, 12_482, 100_000, MAX_VL_LEN,
        ] {
            let blob = vec![7u8; len];
            let mut out = Vec::new();
            append_vl(&blob, &mut out).expect("length within VL range");
            let expected_hdr = if len <= 192 {
                1
            } else if len <= 12_480 {
                2
            } else {
                3
            };
            assert_eq!(out.len(), len + expected_hdr, "len {len}");
            let (got, rest) = split_vl(&out).expect("just encoded");
            assert_eq!(got.len(), len);
            assert!(rest.is_empty());
        }
    }

    #[test]
    fn known_encodings() {
        let mut out = Vec::new();
        encode_vl_len(193, &mut out).expect("in range");
        assert_eq!(out, [193, 0]);
        out.clear();
        encode_vl_len(12_481, &mut out).expect("in range");
        assert_eq!(out, [241, 0, 0]);
        out.clear();
        encode_vl_len(MAX_VL_LEN, &mut out).expect("in range");
        assert_eq!(out, [254, 212, 23]);
        assert_eq!(
            encode_vl_len(MAX_VL_LEN + 1, &mut out),
            Err(VlError::TooLong(MAX_VL_LEN + 1))
        );
    }

    #[test]
    fn truncated_and_bad_prefixes_are_errors() {
        assert!(matches!(split_vl(&[]), Err(VlError::Truncated { .. })));
        assert!(matches!(
            split_vl(&[5, 1, 2]),
            Err(VlError::Truncated { .. })
        ));
        assert!(matches!(split_vl(&[200]), Err(VlError::Truncated { .. })));
        assert!(matches!(
            split_vl(&[250, 0]),
            Err(VlError::Truncated { .. })
        ));
        assert_eq!(split_vl(&[255]), Err(VlError::BadPrefix(255)));
    }
}
