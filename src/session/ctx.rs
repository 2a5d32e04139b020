//! What every part of one session's loop needs, in one place: the store
//! writer, tools, permissions, models, settings, accounting. Built by `app`,
//! read by the loop's modules; it imports none of them.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::bus::{Event, SessionStatus};
use crate::config::CompactionConfig;
use crate::message::{ModelRef, UserMessage};
use crate::permission::Permissions;
use crate::provider::{Provider, RetryPolicy, Usage};
use crate::session::Error;
use crate::session::accounting::Accounting;
use crate::session::agent::Agents;
use crate::session::prompt::Environment;
use crate::session::writer::Writer;
use crate::store::{self, LiveView};
use crate::tool::{OutputLimits, Registry};

/// A model ready to call: its client, limits and prices.
pub struct ResolvedModel {
    pub model: ModelRef,
    pub provider: Arc<Provider>,
    pub limits: crate::context::Limits,
    pub prices: Option<crate::provider::catalog::Prices>,
    /// Why the limits are a fallback, shown to the user once.
    pub warning: Option<String>,
    pub warned: std::sync::atomic::AtomicBool,
}

impl ResolvedModel {
    pub fn cost(&self, usage: &Usage) -> f64 {
        self.prices
            .as_ref()
            .map_or(0.0, |p| crate::provider::catalog::cost(usage, p))
    }

    pub fn max_output_tokens(&self) -> u32 {
        crate::context::max_output_tokens(&self.limits) as u32
    }

    /// Whether images may sit inside tool results: Anthropic's tool_result
    /// blocks take them; Chat Completions `tool` messages take text only.
    pub fn media_in_tool_results(&self) -> bool {
        self.provider.config().wire == crate::provider::Wire::Anthropic
    }
}

/// Turns a `provider/model` into a callable model.
#[async_trait::async_trait]
pub trait ModelSource: Send + Sync {
    /// # Errors
    /// A message for the user saying what is missing (unknown provider, unset
    /// key variable) and how to fix it.
    async fn resolve(&self, model: &ModelRef) -> Result<Arc<ResolvedModel>, String>;

    /// Local servers found answering after start-up: their models are
    /// reached where they answered. A source with nothing to learn ignores it.
    fn learn_local(&self, _servers: &[crate::provider::discover::LocalServer]) {}
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub compaction: CompactionConfig,
    pub doom_threshold: usize,
    pub doom_hard_stop: usize,
    pub tool_limits: OutputLimits,
    pub tool_output_dir: PathBuf,
    pub default_agent: String,
    pub retry: RetryPolicy,
    /// `[task]`: how many subagents run at once, how deep they may nest.
    pub task: crate::config::TaskConfig,
    /// The cheaper model of the config, for agents that prefer it (explore).
    pub small_model: Option<ModelRef>,
    /// What the session's `bash` commands may reach (`[sandbox]`).
    pub sandbox: std::sync::Arc<crate::sandbox::Policy>,
    /// The editor's files (`cairn acp`), for `read`, `edit` and `write`.
    pub editor: Option<std::sync::Arc<dyn crate::tool::EditorFiles>>,
    /// The user's hook programs (see `crate::hook`).
    pub hooks: std::sync::Arc<crate::hook::Hooks>,
    /// The project's custom commands' `allowed-tools` are trusted (see
    /// `crate::custom_command::project_risks`): their grants apply.
    pub commands_trusted: bool,
}

/// Everything the loop of one session needs.
pub struct SessionCtx {
    pub session_id: String,
    /// How many parents the session has: 0 for the user's own session, 1
    /// for a subagent's. Children beyond `[task] max_depth` are refused.
    pub depth: usize,
    pub writer: Writer,
    pub tools: Arc<Registry>,
    pub permissions: Arc<Permissions>,
    pub agents: Agents,
    pub models: Arc<dyn ModelSource>,
    pub settings: Settings,
    pub env: Environment,
    /// The model new prompts use unless they name one.
    pub default_model: ModelRef,
    pub accounting: Accounting,
    /// The model view read of the last loop step, kept so that the next one
    /// decodes only what changed (see [`Self::read_view`]).
    pub kept_view: Mutex<Option<LiveView>>,
    /// Configuration problems already shown to the user (a broken
    /// `instructions` entry), so each is said once per session, not per step.
    pub reported: Mutex<std::collections::HashSet<String>>,
    /// `instructions` given as URLs, fetched once for the session.
    pub remote_instructions: crate::session::remote_instructions::RemoteInstructions,
    /// The folders whose AGENTS.md / CLAUDE.md a tool result already
    /// brought (`session::instructions::for_file`): once per session.
    pub instruction_folders: Mutex<std::collections::BTreeSet<std::path::PathBuf>>,
    /// The project's snapshot store; `None` when snapshots are off.
    pub snapshots: Option<crate::snapshot::Snapshots>,
    /// The newest snapshot the session's steps left, maybe still being
    /// taken: the next step's "before"; settled before the turn ends.
    pub snapshot_chain: crate::session::snapshot_step::Chain,
}

impl SessionCtx {
    /// The session's model view read (`Store::read_view`), brought up to
    /// date from the read kept by [`Self::keep_view`] when there is one.
    /// A session never compacted is read only as far back as its model's
    /// window can use (`message::view_budget`), and the read says it was
    /// cut. Two readers at once are safe: the second one reads afresh.
    pub async fn read_view(&self) -> Result<LiveView, store::Error> {
        let kept = crate::shared::lock(&self.kept_view)
            .take()
            .filter(|kept| kept.session_id() == self.session_id);
        let previous = match kept {
            Some(kept) => kept,
            None => {
                // Once per kept read: the window of the model in use now.
                let window = crate::session::gauge::session_window(self).await;
                let budget = crate::message::view_budget(window);
                LiveView::within(&self.session_id, Some(budget))
            }
        };
        let view = self.writer.store.refresh_view(previous).await?;
        crate::session::gauge::observe_history(self, view.messages());
        Ok(view)
    }

    /// Keeps a model view read for the next [`Self::read_view`].
    pub fn keep_view(&self, context: LiveView) {
        *crate::shared::lock(&self.kept_view) = Some(context);
    }

    /// Shows `problem` to the user as a notice, once per session.
    pub fn report_once(&self, problem: &str) {
        if crate::shared::lock(&self.reported).insert(problem.to_string()) {
            tracing::warn!(session = %self.session_id, problem, "configuration problem");
            self.writer
                .notice(&self.session_id, format!("warning: {problem}"));
        }
    }

    /// Fires this session's hooks (see `hook_calls`).
    pub fn hook_caller(&self) -> crate::session::hook_calls::Caller<'_> {
        crate::session::hook_calls::Caller {
            hooks: &self.settings.hooks,
            writer: &self.writer,
            session_id: &self.session_id,
        }
    }

    pub fn set_status(&self, status: SessionStatus) {
        self.writer.bus.publish(Event::Status {
            session_id: self.session_id.clone(),
            status,
        });
    }
}

/// The agent and model of the newest user message, else the defaults; a
/// model chosen with `cairn run "/model ..."` and not yet used wins.
pub async fn last_user_or_default(ctx: &SessionCtx) -> Result<UserMessage, Error> {
    let store = &ctx.writer.store;
    let recent = store.messages_before(&ctx.session_id, None, 20).await?;
    let mut user = recent
        .iter()
        .find_map(|m| m.message.as_user().cloned())
        .unwrap_or_else(|| UserMessage {
            agent: ctx.settings.default_agent.clone(),
            model: ctx.default_model.clone(),
            system: None,
        });
    if let Some(chosen) = store.chosen_model(&ctx.session_id).await? {
        user.model = chosen;
    }
    Ok(user)
}
