//! The JSON a part is stored as: `{id, message_id, session_id, type, kind,
//! tokens?}`, where `kind` is the serde form of the kind's own struct
//! (`TextPart`, `ToolPart`, ...) and `type` its `PartKind` tag.
//!
//! Why not `Part`'s own serde form: it flattens the kind next to
//! `Part::tokens`, so a step-finish part carries two `tokens` keys and does
//! not deserialize. And decoding the struct picked by the `type` column skips
//! the buffering serde does for an internally tagged enum, which is most of
//! the cost of `read_view`. No I/O here.

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Serialize};

use crate::message::{Part, PartKind};

#[derive(Serialize)]
struct Encode<'a, K> {
    id: &'a str,
    message_id: &'a str,
    session_id: &'a str,
    #[serde(rename = "type")]
    kind_type: &'static str,
    kind: &'a K,
    #[serde(skip_serializing_if = "Option::is_none")]
    tokens: Option<u32>,
}

#[derive(Deserialize)]
struct Decode<K> {
    id: String,
    message_id: String,
    session_id: String,
    kind: K,
    #[serde(default)]
    tokens: Option<u32>,
}

pub(crate) fn encode(part: &Part) -> serde_json::Result<String> {
    fn with<K: Serialize>(part: &Part, kind: &K) -> serde_json::Result<String> {
        serde_json::to_string(&Encode {
            id: &part.id,
            message_id: &part.message_id,
            session_id: &part.session_id,
            kind_type: part.kind.type_name(),
            kind,
            tokens: part.tokens,
        })
    }
    match &part.kind {
        PartKind::Text(kind) => with(part, kind),
        PartKind::Reasoning(kind) => with(part, kind),
        PartKind::Tool(kind) => with(part, kind),
        PartKind::File(kind) => with(part, kind),
        PartKind::Compaction(kind) => with(part, kind),
        PartKind::Subtask(kind) => with(part, kind),
        PartKind::StepStart(kind) => with(part, kind),
        PartKind::StepFinish(kind) => with(part, kind),
        PartKind::Patch(kind) => with(part, kind),
    }
}

/// Decodes a part stored with the given `type` column.
pub(crate) fn decode(kind_type: &str, data: &str) -> serde_json::Result<Part> {
    fn with<K: DeserializeOwned>(data: &str, wrap: fn(K) -> PartKind) -> serde_json::Result<Part> {
        let stored: Decode<K> = serde_json::from_str(data)?;
        Ok(Part {
            id: stored.id,
            message_id: stored.message_id,
            session_id: stored.session_id,
            kind: wrap(stored.kind),
            tokens: stored.tokens,
        })
    }
    match kind_type {
        "text" => with(data, PartKind::Text),
        "reasoning" => with(data, PartKind::Reasoning),
        "tool" => with(data, PartKind::Tool),
        "file" => with(data, PartKind::File),
        "compaction" => with(data, PartKind::Compaction),
        "subtask" => with(data, PartKind::Subtask),
        "step-start" => with(data, PartKind::StepStart),
        "step-finish" => with(data, PartKind::StepFinish),
        "patch" => with(data, PartKind::Patch),
        other => Err(serde_json::Error::custom(format!(
            "unknown part type `{other}`"
        ))),
    }
}
