//! The system prompt: base prompt, environment block, the skills list and
//! instruction files.
//!
//! Rebuilt for every request, so instruction files (AGENTS.md, CLAUDE.md) are
//! re-read from disk each time and can never be summarised away. Sent as two
//! blocks, [base + environment, instructions], which Anthropic caching marks
//! separately; both stay byte-stable across a session unless a file changes.

use std::path::{Path, PathBuf};

use crate::message::ModelRef;
use crate::session::agent::Agent;

const BASE_PROMPT: &str = include_str!("../../assets/prompts/system.txt");
/// The base prompt of the lean variant, for small windows
/// (`compaction.lean_prompt_below`): the same rules in a few lines.
const LEAN_BASE_PROMPT: &str = include_str!("../../assets/prompts/system-lean.txt");

pub use crate::session::instructions::Instruction;

#[derive(Debug, Clone, PartialEq)]
pub struct SystemPrompt {
    /// The agent's prompt (else the base prompt) and the environment block.
    pub base: String,
    pub instructions: Vec<Instruction>,
    /// Configured instructions that could not be used (a glob matching
    /// nothing, an unreadable file), for the user to see.
    pub problems: Vec<String>,
}

impl SystemPrompt {
    /// The system blocks of a request.
    pub fn blocks(&self) -> Vec<String> {
        let mut blocks = vec![self.base.clone()];
        if !self.instructions.is_empty() {
            let joined: Vec<String> = self
                .instructions
                .iter()
                .map(|i| format!("Instructions from: {}\n{}", i.path.display(), i.content))
                .collect();
            blocks.push(joined.join("\n\n"));
        }
        blocks
    }
}

/// Where the prompt is built: the facts of the environment block.
#[derive(Debug, Clone)]
pub struct Environment {
    pub cwd: PathBuf,
    pub root: PathBuf,
    pub is_git: bool,
    /// The user's home, for global instruction files; `None` skips them.
    pub home: Option<PathBuf>,
    /// cairn's config dir (global AGENTS.md lives there).
    pub config_dir: Option<PathBuf>,
    /// Extra instruction files from config (`instructions`), relative to cwd.
    pub extra_instructions: Vec<String>,
    /// What the sandbox lets commands do, told to the model so that it
    /// neither fights a refusal nor asks for what it already has.
    pub sandbox: Option<String>,
}

impl Environment {
    /// Finds the project root (nearest ancestor with `.git`) for `cwd`.
    pub fn discover(cwd: &Path) -> Self {
        let git_root = cwd.ancestors().find(|dir| dir.join(".git").exists());
        Self {
            cwd: cwd.to_path_buf(),
            root: git_root.unwrap_or(cwd).to_path_buf(),
            is_git: git_root.is_some(),
            home: std::env::var_os("HOME").map(PathBuf::from),
            config_dir: None,
            extra_instructions: Vec::new(),
            sandbox: None,
        }
    }

    /// Where this environment's skills are found.
    pub fn skill_roots(&self) -> crate::skill::SkillRoots {
        crate::skill::SkillRoots {
            cwd: self.cwd.clone(),
            root: self.root.clone(),
            home: self.home.clone(),
            config_dir: self.config_dir.clone(),
        }
    }
}

pub fn build(agent: &Agent, model: &ModelRef, env: &Environment) -> SystemPrompt {
    build_variant(agent, model, env, false)
}

/// [`build`], or with `lean` the small-window variant: a short base prompt
/// and a one-line environment block. Instruction files are the user's and
/// are sent either way.
pub fn build_variant(
    agent: &Agent,
    model: &ModelRef,
    env: &Environment,
    lean: bool,
) -> SystemPrompt {
    // An agent's prompt replaces the base prompt (seed 001: agent prompt,
    // else the provider prompt): explore must not be told to edit files.
    let mut base = agent
        .prompt
        .as_deref()
        .unwrap_or(if lean { LEAN_BASE_PROMPT } else { BASE_PROMPT })
        .trim_end()
        .to_string();
    base.push_str("\n\n");
    if lean {
        base.push_str(&lean_environment_block(env));
    } else {
        base.push_str(&environment_block(model, env));
    }
    let (instructions, mut problems) = instruction_files(env);
    // A small window has no room for skills (the lean prompt has no `skill`
    // tool either, see `tool::LEAN_OMITTED`), and an agent without the
    // `skill` tool could not load one: neither is told about them.
    if !lean && agent.tools.allows("skill", true) {
        let skills = crate::skill::discover(&env.skill_roots());
        if let Some(block) = crate::skill::prompt_block(&skills.skills) {
            base.push_str("\n\n");
            base.push_str(&block);
        }
        problems.extend(skills.problems);
    }
    SystemPrompt {
        base,
        instructions,
        problems,
    }
}

fn environment_block(model: &ModelRef, env: &Environment) -> String {
    let mut block = format!(
        "You are powered by the model named {model_id}. The exact model ID is {model}\n\
         Here is some useful information about the environment you are running in:\n\
         <env>\n  Working directory: {cwd}\n  Workspace root folder: {root}\n  \
         Is directory a git repo: {git}\n  Platform: {platform}\n  Today's date: {date}\n</env>",
        model_id = model.model,
        cwd = env.cwd.display(),
        root = env.root.display(),
        git = if env.is_git { "yes" } else { "no" },
        platform = std::env::consts::OS,
        date = today(),
    );
    if let Some(sandbox) = &env.sandbox {
        block.push('\n');
        block.push_str(sandbox);
    }
    block
}

/// The environment block in one line: what the model needs to act. No
/// sandbox line: a small window has no room for it, and a blocked command's
/// result says what the sandbox refused anyway.
fn lean_environment_block(env: &Environment) -> String {
    format!(
        "cwd: {cwd} (git: {git}), os: {platform}, date: {date}",
        cwd = env.cwd.display(),
        git = if env.is_git { "yes" } else { "no" },
        platform = std::env::consts::OS,
        date = today(),
    )
}

/// Global, then project (nearest first), then config files; empty files
/// skipped. Also returns what went wrong with the configured ones.
fn instruction_files(env: &Environment) -> (Vec<Instruction>, Vec<String>) {
    use crate::session::instructions::{Reach, Reader, project_files};
    let mut reader = Reader::default();
    let reach = Reach {
        root: &env.root,
        home: env.home.as_deref(),
    };
    let global = [
        env.config_dir.as_ref().map(|dir| dir.join("AGENTS.md")),
        env.home
            .as_ref()
            .map(|home| home.join(".claude").join("CLAUDE.md")),
    ];
    if let Some(first) = global.into_iter().flatten().find(|p| p.is_file()) {
        reader.add(&first, reach);
    }
    for path in project_files(&env.cwd, &env.root) {
        match crate::shared::linked_outside(&path, &env.root) {
            Some(target) => reader.problems.push(format!(
                "instruction file {} is a link to {}, outside the project: not sent to the model \
                 (a repository, or a command, could point it at your keys)",
                path.display(),
                target.display()
            )),
            None => reader.add(&path, reach),
        }
    }
    for extra in &env.extra_instructions {
        if is_url(extra) {
            continue; // fetched by `remote_instructions`
        }
        let path = crate::paths::expand_home(extra, env.home.as_deref());
        let path = if path.is_absolute() {
            path
        } else {
            env.cwd.join(path)
        };
        if !is_glob(extra) {
            if !path.is_file() {
                reader.problems.push(format!(
                    "instruction file {} (config `instructions`) does not exist",
                    path.display()
                ));
            }
            reader.add_plain(&path);
            continue;
        }
        match expand_glob(&path) {
            Ok(matches) if matches.is_empty() => reader.problems.push(format!(
                "instructions glob {extra:?} (config `instructions`) matches no file"
            )),
            Ok(matches) => matches.iter().for_each(|path| reader.add_plain(path)),
            Err(error) => reader.problems.push(format!(
                "instructions glob {extra:?} (config `instructions`) is not valid: {error}"
            )),
        }
    }
    (reader.instructions, reader.problems)
}

/// Most files one `instructions` glob adds: each one is sent with every
/// request, so a glob as broad as `**/*.md` must not fill the window.
const MAX_GLOB_MATCHES: usize = 32;

fn is_glob(pattern: &str) -> bool {
    pattern.contains(['*', '?', '[', '{'])
}

/// The files matching `pattern` (absolute), sorted, at most
/// [`MAX_GLOB_MATCHES`]. The walk starts at the pattern's literal prefix and
/// ignores no file (the user named them), but `*` never crosses a `/`.
fn expand_glob(pattern: &Path) -> Result<Vec<PathBuf>, globset::Error> {
    let matcher = globset::GlobBuilder::new(&pattern.to_string_lossy())
        .literal_separator(true)
        .build()?
        .compile_matcher();
    let base: PathBuf = pattern
        .components()
        .take_while(|c| !is_glob(&c.as_os_str().to_string_lossy()))
        .collect();
    let mut found: Vec<PathBuf> = ignore::WalkBuilder::new(&base)
        .standard_filters(false)
        .build()
        .flatten()
        .filter(|entry| entry.file_type().is_some_and(|t| t.is_file()))
        .map(ignore::DirEntry::into_path)
        .filter(|path| matcher.is_match(path))
        .collect();
    found.sort();
    found.truncate(MAX_GLOB_MATCHES);
    Ok(found)
}

/// Today's date as `YYYY-MM-DD` (UTC), without pulling in a date crate.
fn today() -> String {
    let days = crate::clock::now_millis().div_euclid(86_400_000);
    let (year, month, day) = crate::clock::civil_from_days(days);
    format!("{year:04}-{month:02}-{day:02}")
}

/// Whether a configured `instructions` entry is a URL rather than a path.
pub fn is_url(entry: &str) -> bool {
    entry.starts_with("https://") || entry.starts_with("http://")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::agent::Agents;

    fn env_in(dir: &Path, root: &Path) -> Environment {
        Environment {
            cwd: dir.to_path_buf(),
            root: root.to_path_buf(),
            is_git: true,
            home: None,
            config_dir: None,
            extra_instructions: Vec::new(),
            sandbox: None,
        }
    }

    #[test]
    fn every_level_gives_its_agents_and_claude_md() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path();
        let sub = root.join("crates/core");
        std::fs::create_dir_all(&sub).expect("mkdir");
        std::fs::write(root.join("AGENTS.md"), "root rules").expect("write");
        std::fs::write(sub.join("AGENTS.md"), "core rules").expect("write");
        std::fs::write(root.join("CLAUDE.md"), "claude rules").expect("write");
        // A copy of a file already sent is not sent twice.
        std::fs::write(sub.join("CLAUDE.md"), "core rules\n").expect("write");
        let agents = Agents::builtin();
        let prompt = build(
            agents.get("build"),
            &ModelRef::new("anthropic", "claude"),
            &env_in(&sub, root),
        );
        let contents: Vec<&str> = prompt
            .instructions
            .iter()
            .map(|i| i.content.as_str())
            .collect();
        assert_eq!(contents, ["core rules", "root rules", "claude rules"]);
        let blocks = prompt.blocks();
        assert_eq!(blocks.len(), 2);
        assert!(blocks[1].starts_with("Instructions from: "));
        assert!(blocks[0].contains("Is directory a git repo: yes"));
    }

    #[test]
    fn an_instruction_file_linked_outside_the_project_is_not_sent() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let outside = tempfile::tempdir().expect("outside");
        std::fs::write(outside.path().join("id_rsa"), "PRIVATE KEY").expect("write");
        std::os::unix::fs::symlink(outside.path().join("id_rsa"), tmp.path().join("AGENTS.md"))
            .expect("link");
        std::fs::write(tmp.path().join("real.md"), "inside").expect("write");
        std::os::unix::fs::symlink(tmp.path().join("real.md"), tmp.path().join("CLAUDE.md"))
            .expect("link");
        let env = env_in(tmp.path(), tmp.path());
        let prompt = build(
            Agents::builtin().get("build"),
            &ModelRef::new("openai", "gpt-5"),
            &env,
        );
        let sent: Vec<&str> = prompt
            .instructions
            .iter()
            .map(|i| i.content.as_str())
            .collect();
        assert!(!sent.contains(&"PRIVATE KEY"), "{sent:?}");
        assert!(
            prompt
                .problems
                .iter()
                .any(|p| p.contains("outside the project")),
            "{:?}",
            prompt.problems
        );
    }

    /// Each project instruction file name, linked outside the project, is
    /// not sent (issue #28: `CLAUDE.md`, `CONTEXT.md` as well as `AGENTS.md`).
    #[cfg(unix)]
    #[test]
    fn every_instruction_file_name_linked_outside_is_not_sent() {
        for name in ["AGENTS.md", "CLAUDE.md", "CONTEXT.md"] {
            let tmp = tempfile::tempdir().expect("tempdir");
            let outside = tempfile::tempdir().expect("outside");
            std::fs::write(outside.path().join("id_rsa"), "PRIVATE KEY").expect("write");
            std::os::unix::fs::symlink(outside.path().join("id_rsa"), tmp.path().join(name))
                .expect("link");
            let prompt = build(
                Agents::builtin().get("build"),
                &ModelRef::new("openai", "gpt-5"),
                &env_in(tmp.path(), tmp.path()),
            );
            assert!(
                prompt
                    .instructions
                    .iter()
                    .all(|i| i.content != "PRIVATE KEY"),
                "{name}"
            );
            assert!(
                prompt.problems.iter().any(|p| p.contains(name)),
                "{name}: {:?}",
                prompt.problems
            );
        }
    }

    #[test]
    fn instruction_files_are_reread_every_time() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let env = env_in(tmp.path(), tmp.path());
        let agents = Agents::builtin();
        let model = ModelRef::new("openai", "gpt-5");
        std::fs::write(tmp.path().join("AGENTS.md"), "first").expect("write");
        assert_eq!(
            build(agents.get("build"), &model, &env).instructions[0].content,
            "first"
        );
        std::fs::write(tmp.path().join("AGENTS.md"), "second").expect("write");
        assert_eq!(
            build(agents.get("build"), &model, &env).instructions[0].content,
            "second"
        );
    }

    #[test]
    fn lean_prompt_is_short_and_keeps_instructions() {
        let tmp = tempfile::tempdir().expect("tempdir");
        std::fs::write(tmp.path().join("AGENTS.md"), "house rules").expect("write");
        let env = env_in(tmp.path(), tmp.path());
        let agents = Agents::new(std::iter::empty::<(String, _)>());
        let model = ModelRef::new("llamacpp", "smollm2");
        let full = build(agents.get("build"), &model, &env);
        let lean = build_variant(agents.get("build"), &model, &env, true);
        assert!(lean.base.len() * 3 < full.base.len(), "{}", lean.base);
        assert!(
            lean.base
                .contains(&format!("cwd: {}", tmp.path().display()))
        );
        assert!(!lean.base.contains("todowrite"));
        assert_eq!(lean.instructions, full.instructions);
    }

    #[test]
    fn civil_dates() {
        use crate::clock::civil_from_days;
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_414), (2025, 11, 22));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }
}
