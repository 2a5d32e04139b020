//! The agent: turns user messages into model calls and tool runs.
//!
//! - `runtime`         serves a session's commands; starts the loop
//! - `ctx`             what every part of the loop needs (`SessionCtx`)
//! - `run`             the loop (`loop` is a keyword)
//! - `request`         a step's request, assistant message, compaction request
//! - `processor`       one model call's stream -> parts
//! - `tool_runner`     runs a step's tool calls, with the doom-loop guard
//! - `doom`            doom-loop detection (pure)
//! - `agent`           build / plan / general / explore / compaction
//! - `agent_files`     custom agents from Markdown files (.cairn, .claude)
//! - `prompt`          the system prompt and instruction files
//! - `instructions`    which AGENTS.md / CLAUDE.md a folder gives, `@path`
//!   imports, a subfolder's files on the first read there
//! - `models`          provider/model -> client, limits, prices
//! - `model_choices`   what `/model` offers (keyed, configured, local models)
//! - `gauge`           the gauge, overflow and `/context` for this session
//! - `accounting`      what the gauge learns from each answer
//! - `prune_task`      clearing old tool outputs (the rule is `context::prune`)
//! - `compaction_task` summarizing history (the rules are `context::compaction`)
//! - `working_state`   what a compaction carries past the summary, read from
//!   the session's records and the files on disk
//! - `recovery`        closing turns a crash left unfinished
//! - `lock`            one process per session (a lock file in the data dir)
//! - `remote_instructions`  `instructions` given as URLs, fetched once
//! - `remembered`      "always" answers kept per project; `/permissions`
//! - `subtask`         the `task` tool: a subagent in a child session
//! - `pending_subtask` `@agent` in a message: a subtask the loop runs first
//! - `shell`           `!cmd` typed by the user
//! - `writer`          persist-then-publish of every change
//! - `command`         what front ends ask of a session
//! - `export`          a session as Markdown (`/export`)
//!
//! Reports to front ends only through the bus; never draws or prints.

pub mod accounting;
pub mod agent;
pub mod agent_files;
pub mod command;
pub mod compaction_task;
pub mod ctx;
pub mod custom;
pub mod doom;
pub mod export;
pub mod gauge;
pub mod hook_calls;
pub mod instructions;
pub mod lock;
pub mod mention;
pub mod model_choices;
pub mod models;
pub mod part_cap;
pub mod pending_subtask;
pub mod processor;
pub mod prompt;
pub mod prune_task;
pub mod recovery;
pub mod remembered;
pub mod remote_instructions;
pub mod request;
pub mod run;
pub mod runtime;
pub mod shell;
pub mod snapshot_step;
pub mod subtask;
pub mod tool_runner;
pub mod undo;
pub mod working_state;
pub mod writer;

/// What can stop the session layer itself (not a model or tool failure,
/// which become parts and messages).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Store(#[from] crate::store::Error),
    #[error("{0}")]
    Internal(String),
}
