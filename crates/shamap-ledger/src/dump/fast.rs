//! The fast path of [`parse`](super::parse), for large dumps.
//!
//! A `serde_json::Value` of a dump costs several times the file in memory
//! (an object, two owned keys and two owned strings per entry) and most of
//! the reading time. Here the document is split without building values: the
//! top-level object, and its `result` and `ledger` objects, are read as
//! members holding slices of the input; every other member is parsed into a
//! `Value` as before, except the big lists (`accountState`, `state`,
//! `transactions`), which are set aside and replaced by empty arrays. The
//! same [`read_document`](super::read_document) then reads that skeleton
//! (header, server errors, which list is where, duplicates), and the lists'
//! entries are read straight from their slices: flat objects whose members
//! are strings (or scalars it ignores), hex decoded in place.
//!
//! It only ever answers when [`parse_dom`](super::parse_dom) would give the
//! same dump: anything else (an error of any kind, an entry that is not a
//! flat object of unescaped strings, a member nested deeper than
//! [`MAX_MEMBER_NESTING`], input that is not UTF-8) makes it decline, and
//! the caller falls back to the full parse, which then gives its exact
//! result or error. The fuzz target `dump_reader` checks the agreement.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{read_document, LedgerDump, Object, StateEntry, TxEntry};
use shamap::hash::{decode_hex, Hash256, Key};
use shamap::xrpl::transaction_id;

/// Members whose arrays are read entry by entry from the input.
const LIST_NAMES: [&str; 3] = ["accountState", "state", "transactions"];

/// Deepest nesting of a member parsed into a `Value` on its own. A
/// document-wide parse stops at 128 levels counted from the top; parsed
/// alone, a member would count from itself, so anything deep declines.
const MAX_MEMBER_NESTING: usize = 64;

/// A list set aside: the path of the object holding it (`""`, `"result"`,
/// `"ledger"`, `"result.ledger"`), its member name and its text.
struct RawList<'a> {
    path: String,
    name: &'static str,
    raw: &'a RawValue,
}

/// The dump in `input` (BOM and blank input already handled by the caller),
/// or `None` when the full parse must decide.
pub(super) fn parse(input: &[u8]) -> Option<LedgerDump> {
    let text = std::str::from_utf8(input).ok()?;
    let raw: &RawValue = serde_json::from_str(text).ok()?;
    let mut lists = Vec::new();
    let root = skeleton(raw, "", &mut lists)?;
    let mut dump = read_document(&root).ok()?;
    // Where `read_document` looks for each list (it found at most one).
    let body = match root.get("result") {
        Some(Value::Object(_)) => "result",
        _ => "",
    };
    let body_obj = if body.is_empty() {
        &root
    } else {
        root.get("result")?.as_object()?
    };
    let ledger = match body_obj.get("ledger") {
        Some(Value::Object(_)) if body.is_empty() => Some("ledger".to_owned()),
        Some(Value::Object(_)) => Some(format!("{body}.ledger")),
        _ => None,
    };
    let ledger = ledger.as_deref();
    let mut unread: Vec<bool> = vec![true; lists.len()];
    let mut find = |places: &[(Option<&str>, &str)]| {
        let i = lists.iter().position(|l| {
            places
                .iter()
                .any(|&(path, name)| path == Some(l.path.as_str()) && l.name == name)
        })?;
        unread[i] = false;
        Some(lists[i].raw)
    };
    let state = find(&[
        (ledger, "accountState"),
        (Some(body), "accountState"),
        (Some(body), "state"),
    ]);
    let transactions = find(&[(ledger, "transactions"), (Some(body), "transactions")]);
    if let Some(raw) = state {
        dump.state = Some(entries(raw, state_entry)?);
    }
    if let Some(raw) = transactions {
        dump.transactions = Some(entries(raw, tx_entry)?);
    }
    // Lists in places the reader ignores are still parsed, as the full
    // parse would (it fails on one nested too deeply, for one).
    for (list, _) in lists.iter().zip(&unread).filter(|(_, &u)| u) {
        member_value(list.raw.get())?;
    }
    Some(dump)
}

/// A member parsed alone into a `Value`, unless it nests too deeply.
fn member_value(text: &str) -> Option<Value> {
    if nesting(text) > MAX_MEMBER_NESTING {
        return None;
    }
    serde_json::from_str(text).ok()
}

/// The object `raw` as `read_document` would see it, with its non-empty
/// lists set aside into `lists` (and left as empty arrays); its `result`
/// and `ledger` members likewise, two levels down.
fn skeleton<'a>(raw: &'a RawValue, path: &str, lists: &mut Vec<RawList<'a>>) -> Option<Object> {
    let members: BTreeMap<String, &'a RawValue> = serde_json::from_str(raw.get()).ok()?;
    let depth = if path.is_empty() {
        0
    } else {
        path.split('.').count()
    };
    let mut obj = Map::new();
    for (name, v) in members {
        let text = v.get();
        let list = LIST_NAMES.iter().find(|&&n| n == name);
        let value = if (name == "result" || name == "ledger") && depth < 2 && text.starts_with('{')
        {
            let sub = if path.is_empty() {
                name.clone()
            } else {
                format!("{path}.{name}")
            };
            Value::Object(skeleton(v, &sub, lists)?)
        } else if let (Some(&list), true) = (list, text.starts_with('[')) {
            lists.push(RawList {
                path: path.to_owned(),
                name: list,
                raw: v,
            });
            Value::Array(Vec::new())
        } else {
            member_value(text)?
        };
        obj.insert(name, value);
    }
    Some(obj)
}

/// How deeply arrays and objects nest in the JSON `text`.
fn nesting(text: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for b in text.bytes() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// Every entry of the list `raw`, or `None` if one of them is not in the
/// common form.
fn entries<T>(raw: &RawValue, read: fn(&str) -> Option<T>) -> Option<Vec<T>> {
    let items: Vec<&RawValue> = serde_json::from_str(raw.get()).ok()?;
    items.iter().map(|item| read(item.get())).collect()
}

/// A state entry (`read_state_entry`'s rules, success only).
fn state_entry(text: &str) -> Option<StateEntry> {
    let e: Flat<'_> = serde_json::from_str(text).ok()?;
    let key = Key::from_hex(e.index.or(e.hash)?).ok()?;
    if key.is_zero() {
        return None;
    }
    let data = decode_hex(e.data.or(e.tx_blob)?).ok()?;
    Some(StateEntry { key, data })
}

/// A transaction with its metadata (`read_tx_entry`'s rules, success only).
fn tx_entry(text: &str) -> Option<TxEntry> {
    let e: Flat<'_> = serde_json::from_str(text).ok()?;
    let tx = decode_hex(e.tx_blob?).ok()?;
    let meta = decode_hex(e.meta.or(e.meta_blob)?).ok()?;
    if let Some(claimed) = e.hash {
        if Hash256::from_hex(claimed).ok()? != transaction_id(&tx) {
            return None;
        }
    }
    Some(TxEntry { tx, meta })
}

/// The members of an entry the reader uses, as unescaped strings of the
/// input; `null` counts as absent, as in the full parse. Any other member
/// must be a scalar (read as raw text). A repeated member keeps its last value, as a `Value`
/// does.
#[derive(Default)]
struct Flat<'a> {
    index: Option<&'a str>,
    hash: Option<&'a str>,
    data: Option<&'a str>,
    tx_blob: Option<&'a str>,
    meta: Option<&'a str>,
    meta_blob: Option<&'a str>,
}

impl<'de> Deserialize<'de> for Flat<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct FlatVisitor;
        impl<'de> Visitor<'de> for FlatVisitor {
            type Value = Flat<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a flat object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Flat<'de>, A::Error> {
                let mut e = Flat::default();
                while let Some(name) = m.next_key::<&'de str>()? {
                    let slot = match name {
                        "index" => &mut e.index,
                        "hash" => &mut e.hash,
                        "data" => &mut e.data,
                        "tx_blob" => &mut e.tx_blob,
                        "meta" => &mut e.meta,
                        "meta_blob" => &mut e.meta_blob,
                        _ => {
                            // Read as raw text, not through `deserialize_any`:
                            // with serde_json's `arbitrary_precision` (which
                            // the XRPL codec's dependencies switch on for the
                            // whole build) a number arrives as a map.
                            let raw = m.next_value::<&'de RawValue>()?;
                            if raw.get().starts_with(['[', '{']) {
                                return Err(de::Error::custom("a nested member"));
                            }
                            continue;
                        }
                    };
                    *slot = m.next_value::<Option<&'de str>>()?;
                }
                Ok(e)
            }
        }
        d.deserialize_map(FlatVisitor)
    }
}
