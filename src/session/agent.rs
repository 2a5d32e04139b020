//! Agents: named configurations of the same loop (prompt, tools, step limit).
//!
//! `build` (default, every tool) and `plan` (read-only tools) are the ones a
//! user picks; `compaction` is hidden and runs with no tools. Config
//! `[agent.NAME]` can set a model, a step limit, a temperature and extra prompt
//! text. Agents decide nothing at run time; the loop reads them.

use crate::message::ModelRef;

pub const BUILD: &str = "build";
pub const PLAN: &str = "plan";
pub const COMPACTION: &str = "compaction";

/// Which tools an agent may see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolAccess {
    All,
    ReadOnly,
    None,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Agent {
    pub name: String,
    pub tools: ToolAccess,
    /// Maximum loop steps for one user message; `None` is unlimited.
    pub steps: Option<u32>,
    pub model: Option<ModelRef>,
    pub temperature: Option<f32>,
    /// Extra text appended to the base system prompt.
    pub prompt: Option<String>,
    /// Hidden agents cannot be picked by the user.
    pub hidden: bool,
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
        }
    }
}

/// The agents of one runtime: built-ins with config overrides applied.
#[derive(Debug, Clone)]
pub struct Agents {
    agents: Vec<Agent>,
}

/// One `[agent.NAME]` table of the config, already parsed.
#[derive(Debug, Clone, Default)]
pub struct AgentOverride {
    pub model: Option<ModelRef>,
    pub steps: Option<u32>,
    pub temperature: Option<f32>,
    pub prompt: Option<String>,
}

impl Agents {
    pub fn new<'a>(overrides: impl IntoIterator<Item = (&'a str, AgentOverride)>) -> Self {
        let mut agents = vec![
            Agent::builtin(BUILD, ToolAccess::All, false),
            Agent::builtin(PLAN, ToolAccess::ReadOnly, false),
            Agent::builtin(COMPACTION, ToolAccess::None, true),
        ];
        for (name, custom) in overrides {
            let agent = match agents.iter_mut().find(|a| a.name == name) {
                Some(agent) => agent,
                None => {
                    // A custom agent starts from `build`'s tools.
                    agents.push(Agent::builtin(name, ToolAccess::All, false));
                    agents.last_mut().expect("just pushed")
                }
            };
            agent.model = custom.model.or(agent.model.take());
            agent.steps = custom.steps.or(agent.steps);
            agent.temperature = custom.temperature.or(agent.temperature);
            agent.prompt = custom.prompt.or(agent.prompt.take());
        }
        Self { agents }
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
        self.agents.iter().filter(|a| !a.hidden)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_apply_and_unknown_names_fall_back_to_build() {
        let agents = Agents::new([(
            PLAN,
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
    }
}
