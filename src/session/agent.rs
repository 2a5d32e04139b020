//! Agents: named configurations of the same loop (prompt, tools, step limit).
//!
//! `build` (default, every tool) and `plan` (read-only tools) are the ones a
//! user picks; `general` (every tool) and `explore` (read-only, concise) are
//! subagents for delegated work; `compaction` is hidden and runs with no
//! tools. Agent files (`agent_files`) and config `[agent.NAME]` add agents or
//! change a model, a step limit, a temperature, the tools and the prompt,
//! which replaces the base prompt. Agents decide nothing at run time; the
//! loop reads them.

use std::collections::BTreeSet;

use crate::message::ModelRef;

pub const BUILD: &str = "build";
pub const PLAN: &str = "plan";
pub const GENERAL: &str = "general";
pub const EXPLORE: &str = "explore";
pub const COMPACTION: &str = "compaction";
/// The tool that delegates to a subagent (named here so agent files can list it).
pub const TASK_TOOL: &str = "task";

const EXPLORE_PROMPT: &str = include_str!("../../assets/prompts/explore.txt");
const GENERAL_DESCRIPTION: &str = "General-purpose agent for multi-step delegated work: researching questions, searching code and making changes across several files.";
const EXPLORE_DESCRIPTION: &str = "Fast read-only agent for exploring a codebase: finds files by pattern, searches code, reads files, and answers concisely with file paths and line numbers.";

/// Which tools an agent may see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolAccess {
    All,
    ReadOnly,
    None,
    /// Exactly these tools (an agent file's `tools` list), MCP tools by
    /// their exposed names.
    Only(BTreeSet<String>),
    /// Every tool but these (Claude Code's `disallowedTools`, OpenCode's
    /// `tools: {bash: false}`).
    AllBut(BTreeSet<String>),
}

impl ToolAccess {
    /// Whether a tool named `name` (read-only or not) is available.
    pub fn allows(&self, name: &str, read_only: bool) -> bool {
        match self {
            ToolAccess::All => true,
            ToolAccess::ReadOnly => read_only,
            ToolAccess::None => false,
            ToolAccess::Only(names) => names.contains(name),
            ToolAccess::AllBut(names) => !names.contains(name),
        }
    }

    /// Whether the MCP tool exposed as `exposed` is available. MCP tools
    /// may change anything, so a read-only agent has none.
    pub fn allows_mcp(&self, exposed: &str) -> bool {
        self.allows(exposed, false)
    }
}

/// Who may use an agent: the user as the primary agent, the `task` tool as a
/// subagent, or both (OpenCode's `mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Primary,
    Subagent,
    All,
}

impl Mode {
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "primary" => Some(Mode::Primary),
            "subagent" => Some(Mode::Subagent),
            "all" => Some(Mode::All),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Agent {
    pub name: String,
    pub tools: ToolAccess,
    /// Maximum loop steps for one user message; `None` is unlimited.
    pub steps: Option<u32>,
    pub model: Option<ModelRef>,
    pub temperature: Option<f32>,
    /// Replaces the base system prompt when set.
    pub prompt: Option<String>,
    /// Hidden agents cannot be picked by the user.
    pub hidden: bool,
    pub mode: Mode,
    /// What the agent is for, shown to the model in the `task` tool.
    pub description: String,
    /// Runs on the configured `small_model` when there is one (explore).
    pub prefers_small_model: bool,
    /// The agent's own permission rules (an agent file's `permission:`),
    /// applied after the session's to its calls (primary or subagent).
    pub permission: Vec<crate::permission::Rule>,
}

impl Agent {
    fn builtin(name: &str, tools: ToolAccess, hidden: bool) -> Self {
        Self {
            name: name.to_string(),
            tools,
            steps: None,
            model: None,
            temperature: None,
            prompt: None,
            hidden,
            mode: Mode::Primary,
            description: String::new(),
            prefers_small_model: false,
            permission: Vec::new(),
        }
    }

    fn subagent(name: &str, tools: ToolAccess, description: &str) -> Self {
        Self {
            mode: Mode::Subagent,
            description: description.to_string(),
            ..Self::builtin(name, tools, false)
        }
    }

    /// Whether the user can make it the primary agent.
    pub fn is_primary(&self) -> bool {
        !self.hidden && self.mode != Mode::Subagent
    }

    /// Whether the `task` tool can delegate to it.
    pub fn is_subagent(&self) -> bool {
        !self.hidden && self.mode != Mode::Primary
    }
}

/// The agents of one runtime: built-ins with config overrides applied.
#[derive(Debug, Clone)]
pub struct Agents {
    agents: Vec<Agent>,
}

/// One `[agent.NAME]` table of the config or one agent file, already parsed.
#[derive(Debug, Clone, Default)]
pub struct AgentOverride {
    pub model: Option<ModelRef>,
    pub steps: Option<u32>,
    pub temperature: Option<f32>,
    pub prompt: Option<String>,
    pub description: Option<String>,
    pub mode: Option<Mode>,
    pub tools: Option<ToolAccess>,
    /// Permission rules of its own (`permission:` in an agent file).
    pub permission: Option<Vec<crate::permission::Rule>>,
    /// A model named without its provider (Claude Code's `sonnet`, `opus`,
    /// `haiku`, `inherit`, or a bare model id), for
    /// `agent_files::resolve_models` to turn into `model` before
    /// [`Agents::new`]; it reads only `model`.
    pub model_alias: Option<String>,
}

impl Agents {
    /// Built-ins, then each override in order (agent files before config, so
    /// `[agent.NAME]` has the last word).
    pub fn new<N: AsRef<str>>(overrides: impl IntoIterator<Item = (N, AgentOverride)>) -> Self {
        let mut explore = Agent::subagent(EXPLORE, ToolAccess::ReadOnly, EXPLORE_DESCRIPTION);
        explore.prompt = Some(EXPLORE_PROMPT.to_string());
        explore.prefers_small_model = true;
        let mut agents = vec![
            Agent::builtin(BUILD, ToolAccess::All, false),
            Agent::builtin(PLAN, ToolAccess::ReadOnly, false),
            Agent::subagent(GENERAL, ToolAccess::All, GENERAL_DESCRIPTION),
            explore,
            Agent::builtin(COMPACTION, ToolAccess::None, true),
        ];
        for (name, custom) in overrides {
            let name = name.as_ref();
            let agent = match agents.iter_mut().find(|a| a.name == name) {
                Some(agent) => agent,
                None => {
                    // A custom agent starts from `build`'s tools, usable both ways.
                    let mut agent = Agent::builtin(name, ToolAccess::All, false);
                    agent.mode = Mode::All;
                    agents.push(agent);
                    agents.last_mut().expect("just pushed")
                }
            };
            agent.model = custom.model.or(agent.model.take());
            agent.steps = custom.steps.or(agent.steps);
            agent.temperature = custom.temperature.or(agent.temperature);
            agent.prompt = custom.prompt.or(agent.prompt.take());
            agent.description = custom
                .description
                .unwrap_or(std::mem::take(&mut agent.description));
            agent.mode = custom.mode.unwrap_or(agent.mode);
            agent.tools = custom.tools.unwrap_or(agent.tools.clone());
            agent.permission = custom
                .permission
                .unwrap_or(std::mem::take(&mut agent.permission));
        }
        Self { agents }
    }

    /// The built-in agents alone.
    pub fn builtin() -> Self {
        Self::new(Vec::<(String, AgentOverride)>::new())
    }

    /// The named agent when it exists.
    pub fn find(&self, name: &str) -> Option<&Agent> {
        self.agents.iter().find(|a| a.name == name)
    }

    /// Agents the `task` tool can delegate to, in order.
    pub fn subagents(&self) -> impl Iterator<Item = &Agent> {
        self.agents.iter().filter(|a| a.is_subagent())
    }

    /// The named agent, or `build` when the name is unknown (an old session
    /// may name an agent the config no longer has).
    pub fn get(&self, name: &str) -> &Agent {
        self.agents
            .iter()
            .find(|a| a.name == name)
            .or_else(|| self.agents.iter().find(|a| a.name == BUILD))
            .expect("build is always present")
    }

    /// Agents the user can switch between, in order.
    pub fn selectable(&self) -> impl Iterator<Item = &Agent> {
        self.agents.iter().filter(|a| a.is_primary())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_apply_and_unknown_names_fall_back_to_build() {
        let agents = Agents::new([(
            PLAN.to_string(),
            AgentOverride {
                steps: Some(5),
                ..Default::default()
            },
        )]);
        assert_eq!(agents.get(PLAN).steps, Some(5));
        assert_eq!(agents.get(PLAN).tools, ToolAccess::ReadOnly);
        assert_eq!(agents.get("nope").name, BUILD);
        let names: Vec<_> = agents.selectable().map(|a| a.name.as_str()).collect();
        assert_eq!(names, [BUILD, PLAN]);
        let subagents: Vec<_> = agents.subagents().map(|a| a.name.as_str()).collect();
        assert_eq!(subagents, [GENERAL, EXPLORE]);
    }

    #[test]
    fn explore_is_read_only_with_its_own_prompt() {
        let agents = Agents::builtin();
        let explore = agents.get(EXPLORE);
        assert_eq!(explore.tools, ToolAccess::ReadOnly);
        assert!(
            explore
                .prompt
                .as_deref()
                .is_some_and(|p| p.contains("line numbers"))
        );
        assert!(explore.prefers_small_model);
        assert!(!explore.tools.allows("bash", false));
        assert!(explore.tools.allows("read", true));
    }

    #[test]
    fn a_tool_list_allows_exactly_its_tools() {
        let only = ToolAccess::Only(["read".to_string(), "bash".to_string()].into());
        assert!(only.allows("bash", false));
        assert!(only.allows("read", true));
        assert!(!only.allows("grep", true));
        assert!(!only.allows("write", false));
    }
}
