//! What Clio's ETL derives from a transaction's metadata and from a ledger
//! entry, read from their binary form (rippled's canonical serialization):
//!
//! - [`affected_accounts`]: the accounts of table `account_tx`, as
//!   rippled's `TxMeta::getAffectedAccounts` (which Clio's
//!   `AccountTransactionsData` calls) gives them: for each affected node,
//!   the top-level fields of its `NewFields` (created) or `FinalFields`
//!   (modified, deleted): every account field; the issuer of `LowLimit`,
//!   `HighLimit`, `TakerPays` and `TakerGets` when not zero; the issuer
//!   inside an `MPTokenIssuanceID`; and the metadata's `TransactionIndex`;
//! - [`is_book_dir`]: a directory node without an `Owner` (an order book's
//!   directory: Clio's `isBookDir`), whose "book base" Clio keeps a
//!   successor row for.
//!
//! The walk knows every field type's length, so unknown fields are
//! skipped, not guessed; anything that does not parse is an error naming
//! where.

use std::collections::BTreeSet;

/// An account ID.
pub type AccountId = [u8; 20];

/// Type codes (rippled's `STI_*`).
mod ty {
    pub const UINT16: u16 = 1;
    pub const UINT32: u16 = 2;
    pub const UINT64: u16 = 3;
    pub const HASH128: u16 = 4;
    pub const HASH256: u16 = 5;
    pub const AMOUNT: u16 = 6;
    pub const VL: u16 = 7;
    pub const ACCOUNT: u16 = 8;
    pub const NUMBER: u16 = 9;
    pub const INT32: u16 = 10;
    pub const INT64: u16 = 11;
    pub const OBJECT: u16 = 14;
    pub const ARRAY: u16 = 15;
    pub const UINT8: u16 = 16;
    pub const HASH160: u16 = 17;
    pub const PATHSET: u16 = 18;
    pub const VECTOR256: u16 = 19;
    pub const UINT96: u16 = 20;
    pub const HASH192: u16 = 21;
    pub const UINT384: u16 = 22;
    pub const UINT512: u16 = 23;
    pub const ISSUE: u16 = 24;
    pub const XCHAIN_BRIDGE: u16 = 25;
    pub const CURRENCY: u16 = 26;
}

/// `(type, field)` of the fields read here.
const TRANSACTION_INDEX: (u16, u16) = (ty::UINT32, 28);
const AFFECTED_NODES: (u16, u16) = (ty::ARRAY, 8);
const CREATED_NODE: (u16, u16) = (ty::OBJECT, 3);
const FINAL_FIELDS: (u16, u16) = (ty::OBJECT, 7);
const NEW_FIELDS: (u16, u16) = (ty::OBJECT, 8);
const OBJECT_END: (u16, u16) = (ty::OBJECT, 1);
const ARRAY_END: (u16, u16) = (ty::ARRAY, 1);
const TAKER_PAYS: (u16, u16) = (ty::AMOUNT, 4);
const TAKER_GETS: (u16, u16) = (ty::AMOUNT, 5);
const LOW_LIMIT: (u16, u16) = (ty::AMOUNT, 6);
const HIGH_LIMIT: (u16, u16) = (ty::AMOUNT, 7);
const MPTOKEN_ISSUANCE_ID: (u16, u16) = (ty::HASH192, 1);
const LEDGER_ENTRY_TYPE: (u16, u16) = (ty::UINT16, 1);
const OWNER: (u16, u16) = (ty::ACCOUNT, 2);
/// `LedgerEntryType` of a directory node (`ltDIR_NODE`).
const DIR_NODE: u16 = 0x64;

/// A cursor over serialized fields.
struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|e| *e <= self.b.len())
            .ok_or_else(|| {
                format!(
                    "byte {}: {n} bytes wanted, {} left",
                    self.at,
                    self.b.len() - self.at
                )
            })?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn byte(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn done(&self) -> bool {
        self.at >= self.b.len()
    }

    /// A field header: `(type, field)`.
    fn field(&mut self) -> Result<(u16, u16), String> {
        let first = self.byte()?;
        let mut t = u16::from(first >> 4);
        let mut f = u16::from(first & 0x0F);
        if t == 0 {
            t = u16::from(self.byte()?);
        }
        if f == 0 {
            f = u16::from(self.byte()?);
        }
        Ok((t, f))
    }

    /// A VL length prefix.
    fn vl_len(&mut self) -> Result<usize, String> {
        let b1 = usize::from(self.byte()?);
        Ok(match b1 {
            0..=192 => b1,
            193..=240 => 193 + (b1 - 193) * 256 + usize::from(self.byte()?),
            241..=254 => {
                let b2 = usize::from(self.byte()?);
                let b3 = usize::from(self.byte()?);
                12481 + (b1 - 241) * 65536 + b2 * 256 + b3
            }
            _ => return Err(format!("byte {}: a VL length prefix of 255", self.at - 1)),
        })
    }

    fn vl(&mut self) -> Result<&'a [u8], String> {
        let n = self.vl_len()?;
        self.take(n)
    }

    /// An issue (`STIssue`): XRP (20 zero bytes), a currency and an
    /// issuer, or an MPT (issuer, the "no account" marker, a sequence).
    fn issue(&mut self) -> Result<(), String> {
        let currency = self.take(20)?;
        if currency.iter().all(|b| *b == 0) {
            return Ok(());
        }
        let second = self.take(20)?;
        let no_account = second[..19].iter().all(|b| *b == 0) && second[19] == 1;
        if no_account {
            self.take(4)?;
        }
        Ok(())
    }

    /// Skips (or returns) the value of a field of type `t`: its bytes.
    fn value(&mut self, t: u16) -> Result<&'a [u8], String> {
        let start = self.at;
        match t {
            ty::UINT8 => {
                self.take(1)?;
            }
            ty::UINT16 => {
                self.take(2)?;
            }
            ty::UINT32 | ty::INT32 => {
                self.take(4)?;
            }
            ty::UINT64 | ty::INT64 => {
                self.take(8)?;
            }
            ty::NUMBER | ty::UINT96 => {
                self.take(12)?;
            }
            ty::HASH128 => {
                self.take(16)?;
            }
            ty::HASH160 | ty::CURRENCY => {
                self.take(20)?;
            }
            ty::HASH192 => {
                self.take(24)?;
            }
            ty::HASH256 => {
                self.take(32)?;
            }
            ty::UINT384 => {
                self.take(48)?;
            }
            ty::UINT512 => {
                self.take(64)?;
            }
            ty::AMOUNT => {
                let first = *self
                    .b
                    .get(self.at)
                    .ok_or_else(|| format!("byte {}: an amount past the end", self.at))?;
                let n = if first & 0x80 != 0 {
                    48
                } else if first & 0x20 != 0 {
                    33
                } else {
                    8
                };
                self.take(n)?;
            }
            ty::VL | ty::ACCOUNT | ty::VECTOR256 => {
                self.vl()?;
            }
            ty::ISSUE => self.issue()?,
            ty::XCHAIN_BRIDGE => {
                self.vl()?;
                self.issue()?;
                self.vl()?;
                self.issue()?;
            }
            ty::PATHSET => loop {
                let b = self.byte()?;
                match b {
                    0x00 => break,
                    0xFF => {}
                    kind => {
                        if kind & 0x01 != 0 {
                            self.take(20)?;
                        }
                        if kind & 0x10 != 0 {
                            self.take(20)?;
                        }
                        if kind & 0x20 != 0 {
                            self.take(20)?;
                        }
                        if kind & 0x40 != 0 {
                            self.take(24)?;
                        }
                    }
                }
            },
            ty::OBJECT => self.object_body(&mut |_, _| Ok(()))?,
            ty::ARRAY => loop {
                let f = self.field()?;
                if f == ARRAY_END {
                    break;
                }
                if f.0 != ty::OBJECT {
                    return Err(format!(
                        "byte {}: an array element of type {}, not an object",
                        self.at, f.0
                    ));
                }
                self.object_body(&mut |_, _| Ok(()))?;
            },
            other => return Err(format!("byte {start}: a field of unknown type {other}")),
        }
        Ok(&self.b[start..self.at])
    }

    /// The fields of an inner object up to its end marker, each to `f`
    /// with its value's bytes.
    fn object_body(
        &mut self,
        f: &mut dyn FnMut((u16, u16), &'a [u8]) -> Result<(), String>,
    ) -> Result<(), String> {
        loop {
            let field = self.field()?;
            if field == OBJECT_END {
                return Ok(());
            }
            let v = self.value(field.0)?;
            f(field, v)?;
        }
    }
}

/// The accounts an amount names as its issuer (IOU: the last 20 bytes;
/// MPT: the issuer inside the issuance ID; XRP: none), when not zero.
fn amount_issuer(v: &[u8]) -> Option<AccountId> {
    let id: &[u8] = match v.len() {
        48 => &v[28..48],
        33 => &v[13..33],
        _ => return None,
    };
    issuer_of(id)
}

/// A non-zero 20-byte account.
fn issuer_of(id: &[u8]) -> Option<AccountId> {
    let a: AccountId = id.try_into().ok()?;
    (a != [0; 20]).then_some(a)
}

/// The transaction index and the affected accounts of a transaction's
/// metadata (see the module's doc), sorted.
pub fn affected_accounts(meta: &[u8]) -> Result<(u32, BTreeSet<AccountId>), String> {
    let mut r = Reader { b: meta, at: 0 };
    let mut index = None;
    let mut accounts = BTreeSet::new();
    while !r.done() {
        let field = r.field()?;
        if field == AFFECTED_NODES {
            loop {
                let node = r.field()?;
                if node == ARRAY_END {
                    break;
                }
                if node.0 != ty::OBJECT {
                    return Err(format!(
                        "byte {}: an affected node that is not an object",
                        r.at
                    ));
                }
                let wanted = if node == CREATED_NODE {
                    NEW_FIELDS
                } else {
                    FINAL_FIELDS
                };
                r.object_body(&mut |inner, v| {
                    if inner != wanted {
                        return Ok(());
                    }
                    // The inner object's own fields, read again from its bytes.
                    let mut fields = Reader { b: v, at: 0 };
                    fields.object_body(&mut |f, v| {
                        if f.0 == ty::ACCOUNT {
                            // A VL-prefixed account: empty is unset.
                            if let Some(a) = v.get(1..).and_then(|a| AccountId::try_from(a).ok()) {
                                accounts.insert(a);
                            }
                        } else if [LOW_LIMIT, HIGH_LIMIT, TAKER_PAYS, TAKER_GETS].contains(&f) {
                            accounts.extend(amount_issuer(v));
                        } else if f == MPTOKEN_ISSUANCE_ID {
                            accounts.extend(issuer_of(&v[4..]));
                        }
                        Ok(())
                    })
                })?;
            }
        } else {
            let v = r.value(field.0)?;
            if field == TRANSACTION_INDEX {
                index = Some(u32::from_be_bytes(
                    v.try_into().map_err(|_| "a short index")?,
                ));
            }
        }
    }
    let index = index.ok_or("no TransactionIndex in the metadata")?;
    Ok((index, accounts))
}

/// True when a ledger entry is a directory node without an `Owner`: an
/// order book's directory (Clio's `isBookDir`). An entry that does not
/// parse is not one.
pub fn is_book_dir(entry: &[u8]) -> bool {
    let mut r = Reader { b: entry, at: 0 };
    let mut dir = false;
    while !r.done() {
        let Ok(field) = r.field() else { return false };
        let Ok(v) = r.value(field.0) else {
            return false;
        };
        if field == LEDGER_ENTRY_TYPE {
            dir = v == DIR_NODE.to_be_bytes();
        } else if field == OWNER {
            return false;
        }
    }
    dir
}

/// Clio's book base of a key (`getBookBase`): its first 24 bytes, then
/// zeros.
pub fn book_base(key: &shamap::Key) -> shamap::Key {
    let mut b = [0u8; 32];
    b[..24].copy_from_slice(&key.0[..24]);
    shamap::Key(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// A classic address's 20 bytes (base58, version byte 0), or `None`.
    fn decode_address(s: &str) -> Option<AccountId> {
        const ALPHABET: &[u8] = b"rpshnaf39wBUDNEGHJKLM4PQRST7VWXYZ2bcdeCg65jkm8oFqi1tuvAxyz";
        if !s.starts_with('r') || s.len() < 25 || s.len() > 35 {
            return None;
        }
        let mut n = [0u8; 25];
        for c in s.bytes() {
            let mut carry = ALPHABET.iter().position(|a| *a == c)? as u32;
            for b in n.iter_mut().rev() {
                carry += u32::from(*b) * 58;
                *b = (carry & 0xFF) as u8;
                carry >>= 8;
            }
            if carry != 0 {
                return None;
            }
        }
        if n[0] != 0 {
            return None;
        }
        n[1..21].try_into().ok()
    }

    /// The affected accounts from a decoded `metaData` object, derived
    /// from the JSON: the rule of the module's doc, applied to field names
    /// and values.
    fn from_json(meta: &Value) -> BTreeSet<AccountId> {
        let mut out = BTreeSet::new();
        for node in meta["AffectedNodes"].as_array().expect("nodes") {
            let (kind, body) = node
                .as_object()
                .and_then(|o| o.iter().next())
                .expect("node");
            let inner = if kind == "CreatedNode" {
                "NewFields"
            } else {
                "FinalFields"
            };
            let Some(fields) = body[inner].as_object() else {
                continue;
            };
            for (name, v) in fields {
                match v {
                    Value::String(s) => {
                        if name == "MPTokenIssuanceID" {
                            let b: Vec<u8> = (0..s.len())
                                .step_by(2)
                                .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
                                .collect();
                            out.extend(issuer_of(&b[4..]));
                        } else if let Some(a) = decode_address(s) {
                            out.insert(a);
                        }
                    }
                    Value::Object(o)
                        if ["LowLimit", "HighLimit", "TakerPays", "TakerGets"]
                            .contains(&name.as_str()) =>
                    {
                        if let Some(a) = o
                            .get("issuer")
                            .and_then(Value::as_str)
                            .and_then(decode_address)
                        {
                            if a != [0; 20] {
                                out.insert(a);
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        out
    }

    #[test]
    fn affected_accounts_are_the_jsons_for_every_transaction_of_real_ledgers() {
        let mut checked = 0;
        for file in [
            "ledger-full-90150378.json",
            "ledger-full-94084608.json",
            "ledger-full-7501326.json",
        ] {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../data")
                .join(file);
            let bytes = std::fs::read(&path).expect("read");
            let json: Value = serde_json::from_slice(&bytes).expect("json");
            let dump = shamap_ledger::dump::parse(&bytes).expect("parse");
            let txs = dump.transactions.expect("transactions");
            let ledger = if json["ledger"].is_object() {
                &json["ledger"]
            } else {
                &json
            };
            let decoded = ledger["transactions"].as_array().expect("decoded");
            assert_eq!(txs.len(), decoded.len());
            for (t, d) in txs.iter().zip(decoded) {
                let (index, accounts) = affected_accounts(&t.meta).expect("parses");
                assert_eq!(
                    Some(u64::from(index)),
                    d["metaData"]["TransactionIndex"].as_u64(),
                    "{file}"
                );
                let want = from_json(&d["metaData"]);
                assert_eq!(accounts, want, "{file}: {}", d["hash"]);
                checked += usize::from(!want.is_empty());
            }
        }
        assert!(checked > 100, "{checked}");
    }

    #[test]
    fn malformed_metadata_is_an_error_not_a_panic() {
        assert!(affected_accounts(&[]).is_err());
        assert!(affected_accounts(&[0xF8, 0xE5]).is_err());
        assert!(affected_accounts(&[0x20, 0x1C, 0, 0]).is_err());
        assert!(affected_accounts(&[0x00]).is_err());
        assert!(!is_book_dir(&[0x11]));
    }

    #[test]
    fn book_directories_are_directories_without_an_owner() {
        // LedgerEntryType DirectoryNode, Flags, then (or not) an Owner.
        let mut dir = vec![0x11, 0x00, 0x64, 0x22, 0, 0, 0, 0];
        assert!(is_book_dir(&dir));
        dir.extend_from_slice(&[0x82, 0x14]);
        dir.extend_from_slice(&[7; 20]);
        assert!(!is_book_dir(&dir));
        assert!(!is_book_dir(&[0x11, 0x00, 0x61, 0x22, 0, 0, 0, 0]));
        let key = shamap::Key([9; 32]);
        let base = book_base(&key);
        assert_eq!(&base.0[..24], &[9; 24]);
        assert_eq!(&base.0[24..], &[0; 8]);
    }
}
