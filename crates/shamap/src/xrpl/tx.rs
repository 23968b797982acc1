//! Transactions as map items: IDs and the data layout of transaction leaves.

use crate::hash::{Hash256, Key};
use crate::sha512half::sha512_half;
use crate::xrpl::prefix::HashPrefix;
use crate::xrpl::vl::{append_vl, split_vl, VlError};

/// A transaction's ID: `SHA512Half(TXN\0 ‖ tx_blob)`. It is the key of the
/// transaction in both transaction map kinds.
pub fn transaction_id(tx_blob: &[u8]) -> Hash256 {
    sha512_half(&[HashPrefix::TRANSACTION_ID.bytes(), tx_blob])
}

/// The key and data of a transaction+metadata leaf:
/// key = transaction ID, data = `VL(tx_blob) ‖ VL(meta_blob)`.
pub fn tx_with_meta_item(tx_blob: &[u8], meta_blob: &[u8]) -> Result<(Key, Vec<u8>), VlError> {
    let mut data = Vec::with_capacity(tx_blob.len() + meta_blob.len() + 6);
    append_vl(tx_blob, &mut data)?;
    append_vl(meta_blob, &mut data)?;
    Ok((transaction_id(tx_blob).into(), data))
}

/// Splits transaction+metadata leaf data back into `(tx_blob, meta_blob)`.
pub fn split_tx_with_meta(data: &[u8]) -> Result<(&[u8], &[u8]), VlError> {
    let (tx, rest) = split_vl(data)?;
    let (meta, rest) = split_vl(rest)?;
    if !rest.is_empty() {
        return Err(VlError::Truncated {
            needed: data.len() - rest.len(),
            available: data.len(),
        });
    }
    Ok((tx, meta))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tx_with_meta_round_trips() {
        let (key, data) = tx_with_meta_item(&[1; 300], &[2; 5]).expect("small blobs");
        assert_eq!(Hash256::from(key), transaction_id(&[1; 300]));
        let (tx, meta) = split_tx_with_meta(&data).expect("well formed");
        assert_eq!((tx.len(), meta.len()), (300, 5));
    }
}
