//! Known answers and refusals of the encoder.

use super::amount::*;
use super::*;
use serde_json::json;

fn iou(s: &str) -> Result<String, String> {
    iou_value(s, &json!(s), "v")
        .map(|b| format!("{b:016X}"))
        .map_err(|e| e.to_string())
}

#[test]
fn vl_lengths_at_every_boundary() {
    let enc = |n| {
        let mut out = Vec::new();
        vl(n, "f", &mut out).map(|()| out)
    };
    assert_eq!(enc(0).ok(), Some(vec![0]));
    assert_eq!(enc(192).ok(), Some(vec![192]));
    assert_eq!(enc(193).ok(), Some(vec![193, 0]));
    assert_eq!(enc(12_480).ok(), Some(vec![240, 255]));
    assert_eq!(enc(12_481).ok(), Some(vec![241, 0, 0]));
    assert_eq!(enc(918_744).ok(), Some(vec![254, 212, 23]));
    assert!(enc(918_745).is_err());
}

#[test]
fn issued_values_over_rippleds_whole_range() {
    // The largest and smallest positive values rippled represents.
    assert_eq!(
        iou("9999999999999999e80").as_deref(),
        Ok("EC6386F26FC0FFFF")
    );
    assert_eq!(
        iou("1000000000000000e-96").as_deref(),
        Ok("C0438D7EA4C68000")
    );
    assert_eq!(iou("1e-81").as_deref(), Ok("C0438D7EA4C68000"));
    assert_eq!(iou("-1e-81").as_deref(), Ok("80438D7EA4C68000"));
    // One past either end.
    assert!(iou("1e97").is_err());
    assert!(iou("9999999999999999e81").is_err());
    assert!(iou("1e-82").is_err());
    // Zero in every spelling.
    for z in ["0", "-0", "0.0", "0e5", "+0"] {
        assert_eq!(iou(z).as_deref(), Ok("8000000000000000"), "{z}");
    }
    // 16 digits in decimal form, far from exponent 0; past 32 digits
    // rippled calls the string overlong.
    assert_eq!(
        iou("0.00000000000001234567890123456").as_deref(),
        iou("1234567890123456e-29").as_deref()
    );
    assert!(iou("0.000000000000000000000001234567890123456").is_err());
    // 17 significant digits are refused, trailing zeros are not digits.
    assert!(iou("12345678901234567").is_err());
    assert!(iou("12345678901234560000").is_ok());
    // rippled reads the digits into 64 bits: past that it refuses.
    assert!(iou("123456789012345600000").is_err());
    assert!(iou("1234567890123456e5").is_ok());
    // Forms rippled refuses.
    for bad in [
        "",
        "-",
        "01",
        ".5",
        "5.",
        "1e",
        "1e+",
        "0x10",
        "1 ",
        "NaN",
        "1e1234567890",
    ] {
        assert!(iou(bad).is_err(), "{bad:?}");
    }
}

/// Every value of rippled's range, mantissa by mantissa at the edges
/// and exponent by exponent: the bits decode back to the value.
#[test]
fn every_exponent_round_trips() {
    for e in MIN_EXPONENT..=MAX_EXPONENT {
        for m in [MIN_MANTISSA, 1_234_567_890_123_456, MAX_MANTISSA] {
            for negative in [false, true] {
                let s = format!("{}{m}e{e}", if negative { "-" } else { "" });
                let bits = iou_value(&s, &json!(s), "v").expect("in range");
                assert_eq!(bits & AMOUNT_ISSUED, AMOUNT_ISSUED);
                assert_eq!(bits & AMOUNT_POSITIVE == 0, negative, "{s}");
                assert_eq!(((bits >> 54) & 0xFF) as i32 - 97, e, "{s}");
                assert_eq!(bits & ((1 << 54) - 1), m, "{s}");
            }
        }
    }
}

#[test]
fn currencies_as_rippled_reads_them() {
    let c = |s: &str| currency(s, &json!(s), "c").map_err(|e| e.to_string());
    assert_eq!(c("XRP"), Ok([0; 20]));
    let star = c("*G*").expect("rippled's ISO set has *");
    assert_eq!(&star[12..15], b"*G*");
    assert!(star[..12].iter().chain(&star[15..]).all(|&b| b == 0));
    for ok in ["USD", "usd", "<>(", "{}|", "?!@", "#$%", "^&*", "[]0"] {
        assert!(c(ok).is_ok(), "{ok}");
    }
    for bad in ["US", "USDT", "U D", "U.D", "U-D", "U_D", "U~D", "é1", ""] {
        assert!(c(bad).is_err(), "{bad:?}");
    }
    let hex40 = "0158415500000000C1F76FF6ECB0BAC600000000";
    assert_eq!(c(hex40).map(|b| b.to_vec()), Ok(hex(hex40).expect("hex")));
    assert_eq!(c(&hex40.to_lowercase()), c(hex40));
    assert!(c(&hex40[..38]).is_err());
}

#[test]
fn xrp_and_mpt_amounts_including_negative() {
    let amount = |v: Value| {
        let mut out = Vec::new();
        write_amount(&v, "a", &mut out).map(|()| shamap::hash::encode_hex_upper(&out))
    };
    // Exponents in integral amounts, as rippled's grammar has them; a
    // huge one on zero is zero at once.
    for (drops, hex) in [
        ("0", "4000000000000000"),
        ("1", "4000000000000001"),
        ("-1", "0000000000000001"),
        ("-0", "4000000000000000"),
        ("100000000000000000", "416345785D8A0000"),
        ("-100000000000000000", "016345785D8A0000"),
    ] {
        assert_eq!(amount(json!(drops)).ok().as_deref(), Some(hex), "{drops}");
    }
    // Exponents and a `+` read as the same drops, but rippled never prints
    // them (issue 41: `3.7e8`, `+370000000`).
    for never_printed in ["1e3", "0e999999999", "3.7e8", "+370000000"] {
        assert!(amount(json!(never_printed)).is_err(), "{never_printed}");
    }
    assert!(amount(json!("100000000000000001")).is_err());
    assert!(amount(json!("1.5")).is_err());
    assert!(amount(json!("1.0")).is_err());
    assert!(amount(json!(10)).is_err());
    assert!(amount(json!("1e999999999")).is_err());
    let id = "00000001B5F762798A53D543A014CAF8B297CFF8F2F937E8";
    assert_eq!(
        amount(json!({"mpt_issuance_id": id, "value": "100"}))
            .ok()
            .as_deref(),
        Some(format!("600000000000000064{id}").as_str())
    );
    assert_eq!(
        amount(json!({"mpt_issuance_id": id, "value": "9223372036854775807"}))
            .ok()
            .as_deref(),
        Some(format!("607FFFFFFFFFFFFFFF{id}").as_str())
    );
    assert!(amount(json!({"mpt_issuance_id": id, "value": "9223372036854775808"})).is_err());
}

/// Seeded random objects inside the range where the XRPL codec's own
/// encoder is right (normalized issued exponents −15..0, upper-case currencies,
/// non-negative XRP, non-empty accounts), encoded by both: the same
/// bytes. The seed is in the failure message.
#[test]
fn random_objects_agree_with_the_codec_where_it_is_right() {
    use rand::{rngs::SmallRng, Rng, SeedableRng};
    let seed = 0x5eed_c0de_u64;
    let mut rng = SmallRng::seed_from_u64(seed);
    let accounts = [
        "rBKPS4oLSaV2KVVuHH8EpQqMGgGefGFQs7",
        "r3kmLJN5D28dHuH8vZNUZpMC43pEHpaocV",
        "rLQBHVhFnaC5gLEkgr6HgBJJ3bgeZHg9cj",
        "rrrrrrrrrrrrrrrrrrrrBZbvji",
    ];
    // The codec refuses lower-case codes (rippled reads them).
    let alnum = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let hex_of = |rng: &mut SmallRng, n: usize| -> String {
        (0..n).map(|_| format!("{:02X}", rng.gen::<u8>())).collect()
    };
    for round in 0..2000 {
        let mut rng2 = SmallRng::seed_from_u64(rng.gen());
        let r = &mut rng2;
        let digits = r.gen_range(1..=16);
        let mantissa: u64 = r.gen_range(10u64.pow(digits - 1)..10u64.pow(digits));
        let exponent: i32 = r.gen_range(-15 + 16 - digits as i32..=16 - digits as i32);
        let value = match r.gen_range(0..3) {
            0 => format!("{mantissa}e{exponent}"),
            1 => format!("-{mantissa}e{exponent}"),
            _ => "0".to_owned(),
        };
        let currency: String = if r.gen_bool(0.8) {
            let c: String = (0..3)
                .map(|_| alnum[r.gen_range(0..alnum.len())] as char)
                .collect();
            if c == "XRP" {
                "USD".to_owned()
            } else {
                c
            }
        } else {
            format!("01{}", hex_of(r, 19))
        };
        let account = accounts[r.gen_range(0..3)];
        let obj = json!({
            "LedgerEntryType": "RippleState",
            "Flags": r.gen::<u32>(),
            "Balance": {"currency": currency, "issuer": accounts[3], "value": value},
            "HighLimit": {"currency": currency, "issuer": account, "value": value},
            "LowNode": format!("{:X}", r.gen::<u64>()),
            "PreviousTxnID": hex_of(r, 32),
            "PreviousTxnLgrSeq": r.gen::<u32>(),
        });
        let (data_len, type_len) = (r.gen_range(0..300), r.gen_range(0..20));
        let tx = json!({
            "TransactionType": "Payment",
            "Account": account,
            "Destination": accounts[r.gen_range(0..3)],
            "Amount": r.gen_range(0..=100_000_000_000_000_000u64).to_string(),
            "Fee": r.gen_range(0..1_000_000u64).to_string(),
            "Sequence": r.gen::<u32>(),
            "SigningPubKey": hex_of(r, 33),
            "Memos": [{"Memo": {"MemoData": hex_of(r, data_len),
                                "MemoType": hex_of(r, type_len)}}],
            "Paths": [[{"currency": currency, "issuer": account}], [{"account": account}]],
            "SendMax": {"currency": currency, "issuer": account, "value": value},
        });
        for v in [obj, tx] {
            let ours = object(v.as_object().expect("an object"))
                .unwrap_or_else(|e| panic!("seed {seed:#x} round {round}: {e}: {v}"));
            let theirs = xrpl::core::binarycodec::encode(&v)
                .unwrap_or_else(|e| panic!("seed {seed:#x} round {round}: codec: {e}: {v}"));
            assert_eq!(
                shamap::hash::encode_hex_upper(&ours),
                theirs.to_ascii_uppercase(),
                "seed {seed:#x} round {round}: {v}"
            );
        }
    }
}
