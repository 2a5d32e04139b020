//! Line reading and result keeping with bounded memory, shared by the
//! tools that scan files (read, grep, glob): a line of a gigabyte or a tree
//! of a million matches costs only what is kept. Never decides what a tool
//! shows; only how much of it can be held.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::PathBuf;
use std::time::SystemTime;

/// Reads the next line into `line`, keeping at most `keep` bytes of it (its
/// newline included) and skipping the rest. Returns the line's full length
/// in bytes, 0 at the end of the input.
///
/// # Errors
/// The reader's, except `Interrupted`, which is retried.
pub fn read_capped_line(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
    keep: usize,
) -> std::io::Result<usize> {
    line.clear();
    let mut total = 0;
    loop {
        let available = match reader.fill_buf() {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        if available.is_empty() {
            return Ok(total);
        }
        let (used, ended) = match available.iter().position(|b| *b == b'\n') {
            Some(at) => (at + 1, true),
            None => (available.len(), false),
        };
        let room = keep.saturating_sub(line.len());
        line.extend_from_slice(&available[..used.min(room)]);
        reader.consume(used);
        total += used;
        if ended {
            return Ok(total);
        }
    }
}

/// The items of the newest files seen so far, newest first (ties by path),
/// holding no more than the first `limit` items in that order: files that
/// fall past the limit are dropped as newer ones arrive.
pub struct NewestFiles<T> {
    files: BTreeMap<(Reverse<SystemTime>, PathBuf), Vec<T>>,
    limit: usize,
    held: usize,
}

impl<T> NewestFiles<T> {
    pub fn new(limit: usize) -> Self {
        Self {
            files: BTreeMap::new(),
            limit,
            held: 0,
        }
    }

    /// Adds a file's items (at most `limit` of them are kept).
    pub fn insert(&mut self, modified: SystemTime, path: PathBuf, mut items: Vec<T>) {
        items.truncate(self.limit);
        if items.is_empty() {
            return;
        }
        self.held += items.len();
        self.files.insert((Reverse(modified), path), items);
        // The oldest file goes once the newer ones fill the limit without it.
        while let Some((_, oldest)) = self.files.last_key_value() {
            let count = oldest.len();
            if self.held - count < self.limit {
                break;
            }
            self.files.pop_last();
            self.held -= count;
        }
    }

    /// The files and their items, newest first.
    pub fn into_files(self) -> impl Iterator<Item = (PathBuf, Vec<T>)> {
        self.files
            .into_iter()
            .map(|((_, path), items)| (path, items))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_long_line_keeps_its_start_and_reports_its_length() {
        let input = format!("{}\nnext\n", "x".repeat(100_000));
        let mut reader = std::io::BufReader::with_capacity(4096, input.as_bytes());
        let mut line = Vec::new();
        assert_eq!(
            read_capped_line(&mut reader, &mut line, 10).expect("reads"),
            100_001
        );
        assert_eq!(line, b"xxxxxxxxxx");
        assert_eq!(
            read_capped_line(&mut reader, &mut line, 10).expect("reads"),
            5
        );
        assert_eq!(line, b"next\n");
        assert_eq!(
            read_capped_line(&mut reader, &mut line, 10).expect("reads"),
            0
        );
    }

    #[test]
    fn only_the_newest_files_within_the_limit_are_held() {
        let at = |secs| SystemTime::UNIX_EPOCH + Duration::from_secs(secs);
        let mut newest = NewestFiles::new(3);
        newest.insert(at(1), "old".into(), vec![1, 2]);
        newest.insert(at(5), "new".into(), vec![3, 4]);
        newest.insert(at(3), "mid".into(), vec![5]);
        newest.insert(at(5), "a-new".into(), vec![6]);
        let kept: Vec<(PathBuf, Vec<i32>)> = newest.into_files().collect();
        assert_eq!(
            kept,
            [("a-new".into(), vec![6]), ("new".into(), vec![3, 4]),]
        );
    }
}
