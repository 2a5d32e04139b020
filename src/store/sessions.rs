//! Session rows: encoding a `Session` into columns + a JSON remainder, the
//! session queries, and the running totals (cost and tokens) that the part
//! writes keep equal to the sum of the step-finish parts of the session and
//! of its subagent sessions (a child's spending is its parent's too).
//!
//! Runs on a connection thread only; never called from async code directly.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde_json::{Map, Value};

use super::error::{During, Error};
use crate::message::{CacheTokens, Session, StepFinishPart, Tokens};

/// Fields of `Session` that have their own columns; the rest goes to `data`.
const COLUMN_FIELDS: [&str; 8] = [
    "id",
    "parent_id",
    "directory",
    "title",
    "time_created",
    "time_updated",
    "cost",
    "tokens",
];

const SELECT_SESSION: &str = "SELECT id, parent_id, directory, title, time_created, time_updated,
    cost, tokens_input, tokens_output, tokens_reasoning, tokens_cache_read, tokens_cache_write,
    data FROM session";

/// A session ready to be written: its columns and the JSON of everything else.
pub(crate) struct EncodedSession {
    id: String,
    parent_id: Option<String>,
    directory: String,
    title: String,
    time_created: i64,
    time_updated: i64,
    data: String,
}

impl EncodedSession {
    pub(crate) fn encode(session: &Session, operation: &'static str) -> Result<Self, Error> {
        let encode_error = |source| Error::Encode {
            operation,
            what: "session",
            id: session.id.clone(),
            source,
        };
        let mut rest = match serde_json::to_value(session).map_err(encode_error)? {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        for field in COLUMN_FIELDS {
            rest.remove(field);
        }
        Ok(Self {
            id: session.id.clone(),
            parent_id: session.parent_id.clone(),
            directory: session.directory.clone(),
            title: session.title.clone(),
            time_created: session.time_created,
            time_updated: session.time_updated,
            data: serde_json::to_string(&rest).map_err(encode_error)?,
        })
    }
}

/// Inserts a new session. Its totals start at zero whatever `Session` says:
/// they are the sums of step-finish parts, and a new session has none.
pub(crate) fn create(connection: &Connection, session: &EncodedSession) -> Result<(), Error> {
    const OPERATION: &str = "create session";
    connection
        .prepare_cached(
            "INSERT INTO session (id, parent_id, directory, title, time_created, time_updated, data)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )
        .during(OPERATION)?
        .execute(params![
            session.id,
            session.parent_id,
            session.directory,
            session.title,
            session.time_created,
            session.time_updated,
            session.data
        ])
        .during(OPERATION)?;
    Ok(())
}

/// Updates everything but the totals, which only part writes change, and
/// the model chosen for the next prompt (`data.model`, not a `Session` field).
pub(crate) fn update(connection: &Connection, session: &EncodedSession) -> Result<(), Error> {
    const OPERATION: &str = "update session";
    let changed = connection
        .prepare_cached(
            "UPDATE session SET parent_id = ?2, directory = ?3, title = ?4, time_created = ?5,
             time_updated = ?6,
             data = CASE WHEN json_extract(data, '$.model') IS NULL THEN ?7
                 ELSE json_set(?7, '$.model', json_extract(data, '$.model')) END
             WHERE id = ?1",
        )
        .during(OPERATION)?
        .execute(params![
            session.id,
            session.parent_id,
            session.directory,
            session.title,
            session.time_created,
            session.time_updated,
            session.data
        ])
        .during(OPERATION)?;
    if changed == 0 {
        return Err(Error::SessionNotFound {
            operation: OPERATION,
            id: session.id.clone(),
        });
    }
    Ok(())
}

/// The model `/model` chose for the session's next prompt, kept in the
/// session's `data` as `model` until a prompt uses it.
pub(crate) fn chosen_model(connection: &Connection, id: &str) -> Result<Option<String>, Error> {
    const OPERATION: &str = "read the chosen model";
    let model: Option<Option<String>> = connection
        .prepare_cached("SELECT json_extract(data, '$.model') FROM session WHERE id = ?1")
        .during(OPERATION)?
        .query_row(params![id], |row| row.get(0))
        .optional()
        .during(OPERATION)?;
    Ok(model.flatten())
}

/// Sets (or, with `None`, clears) the session's chosen model.
pub(crate) fn set_chosen_model(
    connection: &Connection,
    id: &str,
    model: Option<&str>,
) -> Result<(), Error> {
    const OPERATION: &str = "choose the model";
    let changed = connection
        .prepare_cached(
            "UPDATE session SET data = CASE WHEN ?2 IS NULL THEN json_remove(data, '$.model')
                 ELSE json_set(data, '$.model', ?2) END
             WHERE id = ?1",
        )
        .during(OPERATION)?
        .execute(params![id, model])
        .during(OPERATION)?;
    if changed == 0 {
        return Err(Error::SessionNotFound {
            operation: OPERATION,
            id: id.to_string(),
        });
    }
    Ok(())
}

/// Marks the session as active at `time` (never moves it back).
pub(crate) fn touch(connection: &Connection, id: &str, time: i64) -> Result<(), Error> {
    connection
        .prepare_cached("UPDATE session SET time_updated = max(time_updated, ?2) WHERE id = ?1")
        .during("touch session")?
        .execute(params![id, time])
        .during("touch session")?;
    Ok(())
}

pub(crate) fn get(connection: &Connection, id: &str) -> Result<Option<Session>, Error> {
    const OPERATION: &str = "get session";
    let sql = format!("{SELECT_SESSION} WHERE id = ?1");
    let row = connection
        .prepare_cached(&sql)
        .during(OPERATION)?
        .query_row([id], SessionRow::read)
        .optional()
        .during(OPERATION)?;
    row.map(|row| row.decode(OPERATION)).transpose()
}

/// Sessions, most recently updated first.
pub(crate) fn list(connection: &Connection, limit: usize) -> Result<Vec<Session>, Error> {
    const OPERATION: &str = "list sessions";
    let sql = format!("{SELECT_SESSION} ORDER BY time_updated DESC, id DESC LIMIT ?1");
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut statement = connection.prepare_cached(&sql).during(OPERATION)?;
    let rows = statement
        .query_map([limit], SessionRow::read)
        .during(OPERATION)?;
    rows.map(|row| row.during(OPERATION)?.decode(OPERATION))
        .collect()
}

/// How many messages each of `ids` holds (0 for an unknown id). Each count
/// reads only the `message_by_session` index range of its session, never
/// row data: cheap enough to run whenever `/sessions` or `cairn sessions`
/// lists sessions.
pub(crate) fn message_counts(
    connection: &Connection,
    ids: &[String],
) -> Result<HashMap<String, u64>, Error> {
    const OPERATION: &str = "count messages";
    let mut statement = connection
        .prepare_cached("SELECT count(*) FROM message WHERE session_id = ?1")
        .during(OPERATION)?;
    ids.iter()
        .map(|id| {
            let count: i64 = statement
                .query_row([id], |row| row.get(0))
                .during(OPERATION)?;
            Ok((id.clone(), u64::try_from(count).unwrap_or(0)))
        })
        .collect()
}

/// The most recently updated top-level session in `directory`. Sessions of
/// subagents (with a parent) are skipped: `--continue` resumes the
/// conversation the user had, not a subtask's.
pub(crate) fn latest(connection: &Connection, directory: &str) -> Result<Option<Session>, Error> {
    const OPERATION: &str = "find the latest session";
    let sql = format!(
        "{SELECT_SESSION} WHERE directory = ?1 AND parent_id IS NULL
         ORDER BY time_updated DESC, id DESC LIMIT 1"
    );
    let row = connection
        .prepare_cached(&sql)
        .during(OPERATION)?
        .query_row([directory], SessionRow::read)
        .optional()
        .during(OPERATION)?;
    row.map(|row| row.decode(OPERATION)).transpose()
}

/// Deletes a session, its subagent sessions, and (by cascade) all their
/// messages and parts. Returns whether the session existed.
pub(crate) fn delete(connection: &Connection, id: &str) -> Result<bool, Error> {
    const OPERATION: &str = "delete session";
    // A subagent's session leaves its parents' totals with it.
    if let Some(session) = get(connection, id)?
        && let Some(parent) = &session.parent_id
    {
        add_totals(connection, parent, session.cost, &session.tokens, -1)?;
    }
    let deleted = connection
        .prepare_cached(
            "WITH RECURSIVE tree (id) AS (
                 SELECT id FROM session WHERE id = ?1
                 UNION SELECT session.id FROM session JOIN tree ON session.parent_id = tree.id
             )
             DELETE FROM session WHERE id IN tree",
        )
        .during(OPERATION)?
        .execute([id])
        .during(OPERATION)?;
    Ok(deleted > 0)
}

/// Adds `sign` (1 or -1) times a step's cost and tokens to its session and
/// every session above it.
pub(crate) fn add_step(
    connection: &Connection,
    session_id: &str,
    step: &StepFinishPart,
    sign: i64,
) -> Result<(), Error> {
    add_totals(connection, session_id, step.cost, &step.tokens, sign)
}

/// Adds `sign` times `cost` and `tokens` to `session_id` and its ancestors.
fn add_totals(
    connection: &Connection,
    session_id: &str,
    cost: f64,
    tokens: &Tokens,
    sign: i64,
) -> Result<(), Error> {
    const OPERATION: &str = "update session totals";
    let signed = |value: u64| i64::try_from(value).unwrap_or(i64::MAX) * sign;
    connection
        .prepare_cached(
            "WITH RECURSIVE chain (id) AS (
                 SELECT ?1
                 UNION SELECT session.parent_id FROM session JOIN chain ON session.id = chain.id
                 WHERE session.parent_id IS NOT NULL
             )
             UPDATE session SET cost = cost + ?2,
                 tokens_input = tokens_input + ?3, tokens_output = tokens_output + ?4,
                 tokens_reasoning = tokens_reasoning + ?5,
                 tokens_cache_read = tokens_cache_read + ?6,
                 tokens_cache_write = tokens_cache_write + ?7
             WHERE id IN chain",
        )
        .during(OPERATION)?
        .execute(params![
            session_id,
            cost * sign as f64,
            signed(tokens.input),
            signed(tokens.output),
            signed(tokens.reasoning),
            signed(tokens.cache.read),
            signed(tokens.cache.write)
        ])
        .during(OPERATION)?;
    Ok(())
}

/// The ids of the sessions above `session_id`, nearest first.
pub(crate) fn ancestors(connection: &Connection, session_id: &str) -> Result<Vec<String>, Error> {
    const OPERATION: &str = "read the parent sessions";
    let mut statement = connection
        .prepare_cached(
            "WITH RECURSIVE chain (id, depth) AS (
                 SELECT parent_id, 1 FROM session WHERE id = ?1 AND parent_id IS NOT NULL
                 UNION SELECT session.parent_id, chain.depth + 1 FROM session
                 JOIN chain ON session.id = chain.id WHERE session.parent_id IS NOT NULL
             )
             SELECT id FROM chain ORDER BY depth",
        )
        .during(OPERATION)?;
    let rows = statement
        .query_map([session_id], |row| row.get(0))
        .during(OPERATION)?;
    rows.collect::<rusqlite::Result<_>>().during(OPERATION)
}

/// One session row as stored, before the JSON remainder is merged back.
struct SessionRow {
    id: String,
    parent_id: Option<String>,
    directory: String,
    title: String,
    time_created: i64,
    time_updated: i64,
    cost: f64,
    tokens: [i64; 5],
    data: String,
}

impl SessionRow {
    fn read(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: row.get(0)?,
            parent_id: row.get(1)?,
            directory: row.get(2)?,
            title: row.get(3)?,
            time_created: row.get(4)?,
            time_updated: row.get(5)?,
            cost: row.get(6)?,
            tokens: [
                row.get(7)?,
                row.get(8)?,
                row.get(9)?,
                row.get(10)?,
                row.get(11)?,
            ],
            data: row.get(12)?,
        })
    }

    /// Columns win over the remainder, so a stale `data` can never override
    /// what the queries see.
    fn decode(self, operation: &'static str) -> Result<Session, Error> {
        let decode_error = |id: String| {
            move |source| Error::Decode {
                operation,
                what: "session",
                id,
                source,
            }
        };
        let mut fields: Map<String, Value> =
            serde_json::from_str(&self.data).map_err(decode_error(self.id.clone()))?;
        let count = |value: i64| u64::try_from(value).unwrap_or(0);
        let [input, output, reasoning, read, write] = self.tokens.map(count);
        let tokens = Tokens {
            total: None,
            input,
            output,
            reasoning,
            cache: CacheTokens { read, write },
        };
        fields.insert("id".into(), Value::from(self.id.clone()));
        if let Some(parent_id) = self.parent_id {
            fields.insert("parent_id".into(), Value::from(parent_id));
        }
        fields.insert("directory".into(), Value::from(self.directory));
        fields.insert("title".into(), Value::from(self.title));
        fields.insert("time_created".into(), Value::from(self.time_created));
        fields.insert("time_updated".into(), Value::from(self.time_updated));
        fields.insert("cost".into(), Value::from(self.cost));
        fields.insert(
            "tokens".into(),
            serde_json::to_value(tokens).map_err(decode_error(self.id.clone()))?,
        );
        serde_json::from_value(Value::Object(fields)).map_err(decode_error(self.id))
    }
}

#[cfg(test)]
mod tests {
    use crate::message::{ModelRef, Session};
    use crate::store::Store;

    #[tokio::test]
    async fn the_chosen_model_survives_session_updates_and_reopening_until_cleared() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("cairn.db");
        let store = Store::open(&path).expect("open");
        let mut session = Session {
            id: "ses_1".into(),
            title: String::new(),
            directory: "/p".into(),
            parent_id: None,
            time_created: 1,
            time_updated: 1,
            cost: 0.0,
            tokens: Default::default(),
        };
        store.create_session(&session).await.expect("create");
        assert_eq!(store.chosen_model("ses_1").await.expect("read"), None);
        let model = ModelRef::new("openrouter", "qwen/qwen3-coder");
        store
            .set_chosen_model("ses_1", Some(&model))
            .await
            .expect("choose");
        session.title = "Renamed".into();
        store.update_session(&session).await.expect("update");
        drop(store);
        let store = Store::open(&path).expect("reopen");
        assert_eq!(
            store.chosen_model("ses_1").await.expect("read"),
            Some(model)
        );
        let read = store.get_session("ses_1").await.expect("get");
        assert_eq!(read.map(|s| s.title), Some("Renamed".to_string()));
        store.set_chosen_model("ses_1", None).await.expect("clear");
        assert_eq!(store.chosen_model("ses_1").await.expect("read"), None);
        assert!(store.set_chosen_model("ses_none", None).await.is_err());
    }
}

#[cfg(test)]
mod count_tests {
    use super::*;

    /// The count is answered from the index alone (a covering index scan),
    /// so listing sessions never reads message data.
    #[test]
    fn message_counts_read_the_index_only() {
        let dir = tempfile::tempdir().expect("temp dir");
        let connection =
            crate::store::schema::open_writer(&dir.path().join("cairn.db")).expect("schema");
        let plan: Vec<String> = connection
            .prepare("EXPLAIN QUERY PLAN SELECT count(*) FROM message WHERE session_id = ?1")
            .expect("plan")
            .query_map(["ses_x"], |row| row.get::<_, String>(3))
            .expect("rows")
            .collect::<Result<_, _>>()
            .expect("plan rows");
        assert!(
            plan.iter()
                .any(|step| step.contains("USING COVERING INDEX message_by_session")),
            "{plan:?}"
        );
        let counts =
            message_counts(&connection, &["ses_none".to_string()]).expect("counts of nothing");
        assert_eq!(counts.get("ses_none"), Some(&0));
    }
}
