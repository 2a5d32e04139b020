//! Slash commands in `cairn run`: the TUI's commands that make sense without
//! a screen, done through the same session commands and core functions.
//!
//! The commands are [`crate::slash::COMMANDS`]: those offered in
//! [`FrontEnd::Run`] run instead of being sent to the model; the TUI's screen
//! commands (`/new`, `/sessions`, ...) are refused with what to use in a
//! script instead. Any other message starting with `/` (a path such as
//! `/etc/hosts is empty?`, a word the user means) is sent to the model as text.
//!
//! Adding a command is a row in the table and one arm in [`parse`]: a
//! [`Slash::Loop`] or [`Slash::Served`] session command needs nothing else.

use std::io::Write;

use tokio::sync::oneshot;

use super::{Format, Watch};
use crate::context::ContextBreakdown;
use crate::session::command::Command;
use crate::session::export::{export_path, session_markdown, write_export};
use crate::shared::thousands;
use crate::slash::{FrontEnd, Verb};
use crate::store::Store;

/// A slash command `cairn run` can do.
#[derive(Debug)]
pub enum Slash {
    /// A session command whose work runs in the session loop (a compaction):
    /// the run ends when the session is idle again, and what the loop writes
    /// (the summary) is the answer.
    Loop(Command),
    /// A session command served at once (a prune): the run ends when the
    /// session has served it, and its notices are the answer.
    Served(Command),
    /// `/context`: print the breakdown of the next request.
    Context,
    /// `/export [path]`: write the session as Markdown (to the data dir
    /// unless a path is given), print where.
    Export(Option<String>),
    /// `/skills`: list the skills the model is offered, one per line.
    Skills,
    /// `/help`: print the slash-command table.
    Help,
}

/// The slash command `message` names: `Ok(None)` when it is text for the
/// model (its first word is no command's whole name, see
/// [`crate::slash::parse`]).
///
/// `/mcp`, `/model` alone, `/help` and `/undo`, `/redo`, `/diff` are served
/// by `main.rs` without a session loop; here they are usage errors.
///
/// # Errors
/// A message for the user when `message` is a command `cairn run` does not
/// offer, or one given the wrong arguments.
pub fn parse(message: &str) -> Result<Option<Slash>, String> {
    let Some((command, args)) = crate::slash::parse(message) else {
        return Ok(None);
    };
    let name = command.name;
    let slash = match command.verb {
        Verb::Compact => Slash::Loop(Command::Compact {
            instructions: (!args.is_empty()).then(|| args.to_string()),
        }),
        Verb::Prune => Slash::Served(Command::Prune),
        Verb::Permissions => Slash::Served(Command::Permissions {
            revoke: crate::session::remembered::parse_args(args)?,
        }),
        Verb::Context => Slash::Context,
        Verb::Export => Slash::Export((!args.is_empty()).then(|| args.to_string())),
        Verb::Skills => Slash::Skills,
        Verb::Help => Slash::Help,
        Verb::Model if args.is_empty() => {
            return Err(format!(
                "{name} needs a model: {name} provider/model (`cairn run {name}` alone lists them)"
            ));
        }
        Verb::Model => Slash::Served(Command::UseModel {
            model: crate::message::ModelRef::parse(args)
                .map_err(|error| format!("{name}: {error}"))?,
        }),
        // Served before a session loop runs: here only with other words.
        Verb::Undo | Verb::Redo | Verb::Diff | Verb::Mcp => {
            return Err(format!("usage: {} as the whole message", command.usage()));
        }
        Verb::New | Verb::Sessions | Verb::Subtasks | Verb::Agent | Verb::Copy | Verb::Quit => {
            return Err(format!(
                "{name} needs the terminal UI; in `cairn run`, {}",
                command.instead
            ));
        }
    };
    Ok(Some(slash))
}

/// Runs `slash` on the watched session, printing what it reports.
pub(super) async fn run(
    slash: Slash,
    watch: &mut Watch<'_>,
    store: &Store,
    stdout: &mut impl Write,
    stderr: &mut impl Write,
) -> std::io::Result<()> {
    match slash {
        Slash::Loop(command) => {
            watch.printer.show_summaries = true;
            if watch.send(command, stderr)? {
                watch.until_idle(stdout, stderr).await?;
            }
        }
        Slash::Served(command) => {
            watch.printer.notices_are_answers = true;
            let (reply, served) = oneshot::channel();
            if watch.send(command, stderr)? && watch.send(Command::Sync { reply }, stderr)? {
                watch.until_reply(served, stdout, stderr).await?;
            }
        }
        Slash::Context => {
            let (reply, breakdown) = oneshot::channel();
            if !watch.send(Command::Context { reply }, stderr)? {
                return Ok(());
            }
            match watch.until_reply(breakdown, stdout, stderr).await? {
                Some(breakdown) => print_breakdown(&breakdown, watch.printer.format, stdout)?,
                // The session said why (an error event), or the user interrupted.
                None if watch.printer.interrupted || watch.printer.failed => {}
                None => watch.fail(
                    "the session could not measure the context".into(),
                    stdout,
                    stderr,
                )?,
            }
        }
        Slash::Export(to) => export(watch, store, to.as_deref(), stdout, stderr).await?,
        Slash::Skills => skills(watch, store, stdout, stderr).await?,
        Slash::Help => write!(stdout, "{}", crate::slash::help_text(FrontEnd::Run))?,
    }
    Ok(())
}

/// `/export`: the same Markdown and file as the TUI's; prints the path.
async fn export(
    watch: &mut Watch<'_>,
    store: &Store,
    to: Option<&str>,
    stdout: &mut impl Write,
    stderr: &mut impl Write,
) -> std::io::Result<()> {
    let session_id = &watch.handle.session_id;
    let read = async {
        let session = store.get_session(session_id).await?;
        let messages = store.read_all(session_id).await?;
        Ok::<_, crate::store::Error>((session, messages))
    };
    let (session, messages) = match read.await {
        Ok((Some(session), messages)) => (session, messages),
        Ok((None, _)) => {
            let message = format!("cannot export: no session {session_id} in the store");
            return watch.fail(message, stdout, stderr);
        }
        Err(error) => {
            let message = format!("cannot export session {session_id}: {error}");
            return watch.fail(message, stdout, stderr);
        }
    };
    let data_dir = match crate::paths::locate_data_dir() {
        Ok(dir) => dir,
        Err(error) => return watch.fail(format!("cannot export: {error}"), stdout, stderr),
    };
    let path = export_path(&session, &data_dir, to);
    if let Err(error) = write_export(&path, session_markdown(&session, &messages)).await {
        let message = format!("cannot write {}: {error}", path.display());
        return watch.fail(message, stdout, stderr);
    }
    let path = path.display().to_string();
    match watch.printer.format {
        Format::Json => {
            serde_json::to_writer(
                &mut *stdout,
                &serde_json::json!({ "type": "export", "path": path }),
            )?;
            writeln!(stdout)
        }
        Format::Text => writeln!(stdout, "{path}"),
    }
}

/// `/skills`: the skills found from the session's directory (as the model
/// sees them), `name  description  folder` per line, or one `skills` event;
/// skill files that could not be read go to stderr.
async fn skills(
    watch: &mut Watch<'_>,
    store: &Store,
    stdout: &mut impl Write,
    stderr: &mut impl Write,
) -> std::io::Result<()> {
    let session_id = &watch.handle.session_id;
    let directory = match store.get_session(session_id).await {
        Ok(Some(session)) => session.directory,
        Ok(None) => {
            let message = format!("cannot list skills: no session {session_id} in the store");
            return watch.fail(message, stdout, stderr);
        }
        Err(error) => {
            let message = format!("cannot list skills of session {session_id}: {error}");
            return watch.fail(message, stdout, stderr);
        }
    };
    let mut env = crate::session::prompt::Environment::discover(std::path::Path::new(&directory));
    env.config_dir = crate::paths::config_dir();
    let found = crate::skill::discover(&env.skill_roots());
    for problem in &found.problems {
        writeln!(stderr, "warning: {problem}")?;
    }
    if watch.printer.format == Format::Json {
        let skills: Vec<serde_json::Value> = found
            .skills
            .iter()
            .map(|skill| {
                serde_json::json!({
                    "name": skill.name,
                    "description": skill.description,
                    "dir": skill.dir.display().to_string(),
                })
            })
            .collect();
        serde_json::to_writer(
            &mut *stdout,
            &serde_json::json!({ "type": "skills", "skills": skills }),
        )?;
        return writeln!(stdout);
    }
    if found.skills.is_empty() {
        return writeln!(stdout, "No skills found.");
    }
    for skill in &found.skills {
        writeln!(
            stdout,
            "{}  {}  {}",
            skill.name,
            skill.description,
            skill.dir.display()
        )?;
    }
    Ok(())
}

/// `/context` as text (one line per category, as the TUI's overlay) or as
/// one `context` event.
fn print_breakdown(
    breakdown: &ContextBreakdown,
    format: Format,
    stdout: &mut impl Write,
) -> std::io::Result<()> {
    if format == Format::Json {
        let event = serde_json::json!({ "type": "context", "breakdown": breakdown });
        serde_json::to_writer(&mut *stdout, &event)?;
        return writeln!(stdout);
    }
    let gauge = &breakdown.gauge;
    let usable = gauge.usable.max(1) as f64;
    let free = gauge.usable.saturating_sub(gauge.used);
    let rows = breakdown
        .categories
        .iter()
        .map(|(name, tokens)| (name.as_str(), *tokens))
        .chain(std::iter::once(("free", free)));
    for (name, tokens) in rows {
        let percent = tokens as f64 * 100.0 / usable;
        writeln!(
            stdout,
            "{name:<20} {:>9} {percent:>5.1}%",
            thousands(tokens)
        )?;
    }
    if breakdown.difference != 0 {
        let tokens = breakdown.difference.unsigned_abs();
        let sign = if breakdown.difference < 0 { "-" } else { "+" };
        writeln!(
            stdout,
            "{:<20} {:>9} {:>6}  (the provider's count minus cairn's)",
            "provider difference",
            format!("{sign}{}", thousands(tokens)),
            format!("{sign}{:.1}%", tokens as f64 * 100.0 / usable)
        )?;
    }
    let tilde = if gauge.estimated { "~" } else { "" };
    for note in &breakdown.notes {
        writeln!(stdout, "{note}")?;
    }
    writeln!(
        stdout,
        "total {tilde}{} of {} usable ({} window - {} for output)",
        thousands(gauge.used),
        thousands(gauge.usable),
        thousands(gauge.context),
        thousands(gauge.reserved)
    )?;
    writeln!(
        stdout,
        "fixed part (every request): {} ({:.0}% of usable)",
        thousands(breakdown.fixed()),
        breakdown.fixed() as f64 * 100.0 / usable
    )?;
    match gauge.compact_at {
        Some(at) => writeln!(stdout, "automatic compaction at {}", thousands(at))?,
        None => writeln!(stdout, "automatic compaction is off")?,
    }
    if breakdown.prunable > 0 {
        writeln!(
            stdout,
            "/prune could free {} tokens of old tool output now",
            thousands(breakdown.prunable)
        )?;
    }
    if let Some((before, after)) = breakdown.last_compaction {
        writeln!(
            stdout,
            "last compaction: {} -> {} tokens",
            thousands(before),
            thousands(after)
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headless_commands_parse_and_text_stays_text() {
        assert!(matches!(
            parse("/compact focus on the parser"),
            Ok(Some(Slash::Loop(Command::Compact { instructions: Some(focus) }))) if focus == "focus on the parser"
        ));
        assert!(matches!(
            parse("/compact"),
            Ok(Some(Slash::Loop(Command::Compact { instructions: None })))
        ));
        assert!(matches!(
            parse("/prune"),
            Ok(Some(Slash::Served(Command::Prune)))
        ));
        assert!(matches!(parse(" /context\n"), Ok(Some(Slash::Context))));
        assert!(matches!(parse("/export"), Ok(Some(Slash::Export(None)))));
        // A path or an unknown word is the user's text.
        assert!(matches!(parse("/etc/hosts is empty, why?"), Ok(None)));
        assert!(matches!(parse("/compactly say hi"), Ok(None)));
        assert!(matches!(parse("fix /prune in the docs"), Ok(None)));
    }

    #[test]
    fn model_names_a_model_or_is_a_usage_error() {
        assert!(matches!(
            parse("/model openai/gpt-5"),
            Ok(Some(Slash::Served(Command::UseModel { model }))) if model.to_string() == "openai/gpt-5"
        ));
        let error = parse("/model gpt-5").expect_err("no provider");
        assert!(error.contains("provider/model"), "{error}");
        let error = parse("/models").expect_err("no model");
        assert!(error.contains("lists them"), "{error}");
    }

    /// The dispatch's screen-only arm and the table's front ends agree:
    /// every command `cairn run` does not offer is refused with the table's
    /// advice, and no offered one is.
    #[test]
    fn what_run_refuses_is_what_the_table_says() {
        for command in crate::slash::COMMANDS {
            let refused = parse(command.name)
                .err()
                .is_some_and(|error| error.contains("needs the terminal UI"));
            assert_eq!(
                refused,
                !command.is_offered_in(FrontEnd::Run),
                "{}",
                command.name
            );
        }
        assert!(matches!(parse("/help"), Ok(Some(Slash::Help))));
        assert!(matches!(parse("/mcp.json is broken, why?"), Ok(None)));
    }

    #[test]
    fn screen_commands_say_what_to_use_instead() {
        let error = parse("/agent plan").expect_err("needs a screen");
        assert!(error.contains("--agent"), "{error}");
        let error = parse("/sessions").expect_err("needs a screen");
        assert!(error.contains("cairn sessions"), "{error}");
    }
}
