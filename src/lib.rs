//! cairn: a terminal coding agent that never loses the thread when the context
//! window fills up.
//!
//! # Layers, top to bottom
//!
//! - `tui`, `headless`, `acp`  front ends: the terminal UI, `cairn run` and
//!   `cairn acp` (an editor over the Agent Client Protocol); they talk to a
//!   session only through commands and bus events
//! - `app`        assembly: config -> a running session, for every front end
//! - `session`    the agent loop with I/O: runtime, loop, stream processor, tool
//!   runner, the tasks that apply prune and compaction, undo
//! - `snapshot`, `hook`   private snapshots of the working tree, for patches
//!   and /undo, and pre-images of the files cairn's own tools write; the
//!   user's hook programs (Claude Code's format) run at the session's events
//! - `context`    the pure rules of what the model sees and how the window is
//!   managed: model view, counting, gauge and overflow, prune, compaction
//! - `provider`, `tool`, `mcp`, `store`, `permission`, `secret`   LLM backends
//!   (one request type, one event stream, three wires); the tools and
//!   truncation of their output; MCP servers' tools and prompts; SQLite
//!   persistence (the source of truth); allow / ask / deny rules; secrets
//!   redacted from tool outputs and messages
//! - `sandbox`    the kernel's confinement of every `bash` command (Landlock,
//!   seccomp, a private mount namespace)
//! - `token`      tokenizer counts and estimates (pure)
//! - `message`, `bus`, `gauge`, `permission_request`, `id`, `clock`,
//!   `config`, `trust`, `paths`, `cli`, `slash`, `custom_command`, `skill`,
//!   `frontmatter`, `shared`   the data model, the change broadcast and two
//!   values it carries (the context gauge, a permission question and its
//!   answer), ids, time, configuration, the record of trusted projects, file
//!   locations, the command line, the slash-command table, custom commands
//!   and skills found on disk, Markdown front matter, small helpers with no
//!   layer of their own
//!
//! Dependencies point down this list, never up: `tests/it/layering.rs` reads
//! every module path in `src/` and checks it against the same list, and
//! checks for import circles between files; what is not fixed yet is listed
//! in `tests/it/layering_known.txt`, which may only shrink.
//!
//! New code goes in the lowest layer that can hold it: a rule that needs no
//! I/O goes in `context` (or `permission`, `token`), not in `session`; a new
//! tool is one file in `tool/`; a new front-end feature talks to the session
//! through `session::command`; a new slash command is a row in `slash`.

pub mod acp;
pub mod app;
pub mod bus;
pub mod cli;
pub mod clock;
pub mod config;
pub mod context;
pub mod custom_command;
pub mod frontmatter;
pub mod gauge;
pub mod headless;
pub mod hook;
pub mod id;
pub mod mcp;
pub mod message;
pub mod paths;
pub mod permission;
pub mod permission_request;
pub mod provider;
pub mod sandbox;
pub mod secret;
pub mod session;
pub mod shared;
pub mod skill;
pub mod slash;
pub mod snapshot;
pub mod store;
pub mod token;
pub mod tool;
pub mod trust;
pub mod tui;
