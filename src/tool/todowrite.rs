//! The `todowrite` tool: the model's todo list for the current task. The
//! list lives in the call's metadata (the store keeps it with the part) and
//! is echoed back as output; this file keeps no state.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{Tool, ToolError, ToolOutput, ToolScope, parse_args, schema_for};

/// The name the model calls it by, which is also its permission.
const NAME: &str = "todowrite";

pub struct TodoWrite;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
    // Accepted because models send it; shown like completed.
    Cancelled,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    High,
    Medium,
    Low,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Todo {
    /// What to do
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

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// The whole updated todo list
    todos: Vec<Todo>,
}

const DESCRIPTION: &str = include_str!("../../assets/prompts/tools/todowrite.txt");

#[async_trait::async_trait]
impl Tool for TodoWrite {
    fn name(&self) -> &'static str {
        NAME
    }
    fn description(&self) -> &'static str {
        DESCRIPTION
    }
    fn parameters(&self) -> Value {
        schema_for::<Args>()
    }
    fn is_read_only(&self) -> bool {
        // Touches no file: the plan agent may keep its own list.
        true
    }

    async fn execute(&self, input: Value, _ctx: &ToolScope) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args(NAME, input)?;
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
