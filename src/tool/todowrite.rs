//! The `todowrite` tool: the model's todo list for the current task. The
//! list lives in the call's metadata (the store keeps it with the part) and
//! is echoed back as output; this file keeps no state.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolError, ToolOutput, parse_args};

pub struct TodoWrite;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
    /// Accepted because models send it; shown like completed.
    Cancelled,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    High,
    Medium,
    Low,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Todo {
    pub content: String,
    pub status: TodoStatus,
    #[serde(default = "medium")]
    pub priority: Priority,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

fn medium() -> Priority {
    Priority::Medium
}

#[derive(Deserialize)]
struct Args {
    todos: Vec<Todo>,
}

const DESCRIPTION: &str = include_str!("../../assets/prompts/tools/todowrite.txt");

#[async_trait::async_trait]
impl Tool for TodoWrite {
    fn name(&self) -> &'static str {
        "todowrite"
    }
    fn description(&self) -> &'static str {
        DESCRIPTION
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "description": "The whole updated todo list",
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": { "type": "string", "description": "What to do" },
                            "status": { "type": "string", "enum": ["pending", "in_progress", "completed", "cancelled"] },
                            "priority": { "type": "string", "enum": ["high", "medium", "low"] },
                            "id": { "type": "string" }
                        },
                        "required": ["content", "status", "priority"]
                    }
                }
            },
            "required": ["todos"]
        })
    }
    fn is_read_only(&self) -> bool {
        // Touches no file: the plan agent may keep its own list.
        true
    }

    async fn execute(&self, input: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args("todowrite", input)?;
        let open = args
            .todos
            .iter()
            .filter(|todo| matches!(todo.status, TodoStatus::Pending | TodoStatus::InProgress))
            .count();
        let output = serde_json::to_string_pretty(&args.todos)
            .map_err(|error| ToolError::Failed(format!("cannot encode the todo list: {error}")))?;
        Ok(ToolOutput::text(
            format!("{open} todos"),
            output,
            json!({ "todos": args.todos }),
        ))
    }
}
