//! Where the transcript is scrolled to: following the newest line, or pinned
//! to a block and line so new output does not move what the user reads.
//!
//! Scroll requests are recorded here as line counts; `viewport` resolves them
//! against measured block heights when the next frame is prepared.

/// The top row of the view: line `line` of block `block`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Anchor {
    pub block: usize,
    pub line: usize,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Scroll {
    /// `None` follows the stream: the last line stays at the bottom.
    pub anchor: Option<Anchor>,
    /// Lines to move before the next frame (negative: up, towards older).
    pub pending: i64,
}

impl Scroll {
    pub fn by(&mut self, lines: i64) {
        self.pending += lines;
    }

    pub fn top(&mut self) {
        self.anchor = Some(Anchor { block: 0, line: 0 });
        self.pending = 0;
    }

    pub fn follow(&mut self) {
        self.anchor = None;
        self.pending = 0;
    }
}
