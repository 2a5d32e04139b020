//! The composer's text: a multi-line buffer with a cursor, emacs-style line
//! editing, history and collapsed pastes.
//!
//! Pure state and editing; it never draws and never sends anything. `take`
//! returns the text to send with pasted blocks expanded back in full.

/// Pastes with more lines than this are shown as `[pasted N lines]`.
const COLLAPSE_PASTE_LINES: usize = 5;

#[derive(Debug, Default, Clone)]
pub struct Composer {
    text: String,
    /// Byte offset into `text`, always on a char boundary.
    cursor: usize,
    history: Vec<String>,
    /// Position while browsing history; `None` when editing a fresh draft.
    history_pos: Option<usize>,
    draft: String,
    /// (placeholder, full text) of collapsed pastes still in `text`.
    pastes: Vec<(String, String)>,
}

impl Composer {
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn cursor(&self) -> usize {
        self.cursor
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    pub fn set_text(&mut self, text: &str) {
        self.text = text.to_string();
        self.cursor = self.text.len();
    }

    pub fn clear(&mut self) {
        self.text.clear();
        self.cursor = 0;
        self.pastes.clear();
        self.history_pos = None;
    }

    pub fn insert_str(&mut self, s: &str) {
        self.text.insert_str(self.cursor, s);
        self.cursor += s.len();
    }

    pub fn insert_char(&mut self, c: char) {
        self.text.insert(self.cursor, c);
        self.cursor += c.len_utf8();
    }

    /// Inserts pasted text, collapsing large pastes behind a placeholder.
    pub fn paste(&mut self, pasted: &str) {
        let pasted = pasted.replace("\r\n", "\n").replace('\r', "\n");
        let lines = pasted.lines().count();
        if lines <= COLLAPSE_PASTE_LINES {
            self.insert_str(&pasted);
            return;
        }
        let number = self.pastes.len() + 1;
        let placeholder = if number == 1 {
            format!("[pasted {lines} lines]")
        } else {
            format!("[pasted #{number} {lines} lines]")
        };
        self.insert_str(&placeholder);
        self.pastes.push((placeholder, pasted));
    }

    /// Starts the history from `earlier` (oldest first): the prompts of
    /// this project's earlier sessions.
    pub fn set_history(&mut self, earlier: Vec<String>) {
        self.history = earlier;
        self.history_pos = None;
    }

    /// The newest history entry holding `query` (case-insensitive) older
    /// than position `before` (all of them when `None`): Ctrl+R's search.
    pub fn search_history(&self, query: &str, before: Option<usize>) -> Option<(usize, &str)> {
        let query = query.to_lowercase();
        let end = before.unwrap_or(self.history.len()).min(self.history.len());
        self.history[..end]
            .iter()
            .enumerate()
            .rev()
            .find(|(_, entry)| entry.to_lowercase().contains(&query))
            .map(|(i, entry)| (i, entry.as_str()))
    }

    /// Takes the text to send (pastes expanded) and records it in history.
    pub fn take(&mut self) -> String {
        let shown = std::mem::take(&mut self.text);
        let mut full = shown.clone();
        for (placeholder, pasted) in self.pastes.drain(..) {
            full = full.replacen(&placeholder, &pasted, 1);
        }
        if !shown.trim().is_empty() && self.history.last() != Some(&shown) {
            self.history.push(shown);
        }
        self.cursor = 0;
        self.history_pos = None;
        full
    }

    pub fn move_left(&mut self) {
        if let Some(c) = self.text[..self.cursor].chars().next_back() {
            self.cursor -= c.len_utf8();
        }
    }

    pub fn move_right(&mut self) {
        if let Some(c) = self.text[self.cursor..].chars().next() {
            self.cursor += c.len_utf8();
        }
    }

    pub fn backspace(&mut self) {
        let end = self.cursor;
        self.move_left();
        self.text.replace_range(self.cursor..end, "");
    }

    pub fn delete(&mut self) {
        if let Some(c) = self.text[self.cursor..].chars().next() {
            self.text
                .replace_range(self.cursor..self.cursor + c.len_utf8(), "");
        }
    }

    fn line_start(&self) -> usize {
        self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1)
    }

    fn line_end(&self) -> usize {
        self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |i| self.cursor + i)
    }

    /// Ctrl+A.
    pub fn move_line_start(&mut self) {
        self.cursor = self.line_start();
    }

    /// Ctrl+E.
    pub fn move_line_end(&mut self) {
        self.cursor = self.line_end();
    }

    /// Ctrl+K: deletes to the end of the line, or the newline when already there.
    pub fn kill_to_end(&mut self) {
        let end = self.line_end();
        if end == self.cursor {
            self.delete();
        } else {
            self.text.replace_range(self.cursor..end, "");
        }
    }

    /// Ctrl+U: deletes to the start of the line.
    pub fn kill_to_start(&mut self) {
        let start = self.line_start();
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    fn word_start_before(&self) -> usize {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end_matches(|c: char| !c.is_alphanumeric());
        trimmed
            .rfind(|c: char| !c.is_alphanumeric())
            .map_or(0, |i| {
                i + trimmed[i..].chars().next().map_or(1, char::len_utf8)
            })
    }

    /// Ctrl+W: deletes the word before the cursor.
    pub fn delete_word_back(&mut self) {
        let start = self.word_start_before();
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Alt+B.
    pub fn move_word_back(&mut self) {
        self.cursor = self.word_start_before();
    }

    /// Alt+F.
    pub fn move_word_forward(&mut self) {
        let after = &self.text[self.cursor..];
        let skip = after
            .find(|c: char| c.is_alphanumeric())
            .unwrap_or(after.len());
        let word = after[skip..]
            .find(|c: char| !c.is_alphanumeric())
            .unwrap_or(after.len() - skip);
        self.cursor += skip + word;
    }

    pub fn is_on_first_line(&self) -> bool {
        !self.text[..self.cursor].contains('\n')
    }

    pub fn is_on_last_line(&self) -> bool {
        !self.text[self.cursor..].contains('\n')
    }

    /// Up on the first line: the previous history entry.
    pub fn history_back(&mut self) {
        let pos = match self.history_pos {
            None if self.history.is_empty() => return,
            None => {
                self.draft = self.text.clone();
                self.history.len() - 1
            }
            Some(0) => return,
            Some(p) => p - 1,
        };
        self.history_pos = Some(pos);
        let entry = self.history[pos].clone();
        self.set_text(&entry);
    }

    /// Down on the last line: the next history entry, then the draft.
    pub fn history_forward(&mut self) {
        let Some(pos) = self.history_pos else { return };
        if pos + 1 < self.history.len() {
            self.history_pos = Some(pos + 1);
            let entry = self.history[pos + 1].clone();
            self.set_text(&entry);
        } else {
            self.history_pos = None;
            let draft = std::mem::take(&mut self.draft);
            self.set_text(&draft);
        }
    }

    /// The `@word` or `/word` the cursor is in, with its byte start.
    pub fn token_at_cursor(&self) -> Option<(usize, &str)> {
        let before = &self.text[..self.cursor];
        let start = before
            .rfind(|c: char| c.is_whitespace())
            .map_or(0, |i| i + 1);
        let token = &before[start..];
        (token.starts_with('@') || token.starts_with('/')).then_some((start, token))
    }

    /// Replaces the token at the cursor (from `start`) with `replacement`.
    pub fn replace_token(&mut self, start: usize, replacement: &str) {
        self.text.replace_range(start..self.cursor, replacement);
        self.cursor = start + replacement.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn composer(text: &str) -> Composer {
        let mut c = Composer::default();
        c.set_text(text);
        c
    }

    #[test]
    fn emacs_line_editing_works_on_the_cursor_line_only() {
        let mut c = composer("first line\nsecond word here");
        c.move_line_start();
        assert_eq!(&c.text()[c.cursor()..], "second word here");
        c.move_word_forward();
        c.kill_to_end();
        assert_eq!(c.text(), "first line\nsecond");
        c.kill_to_start();
        assert_eq!(c.text(), "first line\n");
        c.backspace();
        c.delete_word_back();
        assert_eq!(c.text(), "first ");
        c.move_word_back();
        assert_eq!(c.cursor(), 0);
        c.move_line_end();
        c.insert_char('é');
        c.move_left();
        c.delete();
        assert_eq!(c.text(), "first ");
    }

    #[test]
    fn large_paste_is_collapsed_on_screen_and_sent_whole() {
        let mut c = composer("see ");
        let pasted: String = (1..=120).map(|n| format!("line {n}\n")).collect();
        c.paste(&pasted);
        assert_eq!(c.text(), "see [pasted 120 lines]");
        let sent = c.take();
        assert_eq!(sent, format!("see {pasted}"));
        assert!(c.is_empty());
    }

    #[test]
    fn history_walks_back_and_returns_to_the_draft() {
        let mut c = composer("one");
        c.take();
        c.set_text("two");
        c.take();
        c.set_text("draft");
        c.history_back();
        assert_eq!(c.text(), "two");
        c.history_back();
        assert_eq!(c.text(), "one");
        c.history_back();
        assert_eq!(c.text(), "one");
        c.history_forward();
        c.history_forward();
        assert_eq!(c.text(), "draft");
    }

    #[test]
    fn token_at_cursor_finds_mentions_and_replacement_moves_the_cursor() {
        let mut c = composer("look at @src/ma");
        let (start, token) = c.token_at_cursor().expect("a mention");
        assert_eq!(token, "@src/ma");
        c.replace_token(start, "@src/main.rs ");
        assert_eq!(c.text(), "look at @src/main.rs ");
        assert_eq!(c.cursor(), c.text().len());
    }
}
