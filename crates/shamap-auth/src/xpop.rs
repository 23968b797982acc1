//! XPOPs (XLS-41): a transaction, its metadata, the proof that they are a
//! leaf of a ledger's transaction map, that ledger's header, a validator
//! list and a quorum of validations of the header's hash: verifiable
//! offline from one trusted key, the list publisher's.
//!
//! ```json
//! {"ledger": {"acroot", "txroot", "phash", "close", "pclose", "coins", "cres", "flags", "index"},
//!  "transaction": {"blob", "meta", "proof"},
//!  "validation": {"data": {"<validator key>": "<validation hex>", …}, "unl": <validator list>}}
//! ```
//!
//! The proof has two forms. The *list* form is the path only: at each depth
//! a list of (up to) 16 entries, each a child's hash, or a further list for
//! the child on the transaction's path. The *tree* form is the whole
//! transaction map: `{"children": {"0"…"F": node}, "hash", "key"}`, a leaf
//! having no children.
//!
//! [`verify`] checks, in order: the list (publisher manifest, blob
//! signature, every validator manifest); the transaction's leaf hash
//! (`SND\0` ‖ VL(tx) ‖ VL(meta) ‖ tx ID) **on its key's path** in the proof
//! (the leaf at the branch the ID's nibbles lead to, not anywhere); every
//! hash the tree form states (inner and leaf keys too: an inner node's key is
//! its path, zero-filled); the root against the header's `txroot`; the
//! ledger hash from the header fields; then each validation of a listed
//! validator: signed by the key its manifest names, for that ledger hash
//! and sequence, a full validation. Every validation from a listed
//! validator must verify (a bad one is tampering, not a missing vote);
//! validations of keys not on the list are skipped and counted; a validator
//! counts once however many entries name it. The quorum is
//! [`ValidatorList::quorum`].

use serde_json::{json, Map, Value};
use shamap::node_hash::HashPrefix;
use shamap::xrpl::{sha512_half, transaction_id, LedgerHeader};
use shamap::{Hash256, Key};

use crate::error::AuthError;
use crate::keys::PublicKey;
use crate::validation::{FoundValidation, Validation};
use crate::validator_list::ValidatorList;

pub use crate::proof::ProofForm;
use crate::proof::{build, list_json, list_root, tree_json, tree_root};
use shamap::xrpl::fields::{read_fields, type_code};

/// What a valid XPOP proves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XpopReport {
    /// The ledger's sequence.
    pub ledger_index: u32,
    /// The ledger hash, recomputed from the header fields.
    pub ledger_hash: Hash256,
    /// The header.
    pub header: LedgerHeader,
    /// The transaction's ID.
    pub tx_hash: Hash256,
    /// The result code the metadata records.
    /// (`None` when the metadata cannot be read as rippled's metadata: the
    /// proof still holds for its bytes.)
    pub result_code: Option<u8>,
    /// Its name (`tesSUCCESS`, …) where rippled's definitions have one;
    /// `code N` otherwise; `unknown (why)` when the metadata cannot be read.
    pub result: String,
    /// The proof's form.
    pub form: ProofForm,
    /// Validators on the list.
    pub validators: usize,
    /// Validations needed.
    pub quorum: usize,
    /// Distinct listed validators whose full validation of this ledger verified.
    pub votes: usize,
    /// Validations under keys not on the list (skipped).
    pub unlisted: usize,
    /// The list's sequence.
    pub vl_sequence: u64,
    /// The list's expiration (seconds since 2000-01-01).
    pub vl_expiration: u64,
    /// Whether the list was in force when the ledger closed.
    pub vl_in_force: bool,
}

impl XpopReport {
    /// The report as JSON (the `--json` line of `shamap xpop verify`, and
    /// Python's `verify_xpop`).
    pub fn to_json(&self) -> Value {
        json!({
            "valid": true,
            "ledger_index": self.ledger_index,
            "ledger_hash": self.ledger_hash.to_hex(),
            "transaction_hash": self.tx_hash.to_hex(),
            "result": self.result,
            "result_code": self.result_code,
            "proof_form": self.form.name(),
            "validators": self.validators,
            "quorum": self.quorum,
            "votes": self.votes,
            "unlisted_validations": self.unlisted,
            "vl_sequence": self.vl_sequence,
            "vl_expiration": self.vl_expiration,
            "vl_in_force_at_close": self.vl_in_force,
        })
    }
}

/// Verifies an XPOP against the trusted list publisher key `vl_key`.
pub fn verify(xpop: &Value, vl_key: &PublicKey) -> Result<XpopReport, AuthError> {
    let ledger = section(xpop, "ledger")?;
    let transaction = section(xpop, "transaction")?;
    let validation = section(xpop, "validation")?;
    let header_claimed = read_header(ledger)?;
    let blob = hex_field(transaction, "blob", "transaction")?;
    let meta = hex_field(transaction, "meta", "transaction")?;
    let tx_hash = transaction_id(&blob);
    let leaf = tx_leaf_hash(&blob, &meta, &tx_hash)?;
    let proof = transaction
        .get("proof")
        .ok_or_else(|| AuthError::malformed("the XPOP", "has no transaction.proof"))?;
    let (form, root) = match proof {
        Value::Array(_) => (
            ProofForm::List,
            list_root(proof, 0, &Key(tx_hash.0), &leaf, &mut false)?,
        ),
        Value::Object(_) => (
            ProofForm::Tree,
            tree_root(proof, 0, &Key(tx_hash.0), &leaf)?,
        ),
        _ => {
            return Err(AuthError::malformed(
                "the proof",
                "is neither a list nor an object",
            ))
        }
    };
    if root != header_claimed.transaction_hash {
        return Err(AuthError::invalid(format!(
            "the proof's root {} is not the header's txroot {}",
            root.to_hex(),
            header_claimed.transaction_hash.to_hex()
        )));
    }
    let header = header_claimed;
    let ledger_hash = header.hash();
    let unl = validation
        .get("unl")
        .ok_or_else(|| AuthError::malformed("the XPOP", "has no validation.unl"))?;
    let list = ValidatorList::verify(unl, vl_key, Some(u64::from(header.close_time)))?;
    let data = validation
        .get("data")
        .and_then(Value::as_object)
        .ok_or_else(|| AuthError::malformed("the XPOP", "has no validation.data object"))?;
    let mut found = Vec::with_capacity(data.len());
    for (key, hex) in data {
        let hex = hex.as_str().ok_or_else(|| {
            AuthError::malformed(
                "the XPOP",
                &format!("validation.data[{key:?}] is not a hex string"),
            )
        })?;
        let raw = const_hex::decode(hex.trim()).map_err(|_| {
            AuthError::malformed("the XPOP", &format!("validation.data[{key:?}] is not hex"))
        })?;
        found.push(FoundValidation {
            filed_under: Some(key.clone()),
            raw,
            source: "the XPOP".to_string(),
        });
    }
    let tally = count_votes(&list, &found, &ledger_hash, header.seq)?;
    if tally.votes.len() < list.quorum() {
        return Err(AuthError::invalid(format!(
            "{} of {} listed validators validated ledger {} ({}); the quorum is {}{}",
            tally.votes.len(),
            list.validators.len(),
            header.seq,
            ledger_hash.to_hex(),
            list.quorum(),
            tally.why_short()
        )));
    }
    let (result_code, result) = match result_code(&meta) {
        Ok(code) => (
            Some(code),
            shamap_ledger::result_code::result_name(code).unwrap_or_else(|| format!("code {code}")),
        ),
        Err(e) => (None, format!("unknown ({e})")),
    };
    Ok(XpopReport {
        ledger_index: header.seq,
        ledger_hash,
        header,
        tx_hash,
        result_code,
        result,
        form,
        validators: list.validators.len(),
        quorum: list.quorum(),
        votes: tally.votes.len(),
        unlisted: tally.unlisted,
        vl_sequence: list.sequence,
        vl_expiration: list.expiration,
        vl_in_force: list.in_force_at(u64::from(header.close_time)),
    })
}

/// The validations that count for one ledger hash, and those that did not.
#[derive(Debug, Default)]
pub struct Tally {
    /// One verified full validation per listed validator (master key → validation).
    pub votes: std::collections::BTreeMap<PublicKey, Validation>,
    /// Validations under keys not on the list.
    pub unlisted: usize,
    /// Validations of listed validators for another ledger (hash or sequence).
    pub other_ledger: usize,
    /// Partial (not full) validations of listed validators.
    pub partial: usize,
    /// Listed validators whose manifest revokes their key.
    pub revoked: usize,
    /// Further entries of a validator already counted.
    pub duplicates: usize,
}

impl Tally {
    fn why_short(&self) -> String {
        let mut parts = Vec::new();
        if self.unlisted > 0 {
            parts.push(format!(
                "{} validations from keys not on the list",
                self.unlisted
            ));
        }
        if self.other_ledger > 0 {
            parts.push(format!("{} for another ledger", self.other_ledger));
        }
        if self.partial > 0 {
            parts.push(format!("{} partial", self.partial));
        }
        if self.revoked > 0 {
            parts.push(format!("{} from revoked validators", self.revoked));
        }
        if self.duplicates > 0 {
            parts.push(format!(
                "{} naming a validator already counted",
                self.duplicates
            ));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!(" (not counted: {})", parts.join(", "))
        }
    }
}

/// Counts the validations that vote for `ledger_hash` (sequence `seq`):
/// each from a listed validator, signed by the key its manifest names. A
/// validation of a listed validator that does not verify, or whose key is
/// not that validator's, is refused (an error naming it).
pub fn count_votes(
    list: &ValidatorList,
    found: &[FoundValidation],
    ledger_hash: &Hash256,
    seq: u32,
) -> Result<Tally, AuthError> {
    let mut tally = Tally::default();
    for f in found {
        let filed = match &f.filed_under {
            Some(k) => Some(PublicKey::parse(k).map_err(|e| {
                AuthError::malformed(
                    &f.source,
                    &format!("a validation is filed under {k:?}, which {e}"),
                )
            })?),
            None => None,
        };
        // The validator it claims to be from: by the key it is filed under,
        // else by the key that signed it.
        let signer_hint = match filed {
            Some(k) => k,
            None => {
                let fields = read_fields(&f.raw, "a validation")?;
                let key = fields
                    .iter()
                    .find(|x| x.is(type_code::BLOB, 3))
                    .and_then(|x| PublicKey::from_bytes(x.value(&f.raw)))
                    .ok_or_else(|| {
                        AuthError::malformed(&f.source, "a validation has no signing key")
                    })?;
                key
            }
        };
        let Some(validator) = list.find(&signer_hint) else {
            tally.unlisted += 1;
            continue;
        };
        if tally.votes.contains_key(&validator.master) {
            // Counted already: a second entry for one validator adds no
            // vote, and is not worth a signature check (a hostile XPOP
            // cannot make the verifier check more signatures than the
            // list has validators).
            tally.duplicates += 1;
            continue;
        }
        let name = format!("the validation of {}", validator.master.to_base58());
        let Some(signing) = validator.signing else {
            tally.revoked += 1;
            continue;
        };
        let v = Validation::verify(&f.raw, &format!("{} ({})", name, f.source))?;
        if v.signing_key != signing {
            return Err(AuthError::invalid(format!(
                "{name} is signed by {}, not by the key {} its manifest names",
                v.signing_key.to_base58(),
                signing.to_base58()
            )));
        }
        if v.ledger_hash != *ledger_hash || v.ledger_seq != seq {
            tally.other_ledger += 1;
            continue;
        }
        if !v.full() {
            tally.partial += 1;
            continue;
        }
        tally.votes.entry(validator.master).or_insert(v);
    }
    Ok(tally)
}

fn section<'a>(xpop: &'a Value, name: &str) -> Result<&'a Map<String, Value>, AuthError> {
    xpop.get(name)
        .and_then(Value::as_object)
        .ok_or_else(|| AuthError::malformed("the XPOP", &format!("has no {name:?} object")))
}

fn hex_field(obj: &Map<String, Value>, name: &str, section: &str) -> Result<Vec<u8>, AuthError> {
    let text = obj.get(name).and_then(Value::as_str).ok_or_else(|| {
        AuthError::malformed("the XPOP", &format!("has no string {section}.{name}"))
    })?;
    const_hex::decode(text.trim())
        .map_err(|_| AuthError::malformed("the XPOP", &format!("{section}.{name} is not hex")))
}

fn number(obj: &Map<String, Value>, name: &str) -> Result<u64, AuthError> {
    let v = obj
        .get(name)
        .ok_or_else(|| AuthError::malformed("the XPOP", &format!("has no ledger.{name}")))?;
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) if !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit()) => {
            s.parse().ok()
        }
        _ => None,
    }
    .ok_or_else(|| {
        AuthError::malformed(
            "the XPOP",
            &format!("ledger.{name} is not an unsigned integer"),
        )
    })
}

fn hash_of(obj: &Map<String, Value>, name: &str) -> Result<Hash256, AuthError> {
    obj.get(name)
        .and_then(Value::as_str)
        .and_then(|s| Hash256::from_hex(s).ok())
        .ok_or_else(|| {
            AuthError::malformed("the XPOP", &format!("ledger.{name} is not 64 hex digits"))
        })
}

fn read_header(ledger: &Map<String, Value>) -> Result<LedgerHeader, AuthError> {
    let small = |name: &str, max: u64| -> Result<u64, AuthError> {
        let v = number(ledger, name)?;
        if v > max {
            return Err(AuthError::malformed(
                "the XPOP",
                &format!("ledger.{name} {v} is out of range"),
            ));
        }
        Ok(v)
    };
    Ok(LedgerHeader {
        seq: small("index", u64::from(u32::MAX))? as u32,
        total_coins: number(ledger, "coins")?,
        parent_hash: hash_of(ledger, "phash")?,
        transaction_hash: hash_of(ledger, "txroot")?,
        account_hash: hash_of(ledger, "acroot")?,
        parent_close_time: small("pclose", u64::from(u32::MAX))? as u32,
        close_time: small("close", u64::from(u32::MAX))? as u32,
        close_time_resolution: small("cres", 255)? as u8,
        close_flags: small("flags", 255)? as u8,
    })
}

/// The header as an XPOP writes it.
pub fn header_json(h: &LedgerHeader) -> Value {
    json!({
        "acroot": h.account_hash.to_hex(),
        "close": h.close_time,
        "coins": h.total_coins.to_string(),
        "cres": h.close_time_resolution,
        "flags": h.close_flags,
        "index": h.seq,
        "pclose": h.parent_close_time,
        "phash": h.parent_hash.to_hex(),
        "txroot": h.transaction_hash.to_hex(),
    })
}

/// The hash of a transaction+metadata leaf: `SHA512Half(SND\0 ‖ VL(tx) ‖
/// VL(meta) ‖ tx ID)`.
pub fn tx_leaf_hash(blob: &[u8], meta: &[u8], tx_hash: &Hash256) -> Result<Hash256, AuthError> {
    let (_, data) = shamap::xrpl::tx_with_meta_item(blob, meta).map_err(|e| {
        AuthError::malformed("the transaction", &format!("is too long for a leaf: {e}"))
    })?;
    Ok(sha512_half(&[
        HashPrefix::TX_NODE.bytes(),
        &data,
        &tx_hash.0,
    ]))
}

/// The result code (`sfTransactionResult`) of a metadata blob.
pub fn result_code(meta: &[u8]) -> Result<u8, AuthError> {
    let fields = read_fields(meta, "the metadata")?;
    fields
        .iter()
        .find(|f| f.is(type_code::UINT8, 3))
        .map(|f| f.value(meta)[0])
        .ok_or_else(|| AuthError::malformed("the metadata", "has no sfTransactionResult"))
}

/// What an XPOP is made from.
pub struct XpopSource<'a> {
    /// The ledger's header (its hash is what the validations must name).
    pub header: LedgerHeader,
    /// Every transaction of the ledger with its metadata.
    pub transactions: &'a [(Vec<u8>, Vec<u8>)],
    /// The transaction to prove.
    pub tx_hash: Hash256,
    /// Validations found (any ledgers, any validators: those that count are chosen).
    pub validations: &'a [FoundValidation],
    /// The validator list as published.
    pub vl: &'a Value,
    /// The trusted publisher key.
    pub vl_key: PublicKey,
    /// The proof form to write.
    pub form: ProofForm,
}

/// Makes an XPOP, checking every part before it is returned: the ledger's
/// transactions hash to its header's `txroot`, the transaction is among
/// them, the list verifies against `vl_key`, and validations of listed
/// validators reach the quorum on the header's hash. The result is then
/// verified whole with [`verify`].
pub fn make(src: &XpopSource<'_>) -> Result<(Value, XpopReport), AuthError> {
    let ledger_hash = src.header.hash();
    let list = ValidatorList::verify(src.vl, &src.vl_key, Some(u64::from(src.header.close_time)))?;
    let mut items = Vec::with_capacity(src.transactions.len());
    let mut target = None;
    for (blob, meta) in src.transactions {
        let id = transaction_id(blob);
        let leaf = tx_leaf_hash(blob, meta, &id)?;
        if id == src.tx_hash {
            target = Some((blob, meta));
        }
        items.push((Key(id.0), leaf));
    }
    let Some((blob, meta)) = target else {
        return Err(AuthError::invalid(format!(
            "transaction {} is not in ledger {} ({} transactions)",
            src.tx_hash.to_hex(),
            src.header.seq,
            src.transactions.len()
        )));
    };
    items.sort_by_key(|a| a.0);
    if items.windows(2).any(|w| w[0].0 == w[1].0) {
        return Err(AuthError::invalid(format!(
            "ledger {} lists a transaction twice",
            src.header.seq
        )));
    }
    let tree = build(&items, 0, Key([0; 32]));
    if tree.hash() != src.header.transaction_hash {
        return Err(AuthError::invalid(format!(
            "the transactions of ledger {} hash to {}, not to its header's transaction_hash {}",
            src.header.seq,
            tree.hash().to_hex(),
            src.header.transaction_hash.to_hex()
        )));
    }
    let tally = count_votes(&list, src.validations, &ledger_hash, src.header.seq)?;
    if tally.votes.len() < list.quorum() {
        return Err(AuthError::invalid(format!(
            "the validations reach no quorum on ledger {} ({}): {} of {} listed validators, {} needed{}",
            src.header.seq,
            ledger_hash.to_hex(),
            tally.votes.len(),
            list.validators.len(),
            list.quorum(),
            tally.why_short()
        )));
    }
    let mut data = Map::new();
    for v in tally.votes.values() {
        data.insert(
            v.signing_key.to_base58(),
            Value::String(const_hex::encode_upper(&v.raw)),
        );
    }
    let proof = match src.form {
        ProofForm::Tree => tree_json(&tree),
        ProofForm::List => list_json(&tree, &Key(src.tx_hash.0), 0),
    };
    let xpop = json!({
        "ledger": header_json(&src.header),
        "transaction": {
            "blob": const_hex::encode_upper(blob),
            "meta": const_hex::encode_upper(meta),
            "proof": proof,
        },
        "validation": {"data": data, "unl": src.vl},
    });
    let report = verify(&xpop, &src.vl_key)?;
    Ok((xpop, report))
}
