//! Custom slash commands in a session (`crate::custom_command`): a prompt
//! whose first word names one is expanded (`$ARGUMENTS`, `$1`..`$9`), its
//! `` !`cmd` `` lines run, and the result is the user's message; its `@file`
//! references then attach as any message's mentions do.
//!
//! The shell lines run as the model's `bash` calls do: through the
//! session's permission rules (an ask in the TUI, a refusal in `cairn run`
//! unless a rule allows) and the sandbox. The command's `allowed-tools` is
//! added as allow rules for those lines only, and a project's only once the
//! project is trusted. One line refused or failing stops the command: the
//! model is not called with a half-filled prompt, as in Claude Code.

use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::custom_command::{CommandRoots, CustomCommand, shell_spans, substitute};
use crate::message::ModelRef;
use crate::permission::{Action, Rule};
use crate::session::ctx::SessionCtx;
use crate::tool::ToolScope;

/// A command ready to run: its text with the arguments in, and what it
/// asks of the session.
#[derive(Debug)]
pub struct Prepared {
    pub name: String,
    pub text: String,
    pub agent: Option<String>,
    pub model: Option<ModelRef>,
    /// The allow rules its `allowed-tools` grants (empty when untrusted).
    pub rules: Vec<Rule>,
    pub has_shell: bool,
}

fn roots(ctx: &SessionCtx) -> CommandRoots {
    CommandRoots {
        cwd: ctx.env.cwd.clone(),
        root: ctx.env.root.clone(),
        home: ctx.env.home.clone(),
        config_dir: ctx.env.config_dir.clone(),
    }
}

/// The custom command `text` runs, prepared; `None` when its first word is
/// none's name. Discovery is redone each time (a file added mid-session is
/// seen); what cannot be used (an unmapped rule, an untrusted grant, a
/// model that is no `provider/model`) is said as a notice.
pub fn prepare(ctx: &SessionCtx, text: &str) -> Option<Prepared> {
    if !text.trim_start().starts_with('/') {
        return None;
    }
    let found = crate::custom_command::discover(&roots(ctx));
    let (command, args) = found.parse(text)?;
    let mut notes = Vec::new();
    let rules = grants(ctx, command, &mut notes);
    let model = command.model.as_deref().and_then(|model| {
        ModelRef::parse(model)
            .map_err(|_| {
                notes.push(format!(
                    "its `model: {model}` is not a provider/model: the session's model is used"
                ));
            })
            .ok()
    });
    for note in notes {
        ctx.writer.notice(
            &ctx.session_id,
            format!("{} ({}): {note}", command.name, command.file.display()),
        );
    }
    let text = command.expand_arguments(args);
    Some(Prepared {
        name: command.name.clone(),
        has_shell: !shell_spans(&text).is_empty(),
        text,
        agent: command.agent.clone(),
        model,
        rules,
    })
}

/// The command's `allowed-tools` as allow rules: none from an untrusted
/// project (said once), and each rule cairn cannot map named.
fn grants(ctx: &SessionCtx, command: &CustomCommand, notes: &mut Vec<String>) -> Vec<Rule> {
    if command.allowed_tools.is_empty() {
        return Vec::new();
    }
    if command.from_project && !ctx.settings.commands_trusted {
        notes.push(format!(
            "its allowed-tools ({}) wait for you to trust the project (`cairn trust`); its shell lines are asked as usual",
            command.allowed_tools.join(", ")
        ));
        return Vec::new();
    }
    command
        .allowed_tools
        .iter()
        .filter_map(
            |rule| match crate::permission::claude_rules::parse(rule, Action::Allow) {
                Ok(rule) => Some(rule),
                Err(unmapped) => {
                    notes.push(format!("allowed-tools: {unmapped}"));
                    None
                }
            },
        )
        .collect()
}

/// Runs the command's shell lines and puts their outputs in its text:
/// `None` (and an error said on the bus) when one was refused or failed.
pub async fn run_shell_lines(
    ctx: &SessionCtx,
    prepared: &Prepared,
    cancel: &CancellationToken,
) -> Option<String> {
    let spans = shell_spans(&prepared.text);
    let permissions = std::sync::Arc::new(ctx.permissions.for_agent(&prepared.rules));
    let mut outputs = Vec::with_capacity(spans.len());
    for (_, command) in &spans {
        let scope = ToolScope {
            session_id: ctx.session_id.clone(),
            message_id: crate::id::message_id(),
            call_id: crate::id::call_id(),
            cwd: ctx.env.cwd.clone(),
            root: ctx.env.root.clone(),
            tool_output_dir: ctx.settings.tool_output_dir.clone(),
            cancel: cancel.child_token(),
            permissions: permissions.clone(),
            progress: None,
            limits: ctx.settings.tool_limits,
            can_delegate: false,
            sandbox: ctx.settings.sandbox.clone(),
            editor: None,
        };
        let input = json!({
            "command": command,
            "description": format!("Run a shell line of {}", prepared.name),
        });
        match ctx.tools.run("bash", input, &scope).await {
            Ok(output) => outputs.push(crate::custom_command::fence_all_mentions(&output.output)),
            Err(error) => {
                ctx.writer.error(
                    &ctx.session_id,
                    format!(
                        "{}: its shell line `{command}` did not run, so the command was not sent: {error}",
                        prepared.name
                    ),
                );
                return None;
            }
        }
    }
    Some(substitute(&prepared.text, &spans, &outputs))
}
