//! The session's records a compaction's working state is built from, read
//! across the whole session (not only the model's view): the user's text,
//! every patch, and the calls of the tools the caller names, with their
//! bulky fields left in the database (a written file's content, an edit's
//! strings, outputs other than those asked for). Runs on a connection
//! thread, inside the read transaction the caller opened.

use rusqlite::Connection;

use super::error::{During, Error};
use super::reads::{decode_message, decode_part};
use crate::message::MessageWithParts;

/// Which tool calls to read, and which of them keep their output.
#[derive(Debug, Clone, Default)]
pub struct RecordQuery {
    pub tools: Vec<String>,
    pub outputs_of: Vec<String>,
}

/// Messages oldest first, each with only its record parts; messages with
/// none are left out.
pub(crate) fn read_records(
    connection: &Connection,
    session_id: &str,
    query: &RecordQuery,
) -> Result<Vec<MessageWithParts>, Error> {
    const OPERATION: &str = "read the session's records";
    let tools = serde_json::to_string(&query.tools).unwrap_or_else(|_| "[]".into());
    let outputs = serde_json::to_string(&query.outputs_of).unwrap_or_else(|_| "[]".into());
    let mut statement = connection
        .prepare_cached(
            "SELECT m.id, m.data, p.id, p.type,
                CASE WHEN p.type = 'tool'
                      AND json_extract(p.data, '$.kind.tool') NOT IN (SELECT value FROM json_each(?3))
                  THEN json_remove(json_replace(p.data, '$.kind.state.output', ''),
                       '$.kind.state.input.content', '$.kind.state.input.old_string',
                       '$.kind.state.input.new_string', '$.kind.state.input.oldString',
                       '$.kind.state.input.newString', '$.kind.state.metadata')
                  ELSE p.data END
             FROM message m JOIN part p ON p.message_id = m.id
             WHERE m.session_id = ?1 AND (
                 (m.role = 'user' AND p.type IN ('text', 'compaction'))
                 OR p.type = 'patch'
                 OR (p.type = 'tool'
                     AND json_extract(p.data, '$.kind.tool') IN (SELECT value FROM json_each(?2))))
             ORDER BY m.id, p.id",
        )
        .during(OPERATION)?;
    let mut rows = statement
        .query((session_id, tools, outputs))
        .during(OPERATION)?;
    let mut out: Vec<MessageWithParts> = Vec::new();
    while let Some(row) = rows.next().during(OPERATION)? {
        let message_id: String = row.get(0).during(OPERATION)?;
        if out.last().is_none_or(|m| m.message.id != message_id) {
            let data: String = row.get(1).during(OPERATION)?;
            out.push(MessageWithParts {
                message: decode_message(OPERATION, &message_id, &data)?,
                parts: Vec::new(),
            });
        }
        let part_id: String = row.get(2).during(OPERATION)?;
        let kind: String = row.get(3).during(OPERATION)?;
        let data: String = row.get(4).during(OPERATION)?;
        let part = decode_part(OPERATION, &part_id, &kind, &data)?;
        if let Some(message) = out.last_mut() {
            message.parts.push(part);
        }
    }
    Ok(out)
}
