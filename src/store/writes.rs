//! Writing messages and parts. Values are encoded to JSON by the caller (on
//! the async side, in parallel with the database thread); the functions here
//! only run SQL, inside a transaction the caller opened.
//!
//! Upserts update in place (`ON CONFLICT DO UPDATE`), never `INSERT OR
//! REPLACE`, which would delete the row and cascade to its parts. Every row
//! written is stamped with the transaction's revision ([`next_revision`]),
//! which is what tells readers' caches that it changed.

use rusqlite::{Connection, ErrorCode, OptionalExtension, params};

use super::error::{During, Error};
use super::part_json;
use super::sessions;
use crate::clock::now_millis;
use crate::message::{Message, Part, PartKind, Role, StepFinishPart};

/// A message ready to be written.
pub(crate) struct EncodedMessage {
    id: String,
    session_id: String,
    role: &'static str,
    time_created: i64,
    data: String,
}

impl EncodedMessage {
    pub(crate) fn encode(message: &Message) -> Result<Self, Error> {
        let data = serde_json::to_string(message).map_err(|source| Error::Encode {
            operation: "upsert message",
            what: "message",
            id: message.id.clone(),
            source,
        })?;
        Ok(Self {
            id: message.id.clone(),
            session_id: message.session_id.clone(),
            role: match message.role {
                Role::User(_) => "user",
                Role::Assistant(_) => "assistant",
            },
            time_created: message.time_created,
            data,
        })
    }
}

/// A part ready to be written, with its step totals if it is a step-finish.
pub(crate) struct EncodedPart {
    id: String,
    message_id: String,
    session_id: String,
    kind: &'static str,
    data: String,
    step: Option<StepFinishPart>,
}

impl EncodedPart {
    pub(crate) fn encode(part: &Part) -> Result<Self, Error> {
        let data = part_json::encode(part).map_err(|source| Error::Encode {
            operation: "upsert part",
            what: "part",
            id: part.id.clone(),
            source,
        })?;
        Ok(Self {
            id: part.id.clone(),
            message_id: part.message_id.clone(),
            session_id: part.session_id.clone(),
            kind: part.kind.type_name(),
            data,
            step: match &part.kind {
                PartKind::StepFinish(step) => Some(step.clone()),
                _ => None,
            },
        })
    }
}

/// Takes the next revision for the rows this transaction writes. Called once
/// at the start of every write transaction: the rows it stamps get a value no
/// earlier transaction (of any process) handed out.
pub(crate) fn next_revision(connection: &Connection) -> Result<(), Error> {
    connection
        .prepare_cached("UPDATE revision SET value = value + 1")
        .during("take the next row revision")?
        .execute([])
        .during("take the next row revision")
        .map(drop)
}

/// Inserts or updates a message and marks its session as just updated.
pub(crate) fn upsert_message(
    connection: &Connection,
    message: &EncodedMessage,
) -> Result<(), Error> {
    const OPERATION: &str = "upsert message";
    connection
        .prepare_cached(
            "INSERT INTO message (id, session_id, role, time_created, data, rev)
             VALUES (?1, ?2, ?3, ?4, ?5, (SELECT value FROM revision))
             ON CONFLICT (id) DO UPDATE SET session_id = excluded.session_id,
                 role = excluded.role, time_created = excluded.time_created,
                 data = excluded.data, rev = excluded.rev",
        )
        .during(OPERATION)?
        .execute(params![
            message.id,
            message.session_id,
            message.role,
            message.time_created,
            message.data
        ])
        .map_err(|source| {
            let parent = format!("session {}", message.session_id);
            missing_parent(OPERATION, "message", &message.id, &parent, source)
        })?;
    sessions::touch(connection, &message.session_id, now_millis())
}

/// Inserts or updates a part. If the old or the new version is a
/// step-finish, the session totals lose the old step and gain the new one in
/// the same transaction, so they always equal the sum of step-finish parts.
pub(crate) fn upsert_part(connection: &Connection, part: &EncodedPart) -> Result<(), Error> {
    const OPERATION: &str = "upsert part";
    if let Some((old_session, old_step)) = stored_step(connection, &part.id)? {
        sessions::add_step(connection, &old_session, &old_step, -1)?;
    }
    connection
        .prepare_cached(
            "INSERT INTO part (id, message_id, session_id, type, data, rev)
             VALUES (?1, ?2, ?3, ?4, ?5, (SELECT value FROM revision))
             ON CONFLICT (id) DO UPDATE SET message_id = excluded.message_id,
                 session_id = excluded.session_id, type = excluded.type,
                 data = excluded.data, rev = excluded.rev",
        )
        .during(OPERATION)?
        .execute(params![
            part.id,
            part.message_id,
            part.session_id,
            part.kind,
            part.data
        ])
        .map_err(|source| {
            let parent = format!("message {} of session {}", part.message_id, part.session_id);
            missing_parent(OPERATION, "part", &part.id, &parent, source)
        })?;
    if let Some(step) = &part.step {
        sessions::add_step(connection, &part.session_id, step, 1)?;
    }
    Ok(())
}

/// The session and step totals of the stored part `id`, if it is a
/// step-finish.
fn stored_step(
    connection: &Connection,
    id: &str,
) -> Result<Option<(String, StepFinishPart)>, Error> {
    const OPERATION: &str = "read the previous step-finish part";
    let row: Option<(String, String)> = connection
        .prepare_cached("SELECT session_id, data FROM part WHERE id = ?1 AND type = 'step-finish'")
        .during(OPERATION)?
        .query_row([id], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()
        .during(OPERATION)?;
    let Some((session_id, data)) = row else {
        return Ok(None);
    };
    let decode_error = |source| Error::Decode {
        operation: OPERATION,
        what: "part",
        id: id.to_string(),
        source,
    };
    match part_json::decode("step-finish", &data)
        .map_err(decode_error)?
        .kind
    {
        PartKind::StepFinish(step) => Ok(Some((session_id, step))),
        _ => Ok(None),
    }
}

/// A foreign key failure means the parent row is missing: say which.
fn missing_parent(
    operation: &'static str,
    what: &'static str,
    id: &str,
    parent: &str,
    source: rusqlite::Error,
) -> Error {
    let is_foreign_key = source.sqlite_error().is_some_and(|error| {
        error.code == ErrorCode::ConstraintViolation
            && error.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY
    });
    if is_foreign_key {
        Error::MissingParent {
            operation,
            what,
            id: id.to_string(),
            parent: parent.to_string(),
        }
    } else {
        Error::Sqlite { operation, source }
    }
}

/// Deletes a message and its parts; its step-finish parts leave the session
/// totals, so they still equal the sum of what is stored. Returns whether the
/// message existed.
pub(crate) fn delete_message(connection: &Connection, id: &str) -> Result<bool, Error> {
    const OPERATION: &str = "delete message";
    let step_ids: Vec<String> = connection
        .prepare_cached("SELECT id FROM part WHERE message_id = ?1 AND type = 'step-finish'")
        .during(OPERATION)?
        .query_map([id], |row| row.get(0))
        .during(OPERATION)?
        .collect::<rusqlite::Result<_>>()
        .during(OPERATION)?;
    for step_id in step_ids {
        if let Some((session_id, step)) = stored_step(connection, &step_id)? {
            sessions::add_step(connection, &session_id, &step, -1)?;
        }
    }
    connection
        .prepare_cached("DELETE FROM part WHERE message_id = ?1")
        .during(OPERATION)?
        .execute([id])
        .during(OPERATION)?;
    let deleted = connection
        .prepare_cached("DELETE FROM message WHERE id = ?1")
        .during(OPERATION)?
        .execute([id])
        .during(OPERATION)?;
    Ok(deleted > 0)
}
