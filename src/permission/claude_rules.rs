//! Claude Code's permission rule syntax (`Bash(git diff:*)`, `Read(./secrets/**)`,
//! `mcp__server__tool`), mapped onto cairn's rules. The one parser for it: the
//! `permissions` of `.claude/settings*.json` and a command's `allowed-tools`
//! both come through here.
//!
//! A rule cairn cannot map (a tool it does not have, such as `WebFetch`) is
//! an [`Unmapped`] value the caller must show, naming the file and the rule:
//! never a silent drop.

use super::{Action, Rule};

/// A rule with no cairn equivalent, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unmapped {
    pub rule: String,
    pub why: String,
}

impl std::fmt::Display for Unmapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}` is not used: {}", self.rule, self.why)
    }
}

/// Claude Code's file tools and the cairn permission that guards each.
const PATH_TOOLS: &[(&str, &str)] = &[
    ("Read", "read"),
    ("Edit", "edit"),
    ("Write", "edit"),
    ("MultiEdit", "edit"),
    ("NotebookEdit", "edit"),
];

/// Claude Code's tools whose rule is a name and an optional pattern that
/// cairn reads the same way.
const PLAIN_TOOLS: &[(&str, &str)] = &[
    ("Glob", "glob"),
    ("Grep", "grep"),
    ("LS", "list"),
    ("TodoWrite", "todowrite"),
    ("Task", "task"),
    ("Skill", "skill"),
];

/// `rule` with `action`, as cairn's rule.
///
/// # Errors
/// [`Unmapped`] for a tool cairn has no permission for, or a malformed rule.
pub fn parse(rule: &str, action: Action) -> Result<Rule, Unmapped> {
    let unmapped = |why: &str| Unmapped {
        rule: rule.to_string(),
        why: why.to_string(),
    };
    let text = rule.trim();
    if let Some(rest) = text.strip_prefix("mcp__") {
        let (server, tool) = rest.split_once("__").unwrap_or((rest, "*"));
        if server.is_empty() {
            return Err(unmapped("no server name after `mcp__`"));
        }
        let tool = if tool.is_empty() { "*" } else { tool };
        return Ok(Rule::new("mcp", &format!("{server}/{tool}"), action));
    }
    let (tool, specifier) = match text.split_once('(') {
        Some((tool, rest)) => {
            let Some(inner) = rest.strip_suffix(')') else {
                return Err(unmapped("the `(` is never closed"));
            };
            (tool.trim(), Some(inner.trim()))
        }
        None => (text, None),
    };
    let specifier = specifier.filter(|s| !s.is_empty() && *s != "*");
    if tool == "Bash" {
        let pattern = specifier.map_or_else(|| "*".to_string(), bash_pattern);
        return Ok(Rule::new("bash", &pattern, action));
    }
    if let Some((_, permission)) = PATH_TOOLS.iter().find(|(name, _)| *name == tool) {
        let pattern = specifier.map_or_else(|| "*".to_string(), path_pattern);
        return Ok(Rule::new(permission, &pattern, action));
    }
    if let Some((_, permission)) = PLAIN_TOOLS.iter().find(|(name, _)| *name == tool) {
        return Ok(Rule::new(permission, specifier.unwrap_or("*"), action));
    }
    let why = match tool {
        "WebFetch" | "WebSearch" => format!(
            "cairn has no {tool} tool (the model fetches with bash, under the `bash` rules)"
        ),
        "" => "an empty rule".to_string(),
        _ => format!("cairn has no tool `{tool}` to apply it to"),
    };
    Err(unmapped(&why))
}

/// `git diff:*` (Claude Code's prefix form) is cairn's `git diff *`, which
/// also matches a bare `git diff`; anything else is a cairn wildcard as is.
fn bash_pattern(specifier: &str) -> String {
    match specifier.strip_suffix(":*") {
        Some(prefix) => format!("{} *", prefix.trim_end()),
        None => specifier.to_string(),
    }
}

/// Claude Code's gitignore-style paths as cairn's path patterns, which
/// match the path relative to the project root (or absolute outside it):
/// `./x` and `/x` (relative to the settings file's project) are `x`,
/// `//x` is the absolute `/x`, `~/x` stays for the home expansion, and
/// `**` is `*` (cairn's `*` already crosses `/`).
fn path_pattern(specifier: &str) -> String {
    let path = if let Some(absolute) = specifier.strip_prefix("//") {
        format!("/{absolute}")
    } else if let Some(relative) = specifier.strip_prefix("./") {
        relative.to_string()
    } else if let Some(relative) = specifier.strip_prefix('/') {
        relative.to_string()
    } else if specifier.starts_with('~') {
        super::expand_home(specifier)
    } else {
        specifier.to_string()
    };
    let mut pattern = path.replace("**", "*");
    while pattern.contains("**") {
        pattern = pattern.replace("**", "*");
    }
    // `dir/*/` style endings name the folder's contents.
    pattern.trim_end_matches('/').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use Action::{Allow, Deny};

    /// The rules Claude Code's documentation and public settings files use.
    #[test]
    fn claude_code_rules_map_onto_cairn_rules() {
        let table: &[(&str, Option<(&str, &str)>)] = &[
            ("Bash(git diff:*)", Some(("bash", "git diff *"))),
            ("Bash(npm run test)", Some(("bash", "npm run test"))),
            ("Bash", Some(("bash", "*"))),
            ("Bash(*)", Some(("bash", "*"))),
            ("Read(./secrets/**)", Some(("read", "secrets/*"))),
            ("Read(/docs/*.md)", Some(("read", "docs/*.md"))),
            ("Read(//etc/passwd)", Some(("read", "/etc/passwd"))),
            ("Edit(src/**)", Some(("edit", "src/*"))),
            ("Write(*.lock)", Some(("edit", "*.lock"))),
            ("Glob", Some(("glob", "*"))),
            (
                "mcp__github__create_issue",
                Some(("mcp", "github/create_issue")),
            ),
            ("mcp__github", Some(("mcp", "github/*"))),
            ("mcp__github__*", Some(("mcp", "github/*"))),
            ("WebFetch(domain:example.com)", None),
            ("WebSearch", None),
            ("Bash(git diff", None),
            ("Frobnicate(x)", None),
        ];
        for (rule, expected) in table {
            let got = parse(rule, Deny).ok();
            let want = expected.map(|(p, pat)| Rule::new(p, pat, Deny));
            assert_eq!(got, want, "{rule}");
        }
        assert_eq!(parse("Bash(ls:*)", Allow).map(|r| r.action), Ok(Allow));
        let error = parse("WebFetch(domain:example.com)", Allow).unwrap_err();
        assert!(error.to_string().contains("no WebFetch tool"), "{error}");
    }

    #[test]
    fn a_prefix_rule_matches_the_bare_command_and_its_arguments() {
        let rule = parse("Bash(git diff:*)", Allow).expect("maps");
        assert!(super::super::wildcard_match("git diff", &rule.pattern));
        assert!(super::super::wildcard_match(
            "git diff --stat",
            &rule.pattern
        ));
        assert!(!super::super::wildcard_match("git status", &rule.pattern));
    }
}
