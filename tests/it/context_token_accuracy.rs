//! The cheap estimate against tiktoken's exact `o200k_base` count on a mixed
//! corpus: it must not undercount Chinese (chars/4 does, 2-4x) and must stay
//! within a bounded error everywhere.

use cairn::token::{count, estimate};

const CORPUS: &[(&str, &str)] = &[
    (
        "english prose",
        include_str!("../fixtures/token_corpus/english.md"),
    ),
    (
        "chinese prose",
        include_str!("../fixtures/token_corpus/chinese.md"),
    ),
    (
        "chinese with code",
        include_str!("../fixtures/token_corpus/chinese_with_code.md"),
    ),
    ("rust code", include_str!("../../src/message.rs")),
];

fn chars_over_four(text: &str) -> usize {
    (text.chars().count() as f64 / 4.0).round() as usize
}

fn error_percent(guess: usize, exact: usize) -> f64 {
    (guess as f64 - exact as f64) / exact as f64 * 100.0
}

#[test]
fn estimate_error_is_bounded_on_every_kind_of_text() {
    for (name, text) in CORPUS {
        let exact = count(text);
        let ours = error_percent(estimate(text), exact);
        let naive = error_percent(chars_over_four(text), exact);
        println!("{name:>18}: exact {exact:>6}  estimate {ours:>+6.1}%  chars/4 {naive:>+6.1}%");
        assert!(ours.abs() < 35.0, "{name}: estimate off by {ours:.1}%");
    }
}

#[test]
fn estimate_never_undercounts_chinese_while_chars_over_four_does() {
    let text = CORPUS[1].1;
    let exact = count(text);
    assert!(
        estimate(text) >= exact,
        "estimate {} < exact {exact}",
        estimate(text)
    );
    assert!(
        chars_over_four(text) * 2 < exact,
        "chars/4 should undercount Chinese at least 2x"
    );
}
