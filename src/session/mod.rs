//! The agent: turns user messages into model calls and tool runs.
//!
//! - `command`    what front ends (TUI, headless) ask of a session
//! - `context`    history -> the messages the model sees
//! - `prune`      clearing old tool outputs
//! - `compaction` summarizing history when the window fills
//!
//! Reports to front ends only through the bus; never draws or prints.

pub mod command;
pub mod compaction;
pub mod context;
pub mod prune;
