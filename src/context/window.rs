//! Context-window arithmetic: limits -> usable window -> gauge -> overflow.
//!
//! Exactly seed 003 / OpenCode `overflow.ts`, plus a `threshold` fraction.
//! One function, [`gauge`], computes what the status line shows, and
//! [`is_overflow`] decides from that same value, so what the user sees is what
//! the agent does.

use serde::Serialize;

use crate::config::CompactionConfig;

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

/// Output tokens asked for at most (OpenCode `OUTPUT_TOKEN_MAX`).
pub const OUTPUT_TOKEN_MAX: u64 = 32_000;
/// Space kept free below an input limit when `reserved` is not configured.
pub const COMPACTION_BUFFER: u64 = 20_000;

/// A model's limits (the catalog's type); `context == 0` means unknown or unlimited.
pub use crate::provider::catalog::Limits;

/// `min(output, 32_000) || 32_000`.
pub fn max_output_tokens(limits: &Limits) -> u64 {
    match limits.output.min(OUTPUT_TOKEN_MAX) {
        0 => OUTPUT_TOKEN_MAX,
        n => n,
    }
}

/// `compaction.reserved ?? min(20_000, max_output)`.
pub fn reserved(limits: &Limits, settings: &CompactionConfig) -> u64 {
    settings
        .reserved
        .unwrap_or_else(|| COMPACTION_BUFFER.min(max_output_tokens(limits)))
}

/// The window a request may fill. With an input limit, `input - reserved`;
/// without, `context - max_output` (upstream ignores `reserved` there too).
pub fn usable(limits: &Limits, settings: &CompactionConfig) -> u64 {
    if limits.context == 0 {
        return 0;
    }
    match limits.input {
        Some(input) if input > 0 => input.saturating_sub(reserved(limits, settings)),
        _ => limits.context.saturating_sub(max_output_tokens(limits)),
    }
}

/// The gauge for a next request of `used` tokens (`estimated` when any part
/// of it is a cheap estimate).
pub fn gauge(
    used: u64,
    estimated: bool,
    limits: &Limits,
    settings: &CompactionConfig,
) -> ContextGauge {
    let usable = usable(limits, settings);
    // What is really kept free: `reserved` below an input limit, the whole
    // output allowance below the context window (where `reserved` is unused).
    let kept_free = match limits.input {
        Some(input) if input > 0 => reserved(limits, settings),
        _ => max_output_tokens(limits),
    };
    let compact_at = (settings.auto && limits.context != 0)
        .then(|| (usable as f64 * settings.threshold.get()).floor() as u64);
    ContextGauge {
        used,
        usable,
        compact_at,
        reserved: kept_free,
        context: limits.context,
        estimated,
    }
}

/// Overflow: automatic compaction on, a known window, and `used >= compact_at`.
pub fn is_overflow(gauge: &ContextGauge) -> bool {
    gauge.context != 0 && gauge.compact_at.is_some_and(|at| gauge.used >= at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Fraction;

    const CLAUDE: Limits = Limits {
        context: 200_000,
        input: None,
        output: 64_000,
    };

    #[test]
    fn max_output_caps_at_32k_and_treats_zero_as_32k() {
        assert_eq!(max_output_tokens(&CLAUDE), 32_000);
        let small = Limits {
            output: 8_192,
            ..CLAUDE
        };
        assert_eq!(max_output_tokens(&small), 8_192);
        let unknown = Limits {
            output: 0,
            ..CLAUDE
        };
        assert_eq!(max_output_tokens(&unknown), 32_000);
    }

    #[test]
    fn usable_without_input_limit_is_context_minus_max_output() {
        let settings = CompactionConfig::default();
        assert_eq!(usable(&CLAUDE, &settings), 168_000);
        let g = gauge(167_999, false, &CLAUDE, &settings);
        assert!(!is_overflow(&g));
        let g = gauge(168_000, false, &CLAUDE, &settings);
        assert!(is_overflow(&g), "the rule is >=, not >");
    }

    #[test]
    fn usable_with_input_limit_subtracts_reserved() {
        let limits = Limits {
            context: 400_000,
            input: Some(272_000),
            output: 128_000,
        };
        let settings = CompactionConfig::default();
        assert_eq!(reserved(&limits, &settings), 20_000);
        assert_eq!(usable(&limits, &settings), 252_000);
        let custom = CompactionConfig {
            reserved: Some(50_000),
            ..settings.clone()
        };
        assert_eq!(usable(&limits, &custom), 222_000);
        let small_output = Limits {
            output: 4_096,
            ..limits
        };
        assert_eq!(reserved(&small_output, &settings), 4_096);
    }

    #[test]
    fn zero_context_and_auto_off_never_overflow() {
        let unlimited = Limits {
            context: 0,
            input: None,
            output: 0,
        };
        let g = gauge(10_000_000, false, &unlimited, &CompactionConfig::default());
        assert_eq!((g.usable, g.compact_at), (0, None));
        assert!(!is_overflow(&g));
        let off = CompactionConfig {
            auto: false,
            ..CompactionConfig::default()
        };
        let g = gauge(10_000_000, false, &CLAUDE, &off);
        assert_eq!(g.compact_at, None);
        assert!(!is_overflow(&g));
    }

    #[test]
    fn threshold_moves_the_trigger_and_the_gauge_shows_it() {
        let settings = CompactionConfig {
            threshold: Fraction::new(0.8).expect("0.8 is a fraction"),
            ..CompactionConfig::default()
        };
        let g = gauge(134_400, true, &CLAUDE, &settings);
        assert_eq!(g.compact_at, Some(134_400));
        assert!(is_overflow(&g));
        assert!(!is_overflow(&ContextGauge { used: 134_399, ..g }));
    }

    #[test]
    fn window_smaller_than_output_space_saturates_at_zero() {
        let tiny = Limits {
            context: 2_048,
            input: None,
            output: 4_096,
        };
        let g = gauge(1, false, &tiny, &CompactionConfig::default());
        assert_eq!(g.usable, 0);
        assert!(is_overflow(&g));
    }
}
