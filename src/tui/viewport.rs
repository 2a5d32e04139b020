//! The transcript's visible rows: measures blocks, resolves scrolling and
//! keeps wrapped lines cached per block and width.
//!
//! Only blocks that reach the screen are wrapped, so a frame costs the same
//! with 50 or 5,000 messages. A cached block is reused until its revision in
//! the timeline changes or the width does. This is the measuring half of a
//! frame (it mutates the cache); drawing the prepared rows is `view`'s job.

use std::collections::HashMap;
use std::sync::Arc;

use ratatui::text::Line;

use super::markdown::WrapMemo;
use super::scroll::{Anchor, Scroll};
use super::timeline::Block;
use super::view::transcript::{BlockInputs, block_lines};

#[derive(Debug)]
struct Cached {
    width: usize,
    revision: u64,
    lines: Arc<Vec<Line<'static>>>,
}

#[derive(Debug, Default)]
pub struct Viewport {
    cache: HashMap<String, Cached>,
    /// The rows to draw, top to bottom, prepared for the current frame.
    pub rows: Vec<Line<'static>>,
    pub height: u16,
    /// False when the view is scrolled up and newer rows exist below.
    pub at_bottom: bool,
    /// The block last redrawn at an unchanged width (a streaming answer) and
    /// its wrapped lines, so each delta re-wraps only the growing end.
    changing: (String, WrapMemo),
}

impl Viewport {
    pub fn cached_blocks(&self) -> usize {
        self.cache.len()
    }
}

impl Viewport {
    /// Fills `rows` for a transcript area of `width` x `height`, resolving
    /// `scroll` against the blocks `cx` shows.
    pub fn prepare(&mut self, cx: &BlockInputs, scroll: &mut Scroll, width: u16, height: u16) {
        self.height = height;
        let mut measure = Measure {
            cx,
            cache: &mut self.cache,
            changing: &mut self.changing,
            width: width as usize,
        };
        let block_count = measure.blocks().len();
        resolve_scroll(&mut measure, scroll, block_count, height as usize);
        let (rows, at_bottom) = match scroll.anchor {
            None => (
                rows_from_bottom(&mut measure, block_count, height as usize),
                true,
            ),
            Some(anchor) => rows_from(&mut measure, anchor, block_count, height as usize),
        };
        self.rows = rows;
        self.at_bottom = at_bottom;
    }
}

struct Measure<'a, 'b> {
    cx: &'a BlockInputs<'b>,
    cache: &'a mut HashMap<String, Cached>,
    changing: &'a mut (String, WrapMemo),
    width: usize,
}

impl Measure<'_, '_> {
    fn blocks(&self) -> &[Block] {
        self.cx.timeline.block_list()
    }

    fn lines(&mut self, index: usize) -> Arc<Vec<Line<'static>>> {
        let block = self.blocks()[index];
        if self.cx.is_volatile(block) {
            return Arc::new(block_lines(self.cx, block, self.width, None));
        }
        let key = self.cx.timeline.block_key(block);
        let revision = self.cx.timeline.revision(&key);
        if let Some(cached) = self.cache.get(&key)
            && cached.width == self.width
            && cached.revision == revision
        {
            return cached.lines.clone();
        }
        let changed_in_place = self
            .cache
            .get(&key)
            .is_some_and(|cached| cached.width == self.width);
        let memo = if changed_in_place {
            let (memo_key, memo) = &mut *self.changing;
            if *memo_key != key {
                memo_key.clone_from(&key);
                *memo = WrapMemo::default();
            }
            Some(memo)
        } else {
            None
        };
        let lines = Arc::new(block_lines(self.cx, block, self.width, memo));
        self.cache.insert(
            key,
            Cached {
                width: self.width,
                revision,
                lines: lines.clone(),
            },
        );
        lines
    }

    fn height(&mut self, index: usize) -> usize {
        self.lines(index).len()
    }
}

/// Applies the pending scroll, turning "follow" into an anchor when the user
/// scrolls up and back into "follow" when they reach the bottom.
fn resolve_scroll(measure: &mut Measure<'_, '_>, scroll: &mut Scroll, count: usize, height: usize) {
    if count == 0 {
        scroll.follow();
        return;
    }
    if let Some(anchor) = &mut scroll.anchor
        && anchor.block >= count
    {
        scroll.anchor = None;
    }
    let pending = std::mem::take(&mut scroll.pending);
    if pending == 0 && scroll.anchor.is_none() {
        return;
    }
    let mut anchor = match scroll.anchor {
        Some(anchor) => anchor,
        None if pending > 0 => return,
        None => top_of_bottom_view(measure, count, height),
    };
    if pending < 0 {
        move_up(measure, &mut anchor, pending.unsigned_abs() as usize);
    } else {
        move_down(measure, &mut anchor, pending as usize, count);
    }
    scroll.anchor = (!reaches_bottom(measure, anchor, count, height)).then_some(anchor);
}

fn top_of_bottom_view(measure: &mut Measure<'_, '_>, count: usize, height: usize) -> Anchor {
    let mut seen = 0;
    for block in (0..count).rev() {
        seen += measure.height(block);
        if seen >= height {
            return Anchor {
                block,
                line: seen - height,
            };
        }
    }
    Anchor { block: 0, line: 0 }
}

fn move_up(measure: &mut Measure<'_, '_>, anchor: &mut Anchor, mut lines: usize) {
    while lines > 0 {
        if anchor.line >= lines {
            anchor.line -= lines;
            return;
        }
        lines -= anchor.line;
        anchor.line = 0;
        if anchor.block == 0 {
            return;
        }
        anchor.block -= 1;
        let h = measure.height(anchor.block);
        if h > 0 {
            anchor.line = h - 1;
            lines -= 1;
        }
    }
}

fn move_down(measure: &mut Measure<'_, '_>, anchor: &mut Anchor, mut lines: usize, count: usize) {
    while lines > 0 && anchor.block < count {
        let h = measure.height(anchor.block);
        if anchor.line + lines < h {
            anchor.line += lines;
            return;
        }
        lines -= h - anchor.line;
        anchor.block += 1;
        anchor.line = 0;
    }
    if anchor.block >= count {
        anchor.block = count - 1;
    }
}

fn reaches_bottom(
    measure: &mut Measure<'_, '_>,
    anchor: Anchor,
    count: usize,
    height: usize,
) -> bool {
    let mut seen = 0;
    for block in anchor.block..count {
        let h = measure.height(block);
        seen += if block == anchor.block {
            h.saturating_sub(anchor.line)
        } else {
            h
        };
        if seen > height {
            return false;
        }
    }
    true
}

fn rows_from_bottom(
    measure: &mut Measure<'_, '_>,
    count: usize,
    height: usize,
) -> Vec<Line<'static>> {
    let mut chunks = Vec::new();
    let mut seen = 0;
    for block in (0..count).rev() {
        let lines = measure.lines(block);
        seen += lines.len();
        chunks.push(lines);
        if seen >= height {
            break;
        }
    }
    let mut rows: Vec<Line<'static>> = Vec::with_capacity(seen.min(height));
    let mut skip = seen.saturating_sub(height);
    for chunk in chunks.iter().rev() {
        for line in chunk.iter() {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            rows.push(line.clone());
        }
    }
    rows
}

fn rows_from(
    measure: &mut Measure<'_, '_>,
    anchor: Anchor,
    count: usize,
    height: usize,
) -> (Vec<Line<'static>>, bool) {
    let mut rows = Vec::with_capacity(height);
    let mut block = anchor.block;
    let mut skip = anchor.line;
    while block < count && rows.len() < height {
        let lines = measure.lines(block);
        for line in lines.iter().skip(skip) {
            if rows.len() == height {
                return (rows, false);
            }
            rows.push(line.clone());
        }
        skip = 0;
        block += 1;
    }
    (rows, block >= count)
}
