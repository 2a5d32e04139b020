//! The agent: turns user messages into model calls and tool runs.
//!
//! - `runtime`         serves a session's commands; starts the loop
//! - `run`             the loop (`loop` is a keyword)
//! - `processor`       one model call's stream -> parts
//! - `tool_runner`     runs a step's tool calls, with the doom-loop guard
//! - `doom`            doom-loop detection (pure)
//! - `agent`           build / plan / compaction
//! - `prompt`          the system prompt and instruction files
//! - `context`         history -> the messages the model sees
//! - `models`          provider/model -> client, limits, prices
//! - `gauge`           token accounting glue: the gauge, overflow, `/context`
//! - `prune`, `prune_task`             clearing old tool outputs (rule, then act)
//! - `compaction`, `compaction_task`   summarizing history (rules, then act)
//! - `recovery`        closing turns a crash left unfinished
//! - `shell`           `!cmd` typed by the user
//! - `writer`          persist-then-publish of every change
//! - `command`         what front ends ask of a session
//!
//! Reports to front ends only through the bus; never draws or prints.

pub mod agent;
pub mod command;
pub mod compaction;
pub mod compaction_task;
pub mod context;
pub mod doom;
pub mod gauge;
pub mod models;
pub mod processor;
pub mod prompt;
pub mod prune;
pub mod prune_task;
pub mod recovery;
pub mod run;
pub mod runtime;
pub mod shell;
pub mod snapshot_step;
pub mod tool_runner;
pub mod undo;
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
