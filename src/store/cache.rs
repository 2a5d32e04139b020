//! The reader's cache of decoded rows: per session, each message and part it
//! has decoded with the row revision it decoded. A read lists the ids and
//! revisions of the rows it needs (index only) and decodes only rows whose
//! revision it has not seen; the rest are cloned from here.
//!
//! Only the reader thread uses it, inside a read transaction. It never
//! decides what is fresh by time or by who wrote: only the stored `rev` does,
//! so writes of other handles and processes are seen like our own.

use std::collections::{BTreeMap, HashSet};
use std::ops::Bound;

use crate::message::{Message, MessageWithParts, Part};

/// Sessions whose decoded rows are kept: the session being worked on, its
/// subagent sessions and the one the TUI shows. The least recently read is
/// dropped first.
const CACHED_SESSIONS: usize = 4;

/// The stored identity of a row version: its id and revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RowKey {
    pub(crate) id: String,
    pub(crate) rev: i64,
}

/// A message row's key and its parts' keys (ordered by id), as stored now.
#[derive(Debug)]
pub(crate) struct MessageKey {
    pub(crate) row: RowKey,
    pub(crate) parts: Vec<RowKey>,
}

#[derive(Default)]
pub(crate) struct DecodedCache {
    /// Least recently read first.
    sessions: Vec<(String, SessionCache)>,
}

impl DecodedCache {
    /// The cache of `session_id`, made the most recently used.
    pub(crate) fn session(&mut self, session_id: &str) -> &mut SessionCache {
        match self.sessions.iter().position(|(id, _)| id == session_id) {
            Some(index) => {
                let entry = self.sessions.remove(index);
                self.sessions.push(entry);
            }
            None => {
                if self.sessions.len() >= CACHED_SESSIONS {
                    self.sessions.remove(0);
                }
                self.sessions
                    .push((session_id.to_string(), SessionCache::default()));
            }
        }
        let (_, cache) = self
            .sessions
            .last_mut()
            .expect("an entry was just pushed or moved to the end");
        cache
    }

    /// Forgets every session (after a reader job panicked mid-update).
    pub(crate) fn clear(&mut self) {
        self.sessions.clear();
    }
}

/// Decoded messages of one session by message id. Ordered, so that a read
/// can find the cached messages of the id range it listed without walking
/// the rest (a `read_all` may have cached thousands).
#[derive(Default)]
pub(crate) struct SessionCache {
    messages: BTreeMap<String, CachedMessage>,
}

struct CachedMessage {
    rev: i64,
    message: Message,
    /// Ordered by part id, as the store returns them.
    parts: Vec<(i64, Part)>,
}

impl SessionCache {
    /// Whether the message row needs decoding for `key`.
    pub(crate) fn is_message_stale(&self, key: &MessageKey) -> bool {
        self.messages
            .get(&key.row.id)
            .is_none_or(|cached| cached.rev != key.row.rev)
    }

    /// The part keys of `key` that have no decoded row at that revision.
    pub(crate) fn stale_parts<'a>(&self, key: &'a MessageKey) -> Vec<&'a RowKey> {
        let cached = self.messages.get(&key.row.id);
        key.parts
            .iter()
            .filter(|part| {
                cached.is_none_or(|cached| cached_part(cached, &part.id) != Some(part.rev))
            })
            .collect()
    }

    /// Whether nothing of the message needs decoding.
    pub(crate) fn is_fresh(&self, key: &MessageKey) -> bool {
        let Some(cached) = self.messages.get(&key.row.id) else {
            return false;
        };
        cached.rev == key.row.rev
            && cached.parts.len() == key.parts.len()
            && cached
                .parts
                .iter()
                .zip(&key.parts)
                .all(|((rev, part), key)| *rev == key.rev && part.id == key.id)
    }

    /// The message for `key`, copied out of the cache after decoding what is
    /// stale (see [`Self::up_to_date`]); the cache keeps it.
    pub(crate) fn assemble<E>(
        &mut self,
        key: &MessageKey,
        decode_message: impl FnOnce(&str) -> Result<Message, E>,
        decode_part: impl FnMut(&str) -> Result<Part, E>,
    ) -> Result<MessageWithParts, E> {
        // The repeated read's common case: copy in place, no map update.
        if self.is_fresh(key) {
            let cached = &self.messages[&key.row.id];
            return Ok(cached.copy());
        }
        let cached = self.up_to_date(key, decode_message, decode_part)?;
        let copy = cached.copy();
        self.messages.insert(key.row.id.clone(), cached);
        Ok(copy)
    }

    /// The message for `key`, moved out of the cache: for a caller that keeps
    /// it and hands it back with [`Self::restore`] before its next read.
    pub(crate) fn take<E>(
        &mut self,
        key: &MessageKey,
        decode_message: impl FnOnce(&str) -> Result<Message, E>,
        decode_part: impl FnMut(&str) -> Result<Part, E>,
    ) -> Result<MessageWithParts, E> {
        let cached = self.up_to_date(key, decode_message, decode_part)?;
        Ok(MessageWithParts {
            message: cached.message,
            parts: cached.parts.into_iter().map(|(_, part)| part).collect(),
        })
    }

    /// Puts back a message taken at `key`. A message whose parts do not
    /// match the key's is dropped: the next read decodes it again.
    pub(crate) fn restore(&mut self, key: MessageKey, message: MessageWithParts) {
        let matches = key.parts.len() == message.parts.len()
            && key
                .parts
                .iter()
                .zip(&message.parts)
                .all(|(k, p)| k.id == p.id)
            && key.row.id == message.message.id;
        if !matches {
            return;
        }
        let parts = key
            .parts
            .iter()
            .map(|part| part.rev)
            .zip(message.parts)
            .collect();
        let cached = CachedMessage {
            rev: key.row.rev,
            message: message.message,
            parts,
        };
        self.messages.insert(key.row.id, cached);
    }

    /// Removes and returns the cached message for `key`, first decoding,
    /// with `decode_message` / `decode_part`, the rows whose revision the
    /// cache has not seen.
    fn up_to_date<E>(
        &mut self,
        key: &MessageKey,
        decode_message: impl FnOnce(&str) -> Result<Message, E>,
        mut decode_part: impl FnMut(&str) -> Result<Part, E>,
    ) -> Result<CachedMessage, E> {
        let fresh = self.is_fresh(key);
        let old = self.messages.remove(&key.row.id);
        if fresh && let Some(old) = old {
            return Ok(old);
        }
        let (message, old_parts) = match old {
            Some(old) if old.rev == key.row.rev => (old.message, old.parts),
            Some(old) => (decode_message(&key.row.id)?, old.parts),
            None => (decode_message(&key.row.id)?, Vec::new()),
        };
        // Both lists are ordered by part id: one merge pass finds the parts
        // that can be kept.
        let mut old_parts = old_parts.into_iter().peekable();
        let mut parts = Vec::with_capacity(key.parts.len());
        for part_key in &key.parts {
            while old_parts
                .peek()
                .is_some_and(|(_, part)| part.id < part_key.id)
            {
                old_parts.next();
            }
            let part = match old_parts
                .next_if(|(rev, part)| *rev == part_key.rev && part.id == part_key.id)
            {
                Some((_, part)) => part,
                None => decode_part(&part_key.id)?,
            };
            parts.push((part_key.rev, part));
        }
        Ok(CachedMessage {
            rev: key.row.rev,
            message,
            parts,
        })
    }

    /// Drops cached messages older than `oldest`: the cache keeps what the
    /// latest read returned (and newer), so it never outgrows one read while
    /// the session grows.
    pub(crate) fn forget_older_than(&mut self, oldest: &str) {
        self.messages = self.messages.split_off(oldest);
    }

    /// Drops every cached message of the session.
    pub(crate) fn forget_all(&mut self) {
        self.messages.clear();
    }

    /// Drops cached messages with an id in `range` (lower inclusive, upper
    /// exclusive, `None` unbounded) that `listed` does not hold: a read that
    /// listed every message of the range saw them deleted.
    pub(crate) fn forget_missing(
        &mut self,
        range: (Option<&str>, Option<&str>),
        listed: &[MessageKey],
    ) {
        let (lower, upper) = range;
        let bounds = (
            lower.map_or(Bound::Unbounded, Bound::Included),
            upper.map_or(Bound::Unbounded, Bound::Excluded),
        );
        let listed: HashSet<&str> = listed.iter().map(|key| key.row.id.as_str()).collect();
        let gone: Vec<String> = self
            .messages
            .range::<str, _>(bounds)
            .map(|(id, _)| id)
            .filter(|id| !listed.contains(id.as_str()))
            .cloned()
            .collect();
        for id in gone {
            self.messages.remove(&id);
        }
    }
}

impl CachedMessage {
    fn copy(&self) -> MessageWithParts {
        MessageWithParts {
            message: self.message.clone(),
            parts: self.parts.iter().map(|(_, part)| part.clone()).collect(),
        }
    }
}

fn cached_part(cached: &CachedMessage, id: &str) -> Option<i64> {
    let index = cached
        .parts
        .binary_search_by(|(_, part)| part.id.as_str().cmp(id))
        .ok()?;
    Some(cached.parts[index].0)
}
