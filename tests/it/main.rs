//! All integration tests in one binary (one link of the crate instead of one
//! per file). Harnesses shared by several suites live in `tests/common/`;
//! each module here is one feature's suite.

// Test code: a panic with the value is the failure report.
#![allow(clippy::unwrap_used)]

#[path = "../common/counting/mod.rs"]
mod counting;
#[path = "../common/history/mod.rs"]
mod history;
#[path = "../common/project/mod.rs"]
mod project;
#[path = "../common/scenario/mod.rs"]
mod scenario;
#[path = "../common/soak/mod.rs"]
mod soak;
#[path = "../common/store_support/mod.rs"]
mod store_support;
#[path = "../common/support/mod.rs"]
mod support;
#[path = "../common/tools_common/mod.rs"]
mod tools_common;

mod acp;
mod agent_files_run;
mod claude_settings_run;
mod cli;
mod cli_run;
mod cli_run_count;
mod cli_run_exact;
mod cli_run_home;
mod cli_run_result;
mod cli_run_runaway;
mod cli_run_silent;
mod cli_run_stdin;
mod cli_slash;
mod commands_run;
mod commands_tui;
mod config;
mod context_compaction_flow;
mod context_pairing;
mod context_scenarios;
mod context_shapes;
mod context_small_run;
mod context_small_windows;
mod context_token_accuracy;
mod hardening_bounds;
mod hardening_crash;
mod hardening_hangs;
mod hardening_secrets;
mod hardening_soak;
mod hardening_streams;
mod hooks_run;
mod instructions_run;
mod layering;
mod loop_failures;
mod loop_scenarios;
mod loop_steps;
mod mcp_client;
mod mcp_http;
mod mcp_lifecycle;
mod mcp_opencode;
mod mcp_permission;
mod mentions_run;
mod model_choice;
mod model_discover;
mod permission;
mod permission_shell;
mod permission_shell_run;
mod permission_store;
mod provider_anthropic;
mod provider_openai;
mod provider_responses;
mod provider_wires;
mod recovery;
mod sandbox_run;
mod skills_run;
mod snapshot_warm;
mod store;
mod store_cache;
mod store_concurrency;
mod store_failures;
mod store_history;
mod task;
mod thread_run;
mod tools_bash;
mod tools_files;
mod tools_hangs;
mod tools_kill;
mod tools_search;
mod tools_truncate;
mod trust;
mod trust_drift;
mod trust_hosts;
mod tui_asks;
mod tui_day;
mod tui_edges;
mod tui_habit_enter;
mod tui_history;
mod tui_mcp;
mod tui_paging;
mod tui_pty;
mod tui_sessions;
mod tui_slash;
mod tui_subtask;
mod tui_thread;
mod tui_undo;
mod undo_attacks;
mod undo_kept_run;
mod undo_run;
