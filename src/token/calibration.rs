//! Per-model scale from our `o200k_base` counts to the provider's tokenizer.
//!
//! Learned from (what we counted as sent, what the provider reported as input)
//! pairs with an exponential moving average, clamped so one odd report cannot
//! swing the gauge. Starts at a family default (Claude counts about 10% more).

use crate::message::ModelRef;

/// Weight of a new observation in the moving average.
const SMOOTHING: f64 = 0.3;
/// Observations below this size are dominated by framing tokens; ignored.
const MIN_SAMPLE_TOKENS: u64 = 500;
/// The ratio never leaves this range: beyond it a report is wrong, not a tokenizer.
const MIN_RATIO: f64 = 0.5;
const MAX_RATIO: f64 = 2.0;
/// Claude's tokenizer yields about 10% more tokens than `o200k_base` on code and prose.
const CLAUDE_DEFAULT_RATIO: f64 = 1.1;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibration {
    ratio: f64,
    samples: u32,
}

impl Default for Calibration {
    fn default() -> Self {
        Self {
            ratio: 1.0,
            samples: 0,
        }
    }
}

impl Calibration {
    /// The starting ratio for a model's family, before any observation.
    pub fn for_model(model: &ModelRef) -> Self {
        let name = format!("{}/{}", model.provider, model.model).to_lowercase();
        let ratio = if name.contains("claude") || model.provider == "anthropic" {
            CLAUDE_DEFAULT_RATIO
        } else {
            1.0
        };
        Self { ratio, samples: 0 }
    }

    /// Records one request: `counted` by us, `reported` input tokens by the
    /// provider (input + cache read + cache write).
    pub fn observe(&mut self, counted: u64, reported: u64) {
        if counted < MIN_SAMPLE_TOKENS || reported == 0 {
            return;
        }
        let observed = (reported as f64 / counted as f64).clamp(MIN_RATIO, MAX_RATIO);
        self.ratio = if self.samples == 0 {
            observed
        } else {
            self.ratio + SMOOTHING * (observed - self.ratio)
        };
        self.samples = self.samples.saturating_add(1);
    }

    pub fn ratio(&self) -> f64 {
        self.ratio
    }

    pub fn samples(&self) -> u32 {
        self.samples
    }

    /// Our count expressed in the provider's tokens.
    pub fn scale(&self, counted: u64) -> u64 {
        (counted as f64 * self.ratio).round() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn family_defaults() {
        let claude = Calibration::for_model(&ModelRef::new("anthropic", "claude-sonnet-4-5"));
        assert_eq!(claude.ratio(), CLAUDE_DEFAULT_RATIO);
        let gpt = Calibration::for_model(&ModelRef::new("openai", "gpt-5"));
        assert_eq!(gpt.ratio(), 1.0);
        assert_eq!(gpt.scale(1000), 1000);
    }

    #[test]
    fn first_observation_replaces_the_default_then_smooths() {
        let mut c = Calibration::default();
        c.observe(10_000, 12_000);
        assert!((c.ratio() - 1.2).abs() < 1e-9);
        c.observe(10_000, 10_000);
        assert!((c.ratio() - 1.14).abs() < 1e-9);
        assert_eq!(c.samples(), 2);
        assert_eq!(c.scale(1000), 1140);
    }

    #[test]
    fn tiny_and_absurd_samples_are_ignored_or_clamped() {
        let mut c = Calibration::default();
        c.observe(100, 1_000);
        assert_eq!((c.ratio(), c.samples()), (1.0, 0));
        c.observe(1_000, 100_000);
        assert_eq!(c.ratio(), MAX_RATIO);
    }
}
