//! Per-session token accounting state: what the gauge learns from each
//! answer (tokenizer calibration per model, the last request's count), the
//! last compaction's figures and the no-progress guard.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::context::compaction::CompactionGuard;
use crate::message::ModelRef;
use crate::provider::Usage;
use crate::shared::lock;
use crate::token::Calibration;

/// Per-session accounting state: calibrations per model, the last
/// compaction's before -> after, and the no-progress guard.
#[derive(Default)]
pub struct Accounting {
    calibrations: Mutex<HashMap<ModelRef, Calibration>>,
    pub(super) last_compaction: Mutex<Option<(u64, u64)>>,
    pub(super) guard: Mutex<CompactionGuard>,
    /// Our count of the last request sent to each model, to learn from its usage.
    last_sent: Mutex<HashMap<ModelRef, u64>>,
    /// Windows providers stated in overflow errors, smaller than configured.
    pub(super) stated_windows: Mutex<HashMap<ModelRef, u64>>,
    /// The largest prompt each model's provider accepted in this session:
    /// its window is at least that, whatever the config or catalog says.
    accepted: Mutex<HashMap<ModelRef, u64>>,
    /// Requests rejected as too long since the turn began or a step last
    /// succeeded: each cost a compaction, and a provider that keeps
    /// rejecting must not cost them without end.
    pub(super) rejections: Mutex<u32>,
    /// `used` of the last gauge published: the size of the request just
    /// sent, the only figure for one the provider rejected.
    pub(super) last_gauge_used: Mutex<u64>,
    /// Models whose server cannot count a prompt (not a local llama-server):
    /// never asked again this session.
    pub(super) no_server_count: Mutex<std::collections::HashSet<ModelRef>>,
    /// How many gauges were published, held while one is: the opening gauge
    /// is measured in the background and must not land after a step's newer one.
    pub(super) gauges_published: Mutex<u64>,
    /// The fixed part of each model's requests as its server counted it,
    /// keyed by a hash of that part (`gauge::fixed_exact`).
    fixed_counts: Mutex<HashMap<ModelRef, (u64, u64)>>,
}

impl Accounting {
    pub fn calibration(&self, model: &ModelRef) -> Calibration {
        *lock(&self.calibrations)
            .entry(model.clone())
            .or_insert_with(|| Calibration::for_model(model))
    }

    /// Remembers our count of a request about to be sent; `None` when its
    /// usage must teach nothing (an older count must not pair with it either).
    pub fn sent(&self, model: &ModelRef, counted: Option<u64>) {
        let mut last_sent = lock(&self.last_sent);
        match counted {
            Some(counted) => last_sent.insert(model.clone(), counted),
            None => last_sent.remove(model),
        };
    }

    /// Learns the tokenizer ratio from a server's own count of a request we
    /// counted at `counted`.
    pub fn observe_count(&self, model: &ModelRef, counted: u64, exact: u64) {
        lock(&self.calibrations)
            .entry(model.clone())
            .or_insert_with(|| Calibration::for_model(model))
            .observe(counted, exact);
    }

    /// The server's count of the fixed part hashed `key`, if known.
    pub fn fixed_count(&self, model: &ModelRef, key: u64) -> Option<u64> {
        lock(&self.fixed_counts)
            .get(model)
            .filter(|(known, _)| *known == key)
            .map(|(_, count)| *count)
    }

    pub fn remember_fixed_count(&self, model: &ModelRef, key: u64, count: u64) {
        lock(&self.fixed_counts).insert(model.clone(), (key, count));
    }

    /// Remembers that the provider took a prompt of `prompt` tokens; true
    /// when it is the largest yet.
    pub fn accept(&self, model: &ModelRef, prompt: u64) -> bool {
        let mut accepted = lock(&self.accepted);
        let largest = accepted.entry(model.clone()).or_insert(0);
        let raised = prompt > *largest;
        *largest = (*largest).max(prompt);
        raised
    }

    /// The largest prompt the provider accepted for `model`, if any.
    pub fn accepted(&self, model: &ModelRef) -> Option<u64> {
        lock(&self.accepted).get(model).copied()
    }

    /// Learns the tokenizer ratio from the provider's usage of that request.
    pub fn learn(&self, model: &ModelRef, usage: &Usage) {
        let Some(counted) = lock(&self.last_sent).remove(model) else {
            return;
        };
        let reported = usage.input + usage.cache_read + usage.cache_write;
        lock(&self.calibrations)
            .entry(model.clone())
            .or_insert_with(|| Calibration::for_model(model))
            .observe(counted, reported);
    }
}
