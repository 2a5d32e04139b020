//! The JSON a part is stored as: `{id, message_id, session_id, kind, tokens?}`
//! with `kind` the serde form of `PartKind` nested, not flattened.
//!
//! Why not `Part`'s own serde form: it flattens the kind next to
//! `Part::tokens`, so a step-finish part carries two `tokens` keys and does
//! not deserialize. Nesting avoids the collision, and is also quicker to
//! decode (a flattened enum is buffered first). No I/O here.

use serde::{Deserialize, Serialize};

use crate::message::{Part, PartKind};

#[derive(Serialize)]
struct Encode<'a> {
    id: &'a str,
    message_id: &'a str,
    session_id: &'a str,
    kind: &'a PartKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    tokens: Option<u32>,
}

#[derive(Deserialize)]
struct Decode {
    id: String,
    message_id: String,
    session_id: String,
    kind: PartKind,
    #[serde(default)]
    tokens: Option<u32>,
}

pub(crate) fn encode(part: &Part) -> serde_json::Result<String> {
    serde_json::to_string(&Encode {
        id: &part.id,
        message_id: &part.message_id,
        session_id: &part.session_id,
        kind: &part.kind,
        tokens: part.tokens,
    })
}

pub(crate) fn decode(data: &str) -> serde_json::Result<Part> {
    let stored: Decode = serde_json::from_str(data)?;
    Ok(Part {
        id: stored.id,
        message_id: stored.message_id,
        session_id: stored.session_id,
        kind: stored.kind,
        tokens: stored.tokens,
    })
}
