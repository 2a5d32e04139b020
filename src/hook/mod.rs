//! Hooks in Claude Code's format: the user's own programs run at the
//! session's events (before and after a tool call, when a prompt is sent,
//! when the agent would stop, at start, before a compaction, when cairn
//! needs the user), with Claude Code's JSON on stdin and its answers read
//! back (exit code 2 blocks; a JSON decision on stdout allows, denies, asks
//! or changes the tool's input).
//!
//! Where hooks come from, in running order: `~/.claude/settings.json`,
//! cairn's own `[hooks]` table (the user's config, and a project file's once
//! trusted), then the repository's `.claude/settings.json` and
//! `.claude/settings.local.json`. A repository's hooks run code, so each
//! waits for the user's trust, shown whole (event, matcher, command); a
//! changed command is another setting and asks again (see `crate::trust`).
//!
//! Hooks run unsandboxed, like the user's shell: they are configuration the
//! user wrote or trusted, not the model's commands, and a formatter or a
//! notifier must reach what the user's own programs reach. Each runs in its
//! own process group, is killed whole when its timeout passes (60 s unless
//! set), and a hook that fails or times out is reported, never blocking.

mod event;
mod outcome;
mod process;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::config::hooks::{HookCommand, HookTable, summary};
use crate::trust::Risk;

pub use event::{DEFAULT_TIMEOUT, Event, Hook};
pub use outcome::Outcome;

/// The hooks of one session and what every hook's input carries.
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    hooks: Vec<Hook>,
    /// `$CLAUDE_PROJECT_DIR`: the project root.
    project_dir: PathBuf,
    /// Where hooks run, and their input's `cwd`.
    cwd: PathBuf,
    /// The input's `transcript_path`: the sessions database (cairn keeps
    /// no JSONL transcript; `/export` writes one session as Markdown).
    transcript_path: PathBuf,
    /// SessionStart's context, kept for the next prompt.
    pending: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Hooks {
    pub fn new(hooks: Vec<Hook>, project_dir: PathBuf, cwd: PathBuf, transcript: PathBuf) -> Self {
        Self {
            hooks,
            project_dir,
            cwd,
            transcript_path: transcript,
            pending: Arc::default(),
        }
    }

    /// Keeps `context` for the next prompt (SessionStart's output).
    pub fn keep_context(&self, context: Vec<String>) {
        crate::shared::lock(&self.pending).extend(context);
    }

    /// The context kept for the next prompt, once.
    pub fn take_context(&self) -> Vec<String> {
        std::mem::take(&mut *crate::shared::lock(&self.pending))
    }

    /// Whether any hook listens to `event` (so callers skip building input).
    pub fn any(&self, event: Event) -> bool {
        self.hooks.iter().any(|hook| hook.event == event)
    }

    /// Runs every hook of `event` that applies to `subjects`, all at once,
    /// with Claude Code's common fields added to `fields`; stops them all
    /// when `cancel` fires. Identical commands run once.
    pub async fn fire(
        &self,
        session_id: &str,
        event: Event,
        subjects: &[&str],
        mut fields: Map<String, Value>,
        cancel: &CancellationToken,
    ) -> Outcome {
        let mut chosen: Vec<&Hook> = Vec::new();
        for hook in self.hooks.iter().filter(|hook| hook.event == event) {
            if hook.applies_to(subjects) && !chosen.iter().any(|c| c.command == hook.command) {
                chosen.push(hook);
            }
        }
        if chosen.is_empty() {
            return Outcome::default();
        }
        fields.insert("session_id".into(), session_id.into());
        fields.insert(
            "transcript_path".into(),
            self.transcript_path.display().to_string().into(),
        );
        fields.insert("cwd".into(), self.cwd.display().to_string().into());
        fields.insert("hook_event_name".into(), event.name().into());
        let input = Arc::new(Value::Object(fields).to_string().into_bytes());
        let runs = chosen.iter().map(|hook| {
            let input = input.clone();
            async move {
                let finish = process::run(hook, &input, &self.project_dir, &self.cwd, cancel).await;
                (*hook, finish)
            }
        });
        let finished = futures::future::join_all(runs).await;
        let mut outcome = Outcome::default();
        for (hook, finish) in finished {
            outcome.add(event, hook, finish);
        }
        outcome
    }
}

/// Claude Code's name of one of cairn's tools (`bash` is `Bash`); None for
/// tools it has no name for.
pub fn claude_tool_name(name: &str) -> Option<&'static str> {
    Some(match name {
        "bash" => "Bash",
        "read" => "Read",
        "write" => "Write",
        "edit" => "Edit",
        "glob" => "Glob",
        "grep" => "Grep",
        "list" => "LS",
        "todowrite" => "TodoWrite",
        "task" => "Task",
        "skill" => "Skill",
        "webfetch" => "WebFetch",
        _ => return None,
    })
}

/// The hooks found for a session, and the repository's hooks' risks.
#[derive(Debug, Default)]
pub struct Found {
    /// The hooks that run, in running order.
    pub hooks: Vec<Hook>,
    /// Problems to show the user (an unknown event, a kind that cannot run).
    pub problems: Vec<String>,
}

/// The repository's settings files that may hold hooks, under `root`.
fn project_files(root: &Path) -> [PathBuf; 2] {
    [
        root.join(".claude/settings.json"),
        root.join(".claude/settings.local.json"),
    ]
}

/// The `hooks` table of a Claude Code settings file; None when the file
/// is absent or has none. A file that does not parse is a problem.
fn read_settings(path: &Path, problems: &mut Vec<String>) -> Option<(HookTable, String)> {
    let text = std::fs::read_to_string(path).ok()?;
    let value: Value = match serde_json::from_str(&text) {
        Ok(value) => value,
        Err(error) => {
            problems.push(format!(
                "{} is not JSON ({error}); its hooks are ignored",
                path.display()
            ));
            return None;
        }
    };
    let hooks = value.get("hooks")?.clone();
    match serde_json::from_value(hooks) {
        Ok(table) => Some((table, text)),
        Err(error) => {
            problems.push(format!(
                "{}: `hooks` is not in Claude Code's shape ({error}); ignored",
                path.display()
            ));
            None
        }
    }
}

/// The risks of a repository's hook files, one per command, shown whole.
pub fn project_risks(root: &Path) -> Vec<Risk> {
    let canonical = crate::trust::canonical(root);
    let mut ignored = Vec::new();
    let mut risks = Vec::new();
    for file in project_files(root) {
        if let Some((table, text)) = read_settings(&file, &mut ignored) {
            for (event, groups) in &table {
                for group in groups {
                    for command in &group.hooks {
                        let place = Place {
                            root: &canonical,
                            file: &file,
                            text: &text,
                        };
                        risks.push(place.risk(event, group.matcher.as_deref(), command));
                    }
                }
            }
        }
    }
    risks
}

/// Where a repository's hook is written.
struct Place<'a> {
    root: &'a Path,
    file: &'a Path,
    text: &'a str,
}

impl Place<'_> {
    /// The risk of one hook: its event, matcher and command.
    fn risk(&self, event: &str, matcher: Option<&str>, command: &HookCommand) -> Risk {
        let needle = serde_json::to_string(&command.command).unwrap_or_default();
        let needle = needle.trim_matches('"');
        Risk {
            root: self.root.to_path_buf(),
            file: self.file.to_path_buf(),
            line: self
                .text
                .lines()
                .position(|l| l.contains(needle))
                .map(|i| i + 1),
            key: format!("hooks.{event}"),
            value: summary(matcher, command),
        }
    }
}

/// A runnable hook, or why it cannot run; None for an empty command.
fn hook_of(
    event: &str,
    matcher: Option<&str>,
    command: &HookCommand,
) -> Option<Result<Hook, String>> {
    if command.kind == "command" && command.command.trim().is_empty() {
        return None;
    }
    let Some(event) = Event::from_name(event) else {
        return Some(Err(format!(
            "unknown hook event `{event}` (cairn fires {})",
            Event::ALL.map(Event::name).join(", ")
        )));
    };
    if command.kind != "command" {
        return Some(Err(format!(
            "a `{}` hook for {} cannot run in cairn (only `command` hooks do)",
            command.kind,
            event.name()
        )));
    }
    if let Some(matcher) = matcher
        && regex::Regex::new(&format!("^(?:{matcher})$")).is_err()
        && !matcher
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-|*".contains(c))
    {
        return Some(Err(format!(
            "the {} hook matcher `{matcher}` is not a valid pattern",
            event.name()
        )));
    }
    let timeout = command
        .timeout
        .filter(|seconds| seconds.is_finite() && *seconds > 0.0)
        .map_or(DEFAULT_TIMEOUT, Duration::from_secs_f64);
    Some(Ok(Hook {
        event,
        matcher: matcher.map(str::to_string),
        command: command.command.clone(),
        timeout,
    }))
}

fn add_table(table: &HookTable, into: &mut Found) {
    for (event, groups) in table {
        for group in groups {
            for command in &group.hooks {
                match hook_of(event, group.matcher.as_deref(), command) {
                    Some(Ok(hook)) => into.hooks.push(hook),
                    Some(Err(problem)) => into.problems.push(problem),
                    None => {}
                }
            }
        }
    }
}

/// The hooks of a session in the project at `root`: the user's Claude Code
/// file (`home`), cairn's `configured` table, then the repository's files,
/// each of whose hooks runs only when `trusted` says so.
pub fn discover(
    configured: &HookTable,
    root: &Path,
    home: Option<&Path>,
    trusted: impl Fn(&Risk) -> bool,
) -> Found {
    let mut found = Found::default();
    if let Some(home) = home
        && let Some((table, _)) =
            read_settings(&home.join(".claude/settings.json"), &mut found.problems)
    {
        add_table(&table, &mut found);
    }
    add_table(configured, &mut found);
    let canonical = crate::trust::canonical(root);
    for file in project_files(root) {
        let Some((table, text)) = read_settings(&file, &mut found.problems) else {
            continue;
        };
        let place = Place {
            root: &canonical,
            file: &file,
            text: &text,
        };
        let mut trusted_table = HookTable::new();
        for (event, groups) in &table {
            for group in groups {
                let matcher = group.matcher.as_deref();
                let hooks = group
                    .hooks
                    .iter()
                    .filter(|command| trusted(&place.risk(event, matcher, command)))
                    .cloned()
                    .collect();
                trusted_table.entry(event.clone()).or_default().push(
                    crate::config::hooks::MatcherGroup {
                        matcher: group.matcher.clone(),
                        hooks,
                    },
                );
            }
        }
        add_table(&trusted_table, &mut found);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(matcher: Option<&str>) -> Hook {
        Hook {
            event: Event::PreToolUse,
            matcher: matcher.map(str::to_string),
            command: "true".into(),
            timeout: DEFAULT_TIMEOUT,
        }
    }

    #[test]
    fn matchers_take_cairns_names_claude_codes_and_patterns() {
        let bash = ["bash", "Bash"];
        let mcp = ["github_create_issue", "mcp__github__create_issue"];
        assert!(hook(None).applies_to(&bash));
        assert!(hook(Some("")).applies_to(&bash));
        assert!(hook(Some("*")).applies_to(&bash));
        assert!(hook(Some("Bash")).applies_to(&bash));
        assert!(hook(Some("bash")).applies_to(&bash));
        assert!(hook(Some("Edit|Write|Bash")).applies_to(&bash));
        assert!(!hook(Some("Edit|Write")).applies_to(&bash));
        // Exact, not a substring: `Bas` is not `Bash`.
        assert!(!hook(Some("Bas")).applies_to(&bash));
        assert!(hook(Some("mcp__github__.*")).applies_to(&mcp));
        assert!(hook(Some("mcp__github__create_issue")).applies_to(&mcp));
        assert!(!hook(Some("mcp__gitlab__.*")).applies_to(&mcp));
        assert!(!hook(Some("Notebook.*")).applies_to(&bash));
    }

    #[test]
    fn a_repositorys_hook_runs_only_when_its_exact_command_is_trusted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::create_dir_all(root.join(".claude")).expect("dir");
        std::fs::write(
            root.join(".claude/settings.json"),
            r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": "one"}, {"type": "command", "command": "two"}]}],
              "Bogus": [{"hooks": [{"type": "command", "command": "x"}]}]}}"#,
        )
        .expect("write");
        let risks = project_risks(root);
        assert_eq!(risks.len(), 3, "{risks:?}");
        assert!(
            risks
                .iter()
                .any(|r| r.key == "hooks.PreToolUse" && r.value == "matcher \"Bash\": one"),
            "{risks:?}"
        );
        let none = discover(&HookTable::new(), root, None, |_| false);
        assert!(none.hooks.is_empty());
        let one = discover(&HookTable::new(), root, None, |risk| {
            risk.value.ends_with("one")
        });
        assert_eq!(one.hooks.len(), 1);
        assert_eq!(one.hooks[0].command, "one");
        let all = discover(&HookTable::new(), root, None, |_| true);
        assert_eq!(all.hooks.len(), 2);
        assert!(
            all.problems.iter().any(|p| p.contains("Bogus")),
            "{:?}",
            all.problems
        );
    }
}
