//! The summary request's words: the compaction agent's system prompt and the
//! final user message (seed 003 template, anchored update, `/compact` focus).

/// System prompt of the hidden `compaction` agent (ours, after spec 7.4).
pub const SYSTEM_PROMPT: &str = include_str!("../../../assets/prompts/compaction.txt");

/// Seed 003's instructions and Goal / Instructions / Discoveries /
/// Accomplished / Relevant files template.
const SUMMARY_TEMPLATE: &str = include_str!("../../../assets/prompts/compaction-summary.txt");

const CREATE_ANCHOR: &str = "Create a new anchored summary from the conversation history above.";
const UPDATE_ANCHOR: &str = "Update the anchored summary below using the conversation history above.\nPreserve still-true details, remove stale details, and merge in the new facts.";

/// The final user message of a summary request. With a previous summary the
/// model updates it rather than starting over, so facts from before the last
/// compaction survive; `instructions` (from `/compact <instructions>`) come
/// last, where models weigh them most.
pub fn build_prompt(previous_summary: Option<&str>, instructions: Option<&str>) -> String {
    let mut prompt = match previous_summary.map(str::trim).filter(|s| !s.is_empty()) {
        Some(previous) => {
            format!("{UPDATE_ANCHOR}\n<previous-summary>\n{previous}\n</previous-summary>")
        }
        None => CREATE_ANCHOR.to_string(),
    };
    prompt.push_str("\n\n");
    prompt.push_str(SUMMARY_TEMPLATE.trim_end());
    if let Some(focus) = instructions.map(str::trim).filter(|s| !s.is_empty()) {
        prompt.push_str("\n\nThe user asked this summary to focus on: ");
        prompt.push_str(focus);
    }
    prompt
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_summary_uses_the_template_without_a_previous_block() {
        let prompt = build_prompt(None, None);
        assert!(prompt.starts_with(CREATE_ANCHOR));
        for heading in [
            "## Goal",
            "## Instructions",
            "## Discoveries",
            "## Accomplished",
            "## Relevant files / directories",
        ] {
            assert!(prompt.contains(heading), "missing {heading}");
        }
        assert!(!prompt.contains("<previous-summary>"));
        assert!(!prompt.contains("focus on"));
    }

    #[test]
    fn update_embeds_the_previous_summary_and_the_focus_comes_last() {
        let prompt = build_prompt(
            Some("## Goal\nship v1\n"),
            Some(" keep the API design decisions "),
        );
        assert!(prompt.starts_with("Update the anchored summary below"));
        assert!(prompt.contains("<previous-summary>\n## Goal\nship v1\n</previous-summary>"));
        assert!(
            prompt.ends_with(
                "The user asked this summary to focus on: keep the API design decisions"
            )
        );
        assert_eq!(build_prompt(Some("  "), Some("")), build_prompt(None, None));
    }

    #[test]
    fn system_prompt_forbids_answering_and_keeps_the_language() {
        assert!(SYSTEM_PROMPT.contains("<previous-summary>"));
        assert!(SYSTEM_PROMPT.contains("same language"));
    }
}
