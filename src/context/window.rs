//! Context-window arithmetic: limits -> usable window -> gauge -> overflow.
//!
//! Exactly seed 003 / OpenCode `overflow.ts`, plus a `threshold` fraction.
//! One function, [`gauge`], computes what the status line shows, and
//! [`is_overflow`] decides from that same value, so what the user sees is what
//! the agent does.

use crate::config::CompactionConfig;

/// The gauge's value type lives in the bottom layer, as the bus carries it.
pub use crate::gauge::ContextGauge;

/// Output tokens asked for at most (OpenCode `OUTPUT_TOKEN_MAX`).
pub const OUTPUT_TOKEN_MAX: u64 = 32_000;
/// Space kept free below an input limit when `reserved` is not configured.
pub const COMPACTION_BUFFER: u64 = 20_000;

/// A model's limits (the catalog's type); `context == 0` means unknown or unlimited.
pub use crate::provider::catalog::Limits;

/// Output space per step as a share of the window: the seed's 32,000 from a
/// 192k window up, a sixth of the window below, so a 4k window keeps ~5/6 of
/// itself for input and a runaway generation stops after ~680 tokens.
pub const OUTPUT_FRACTION: f64 = 1.0 / 6.0;

/// The rule every window-dependent threshold follows: the seed's `constant`
/// for large windows, `fraction` of `base` below (never more than the
/// constant). `base == 0` is an unknown window: the constant.
pub fn scaled(constant: u64, fraction: f64, base: u64) -> u64 {
    if base == 0 {
        return constant;
    }
    constant.min((base as f64 * fraction).floor() as u64).max(1)
}

/// `min(output, 32_000) || 32_000`, and at most a sixth of the window
/// ([`OUTPUT_FRACTION`]): the `max_tokens` of every step.
pub fn max_output_tokens(limits: &Limits) -> u64 {
    let seed = match limits.output.min(OUTPUT_TOKEN_MAX) {
        0 => OUTPUT_TOKEN_MAX,
        n => n,
    };
    scaled(seed, OUTPUT_FRACTION, limits.context)
}

/// The summary's output budget: the step's output space, and at most a fifth
/// of the usable window, so the summary plus the verbatim tail (a quarter)
/// and the fixed prompt leave room below the compaction point.
pub const SUMMARY_OUTPUT_FRACTION: f64 = 0.20;

pub fn summary_output_tokens(limits: &Limits, usable: u64) -> u64 {
    scaled(max_output_tokens(limits), SUMMARY_OUTPUT_FRACTION, usable)
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
    fn output_space_is_a_sixth_of_a_small_window() {
        let tiny = Limits {
            context: 2_048,
            input: None,
            output: 4_096,
        };
        assert_eq!(max_output_tokens(&tiny), 341);
        let g = gauge(1_707, false, &tiny, &CompactionConfig::default());
        assert_eq!(g.usable, 1_707);
        assert!(is_overflow(&g));
        for (context, output, expected) in [
            (4_096, 682, 3_414),
            (8_192, 1_365, 6_827),
            (16_384, 2_730, 13_654),
            (32_768, 5_461, 27_307),
            (200_000, 32_000, 168_000),
        ] {
            let limits = Limits {
                context,
                input: None,
                output: context / 4,
            };
            let limits = if context == 200_000 { CLAUDE } else { limits };
            assert_eq!(max_output_tokens(&limits), output, "{context}");
            assert_eq!(
                usable(&limits, &CompactionConfig::default()),
                expected,
                "{context}"
            );
        }
    }

    #[test]
    fn summary_budget_is_a_fifth_of_usable_below_the_seed() {
        let small = Limits {
            context: 4_096,
            input: None,
            output: 1_024,
        };
        let usable = usable(&small, &CompactionConfig::default());
        assert_eq!(summary_output_tokens(&small, usable), 682);
        assert_eq!(summary_output_tokens(&CLAUDE, 168_000), 32_000);
        assert_eq!(summary_output_tokens(&CLAUDE, 0), 32_000);
        assert_eq!(scaled(40_000, 0.2, 0), 40_000);
        assert_eq!(scaled(40_000, 0.2, 1_000_000), 40_000);
        assert_eq!(scaled(40_000, 0.2, 3_414), 682);
    }
}
