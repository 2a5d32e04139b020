//! The context gauge's value: the next request's size against the usable
//! window. Computed by `context::window::gauge` (which re-exports it), kept
//! current by `session::gauge`, carried by the bus to the front ends. Data
//! only, in the bottom layer so the bus need not import `context` (#26).

use serde::Serialize;

/// What the token gauge shows: the next request's size against the usable
/// window, from the same function the overflow check uses.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ContextGauge {
    /// Tokens the next request will carry.
    pub used: u64,
    /// The usable window: context minus reserved output space.
    pub usable: u64,
    /// Where automatic compaction fires (`usable * threshold`); `None` when
    /// automatic compaction is off.
    pub compact_at: Option<u64>,
    /// Output space kept free.
    pub reserved: u64,
    /// The model's whole context window.
    pub context: u64,
    /// True while `used` is a cheap estimate rather than an exact count.
    pub estimated: bool,
}
