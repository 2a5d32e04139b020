//! A compact `o200k_base` token counter: tiktoken's pre-tokenizing regex and
//! byte-pair merges over a vocabulary that stays in the binary's read-only data.
//!
//! tiktoken-rs's `CoreBPE` keeps three heap copies of the 200k-token vocabulary
//! (encoder map, decoder map, sorted list: about 50 MB resident). Counting needs
//! only "is this byte string a token, and of which rank", so this keeps one
//! 2 MB table of ranks and must never answer differently from tiktoken's
//! `encode_ordinary(text).len()` (the tests compare the two).

use std::collections::BinaryHeap;
use std::hash::BuildHasher;

use fancy_regex::Regex;
use rustc_hash::FxBuildHasher;

/// The `o200k_base` vocabulary in the layout [`encode_vocabulary`] writes,
/// made from tiktoken-rs's by `cargo run --example o200k_ranks`;
/// `embedded_ranks_are_what_the_generator_makes` keeps the two equal.
const VOCABULARY: &[u8] = include_bytes!("o200k_base.ranks");

/// Lays out a vocabulary (tokens in rank order) as cairn embeds it: a
/// little-endian `u32` token count N, then N byte lengths, then the N tokens'
/// bytes concatenated. One byte per length is enough: no `o200k_base` token
/// is longer than 255 bytes.
///
/// # Panics
/// On a token longer than 255 bytes or more than `u32::MAX` tokens: the
/// generator's input is tiktoken's fixed vocabulary, never user data.
pub fn encode_vocabulary(tokens: &[Vec<u8>]) -> Vec<u8> {
    let count = u32::try_from(tokens.len()).expect("fewer than 2^32 tokens");
    let mut out = count.to_le_bytes().to_vec();
    out.extend(
        tokens
            .iter()
            .map(|token| u8::try_from(token.len()).expect("o200k tokens are at most 255 bytes")),
    );
    for token in tokens {
        out.extend_from_slice(token);
    }
    out
}

type Rank = u32;

/// An empty slot of the rank table (ranks are stored plus one).
const EMPTY: u32 = 0;

/// Pieces this long use tiktoken's heap-based merge, shorter ones its quadratic
/// one; both are ported because their tie-breaking must match tiktoken's.
const LARGE_PIECE: usize = 100;

pub struct O200k {
    pattern: Regex,
    vocabulary: Vocabulary,
}

impl O200k {
    /// Compiles the pattern and indexes the embedded vocabulary (a few ms).
    pub fn new() -> Self {
        Self {
            pattern: Regex::new(tiktoken_rs::O200K_BASE_PAT_STR)
                .expect("tiktoken's o200k pattern is valid fancy-regex syntax"),
            vocabulary: Vocabulary::parse(VOCABULARY),
        }
    }

    /// The number of tokens `encode_ordinary(text)` returns.
    pub fn count(&self, text: &str) -> usize {
        let mut tokens = 0;
        let mut counted_to = 0;
        for found in self.pattern.find_iter(text) {
            let piece = match found {
                Ok(piece) => piece,
                // Only the backtracking limit fails, on input tiktoken itself
                // panics on: estimate the rest rather than lose the count.
                Err(_) => return tokens + super::estimate(&text[counted_to..]),
            };
            counted_to = piece.end();
            let piece = piece.as_str().as_bytes();
            tokens += match self.vocabulary.rank(piece) {
                Some(_) => 1,
                None => self.merged_count(piece),
            };
        }
        tokens
    }

    fn merged_count(&self, piece: &[u8]) -> usize {
        match piece.len() {
            0 => 0,
            1 => 1,
            len if len < LARGE_PIECE => self.merge_small(piece),
            _ => self.merge_large(piece),
        }
    }

    fn rank_or_max(&self, bytes: &[u8]) -> Rank {
        self.vocabulary.rank(bytes).unwrap_or(Rank::MAX)
    }

    /// tiktoken's `_byte_pair_merge`: repeatedly merges the adjacent pair of
    /// lowest rank (leftmost on ties); the parts left are the tokens.
    fn merge_small(&self, piece: &[u8]) -> usize {
        // (start, rank of the pair starting here)
        let mut parts: Vec<(usize, Rank)> = Vec::with_capacity(piece.len() + 1);
        let mut min_rank: (Rank, usize) = (Rank::MAX, usize::MAX);
        for i in 0..piece.len() - 1 {
            let rank = self.rank_or_max(&piece[i..i + 2]);
            if rank < min_rank.0 {
                min_rank = (rank, i);
            }
            parts.push((i, rank));
        }
        parts.push((piece.len() - 1, Rank::MAX));
        parts.push((piece.len(), Rank::MAX));
        let rank_after_merge = |parts: &[(usize, Rank)], i: usize| {
            if i + 3 < parts.len() {
                self.rank_or_max(&piece[parts[i].0..parts[i + 3].0])
            } else {
                Rank::MAX
            }
        };
        while min_rank.0 != Rank::MAX {
            let i = min_rank.1;
            if i > 0 {
                parts[i - 1].1 = rank_after_merge(&parts, i - 1);
            }
            parts[i].1 = rank_after_merge(&parts, i);
            parts.remove(i + 1);
            min_rank = (Rank::MAX, usize::MAX);
            for (i, &(_, rank)) in parts[..parts.len() - 1].iter().enumerate() {
                if rank < min_rank.0 {
                    min_rank = (rank, i);
                }
            }
        }
        parts.len() - 1
    }

    /// tiktoken-rs's `_byte_pair_merge_large`: the same merges with a heap of
    /// candidate pairs and a linked list of parts, for long pieces.
    fn merge_large(&self, piece: &[u8]) -> usize {
        let mut state = Vec::with_capacity(piece.len());
        state.push(MergeState {
            prev: usize::MAX,
            end: 1,
            next_end: 2,
            next_rank: Rank::MAX,
        });
        let mut heap = BinaryHeap::with_capacity(piece.len());
        for i in 0..piece.len() - 1 {
            if let Some(rank) = self.vocabulary.rank(&piece[i..i + 2]) {
                heap.push(Merge { start: i, rank });
                state[i].next_rank = rank;
            }
            state.push(MergeState {
                prev: i,
                end: i + 2,
                next_end: i + 3,
                next_rank: Rank::MAX,
            });
        }
        let potential_merge =
            |state: &mut [MergeState], heap: &mut BinaryHeap<Merge>, start: usize, end: usize| {
                state[start].next_end = end;
                state[start].next_rank = Rank::MAX;
                if end <= piece.len()
                    && let Some(rank) = self.vocabulary.rank(&piece[start..end])
                {
                    heap.push(Merge { start, rank });
                    state[start].next_rank = rank;
                }
            };
        while let Some(left) = heap.pop() {
            if left.rank == Rank::MAX {
                break;
            }
            if left.rank != state[left.start].next_rank {
                continue; // invalidated by an earlier merge
            }
            let left_start = left.start;
            let right_start = state[left_start].end;
            let right_end = state[left_start].next_end;
            let right_next_end = state[right_start].next_end;
            state[left_start].end = right_end;
            potential_merge(&mut state, &mut heap, left_start, right_next_end);
            if right_end < state.len() {
                state[right_end].prev = left_start;
            }
            if left_start > 0 {
                let prev_start = state[left_start].prev;
                potential_merge(&mut state, &mut heap, prev_start, right_end);
            }
            state[right_start].next_rank = Rank::MAX;
        }
        let mut tokens = 0;
        let mut i = 0;
        while i < state.len() {
            tokens += 1;
            i = state[i].end;
        }
        tokens
    }
}

impl Default for O200k {
    fn default() -> Self {
        Self::new()
    }
}

/// One part of a long piece in `merge_large`.
struct MergeState {
    prev: usize,
    end: usize,
    next_end: usize,
    next_rank: Rank,
}

/// A candidate merge; the heap pops the lowest rank, then the leftmost start.
#[derive(PartialEq, Eq, Clone, Copy)]
struct Merge {
    start: usize,
    rank: Rank,
}

impl Ord for Merge {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other
            .rank
            .cmp(&self.rank)
            .then_with(|| other.start.cmp(&self.start))
    }
}

impl PartialOrd for Merge {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// Token bytes by rank (borrowed from the binary) and an open-addressing
/// table from bytes to rank.
struct Vocabulary {
    bytes: &'static [u8],
    /// Token `r` is `bytes[starts[r]..starts[r + 1]]`.
    starts: Vec<u32>,
    /// Rank + 1 per slot, `EMPTY` when free; linear probing, load under 0.4.
    slots: Vec<u32>,
    mask: usize,
}

impl Vocabulary {
    fn parse(data: &'static [u8]) -> Self {
        let (count, rest) = data.split_at(4);
        let count = u32::from_le_bytes(count.try_into().expect("split_at(4) gives 4 bytes"));
        let (lengths, bytes) = rest.split_at(count as usize);
        let mut starts = Vec::with_capacity(lengths.len() + 1);
        let mut at = 0u32;
        starts.push(at);
        for &length in lengths {
            at += u32::from(length);
            starts.push(at);
        }
        assert_eq!(
            at as usize,
            bytes.len(),
            "the embedded vocabulary's lengths add up to its bytes"
        );
        let table_size = (lengths.len() * 2).next_power_of_two();
        let mut vocabulary = Self {
            bytes,
            starts,
            slots: vec![EMPTY; table_size],
            mask: table_size - 1,
        };
        for rank in 0..count {
            let mut slot = vocabulary.slot_of(vocabulary.token(rank));
            while vocabulary.slots[slot] != EMPTY {
                slot = (slot + 1) & vocabulary.mask;
            }
            vocabulary.slots[slot] = rank + 1;
        }
        vocabulary
    }

    fn token(&self, rank: Rank) -> &[u8] {
        let rank = rank as usize;
        &self.bytes[self.starts[rank] as usize..self.starts[rank + 1] as usize]
    }

    fn slot_of(&self, bytes: &[u8]) -> usize {
        FxBuildHasher.hash_one(bytes) as usize & self.mask
    }

    fn rank(&self, bytes: &[u8]) -> Option<Rank> {
        let mut slot = self.slot_of(bytes);
        loop {
            match self.slots[slot] {
                EMPTY => return None,
                entry if self.token(entry - 1) == bytes => return Some(entry - 1),
                _ => slot = (slot + 1) & self.mask,
            }
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.starts.len() - 1
    }
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;

    use proptest::prelude::*;
    use tiktoken_rs::CoreBPE;

    use super::*;

    fn tiktoken() -> &'static CoreBPE {
        static BPE: OnceLock<CoreBPE> = OnceLock::new();
        BPE.get_or_init(|| tiktoken_rs::o200k_base().expect("embedded ranks parse"))
    }

    fn ours() -> &'static O200k {
        static OURS: OnceLock<O200k> = OnceLock::new();
        OURS.get_or_init(O200k::new)
    }

    fn assert_same_count(text: &str) {
        assert_eq!(
            ours().count(text),
            tiktoken().encode_ordinary(text).len(),
            "count of {:?}",
            text.chars().take(80).collect::<String>()
        );
    }

    #[test]
    fn vocabulary_is_tiktokens_o200k_base() {
        let vocabulary = &ours().vocabulary;
        assert_eq!(vocabulary.len(), 199_998);
        for rank in 0..vocabulary.len() as Rank {
            let expected = tiktoken()
                .decode_bytes(&[rank])
                .expect("every rank below the count is a token");
            assert_eq!(vocabulary.token(rank), expected.as_slice(), "rank {rank}");
            assert_eq!(vocabulary.rank(&expected), Some(rank), "lookup of {rank}");
        }
        assert!(
            tiktoken()
                .decode_bytes(&[vocabulary.len() as Rank])
                .is_err()
        );
        assert_eq!(vocabulary.rank(b"\xff\xfe not a token at all"), None);
    }

    #[test]
    fn embedded_ranks_are_what_the_generator_makes() {
        let tokens: Vec<Vec<u8>> = (0..)
            .map_while(|rank: Rank| tiktoken().decode_bytes(&[rank]).ok())
            .collect();
        let generated = encode_vocabulary(&tokens);
        assert_eq!(generated.len(), VOCABULARY.len());
        assert!(
            generated == VOCABULARY,
            "src/token/o200k_base.ranks is stale: run `cargo run --example o200k_ranks`"
        );
    }

    #[test]
    fn counts_equal_tiktoken_on_the_corpus_and_the_sources() {
        let texts = [
            include_str!("../../tests/fixtures/token_corpus/english.md"),
            include_str!("../../tests/fixtures/token_corpus/chinese.md"),
            include_str!("../../tests/fixtures/token_corpus/chinese_with_code.md"),
            include_str!("../message.rs"),
            include_str!("o200k.rs"),
            "",
            "hello world",
            "上下文",
            "   \n\n\t  trailing   ",
            "I'm SHOUTING'S they'LL 12345678 ∑∫ 😀😀 👩‍👩‍👧",
        ];
        for text in texts {
            assert_same_count(text);
        }
    }

    #[test]
    fn long_pieces_take_the_large_merge_and_still_agree() {
        // Single regex pieces over 100 bytes that are not tokens.
        let pieces = [
            "qwertyuiopasdfghjklzxcvbnm".repeat(5),
            "上下文窗口管理压缩摘要工具输出".repeat(3),
            "!@#$%^&*()_+-=[]{};:,.<>?~`|".repeat(5),
            " ".repeat(150),
        ];
        for text in &pieces {
            let matches: Vec<_> = ours().pattern.find_iter(text).collect();
            assert_eq!(matches.len(), 1, "{text:?} is one piece");
            assert!(text.len() >= LARGE_PIECE && ours().vocabulary.rank(text.as_bytes()).is_none());
            assert_same_count(text);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn counts_equal_tiktoken_on_mixed_text(text in "[a-zA-Z0-9 \n\t'.,;:(){}<>/\\\\_=+\\-*&^%$#@!éüß世界上下文😀\u{300}]{0,300}") {
            assert_same_count(&text);
        }
    }
}
