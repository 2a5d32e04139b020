//! How much of one streamed text or reasoning part is kept: a server that
//! streams without end (cut at 256 MiB, issue #31) made cairn hold 1.34 GB,
//! grow the data dir by 400 MB and cost every `--continue` 903 MB, 4.4 s and
//! a compaction. Past [`MAX_STREAMED_BYTES`] a part takes nothing more (not
//! kept, shown nor stored) and says so; once it ends, a part that ran away
//! keeps only its first [`RUNAWAY_KEPT_BYTES`], so the session stays cheap to
//! reopen and the model is not sent it.

/// Far above any real answer (128k output tokens are ~0.5 MiB of text),
/// small beside the 256 MiB cut: the most of one part held while streaming.
pub const MAX_STREAMED_BYTES: usize = 4 * 1024 * 1024;

/// What a part that ran away keeps once it ends: a few thousand tokens to
/// show what the server was sending, no more than a fraction of a window.
pub const RUNAWAY_KEPT_BYTES: usize = 64 * 1024;

/// The line that ends a part that ran away.
pub fn marker() -> String {
    format!(
        "\n\n[cairn: this part passed {} MiB without ending; only its first {} KiB are kept]",
        MAX_STREAMED_BYTES / (1024 * 1024),
        RUNAWAY_KEPT_BYTES / 1024
    )
}

/// Appends what of `delta` fits to `text` (and the marker when it stops
/// fitting); returns what was appended, to show, empty once full.
pub fn append(text: &mut String, delta: &str) -> String {
    if has_run_away(text) {
        return String::new();
    }
    let room = MAX_STREAMED_BYTES.saturating_sub(text.len());
    if delta.len() <= room {
        text.push_str(delta);
        return delta.to_owned();
    }
    let mut taken = delta[..floor_char_boundary(delta, room)].to_owned();
    taken.push_str(&marker());
    text.push_str(&taken);
    taken
}

/// Whether `text` passed [`MAX_STREAMED_BYTES`] (and took the marker).
pub fn has_run_away(text: &str) -> bool {
    text.len() > MAX_STREAMED_BYTES
}

/// A part that ran away, at its end: its first [`RUNAWAY_KEPT_BYTES`] and
/// the marker. Other parts are left as they are.
pub fn settle(text: &mut String) {
    if has_run_away(text) {
        text.truncate(floor_char_boundary(text, RUNAWAY_KEPT_BYTES));
        text.push_str(&marker());
        text.shrink_to_fit();
    }
}

/// The largest char boundary of `text` at or below `index`.
fn floor_char_boundary(text: &str, index: usize) -> usize {
    let mut index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_stops_at_the_cap_and_keeps_its_head_when_it_ends() {
        let mut text = String::new();
        let delta = "é".repeat(1000); // 2 bytes a char: the cut must not split one
        let mut shown = 0;
        while !has_run_away(&text) {
            shown += append(&mut text, &delta).len();
        }
        assert_eq!(shown, text.len());
        assert!(text.ends_with(&marker()));
        assert!(text.len() <= MAX_STREAMED_BYTES + marker().len());
        assert_eq!(append(&mut text, &delta), "", "nothing more is taken");
        settle(&mut text);
        assert!(text.len() <= RUNAWAY_KEPT_BYTES + marker().len());
        assert!(text.starts_with("éé") && text.ends_with(&marker()));

        let mut short = "an answer".to_owned();
        settle(&mut short);
        assert_eq!(short, "an answer");
    }
}
