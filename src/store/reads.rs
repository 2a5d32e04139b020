//! Reading messages with their parts: by id, the whole session, pages going
//! back in time, and the model's view of history (`read_context`), which
//! reads newest first and stops where `message::HistoryScan` says.
//!
//! Rows are fetched as raw JSON and decoded one message at a time, so a
//! message the scan never reaches is never decoded. Runs on a connection
//! thread, inside the read transaction the caller opened.

use rusqlite::{Connection, OptionalExtension, Row};

use super::error::{During, Error};
use super::part_json;
use crate::message::{HistoryScan, Message, MessageWithParts, ScanStep};

/// Messages fetched per query round by [`read_context`]. A compaction point is
/// usually a few dozen messages back; a round costs two indexed range scans.
pub const CONTEXT_PAGE: usize = 50;

/// A message row and its part rows, not yet decoded.
struct StoredMessage {
    id: String,
    data: String,
    parts: Vec<StoredPart>,
}

struct StoredPart {
    message_id: String,
    id: String,
    kind: String,
    data: String,
}

impl StoredMessage {
    fn read(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: row.get(0)?,
            data: row.get(1)?,
            parts: Vec::new(),
        })
    }

    fn decode(self, operation: &'static str) -> Result<MessageWithParts, Error> {
        let message: Message =
            serde_json::from_str(&self.data).map_err(|source| Error::Decode {
                operation,
                what: "message",
                id: self.id,
                source,
            })?;
        let parts = self
            .parts
            .into_iter()
            .map(|part| {
                part_json::decode(&part.kind, &part.data).map_err(|source| Error::Decode {
                    operation,
                    what: "part",
                    id: part.id,
                    source,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(MessageWithParts { message, parts })
    }
}

impl StoredPart {
    fn read(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            message_id: row.get(0)?,
            id: row.get(1)?,
            kind: row.get(2)?,
            data: row.get(3)?,
        })
    }
}

pub(crate) fn get_message(
    connection: &Connection,
    id: &str,
) -> Result<Option<MessageWithParts>, Error> {
    const OPERATION: &str = "get message";
    let stored = connection
        .prepare_cached("SELECT id, data FROM message WHERE id = ?1")
        .during(OPERATION)?
        .query_row([id], StoredMessage::read)
        .optional()
        .during(OPERATION)?;
    let Some(mut stored) = stored else {
        return Ok(None);
    };
    let mut statement = connection
        .prepare_cached(
            "SELECT message_id, id, type, data FROM part WHERE message_id = ?1 ORDER BY id",
        )
        .during(OPERATION)?;
    let parts = statement
        .query_map([id], StoredPart::read)
        .during(OPERATION)?;
    for part in parts {
        stored.parts.push(part.during(OPERATION)?);
    }
    stored.decode(OPERATION).map(Some)
}

/// Every message of the session, oldest first.
pub(crate) fn read_all(
    connection: &Connection,
    session_id: &str,
) -> Result<Vec<MessageWithParts>, Error> {
    const OPERATION: &str = "read session";
    let mut messages = query_messages(
        connection,
        OPERATION,
        "SELECT id, data FROM message WHERE session_id = ?1 ORDER BY id",
        rusqlite::params![session_id],
    )?;
    let mut statement = connection
        .prepare_cached(
            "SELECT message_id, id, type, data FROM part WHERE session_id = ?1
             ORDER BY message_id, id",
        )
        .during(OPERATION)?;
    let parts = statement
        .query_map([session_id], StoredPart::read)
        .during(OPERATION)?;
    attach_parts(messages.iter_mut(), parts, OPERATION)?;
    messages
        .into_iter()
        .map(|stored| stored.decode(OPERATION))
        .collect()
}

/// Up to `limit` messages older than `before_id` (or the newest ones),
/// newest first.
pub(crate) fn messages_before(
    connection: &Connection,
    session_id: &str,
    before_id: Option<&str>,
    limit: usize,
) -> Result<Vec<MessageWithParts>, Error> {
    const OPERATION: &str = "read earlier messages";
    read_page(connection, OPERATION, session_id, before_id, limit)?
        .into_iter()
        .map(|stored| stored.decode(OPERATION))
        .collect()
}

/// The messages the model sees, oldest first: read newest first in pages of
/// [`CONTEXT_PAGE`], each message fed to a [`HistoryScan`] until it says stop.
/// No message older than the stop point is decoded, and no page beyond the
/// one holding it is fetched.
pub(crate) fn read_context(
    connection: &Connection,
    session_id: &str,
) -> Result<Vec<MessageWithParts>, Error> {
    const OPERATION: &str = "read context";
    let mut scan = HistoryScan::new();
    let mut newest_first = Vec::new();
    let mut before: Option<String> = None;
    loop {
        let page = read_page(
            connection,
            OPERATION,
            session_id,
            before.as_deref(),
            CONTEXT_PAGE,
        )?;
        let is_last_page = page.len() < CONTEXT_PAGE;
        before = page.last().map(|stored| stored.id.clone());
        for stored in page {
            let message = stored.decode(OPERATION)?;
            let step = scan.push(&message);
            newest_first.push(message);
            if step == ScanStep::KeepAndStop {
                newest_first.reverse();
                return Ok(newest_first);
            }
        }
        if is_last_page {
            newest_first.reverse();
            return Ok(newest_first);
        }
    }
}

/// One page of messages newest first, each with its parts (still raw).
fn read_page(
    connection: &Connection,
    operation: &'static str,
    session_id: &str,
    before_id: Option<&str>,
    limit: usize,
) -> Result<Vec<StoredMessage>, Error> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut messages = match before_id {
        Some(before_id) => query_messages(
            connection,
            operation,
            "SELECT id, data FROM message WHERE session_id = ?1 AND id < ?2
             ORDER BY id DESC LIMIT ?3",
            rusqlite::params![session_id, before_id, limit],
        )?,
        None => query_messages(
            connection,
            operation,
            "SELECT id, data FROM message WHERE session_id = ?1 ORDER BY id DESC LIMIT ?2",
            rusqlite::params![session_id, limit],
        )?,
    };
    let (Some(newest), Some(oldest)) = (messages.first(), messages.last()) else {
        return Ok(messages);
    };
    // The page is a contiguous id range of this session, so its parts are one
    // range scan of the (session_id, message_id, id) index.
    let (newest, oldest) = (newest.id.clone(), oldest.id.clone());
    let mut statement = connection
        .prepare_cached(
            "SELECT message_id, id, type, data FROM part
             WHERE session_id = ?1 AND message_id >= ?2 AND message_id <= ?3
             ORDER BY message_id, id",
        )
        .during(operation)?;
    let parts = statement
        .query_map([session_id, &oldest, &newest], StoredPart::read)
        .during(operation)?;
    attach_parts(messages.iter_mut().rev(), parts, operation)?;
    Ok(messages)
}

fn query_messages(
    connection: &Connection,
    operation: &'static str,
    sql: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<StoredMessage>, Error> {
    let mut statement = connection.prepare_cached(sql).during(operation)?;
    let rows = statement
        .query_map(params, StoredMessage::read)
        .during(operation)?;
    rows.map(|row| row.during(operation)).collect()
}

/// Merges parts sorted by (message_id, id) into messages sorted by id
/// (both ascending). A part whose message is not among them is skipped.
fn attach_parts<'a>(
    messages: impl Iterator<Item = &'a mut StoredMessage>,
    parts: impl Iterator<Item = rusqlite::Result<StoredPart>>,
    operation: &'static str,
) -> Result<(), Error> {
    let mut messages = messages.peekable();
    for part in parts {
        let part = part.during(operation)?;
        while messages
            .peek()
            .is_some_and(|message| message.id < part.message_id)
        {
            messages.next();
        }
        match messages.peek_mut() {
            Some(message) if message.id == part.message_id => message.parts.push(part),
            Some(_) => continue,
            None => break,
        }
    }
    Ok(())
}
