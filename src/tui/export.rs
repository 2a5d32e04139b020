//! The clipboard: the OSC 52 sequence that puts text on it (`/copy`). The
//! Markdown of `/export` lives in `session::export`, shared with `cairn run`.
//!
//! Pure string building; the runner does the writing.

use base64::Engine;

/// The escape sequence that asks the terminal to set the clipboard.
pub fn osc52(text: &str) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(text);
    format!("\x1b]52;c;{encoded}\x07")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn osc52_wraps_base64_of_the_text() {
        assert_eq!(osc52("hi"), "\x1b]52;c;aGk=\x07");
    }
}
