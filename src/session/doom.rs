//! Doom-loop detection: a model calling tools in circles.
//!
//! OpenCode asks after three identical consecutive calls within one message
//! (seed 001). It misses cycles (A, B, A, B), repeats across messages and has
//! no hard stop (spec section 16.F). We look at the recent tool calls of the
//! current user turn across its messages, ignoring text between them, and
//! catch both repeats and short cycles; past a hard limit the turn stops
//! without asking. Calls made for earlier user messages never count.

/// One tool call as the detector sees it: name and canonical JSON input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallSignature {
    pub tool: String,
    pub input: String,
}

impl CallSignature {
    pub fn new(tool: &str, input: &serde_json::Value) -> Self {
        // serde_json keeps object keys sorted (no preserve_order feature), so
        // the same arguments in another key order compare equal.
        Self {
            tool: tool.to_string(),
            input: input.to_string(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Fine,
    /// Ask the user before running the call again.
    Ask {
        repeats: usize,
        description: String,
    },
    /// Stop the turn: the loop went on even after asking.
    Stop {
        repeats: usize,
        description: String,
    },
}

/// Periods checked for cycles: 1 is "the same call again", 2 is A, B, A, B.
const MAX_PERIOD: usize = 3;

/// Judges `next` given the calls before it (oldest first).
///
/// `threshold` is how many times a pattern must occur (counting `next`) to
/// ask; `hard_stop` how many to stop outright.
pub fn judge(
    history: &[CallSignature],
    next: &CallSignature,
    threshold: usize,
    hard_stop: usize,
) -> Verdict {
    let mut worst: Option<(usize, usize)> = None;
    for period in 1..=MAX_PERIOD {
        let repeats = repeats_of_period(history, next, period);
        // Two whole rounds of a cycle with identical arguments is already a loop.
        let needed = if period == 1 { threshold } else { 2 };
        if repeats >= needed && worst.is_none_or(|(r, _)| repeats > r) {
            worst = Some((repeats, period));
        }
    }
    let Some((repeats, period)) = worst else {
        return Verdict::Fine;
    };
    let description = if period == 1 {
        format!(
            "`{}` called {repeats} times in a row with the same arguments",
            next.tool
        )
    } else {
        let cycle: Vec<&str> = history[history.len() + 1 - period..]
            .iter()
            .map(|c| c.tool.as_str())
            .chain(std::iter::once(next.tool.as_str()))
            .collect();
        format!(
            "the same {period} tool calls ({}) repeated {repeats} times",
            cycle.join(", ")
        )
    };
    if repeats >= hard_stop {
        Verdict::Stop {
            repeats,
            description,
        }
    } else {
        Verdict::Ask {
            repeats,
            description,
        }
    }
}

/// How many whole repetitions of the last `period` calls (ending with `next`)
/// stand at the end of the sequence.
fn repeats_of_period(history: &[CallSignature], next: &CallSignature, period: usize) -> usize {
    let len = history.len() + 1;
    let at = |i: usize| if i == len - 1 { next } else { &history[i] };
    if len < period {
        return 0;
    }
    if period > 1 {
        // A cycle of identical calls is a period-1 repeat, not a longer cycle.
        let first = at(len - period);
        if (len - period..len).all(|i| at(i) == first) {
            return 0;
        }
    }
    let mut matched = period;
    while matched < len && at(len - 1 - matched) == at(len - 1 - matched + period) {
        matched += 1;
    }
    matched / period
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(tool: &str, arg: &str) -> CallSignature {
        CallSignature::new(tool, &serde_json::json!({ "path": arg }))
    }

    #[test]
    fn third_identical_call_asks() {
        let a = call("read", "a");
        assert_eq!(judge(std::slice::from_ref(&a), &a, 3, 10), Verdict::Fine);
        assert!(matches!(
            judge(&[a.clone(), a.clone()], &a, 3, 10),
            Verdict::Ask { repeats: 3, .. }
        ));
    }

    #[test]
    fn different_arguments_are_fine() {
        let history = [call("read", "a"), call("read", "b")];
        assert_eq!(judge(&history, &call("read", "c"), 3, 10), Verdict::Fine);
    }

    #[test]
    fn abab_cycle_is_caught() {
        let (a, b) = (call("read", "a"), call("grep", "b"));
        let history = [a.clone(), b.clone(), a.clone()];
        match judge(&history, &b, 3, 10) {
            Verdict::Ask {
                repeats,
                description,
            } => {
                assert_eq!(repeats, 2);
                assert!(description.contains("read, grep"), "{description}");
            }
            other => panic!("expected ask, got {other:?}"),
        }
    }

    #[test]
    fn hard_stop_after_many_repeats() {
        let a = call("bash", "ls");
        let history = vec![a.clone(); 9];
        assert!(matches!(
            judge(&history, &a, 3, 10),
            Verdict::Stop { repeats: 10, .. }
        ));
    }
}
