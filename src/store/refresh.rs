//! Bringing a kept model view read (`LiveView`) up to date by what changed.
//!
//! Every write stamps its rows with the next value of the database-wide
//! `revision` counter, so "what changed since the last refresh" is the rows
//! of the kept range stamped above the revision the read saw: two range
//! scans of the session indexes, however long the session. Only those rows
//! are decoded and patched in; deletions (which leave no stamp) are caught
//! by counting the rows of the kept range. Whenever the patch cannot be
//! proven exact, the refresh falls back to the paged context scan, which is
//! always right.

use rusqlite::Connection;

use super::cache::{MessageKey, RowKey};
use super::error::{During, Error};
use super::live::LiveView;
use super::reads;
use crate::message::{HistoryScan, MessageWithParts, ScanStep};

const OPERATION: &str = "read context";

/// `previous` brought up to date: patched in place when only stamped rows
/// changed, otherwise read again with `previous` as the decoded-row cache.
pub(crate) fn refresh_view(
    connection: &Connection,
    mut previous: LiveView,
) -> Result<LiveView, Error> {
    let revision = current_revision(connection)?;
    // No shortcut on an unchanged revision: a raw SQL delete (through
    // `Store::call`) does not move it; the counts in `patch` catch it.
    if let Some(seen) = previous.revision
        && patch(connection, &mut previous, seen)?
        && rescan(&mut previous)
    {
        previous.revision = Some(revision);
        return Ok(previous);
    }
    let mut fresh = reads::reread_view(connection, previous)?;
    fresh.revision = Some(revision);
    Ok(fresh)
}

fn current_revision(connection: &Connection) -> Result<i64, Error> {
    connection
        .prepare_cached("SELECT value FROM revision")
        .during(OPERATION)?
        .query_row([], |row| row.get(0))
        .during(OPERATION)
}

/// Rows of the kept range stamped after the revision the read saw.
struct Changes {
    /// Message id and revision.
    messages: Vec<RowKey>,
    /// Message id, part id and revision.
    parts: Vec<(String, RowKey)>,
}

/// Applies the rows stamped after `seen` to `live`. Returns false, leaving
/// `live` untouched, when they cannot be applied exactly (a deletion).
fn patch(connection: &Connection, live: &mut LiveView, seen: i64) -> Result<bool, Error> {
    let Some(oldest) = live.keys.first().map(|key| key.row.id.clone()) else {
        return Ok(false);
    };
    let changes = changed_rows(connection, &live.session_id, &oldest, seen)?;
    // Keys are ordered by id (messages, and parts within a message): a
    // binary search tells kept rows from new ones without hashing the range.
    let kept_message = |id: &str| {
        live.keys
            .binary_search_by(|k| k.row.id.as_str().cmp(id))
            .ok()
    };
    let new_messages = changes
        .messages
        .iter()
        .filter(|m| kept_message(&m.id).is_none())
        .count();
    let new_parts = changes
        .parts
        .iter()
        .filter(|(message_id, part)| {
            kept_message(message_id).is_none_or(|index| {
                live.keys[index]
                    .parts
                    .binary_search_by(|k| k.id.cmp(&part.id))
                    .is_err()
            })
        })
        .count();
    let kept_parts: usize = live.keys.iter().map(|k| k.parts.len()).sum();
    let (messages_now, parts_now) = counts_from(connection, &live.session_id, &oldest)?;
    if messages_now != live.keys.len() + new_messages || parts_now != kept_parts + new_parts {
        return Ok(false);
    }
    apply(connection, live, changes)?;
    Ok(true)
}

/// Rows stamped after `seen` from the kept range on (`oldest` and newer).
/// Older rows cannot matter: where the context starts is decided reading
/// from the newest message down to that point, and moving it needs a change
/// inside the range (or a deletion, which the counts catch). Both queries
/// are range scans of the session indexes, which carry `rev`.
fn changed_rows(
    connection: &Connection,
    session_id: &str,
    oldest: &str,
    seen: i64,
) -> Result<Changes, Error> {
    let params = rusqlite::params![session_id, oldest, seen];
    let messages = connection
        .prepare_cached(
            "SELECT id, rev FROM message WHERE session_id = ?1 AND id >= ?2 AND rev > ?3",
        )
        .during(OPERATION)?
        .query_map(params, |row| {
            Ok(RowKey {
                id: row.get(0)?,
                rev: row.get(1)?,
            })
        })
        .during(OPERATION)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .during(OPERATION)?;
    let parts = connection
        .prepare_cached(
            "SELECT message_id, id, rev FROM part
             WHERE session_id = ?1 AND message_id >= ?2 AND rev > ?3",
        )
        .during(OPERATION)?
        .query_map(params, |row| {
            let key = RowKey {
                id: row.get(1)?,
                rev: row.get(2)?,
            };
            Ok((row.get(0)?, key))
        })
        .during(OPERATION)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .during(OPERATION)?;
    Ok(Changes { messages, parts })
}

/// How many messages, and parts of them, the session holds from `oldest` on.
fn counts_from(
    connection: &Connection,
    session_id: &str,
    oldest: &str,
) -> Result<(usize, usize), Error> {
    let count = |sql: &str| -> Result<usize, Error> {
        let count: i64 = connection
            .prepare_cached(sql)
            .during(OPERATION)?
            .query_row([session_id, oldest], |row| row.get(0))
            .during(OPERATION)?;
        Ok(usize::try_from(count).unwrap_or(usize::MAX))
    };
    Ok((
        count("SELECT count(*) FROM message WHERE session_id = ?1 AND id >= ?2")?,
        count("SELECT count(*) FROM part WHERE session_id = ?1 AND message_id >= ?2")?,
    ))
}

/// Decodes the changed rows and puts them in place, keeping messages and
/// parts ordered by id.
fn apply(connection: &Connection, live: &mut LiveView, changes: Changes) -> Result<(), Error> {
    for key in changes.messages {
        let message = reads::fetch_message(connection, OPERATION, &key.id)?;
        match live.keys.binary_search_by(|k| k.row.id.cmp(&key.id)) {
            Ok(index) => {
                live.messages[index].message = message;
                live.keys[index].row.rev = key.rev;
            }
            Err(index) => {
                live.messages.insert(
                    index,
                    MessageWithParts {
                        message,
                        parts: Vec::new(),
                    },
                );
                live.keys.insert(
                    index,
                    MessageKey {
                        row: key,
                        parts: Vec::new(),
                    },
                );
            }
        }
    }
    for (message_id, key) in changes.parts {
        let Ok(index) = live.keys.binary_search_by(|k| k.row.id.cmp(&message_id)) else {
            // A part whose message is not in the session: the counts matched,
            // so this cannot happen while the foreign key holds; skip it.
            continue;
        };
        let part = reads::fetch_part(connection, OPERATION, &key.id)?;
        let (parts, keys) = (&mut live.messages[index].parts, &mut live.keys[index].parts);
        match keys.binary_search_by(|k| k.id.cmp(&key.id)) {
            Ok(at) => {
                parts[at] = part;
                keys[at].rev = key.rev;
            }
            Err(at) => {
                parts.insert(at, part);
                keys.insert(at, key);
            }
        }
    }
    Ok(())
}

/// Re-runs the history scan over the patched read, newest first, and drops
/// what a new compaction point put out of the context. False when the scan
/// does not stop inside the read although the read itself began at a
/// compaction point: the context now reaches further back, so only a full
/// read can tell where.
fn rescan(live: &mut LiveView) -> bool {
    let mut scan = HistoryScan::within(live.budget);
    let stop = live
        .messages
        .iter()
        .rposition(|message| scan.push(message) == ScanStep::KeepAndStop);
    match stop {
        Some(start) => {
            live.messages.drain(..start);
            live.keys.drain(..start);
            live.reaches_session_start = false;
            live.cut = scan.was_cut();
            true
        }
        None => live.reaches_session_start,
    }
}
