//! The `bash` tool's side of the sandbox: which policy a command runs
//! under (one the read-only classifier cleared may write nothing in the
//! project, so a wrong classification fails instead of escaping `/undo`),
//! and what follows a confined run: protected paths it created are
//! removed, what the sandbox refused is told to the model and the user,
//! and the person at the terminal may run the command once unconfined.

use std::future::Future;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::bash::{Ending, Run};
use super::{ToolError, ToolScope};
use crate::permission::{PermissionError, PermissionRequest, Preview, read_only};
use crate::sandbox::{Confinement, Policy, Refusal};

/// The policy a command runs under and its confinement, ready to spawn.
pub(super) struct Confined {
    pub(super) policy: Policy,
    pub(super) confinement: Option<Confinement>,
    absent: Vec<PathBuf>,
}

impl Confined {
    /// # Errors
    /// When the kernel offers the sandbox but it cannot be built: the
    /// command must not run unconfined in its place.
    pub(super) fn prepare(command: &str, ctx: &ToolScope) -> Result<Confined, ToolError> {
        let search_path = std::env::var_os("PATH").unwrap_or_default();
        let policy = if read_only::cannot_write(command, &search_path, &ctx.root) {
            ctx.sandbox.for_read_only_command()
        } else {
            (*ctx.sandbox).clone()
        };
        let confinement = Confinement::prepare(&policy).map_err(|error| {
            ToolError::Failed(format!(
                "The command was not run: the sandbox could not be set up ({error})."
            ))
        })?;
        let absent = confinement
            .as_ref()
            .map(Confinement::absent_protected)
            .unwrap_or_default();
        Ok(Confined {
            policy,
            confinement,
            absent,
        })
    }
}

/// What follows a confined run (see the module doc). `rerun` runs the
/// command again with the given confinement (`None`: unconfined).
pub(super) async fn settle<F, Fut>(
    mut run: Run,
    confined: &Confined,
    command: &str,
    cwd: &Path,
    ctx: &ToolScope,
    rerun: F,
) -> Result<Run, ToolError>
where
    F: FnOnce(Option<Confinement>) -> Fut,
    Fut: Future<Output = Result<Run, ToolError>>,
{
    let policy = &confined.policy;
    let mut refused: Vec<Refusal> = crate::sandbox::remove_created(&confined.absent)
        .into_iter()
        .map(|(path, removed)| {
            if removed {
                Refusal::Protected(path)
            } else {
                Refusal::Left(path)
            }
        })
        .collect();
    for refusal in crate::sandbox::refusals(&run.output, cwd, policy) {
        if !refused.contains(&refusal) {
            refused.push(refusal);
        }
    }
    if refused.is_empty() {
        return Ok(run);
    }
    let reasons: Vec<String> = refused.iter().map(|r| r.explain(policy)).collect();
    let mut note = format!(
        "\n\n<sandbox>\n{}{}",
        crate::sandbox::BLOCKED,
        reasons.join("; ")
    );
    // Timed out or interrupted: say what was refused, but offer no rerun.
    if !matches!(run.ending, Ending::Exited(_)) {
        note.push_str("\n</sandbox>");
        run.output.push_str(&note);
        return Ok(run);
    }
    match ask_unconfined(command, &reasons, ctx).await {
        Ok(()) => {
            let again = rerun(None).await?;
            let mut output = format!(
                "(first run blocked by the sandbox: {}; the user allowed one run outside it)\n",
                reasons.join("; ")
            );
            output.push_str(&again.output);
            return Ok(Run { output, ..again });
        }
        Err(PermissionError::Cancelled) => {
            return Err(ToolError::Interrupted { output: run.output });
        }
        Err(PermissionError::Rejected { .. }) => {
            note.push_str("\nThe user declined to run it outside the sandbox.");
        }
        Err(PermissionError::Denied { message, .. }) => {
            note.push('\n');
            note.push_str(&message);
        }
    }
    note.push_str("\n</sandbox>");
    run.output.push_str(&note);
    Ok(run)
}

/// Asks the person (never the rules, never `--yolo`) to run `command` once
/// outside the sandbox.
async fn ask_unconfined(
    command: &str,
    reasons: &[String],
    ctx: &ToolScope,
) -> Result<(), PermissionError> {
    let request = PermissionRequest {
        id: format!("per_{}", crate::id::part_id().trim_start_matches("prt_")),
        session_id: ctx.session_id.clone(),
        call_id: Some(ctx.call_id.clone()),
        permission: crate::sandbox::UNCONFINED.to_string(),
        patterns: vec![command.to_string()],
        reasons: reasons
            .iter()
            .map(|r| format!("{}{r}", crate::sandbox::BLOCKED))
            .collect(),
        title: format!("Run once outside the sandbox: {command}"),
        metadata: json!({ "command": command }),
        preview: Some(Preview::Command {
            command: command.to_string(),
            description: None,
        }),
        ..PermissionRequest::default()
    };
    let refused = "cairn is running without a terminal to ask in, so it was not run outside the \
                   sandbox. The user can allow it with `--sandbox off` (or `[sandbox]` in their config); \
                   otherwise do without it.";
    ctx.permissions
        .ask_person(request, refused, &ctx.cancel)
        .await
}
