//! cairn: a terminal coding agent that never loses the thread when the context
//! window fills up.
//!
//! # Layout
//!
//! - `message`    the data model: Session -> Message -> Part (pure data)
//! - `id`         time-sortable identifiers
//! - `bus`        broadcast of every change, to the TUI, the headless printer, tests
//! - `cli`        the command line (clap) and exit codes
//! - `config`     TOML configuration: load, merge, validate, say where each value came from
//! - `paths`      where data, config and logs live (XDG-aware)
//! - `store`      SQLite persistence of sessions, messages and parts (the source of truth)
//! - `provider`   LLM backends: one request type, one stream of events, two wire formats
//! - `token`      token counting and context-window arithmetic (pure)
//! - `permission` allow / ask / deny rules and the waiting for answers
//! - `tool`       the tools the model calls, and truncation of their output
//! - `snapshot`   private snapshots of the working tree, for patches and /undo
//! - `session`    the agent: the loop, the stream processor, context building,
//!   prune and compaction
//! - `headless`   `cairn run`: the loop without a terminal UI
//! - `app`        assembly: config -> a running session, for every front end
//! - `tui`        the terminal UI; talks to `session` only through commands and bus events
//!
//! Dependencies point down this list's layers: `tui`/`headless` -> `session` ->
//! `provider`/`tool`/`store` -> `message`, never the reverse.

pub mod app;
pub mod bus;
pub mod cli;
pub mod config;
pub mod headless;
pub mod id;
pub mod message;
pub mod paths;
pub mod permission;
pub mod provider;
pub mod session;
pub mod snapshot;
pub mod store;
pub mod token;
pub mod tool;
pub mod tui;
