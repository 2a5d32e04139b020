//! Custom agents from Markdown files with YAML front matter: cairn's
//! `.cairn/agents/` (from the working directory up to the project root, then
//! `~/.config/cairn/agents/`), OpenCode's `.opencode/agent/` (same walk, then
//! `~/.config/opencode/agent/`) and Claude Code's `.claude/agents/` (same
//! walk, then `~/.claude/agents/`). The file name is the agent's name unless
//! the front matter says `name:` (Claude Code's field); the body is its
//! prompt.
//!
//! A nearer file wins over a farther one of the same name; cairn's own
//! directories win over OpenCode's, and those over Claude Code's. A broken
//! file is a problem to report, never a reason to refuse to start.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::frontmatter::FrontMatter;
use crate::message::ModelRef;
use crate::session::agent::{AgentOverride, Mode, ToolAccess};
use crate::session::prompt::Environment;

/// Agents found on disk, nearest first per name, and what could not be read.
#[derive(Debug, Default)]
pub struct Found {
    pub agents: Vec<(String, AgentOverride)>,
    pub problems: Vec<String>,
}

/// OpenCode's agent folders inside `.opencode/` (it reads both spellings).
const OPENCODE_DIRS: [&str; 2] = ["agent", "agents"];

/// Directories searched, in priority order (first wins for a name).
pub fn directories(env: &Environment) -> Vec<PathBuf> {
    let walk: Vec<&Path> = env
        .cwd
        .ancestors()
        .take_while(|dir| dir.starts_with(&env.root))
        .collect();
    let mut dirs: Vec<PathBuf> = walk.iter().map(|d| d.join(".cairn/agents")).collect();
    dirs.extend(env.config_dir.iter().map(|d| d.join("agents")));
    dirs.extend(
        walk.iter()
            .flat_map(|d| OPENCODE_DIRS.map(|sub| d.join(".opencode").join(sub))),
    );
    // OpenCode's global folder sits beside cairn's (`~/.config/opencode`).
    dirs.extend(
        env.config_dir
            .iter()
            .filter_map(|d| d.parent())
            .flat_map(|d| OPENCODE_DIRS.map(|sub| d.join("opencode").join(sub))),
    );
    dirs.extend(walk.iter().map(|d| d.join(".claude/agents")));
    dirs.extend(env.home.iter().map(|h| h.join(".claude/agents")));
    dirs
}

/// The directories of [`directories`] that come with the project (a cloned
/// repository): an agent file there may not loosen permissions untrusted.
pub fn project_directories(env: &Environment) -> Vec<PathBuf> {
    env.cwd
        .ancestors()
        .take_while(|dir| dir.starts_with(&env.root))
        .flat_map(|dir| {
            [
                dir.join(".cairn/agents"),
                dir.join(".opencode/agent"),
                dir.join(".opencode/agents"),
                dir.join(".claude/agents"),
            ]
        })
        .collect()
}

/// The `allow` rules of the project's agent files: they apply (to the
/// agent's subagent runs) only once the project is trusted.
pub fn project_risks(env: &Environment) -> Vec<crate::trust::Risk> {
    let root = crate::trust::canonical(&env.root);
    let mut risks = Vec::new();
    for dir in project_directories(env) {
        for file in md_files(&dir) {
            let Ok((name, agent)) = read_one(&file) else {
                continue;
            };
            let allowed = agent.permission.unwrap_or_default().into_iter();
            for rule in
                allowed.filter(|rule| rule.action == crate::config::permission::Action::Allow)
            {
                risks.push(crate::trust::Risk {
                    root: root.clone(),
                    file: file.clone(),
                    line: None,
                    key: format!(
                        "agent {name}: permission.{}.{:?}",
                        rule.permission, rule.pattern
                    ),
                    value: "\"allow\"".to_string(),
                });
            }
        }
    }
    risks
}

/// The `*.md` files in `dir`, sorted; none when it cannot be read.
fn md_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|ext| ext == "md"))
        .collect();
    files.sort();
    files
}

/// Reads every `*.md` in `dirs`; a name already found is skipped. Files in
/// `untrusted` keep only their `deny` rules: appended after the session's
/// rules, their `allow` would loosen an ask and their `ask` a deny.
///
/// A file in the project (under `root`) that is a link leaving it, or sits
/// in a folder that is, is not read, trusted or not: a repository must not
/// make its agent's prompt the user's `~/.ssh/id_rsa` (issue #28).
pub fn load(dirs: &[PathBuf], untrusted: &[PathBuf], root: &Path) -> Found {
    let mut found = Found::default();
    let mut seen = BTreeSet::new();
    for dir in dirs {
        for file in md_files(dir) {
            if dir.starts_with(root)
                && let Some(real) = crate::shared::linked_outside(&file, root)
            {
                found.problems.push(format!(
                    "agent file {} links outside the project (to {}): not read",
                    file.display(),
                    real.display()
                ));
                continue;
            }
            match read_one(&file) {
                Ok((name, mut agent)) => {
                    if untrusted.contains(dir) {
                        deny_only(&mut agent);
                    }
                    if seen.insert(name.clone()) {
                        found.agents.push((name, agent));
                    }
                }
                Err(problem) => found
                    .problems
                    .push(format!("agent file {}: {problem}", file.display())),
            }
        }
    }
    found
}

fn deny_only(agent: &mut AgentOverride) {
    if let Some(rules) = &mut agent.permission {
        rules.retain(|rule| rule.action == crate::config::permission::Action::Deny);
    }
}

fn read_one(file: &Path) -> Result<(String, AgentOverride), String> {
    let text = std::fs::read_to_string(file).map_err(|e| e.to_string())?;
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Claude Code's agent directories hold subagents only.
    let claude = file.components().any(|c| c.as_os_str() == ".claude");
    parse(&stem, &text, claude)
}

/// One agent file's text -> its name and settings.
pub fn parse(stem: &str, text: &str, claude: bool) -> Result<(String, AgentOverride), String> {
    let fm = FrontMatter::parse(text).map_err(|e| e.to_string())?;
    let name = fm.string("name").unwrap_or_else(|| stem.to_string());
    if name.is_empty() || name.contains(char::is_whitespace) {
        return Err(format!("`{name}` is not an agent name (one word expected)"));
    }
    let mode = match fm.string("mode") {
        Some(text) => Some(
            Mode::parse(&text)
                .ok_or_else(|| format!("mode `{text}`: expected primary, subagent or all"))?,
        ),
        None => claude.then_some(Mode::Subagent),
    };
    let body = fm.body.trim();
    let (model, model_alias) = model(&fm)?;
    Ok((
        name,
        AgentOverride {
            model,
            model_alias,
            steps: fm.number("steps").map(|n| n.max(1.0) as u32),
            temperature: fm.number("temperature").map(|t| t as f32),
            prompt: (!body.is_empty()).then(|| body.to_string()),
            description: fm.string("description"),
            mode,
            tools: tools(&fm),
            permission: permission(&fm)?,
        },
    ))
}

/// `permission:` as in OpenCode's agent files: per permission one action
/// (`edit: deny`) or a map of patterns (`bash: {"git *": allow}`).
fn permission(fm: &FrontMatter) -> Result<Option<Vec<crate::permission::Rule>>, String> {
    use crate::config::permission::{Action, PermissionConfig, PermissionSetting};
    use yaml_rust2::Yaml;
    let Some(value) = fm.get("permission") else {
        return Ok(None);
    };
    let Yaml::Hash(table) = value else {
        return Err("permission: expected a map of permission to allow/ask/deny".into());
    };
    let action = |key: &str, value: &Yaml| -> Result<Action, String> {
        match value.as_str().map(str::trim) {
            Some("allow") => Ok(Action::Allow),
            Some("ask") => Ok(Action::Ask),
            Some("deny") => Ok(Action::Deny),
            _ => Err(format!("permission.{key}: expected allow, ask or deny")),
        }
    };
    let mut config = PermissionConfig::new();
    for (key, value) in table {
        let key = key.as_str().ok_or("permission: keys must be names")?;
        let setting = match value {
            Yaml::Hash(patterns) => {
                let mut table = std::collections::BTreeMap::new();
                for (pattern, value) in patterns {
                    let pattern = pattern
                        .as_str()
                        .ok_or_else(|| format!("permission.{key}: patterns must be strings"))?;
                    table.insert(pattern.to_string(), action(key, value)?);
                }
                PermissionSetting::Patterns(table)
            }
            value => PermissionSetting::Action(action(key, value)?),
        };
        config.insert(key.to_string(), setting);
    }
    Ok(Some(crate::permission::config_rules(&config)))
}

/// `provider/model` as a model; any other value (Claude Code's `sonnet`,
/// `inherit`, a bare id) as an alias for [`resolve_models`].
fn model(fm: &FrontMatter) -> Result<(Option<ModelRef>, Option<String>), String> {
    match fm.string("model") {
        Some(text) if text.contains('/') => ModelRef::parse(&text)
            .map(|model| (Some(model), None))
            .map_err(|e| format!("model: {e}")),
        Some(text) if !text.is_empty() => Ok((None, Some(text))),
        _ => Ok((None, None)),
    }
}

/// Claude Code's model aliases per provider: (provider, alias, that
/// provider's model). One table, shown in the README; an alias with no row
/// for the session's provider runs on the session's model, with a notice.
pub const MODEL_ALIASES: &[(&str, &str, &str)] = &[
    ("anthropic", "sonnet", "claude-sonnet-4-5"),
    ("anthropic", "opus", "claude-opus-4-5"),
    ("anthropic", "haiku", "claude-haiku-4-5"),
    ("openrouter", "sonnet", "anthropic/claude-sonnet-4.5"),
    ("openrouter", "opus", "anthropic/claude-opus-4.5"),
    ("openrouter", "haiku", "anthropic/claude-haiku-4.5"),
];

/// Turns each agent's `model_alias` into a model of `session`'s provider
/// through [`MODEL_ALIASES`]: `inherit` is the session's model (no model of
/// its own); a bare id is taken as the session provider's model when that
/// provider's catalog serves it. Whatever has no mapping is reported in
/// `found.problems` and runs on the session's model: never silently.
pub fn resolve_models(found: &mut Found, session: &ModelRef) {
    let provider = session.provider.as_str();
    for (name, agent) in &mut found.agents {
        let Some(alias) = agent.model_alias.take() else {
            continue;
        };
        if alias == "inherit" {
            continue;
        }
        let mapped = MODEL_ALIASES
            .iter()
            .find(|(p, a, _)| *p == provider && *a == alias)
            .map(|(_, _, model)| *model)
            .or_else(|| {
                crate::provider::catalog::served_by(provider)
                    .iter()
                    .find(|served| **served == alias)
                    .copied()
            });
        match mapped {
            Some(model) => agent.model = Some(ModelRef::new(provider, model)),
            None => found.problems.push(format!(
                "agent {name}: model `{alias}` has no mapping for provider `{provider}` \
                 (cairn maps sonnet, opus and haiku for anthropic and openrouter); \
                 it runs on the session's model {session}"
            )),
        }
    }
}

/// `tools:` as a list (Claude Code: `Read, Grep, Glob`) or as OpenCode's map
/// of `name: true/false` (false turns a tool off, the rest stay), then
/// Claude Code's `disallowedTools` list taken away from either.
fn tools(fm: &FrontMatter) -> Option<ToolAccess> {
    let denied: BTreeSet<String> = fm
        .list("disallowedTools")
        .unwrap_or_default()
        .iter()
        .map(|name| canonical_tool(name))
        .collect();
    let access = if let Some(map) = fm.map("tools") {
        let off: BTreeSet<String> = map
            .iter()
            .filter(|(_, on)| on == "false")
            .map(|(name, _)| canonical_tool(name))
            .collect();
        (!off.is_empty()).then_some(ToolAccess::AllBut(off))
    } else {
        fm.list("tools")
            .map(|list| ToolAccess::Only(list.iter().map(|name| canonical_tool(name)).collect()))
    };
    match (access, denied.is_empty()) {
        (access, true) => access,
        (None, false) => Some(ToolAccess::AllBut(denied)),
        (Some(ToolAccess::Only(on)), false) => {
            Some(ToolAccess::Only(on.difference(&denied).cloned().collect()))
        }
        (Some(ToolAccess::AllBut(off)), false) => {
            Some(ToolAccess::AllBut(off.union(&denied).cloned().collect()))
        }
        (Some(other), false) => Some(other),
    }
}

/// Claude Code names tools in CamelCase (`Read`, `Bash`, `LS`, `MultiEdit`)
/// and MCP tools `mcp__server__tool`; cairn's are lower case and MCP tools
/// go by their exposed names. `Task` is cairn's `task`.
fn canonical_tool(name: &str) -> String {
    let name = name.trim();
    if let Some(exposed) = crate::mcp::from_claude_name(name) {
        return exposed;
    }
    match name {
        "LS" => "list".to_string(),
        "MultiEdit" => "edit".to_string(),
        "TodoWrite" => "todowrite".to_string(),
        other => other.to_ascii_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Claude Code's documented subagent format, unchanged.
    const CLAUDE_REVIEWER: &str = "---\nname: code-reviewer\ndescription: Expert code review specialist. Proactively reviews code for quality, security, and maintainability. Use immediately after writing or modifying code.\ntools: Read, Grep, Glob, Bash\nmodel: inherit\n---\n\nYou are a senior code reviewer ensuring high standards of code quality and security.\n";

    #[test]
    fn a_claude_code_agent_file_is_a_subagent_with_its_tools() {
        let (name, agent) = parse("whatever", CLAUDE_REVIEWER, true).expect("parses");
        assert_eq!(name, "code-reviewer");
        assert_eq!(agent.mode, Some(Mode::Subagent));
        assert!(
            agent
                .description
                .as_deref()
                .unwrap()
                .starts_with("Expert code review")
        );
        assert_eq!(agent.model, None);
        let Some(ToolAccess::Only(tools)) = agent.tools else {
            panic!("a tool list")
        };
        assert_eq!(
            tools,
            ["bash", "glob", "grep", "read"].map(String::from).into()
        );
        assert!(
            agent
                .prompt
                .unwrap()
                .starts_with("You are a senior code reviewer")
        );
    }

    #[test]
    fn cairn_fields_and_bad_values() {
        let text = "---\ndescription: docs\nmode: primary\nmodel: anthropic/claude-x\ntemperature: 0.2\nsteps: 3\ntools:\n  bash: false\n  write: false\n---\nWrite docs.\n";
        let (name, agent) = parse("docs", text, false).expect("parses");
        assert_eq!(name, "docs");
        assert_eq!(agent.mode, Some(Mode::Primary));
        assert_eq!(agent.model.unwrap().to_string(), "anthropic/claude-x");
        assert_eq!(agent.steps, Some(3));
        let Some(access) = agent.tools else {
            panic!("a tool set")
        };
        assert!(access.allows("read", true) && access.allows("task", false));
        assert!(!access.allows("bash", false) && !access.allows("write", false));
        let bad = parse("x", "---\nmode: boss\n---\nhi", false).unwrap_err();
        assert!(bad.contains("mode `boss`"), "{bad}");
        let bad = parse("x", "---\nname: two words\n---\n", false).unwrap_err();
        assert!(bad.contains("not an agent name"), "{bad}");
        assert!(parse("x", "---\nmode: all\n", false).is_err());
    }

    #[test]
    fn permission_overrides_become_rules_in_order() {
        use crate::config::permission::Action;
        let text = "---\ndescription: audits\npermission:\n  edit: deny\n  bash:\n    \"git *\": allow\n    \"*\": ask\n---\nAudit.\n";
        let (_, agent) = parse("auditor", text, false).expect("parses");
        let rules = agent.permission.expect("rules");
        let written: Vec<(&str, &str, Action)> = rules
            .iter()
            .map(|r| (r.permission.as_str(), r.pattern.as_str(), r.action))
            .collect();
        assert_eq!(
            written,
            [
                ("bash", "*", Action::Ask),
                ("bash", "git *", Action::Allow),
                ("edit", "*", Action::Deny),
            ]
        );
        for bad in [
            "---\npermission: deny\n---\n",
            "---\npermission:\n  edit: never\n---\n",
            "---\npermission:\n  bash:\n    \"*\": maybe\n---\n",
        ] {
            let error = parse("x", bad, false).unwrap_err();
            assert!(error.starts_with("permission"), "{error}");
        }
        assert_eq!(
            parse("x", "---\ndescription: d\n---\n", false)
                .unwrap()
                .1
                .permission,
            None
        );
    }

    #[test]
    fn nearer_and_cairn_files_win() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        let sub = root.join("a/b");
        for (d, body) in [
            (sub.join(".cairn/agents"), "near"),
            (root.join(".cairn/agents"), "far"),
            (root.join(".claude/agents"), "claude"),
        ] {
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(
                d.join("helper.md"),
                format!("---\ndescription: x\n---\n{body}"),
            )
            .unwrap();
        }
        std::fs::write(root.join(".claude/agents/broken.md"), "---\nmode: [\n---\n").unwrap();
        let mut env = Environment::discover(&sub);
        env.home = None;
        env.config_dir = None;
        let found = load(&directories(&env), &[], &env.root);
        assert_eq!(found.agents.len(), 1);
        assert_eq!(found.agents[0].1.prompt.as_deref(), Some("near"));
        assert_eq!(found.problems.len(), 1, "{:?}", found.problems);
    }

    /// The blind review of #28: an agent file (or the agents folder) linked
    /// outside the project became the system prompt. Neither is read.
    #[test]
    fn agent_files_linked_outside_the_project_are_not_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (root, home) = (dir.path().join("repo"), dir.path().join("home"));
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join(".cairn/agents")).unwrap();
        std::fs::create_dir_all(home.join("agents")).unwrap();
        std::fs::write(home.join("id_rsa"), "SSHSECRET").unwrap();
        std::fs::write(
            home.join("agents/helper.md"),
            "---\ndescription: x\n---\nSECRET2",
        )
        .unwrap();
        std::os::unix::fs::symlink(home.join("id_rsa"), root.join(".cairn/agents/build.md"))
            .unwrap();
        std::fs::create_dir_all(root.join(".claude")).unwrap();
        std::os::unix::fs::symlink(home.join("agents"), root.join(".claude/agents")).unwrap();
        std::fs::write(
            root.join(".cairn/agents/plain.md"),
            "---\ndescription: y\n---\ninside",
        )
        .unwrap();
        let mut env = Environment::discover(&root);
        env.home = None;
        env.config_dir = None;
        let found = load(&directories(&env), &[], &env.root);
        let prompts: Vec<String> = found
            .agents
            .iter()
            .filter_map(|(_, a)| a.prompt.clone())
            .collect();
        assert_eq!(prompts, ["inside"], "{found:?}");
        assert!(
            found
                .problems
                .iter()
                .any(|p| p.contains("links outside the project")),
            "{:?}",
            found.problems
        );
    }

    /// Claude Code's `disallowedTools` (both spellings seen in public
    /// repositories) and `mcp__server__tool` names in `tools:`.
    #[test]
    fn disallowed_tools_and_claude_mcp_names() {
        let cases: &[(&str, &[&str], &[&str])] = &[
            (
                "disallowedTools: Write, Edit, Bash",
                &["read", "grep", "task", "fixture_echo"],
                &["write", "edit", "bash"],
            ),
            (
                "disallowedTools: [\"Write\", \"MultiEdit\"]",
                &["read", "bash"],
                &["write", "edit"],
            ),
            (
                "tools: Read, Bash, Edit\ndisallowedTools: Bash",
                &["read", "edit"],
                &["bash", "write", "fixture_echo"],
            ),
            (
                "tools: Read, mcp__fixture__echo",
                &["read", "fixture_echo"],
                &["fixture_fail", "write"],
            ),
            (
                "tools:\n  bash: false\ndisallowedTools: Write",
                &["read", "edit", "fixture_echo"],
                &["bash", "write"],
            ),
        ];
        for (front, on, off) in cases {
            let text = format!("---\ndescription: d\n{front}\n---\nBody.\n");
            let (_, agent) = parse("x", &text, true).expect("parses");
            let access = agent.tools.expect("tool access");
            for name in *on {
                assert!(access.allows(name, false), "{front}: {name} kept");
            }
            for name in *off {
                assert!(!access.allows(name, false), "{front}: {name} gone");
            }
        }
    }

    #[test]
    fn model_aliases_go_through_the_table_or_are_reported() {
        let agent = |model: &str| {
            let text = format!("---\ndescription: d\nmodel: {model}\n---\nBody.\n");
            parse("a", &text, true).expect("parses")
        };
        let session = ModelRef::new("anthropic", "claude-sonnet-4-5");
        let mut found = Found {
            agents: ["sonnet", "haiku", "inherit", "claude-opus-4-1", "gpt-5"]
                .map(agent)
                .into(),
            problems: Vec::new(),
        };
        resolve_models(&mut found, &session);
        let models: Vec<Option<String>> = found
            .agents
            .iter()
            .map(|(_, a)| a.model.as_ref().map(ToString::to_string))
            .collect();
        assert_eq!(
            models,
            [
                Some("anthropic/claude-sonnet-4-5".to_string()),
                Some("anthropic/claude-haiku-4-5".to_string()),
                None,
                Some("anthropic/claude-opus-4-1".to_string()),
                None,
            ]
        );
        assert_eq!(found.problems.len(), 1, "{:?}", found.problems);
        assert!(
            found.problems[0].contains("`gpt-5`"),
            "{:?}",
            found.problems
        );
        let mut found = Found {
            agents: vec![agent("opus")],
            problems: Vec::new(),
        };
        resolve_models(&mut found, &ModelRef::new("ollama", "qwen3"));
        assert_eq!(found.agents[0].1.model, None);
        assert!(found.problems[0].contains("provider `ollama`"));
    }
}
