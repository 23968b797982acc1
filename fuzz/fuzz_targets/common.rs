//! Input helpers shared by the fuzz targets (included with `#[path]`).

/// The next 32 bytes of `data` (zero-padded when fewer are left).
pub fn take32(data: &mut &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    let n = data.len().min(32);
    out[..n].copy_from_slice(&data[..n]);
    *data = &data[n..];
    out
}

/// Splits `data` into at most `max` blobs, each a 2-byte little-endian
/// length and that many bytes (cut short at the end of the input).
pub fn split_blobs(mut data: &[u8], max: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while !data.is_empty() && out.len() < max {
        let len = if data.len() >= 2 {
            usize::from(u16::from_le_bytes([data[0], data[1]]))
        } else {
            usize::from(data[0])
        };
        data = &data[data.len().min(2)..];
        let len = len.min(data.len());
        out.push(data[..len].to_vec());
        data = &data[len..];
    }
    out
}
