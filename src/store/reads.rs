//! Reading messages with their parts: by id, the whole session, pages going
//! back in time, and the model's view of history (`read_view`), which
//! reads newest first and stops where `message::HistoryScan` says.
//!
//! Session reads go through the reader's [`SessionCache`]: a page's ids and
//! revisions are listed first (index only), then only rows the cache has not
//! decoded at that revision are fetched and decoded, one message at a time,
//! so a message the scan never reaches is never decoded. Runs on a connection
//! thread, inside the read transaction the caller opened.

use std::collections::{HashMap, HashSet};

use rusqlite::{Connection, OptionalExtension};

use super::cache::{MessageKey, RowKey, SessionCache};
use super::error::{During, Error};
use super::live::LiveView;
use super::part_json;
use crate::message::{HistoryScan, Message, MessageWithParts, Part, ScanStep};

/// Messages fetched per query round by [`read_view`]. A compaction point is
/// usually a few dozen messages back; a round costs two indexed range scans.
pub const CONTEXT_PAGE: usize = 50;

/// A message by id with its parts, read and decoded directly (no cache: a
/// lookup by id is not the loop's repeated read).
pub(crate) fn get_message(
    connection: &Connection,
    id: &str,
) -> Result<Option<MessageWithParts>, Error> {
    const OPERATION: &str = "get message";
    let data: Option<String> = connection
        .prepare_cached("SELECT data FROM message WHERE id = ?1")
        .during(OPERATION)?
        .query_row([id], |row| row.get(0))
        .optional()
        .during(OPERATION)?;
    let Some(data) = data else {
        return Ok(None);
    };
    let message = decode_message(OPERATION, id, &data)?;
    let mut statement = connection
        .prepare_cached("SELECT id, type, data FROM part WHERE message_id = ?1 ORDER BY id")
        .during(OPERATION)?;
    let mut rows = statement.query([id]).during(OPERATION)?;
    let mut parts = Vec::new();
    while let Some(row) = rows.next().during(OPERATION)? {
        let id: String = row.get(0).during(OPERATION)?;
        let kind: String = row.get(1).during(OPERATION)?;
        let data: String = row.get(2).during(OPERATION)?;
        parts.push(decode_part(OPERATION, &id, &kind, &data)?);
    }
    Ok(Some(MessageWithParts { message, parts }))
}

/// Every message of the session, oldest first.
pub(crate) fn read_all(
    connection: &Connection,
    cache: &mut SessionCache,
    session_id: &str,
) -> Result<Vec<MessageWithParts>, Error> {
    const OPERATION: &str = "read session";
    let page = list_page(connection, OPERATION, session_id, None, None)?;
    cache.forget_missing((None, None), &page);
    let mut messages = Page::new(session_id, page).assemble_all(connection, cache, OPERATION)?;
    // The caller (the TUI opening or resyncing, an export) keeps the whole
    // session itself; a second copy here would double a long session's
    // memory for a read that is rare.
    cache.forget_all();
    messages.reverse();
    Ok(messages)
}

/// Up to `limit` messages older than `before_id` (or the newest ones),
/// newest first.
pub(crate) fn messages_before(
    connection: &Connection,
    cache: &mut SessionCache,
    session_id: &str,
    before_id: Option<&str>,
    limit: usize,
) -> Result<Vec<MessageWithParts>, Error> {
    const OPERATION: &str = "read earlier messages";
    let page = list_page(connection, OPERATION, session_id, before_id, Some(limit))?;
    let oldest = (page.len() == limit)
        .then(|| page.last().map(|key| key.row.id.clone()))
        .flatten();
    cache.forget_missing((oldest.as_deref(), before_id), &page);
    let oldest_listed = page.last().map(|key| key.row.id.clone());
    let messages = Page::new(session_id, page).assemble_all(connection, cache, OPERATION)?;
    if let Some(oldest) = oldest_listed {
        cache.forget_older_than(&oldest);
    }
    Ok(messages)
}

/// The messages the model sees, oldest first: read newest first in pages of
/// [`CONTEXT_PAGE`], each message fed to a [`HistoryScan`] until it says stop.
/// No message older than the stop point is decoded, and no page beyond the
/// one holding it is listed.
pub(crate) fn read_view(
    connection: &Connection,
    cache: &mut SessionCache,
    session_id: &str,
) -> Result<Vec<MessageWithParts>, Error> {
    let scanned = scan_context(connection, cache, session_id, None, Handout::Copy)?;
    if let Some(oldest) = scanned.keys.first() {
        cache.forget_older_than(&oldest.row.id);
    }
    Ok(scanned.messages)
}

/// [`read_view`] for a caller that keeps its read between reads: what
/// it holds becomes the cache of this read, messages still fresh are moved
/// back to it without a copy, and only rows whose revision changed are
/// decoded. Messages that left the context are dropped. (`refresh` tries a
/// cheaper patch first.)
pub(super) fn reread_view(connection: &Connection, previous: LiveView) -> Result<LiveView, Error> {
    let mut cache = SessionCache::default();
    for (key, message) in previous.keys.into_iter().zip(previous.messages) {
        cache.restore(key, message);
    }
    let session_id = previous.session_id;
    let budget = previous.budget;
    let scanned = scan_context(connection, &mut cache, &session_id, budget, Handout::Take)?;
    Ok(LiveView {
        session_id,
        messages: scanned.messages,
        keys: scanned.keys,
        revision: previous.revision,
        reaches_session_start: scanned.reaches_session_start,
        budget,
        cut: scanned.cut,
    })
}

/// A message by id, decoded (the kept read's patch).
pub(super) fn fetch_message(
    connection: &Connection,
    operation: &'static str,
    id: &str,
) -> Result<Message, Error> {
    let data: String = connection
        .prepare_cached("SELECT data FROM message WHERE id = ?1")
        .during(operation)?
        .query_row([id], |row| row.get(0))
        .during(operation)?;
    decode_message(operation, id, &data)
}

/// A part by id, decoded (the kept read's patch).
pub(super) fn fetch_part(
    connection: &Connection,
    operation: &'static str,
    id: &str,
) -> Result<Part, Error> {
    let (kind, data): (String, String) = connection
        .prepare_cached("SELECT type, data FROM part WHERE id = ?1")
        .during(operation)?
        .query_row([id], |row| Ok((row.get(0)?, row.get(1)?)))
        .during(operation)?;
    decode_part(operation, id, &kind, &data)
}

/// What [`scan_context`] read.
struct Scanned {
    /// Oldest first.
    messages: Vec<MessageWithParts>,
    /// The keys of `messages`, beside them.
    keys: Vec<MessageKey>,
    /// The scan reached the session's first message without stopping.
    reaches_session_start: bool,
    /// The scan stopped at its budget.
    cut: bool,
}

/// Whether a read copies what it assembles out of the cache or moves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Handout {
    Copy,
    Take,
}

/// The context scan behind [`read_view`] and [`reread_view`].
fn scan_context(
    connection: &Connection,
    cache: &mut SessionCache,
    session_id: &str,
    budget: Option<usize>,
    handout: Handout,
) -> Result<Scanned, Error> {
    const OPERATION: &str = "read context";
    let mut scan = HistoryScan::within(budget);
    let mut messages = Vec::new();
    let mut keys = Vec::new();
    let mut before: Option<String> = None;
    loop {
        let page_keys = list_page(
            connection,
            OPERATION,
            session_id,
            before.as_deref(),
            Some(CONTEXT_PAGE),
        )?;
        let oldest = (page_keys.len() == CONTEXT_PAGE)
            .then(|| page_keys.last().map(|key| key.row.id.clone()))
            .flatten();
        cache.forget_missing((oldest.as_deref(), before.as_deref()), &page_keys);
        let mut page = Page::new(session_id, page_keys);
        let mut stopped = false;
        for index in 0..page.keys.len() {
            let message = page.assemble(connection, cache, index, handout, OPERATION)?;
            let step = scan.push(&message);
            messages.push(message);
            if step == ScanStep::KeepAndStop {
                page.keys.truncate(index + 1);
                stopped = true;
                break;
            }
        }
        keys.append(&mut page.keys);
        if stopped || oldest.is_none() {
            // Read newest first; handed out oldest first.
            messages.reverse();
            keys.reverse();
            return Ok(Scanned {
                messages,
                keys,
                reaches_session_start: !stopped,
                cut: scan.was_cut(),
            });
        }
        before = oldest;
    }
}

/// The keys of a page of messages, newest first, with the stored rows
/// fetched so far for the ones the cache cannot answer.
struct Page<'a> {
    session_id: &'a str,
    keys: Vec<MessageKey>,
    rows: StaleRows,
}

/// Raw rows fetched for one run of consecutive stale messages of a page.
#[derive(Default)]
struct StaleRows {
    /// Ids of the newest and oldest message of the run.
    run: Option<(String, String)>,
    messages: HashMap<String, String>,
    /// Part id to (type, data).
    parts: HashMap<String, (String, String)>,
}

impl<'a> Page<'a> {
    fn new(session_id: &'a str, keys: Vec<MessageKey>) -> Self {
        Self {
            session_id,
            keys,
            rows: StaleRows::default(),
        }
    }

    fn assemble_all(
        mut self,
        connection: &Connection,
        cache: &mut SessionCache,
        operation: &'static str,
    ) -> Result<Vec<MessageWithParts>, Error> {
        (0..self.keys.len())
            .map(|index| self.assemble(connection, cache, index, Handout::Copy, operation))
            .collect()
    }

    /// The message at `index`, from the cache where it is fresh. A stale
    /// message fetches the rows of the run of stale messages it starts (one
    /// range query per table), so a cold page costs two queries and a warm
    /// one only touches what changed.
    fn assemble(
        &mut self,
        connection: &Connection,
        cache: &mut SessionCache,
        index: usize,
        handout: Handout,
        operation: &'static str,
    ) -> Result<MessageWithParts, Error> {
        let key = &self.keys[index];
        if !cache.is_fresh(key) && !self.rows.covers(&key.row.id) {
            let run = self.keys[index..]
                .iter()
                .take_while(|key| !cache.is_fresh(key))
                .count();
            let run = &self.keys[index..index + run];
            self.rows = fetch_stale(connection, operation, self.session_id, cache, run)?;
        }
        let rows = &mut self.rows;
        let decode_message = |id: &str| {
            let data = rows
                .messages
                .remove(id)
                .ok_or_else(|| vanished(operation))?;
            decode_message(operation, id, &data)
        };
        let decode_part = |id: &str| {
            let (kind, data) = rows.parts.remove(id).ok_or_else(|| vanished(operation))?;
            decode_part(operation, id, &kind, &data)
        };
        match handout {
            Handout::Copy => cache.assemble(key, decode_message, decode_part),
            Handout::Take => cache.take(key, decode_message, decode_part),
        }
    }
}

impl StaleRows {
    fn covers(&self, message_id: &str) -> bool {
        self.run.as_ref().is_some_and(|(newest, oldest)| {
            oldest.as_str() <= message_id && message_id <= newest.as_str()
        })
    }
}

/// A row listed in this read transaction that could not be fetched in it:
/// cannot happen while SQLite keeps its snapshot promise.
fn vanished(operation: &'static str) -> Error {
    Error::Sqlite {
        operation,
        source: rusqlite::Error::QueryReturnedNoRows,
    }
}

/// Fetches the stored rows of `run` (consecutive messages, newest first) that
/// the cache has not decoded at their listed revision. Data of rows the cache
/// already has is never read.
fn fetch_stale(
    connection: &Connection,
    operation: &'static str,
    session_id: &str,
    cache: &SessionCache,
    run: &[MessageKey],
) -> Result<StaleRows, Error> {
    let (Some(newest), Some(oldest)) = (run.first(), run.last()) else {
        return Ok(StaleRows::default());
    };
    let (newest, oldest) = (newest.row.id.as_str(), oldest.row.id.as_str());
    let stale_messages: HashSet<&str> = run
        .iter()
        .filter(|key| cache.is_message_stale(key))
        .map(|key| key.row.id.as_str())
        .collect();
    let stale_parts: HashSet<&str> = run
        .iter()
        .flat_map(|key| cache.stale_parts(key))
        .map(|part| part.id.as_str())
        .collect();
    let mut rows = StaleRows {
        run: Some((newest.to_string(), oldest.to_string())),
        ..StaleRows::default()
    };
    if !stale_messages.is_empty() {
        let mut statement = connection
            .prepare_cached(
                "SELECT id, data FROM message WHERE session_id = ?1 AND id >= ?2 AND id <= ?3",
            )
            .during(operation)?;
        let mut found = statement
            .query([session_id, oldest, newest])
            .during(operation)?;
        while let Some(row) = found.next().during(operation)? {
            let id: String = row.get(0).during(operation)?;
            if stale_messages.contains(id.as_str()) {
                rows.messages.insert(id, row.get(1).during(operation)?);
            }
        }
    }
    if !stale_parts.is_empty() {
        let mut statement = connection
            .prepare_cached(
                "SELECT id, type, data FROM part
                 WHERE session_id = ?1 AND message_id >= ?2 AND message_id <= ?3",
            )
            .during(operation)?;
        let mut found = statement
            .query([session_id, oldest, newest])
            .during(operation)?;
        while let Some(row) = found.next().during(operation)? {
            let id: String = row.get(0).during(operation)?;
            if stale_parts.contains(id.as_str()) {
                let kind = row.get(1).during(operation)?;
                rows.parts.insert(id, (kind, row.get(2).during(operation)?));
            }
        }
    }
    Ok(rows)
}

/// Ids and revisions of up to `limit` (all if `None`) messages of the
/// session older than `before_id` (or the newest), newest first, each with
/// its parts' ids and revisions. Reads the session indexes only.
fn list_page(
    connection: &Connection,
    operation: &'static str,
    session_id: &str,
    before_id: Option<&str>,
    limit: Option<usize>,
) -> Result<Vec<MessageKey>, Error> {
    let limit = limit.map_or(-1, |limit| i64::try_from(limit).unwrap_or(i64::MAX));
    // Two statements rather than `?2 IS NULL OR id < ?2`, which would keep
    // SQLite from using `id < ?2` as the index range.
    let sql = match before_id {
        Some(_) => {
            "SELECT id, rev FROM message WHERE session_id = ?1 AND id < ?2
             ORDER BY id DESC LIMIT ?3"
        }
        None => {
            "SELECT id, rev FROM message WHERE session_id = ?1 AND ?2 IS NULL
             ORDER BY id DESC LIMIT ?3"
        }
    };
    let mut statement = connection.prepare_cached(sql).during(operation)?;
    let mut keys = statement
        .query_map(rusqlite::params![session_id, before_id, limit], |row| {
            Ok(MessageKey {
                row: RowKey {
                    id: row.get(0)?,
                    rev: row.get(1)?,
                },
                parts: Vec::new(),
            })
        })
        .during(operation)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .during(operation)?;
    let (Some(newest), Some(oldest)) = (keys.first(), keys.last()) else {
        return Ok(keys);
    };
    // The page is a contiguous id range of this session, so its parts are one
    // range scan of the (session_id, message_id, id, rev) index.
    let (newest, oldest) = (newest.row.id.clone(), oldest.row.id.clone());
    let mut statement = connection
        .prepare_cached(
            "SELECT message_id, id, rev FROM part
             WHERE session_id = ?1 AND message_id >= ?2 AND message_id <= ?3
             ORDER BY message_id, id",
        )
        .during(operation)?;
    let mut parts = statement
        .query([session_id, &oldest, &newest])
        .during(operation)?;
    // Parts come oldest message first: walk the page backwards beside them.
    let mut messages = keys.iter_mut().rev().peekable();
    while let Some(row) = parts.next().during(operation)? {
        let message_id: String = row.get(0).during(operation)?;
        while messages
            .peek()
            .is_some_and(|message| message.row.id < message_id)
        {
            messages.next();
        }
        match messages.peek_mut() {
            Some(message) if message.row.id == message_id => message.parts.push(RowKey {
                id: row.get(1).during(operation)?,
                rev: row.get(2).during(operation)?,
            }),
            Some(_) => continue,
            None => break,
        }
    }
    Ok(keys)
}

pub(super) fn decode_part(
    operation: &'static str,
    id: &str,
    kind: &str,
    data: &str,
) -> Result<Part, Error> {
    part_json::decode(kind, data).map_err(|source| Error::Decode {
        operation,
        what: "part",
        id: id.to_string(),
        source,
    })
}

pub(super) fn decode_message(
    operation: &'static str,
    id: &str,
    data: &str,
) -> Result<Message, Error> {
    serde_json::from_str(data).map_err(|source| Error::Decode {
        operation,
        what: "message",
        id: id.to_string(),
        source,
    })
}
