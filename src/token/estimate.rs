//! The cheap token estimate used until the exact encoder is ready.
//!
//! chars/4 undercounts Chinese 2-4x (one CJK character is about one token in
//! `o200k_base`), so characters are classed: ASCII at about 4 per token, CJK at
//! one token each, other non-ASCII at about 2 per token. Measured error on the
//! mixed corpus in `tests/fixtures/token_corpus` is reported by `benches/context.rs`.

/// ASCII characters per token: English prose runs about 4.5, code about 3.5.
const ASCII_CHARS_PER_TOKEN: f64 = 4.0;
/// Non-CJK, non-ASCII characters (accents, Cyrillic, emoji) per token.
const OTHER_CHARS_PER_TOKEN: f64 = 2.0;

/// Estimated tokens of `text`; never less than one per CJK character.
pub fn estimate(text: &str) -> usize {
    let mut ascii = 0usize;
    let mut cjk = 0usize;
    let mut other = 0usize;
    for ch in text.chars() {
        if ch.is_ascii() {
            ascii += 1;
        } else if is_cjk(ch) {
            cjk += 1;
        } else {
            other += 1;
        }
    }
    (ascii as f64 / ASCII_CHARS_PER_TOKEN).ceil() as usize
        + cjk
        + (other as f64 / OTHER_CHARS_PER_TOKEN).ceil() as usize
}

fn is_cjk(ch: char) -> bool {
    matches!(ch as u32,
        0x3000..=0x30FF      // CJK punctuation, hiragana, katakana
        | 0x3400..=0x4DBF    // CJK extension A
        | 0x4E00..=0x9FFF    // CJK unified ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0xF900..=0xFAFF    // CJK compatibility ideographs
        | 0xFF00..=0xFFEF    // full-width forms (，。：)
        | 0x20000..=0x2FFFF) // CJK extensions B-F
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_counts_four_characters_per_token_rounded_up() {
        assert_eq!(estimate(""), 0);
        assert_eq!(estimate("abcd"), 1);
        assert_eq!(estimate("abcde"), 2);
    }

    #[test]
    fn chinese_is_one_token_per_character_not_a_quarter() {
        let text = "上下文窗口已满，需要压缩历史消息";
        assert_eq!(estimate(text), text.chars().count());
        assert!(estimate(text) >= crate::token::count(text));
    }

    #[test]
    fn other_non_ascii_counts_two_characters_per_token() {
        assert_eq!(estimate("éèêë"), 2);
    }
}
