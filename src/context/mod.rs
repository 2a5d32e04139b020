//! The pure rules of what the model sees and how the window is managed (seed
//! 000's three layers, minus the I/O): functions over messages, settings and
//! limits. Never reads the store, never calls a provider, never publishes;
//! `session` applies these rules with I/O.
//!
//! - `view`        history -> the messages the model sees (filter to the
//!   compaction point, conversion, tool-call pairing), what a part costs,
//!   and the `/context` breakdown
//! - `accounting`  the next request's size, anchored on provider-reported usage
//! - `window`      limits -> usable window -> gauge -> overflow decision
//! - `prune`       layer 2: which old tool outputs to clear
//! - `compaction`  layer 3: what a summary request contains, its tail, the
//!   shrink ladder and the guard against compact-and-retry loops

pub mod accounting;
pub mod compaction;
pub mod prune;
pub mod view;
pub mod window;

pub use accounting::{NextRequest, RequestAnchor, added_since_last_request, next_request_tokens};
pub use view::breakdown::ContextBreakdown;
pub use window::{
    COMPACTION_BUFFER, ContextGauge, Limits, OUTPUT_TOKEN_MAX, gauge, is_overflow,
    max_output_tokens, reserved, scaled, summary_output_tokens, usable,
};
