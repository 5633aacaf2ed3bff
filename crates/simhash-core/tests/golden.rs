//! Golden vectors: fixed texts and the fingerprints they must give.
//!
//! Users store fingerprints for years, so these values are a contract. A
//! failure here means the fingerprint definition changed: a dependency
//! (jieba-rs, unicode-normalization, the Rust standard library's Unicode
//! tables), the IDF table, or our own code. Either undo the change or, if it
//! is deliberate, bump the definition's version in the README, explain the
//! migration, and update these values in the same commit.
//!
//! The same vectors are checked through SQL in `tests/sql/fingerprint.sql`.

use simhash_core::{hex, Fingerprinter, Version};

const GOLDEN: &[(&str, Option<&str>)] = &[
    // Chinese news prose.
    ("中华人民共和国成立于1949年，首都是北京。", Some("e1218537fa5dcb24")),
    (
        "国务院总理李鹏今天在人民大会堂会见了来访的日本客人，双方就进一步发展中日两国的经贸合作交换了意见。",
        Some("2e113c25dcd67d46"),
    ),
    // English.
    ("The quick brown fox jumps over the lazy dog.", Some("8212868318d29267")),
    (
        "SimHash was described by Moses Charikar in 2002; Google used it to find near-duplicate web pages.",
        Some("c317ce81f7faddfa"),
    ),
    // Mixed Chinese, Latin and digits.
    (
        "苹果公司发布了新款iPhone 15 Pro，售价7999元起。Apple says it ships in September.",
        Some("d106c30a468bd9a0"),
    ),
    // Full-width forms (NFKC) and an ideographic space.
    ("ＦＵＬＬ－ＷＩＤＴＨ　ｔｅｘｔ：１２３４５", Some("0540988960284611")),
    // Other scripts and accents, lower-cased.
    ("Привет, мир! Ελληνικά. café naïve", Some("ec87f8d1e2347cfc")),
    // One token: the fingerprint is the token's xxh3-64 hash itself.
    ("我", Some("7931193e731884c4")),
    ("a", Some("e6c632b61e964e1f")),
    // No features: no fingerprint.
    ("", None),
    ("  ，。！？  ", None),
];

/// Definition version 2 (extension 0.2's `simhash(text)`). Produced by
/// `Fingerprinter::fingerprint_as(Version::V2, text)` when version 2 was
/// made, and checked through SQL in `tests/sql/fingerprint.sql`. Where
/// version 2 equals version 1 the text has no traditional character, no
/// token outside the IDF table that sits beside one inside it, and no
/// token more than 3 times.
const GOLDEN_V2: &[(&str, Option<&str>)] = &[
    ("中华人民共和国成立于1949年，首都是北京。", Some("6525bdafa24fcfa4")),
    // Traditional characters fold to the simplified text's fingerprint
    // (version 1: 0abf2aacd6033066 and 2e113c25dcd67d46).
    (
        "國務院總理李鵬今天在人民大會堂會見了來訪的日本客人，雙方就進一步發展中日兩國的經貿合作交換了意見。",
        Some("2e113c25dcd67d46"),
    ),
    (
        "国务院总理李鹏今天在人民大会堂会见了来访的日本客人，双方就进一步发展中日两国的经贸合作交换了意见。",
        Some("2e113c25dcd67d46"),
    ),
    // Only unknown tokens, each once: every weight is the same in both.
    ("The quick brown fox jumps over the lazy dog.", Some("8212868318d29267")),
    (
        "苹果公司发布了新款iPhone 15 Pro，售价7999元起。Apple says it ships in September.",
        Some("e306651a62d2d9b0"),
    ),
    ("ＦＵＬＬ－ＷＩＤＴＨ　ｔｅｘｔ：１２３４５", Some("0540988960284611")),
    // The fold comes after NFKC: the Kangxi radical U+2F9E and the
    // compatibility ideograph U+F902 become 車 by NFKC, then 车 by the
    // fold, so both lines give the same fingerprint (version 1:
    // 75518c524465ce60 and 5c960afae142a4b5). Added with
    // `cargo run -p simhash-core --example fp -- v2`.
    ("北京火\u{2F9E}站今天开通了新的\u{F902}道。", Some("5c960afae142a4b5")),
    ("北京火车站今天开通了新的车道。", Some("5c960afae142a4b5")),
    ("我", Some("7931193e731884c4")),
    ("a", Some("e6c632b61e964e1f")),
    ("", None),
    ("  ，。！？  ", None),
];

/// Definition version 3 (extension 0.3's `simhash(text)`). Produced by
/// `cargo run -p simhash-core --example fp v3` when version 3 was made, and
/// checked through SQL in `tests/sql/fingerprint.sql`.
const GOLDEN_V3: &[(&str, Option<&str>)] = &[
    ("中华人民共和国成立于1949年，首都是北京。", Some("2990d2b8bbc759a6")),
    // Traditional characters fold, as in version 2.
    (
        "国务院总理李鹏今天在人民大会堂会见了来访的日本客人，双方就进一步发展中日两国的经贸合作交换了意见。",
        Some("3664742c01128d56"),
    ),
    (
        "國務院總理李鵬今天在人民大會堂會見了來訪的日本客人，雙方就進一步發展中日兩國的經貿合作交換了意見。",
        Some("3664742c01128d56"),
    ),
    ("The quick brown fox jumps over the lazy dog.", Some("83bfd9f5751b8194")),
    (
        "SimHash was described by Moses Charikar in 2002; Google used it to find near-duplicate web pages.",
        Some("cb9c500ba08fb55c"),
    ),
    (
        "苹果公司发布了新款iPhone 15 Pro，售价7999元起。Apple says it ships in September.",
        Some("3b9d1c130d599877"),
    ),
    ("ＦＵＬＬ－ＷＩＤＴＨ　ｔｅｘｔ：１２３４５", Some("a7de524032685c9e")),
    ("Привет, мир! Ελληνικά. café naïve", Some("520c3073a8614b32")),
    ("北京火\u{2F9E}站今天开通了新的\u{F902}道。", Some("9a9dfb3d5377ca73")),
    ("北京火车站今天开通了新的车道。", Some("9a9dfb3d5377ca73")),
    // One feature: the fingerprint is its hash; a Latin word of one letter
    // is the one trigram `^a$`.
    ("我", Some("7931193e731884c4")),
    ("a", Some("d5ddebb427ac945a")),
    ("", None),
    ("  ，。！？  ", None),
];

fn fingerprinter() -> &'static Fingerprinter {
    static FP: std::sync::OnceLock<Fingerprinter> = std::sync::OnceLock::new();
    FP.get_or_init(Fingerprinter::new)
}

fn hex_of(text: &str) -> Option<String> {
    fingerprinter().fingerprint(text).map(hex::format)
}

/// The vectors of `table` whose fingerprint under `version` differs, as
/// lines saying what was wanted and what came.
fn changed(version: Version, table: &[(&str, Option<&str>)]) -> Vec<String> {
    table
        .iter()
        .filter_map(|(text, want)| {
            let got = fingerprinter()
                .fingerprint_as(version, text)
                .map(hex::format);
            (got.as_deref() != *want).then(|| format!("{text:?}: want {want:?}, got {got:?}"))
        })
        .collect()
}

#[test]
fn golden_vectors_hold() {
    let wrong = changed(Version::V1, GOLDEN);
    assert!(
        wrong.is_empty(),
        "fingerprints changed:\n{}",
        wrong.join("\n")
    );
    // The methods without a version are version 1.
    for (text, want) in GOLDEN {
        assert_eq!(hex_of(text).as_deref(), *want, "{text:?}");
    }
}

#[test]
fn golden_vectors_of_version_2_hold() {
    let wrong = changed(Version::V2, GOLDEN_V2);
    assert!(
        wrong.is_empty(),
        "version 2 fingerprints changed:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn golden_vectors_of_version_3_hold() {
    let mut wrong = changed(Version::V3, GOLDEN_V3);
    // A text long enough that its common characters and trigrams are
    // expected by chance: pins the weighing against chance, not only the
    // features.
    let long = format!(
        "{}{}",
        "国务院总理李鹏今天在人民大会堂会见了来访的日本客人，双方就进一步发展中日两国的经贸合作交换了意见。"
            .repeat(30),
        "The quick brown fox jumps over the lazy dog. ".repeat(20)
    );
    let got = fingerprinter()
        .fingerprint_as(Version::V3, &long)
        .map(hex::format);
    if got.as_deref() != Some("0764a47c411ba946") {
        wrong.push(format!("the long text: want 0764a47c411ba946, got {got:?}"));
    }
    assert!(
        wrong.is_empty(),
        "version 3 fingerprints changed:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn single_feature_fingerprints_of_version_3_are_reference_xxh3_values() {
    // One feature with a positive weight: every counter has its sign, so
    // the fingerprint is the feature's hash. xxh3-64("^a$") and
    // xxh3-64("我") (UTF-8 e6 88 91), from the reference implementation.
    let fp = |t| fingerprinter().fingerprint_as(Version::V3, t);
    assert_eq!(fp("a"), Some(0xd5dd_ebb4_27ac_945a));
    assert_eq!(fp("A"), fp("a"));
    assert_eq!(fp("我"), Some(0x7931_193e_7318_84c4));
}

#[test]
fn version_1_is_the_default() {
    // `golden_vectors_hold` checks the methods without a version against
    // version 1's vectors; the enum's default says the same.
    assert_eq!(Version::default(), Version::V1);
}

#[test]
fn single_token_fingerprint_is_the_reference_xxh3_value() {
    // XXH3-64 of "a" with seed 0 is e6c632b61e964e1f in the xxHash
    // project's reference implementation (checked against its Python
    // binding, `xxhash.xxh3_64_hexdigest(b"a")`): ties the feature hash to
    // the standard rather than to the crate we happen to use.
    assert_eq!(hex_of("a").as_deref(), Some("e6c632b61e964e1f"));
    assert_eq!(hex_of("A"), hex_of("a"));
}

#[test]
fn long_runs_are_pinned_too() {
    // Runs over 512 characters are cut every 512 characters; these pin
    // that rule (a Han run and a Latin one).
    assert_eq!(
        hex_of(&"北京天气晴朗".repeat(200)).as_deref(),
        Some("1fefeef240b1a7b8")
    );
    assert_eq!(
        hex_of(&format!("{} tail", "abc".repeat(300))).as_deref(),
        Some("163b5bd516ea0b52")
    );
}
