//! Slash commands typed in the composer: parse `/name args` and turn it into
//! state changes and [`Effect`]s.
//!
//! The table of names and help is [`crate::slash::COMMANDS`]; this file is
//! the TUI's dispatch. No I/O: `/export` names where to write; the runner writes it.

use crate::clock::Millis;
use crate::message::Session;
use crate::session::command::Command;

use crate::session::remembered;
use crate::slash::{SlashCommand, Verb};

use super::TuiExit;
use super::app::{App, Effect, Overlay, Picker, PickerKind};

/// Whether `input` runs a command (one of [`crate::slash::COMMANDS`] or an
/// MCP prompt, by whole name); any other message is text for the model,
/// even when it starts with `/` (`/etc/hosts is empty?`, issue #26).
pub fn is_command(app: &App, input: &str) -> bool {
    crate::slash::parse(input).is_some() || mcp_prompt(app, input)
}

fn mcp_prompt(app: &App, input: &str) -> bool {
    let word = input.split_whitespace().next().unwrap_or("");
    app.mcp_prompts.iter().any(|p| p.command == word)
}

/// Runs the command `input` names (see [`is_command`]).
pub fn run_slash(app: &mut App, input: &str) -> Vec<Effect> {
    match crate::slash::parse(input) {
        Some((command, args)) => run_command(app, command, args),
        None if mcp_prompt(app, input) => vec![Effect::McpPrompt(input.to_string())],
        None => {
            let word = input.split_whitespace().next().unwrap_or(input);
            app.flash = Some(format!("unknown command {word}; /help lists them"));
            Vec::new()
        }
    }
}

fn run_command(app: &mut App, command: &SlashCommand, args: &str) -> Vec<Effect> {
    match command.verb {
        Verb::Compact => {
            let instructions = (!args.is_empty()).then(|| args.to_string());
            return vec![Effect::Send(Command::Compact { instructions })];
        }
        Verb::Prune => return vec![Effect::Send(Command::Prune)],
        Verb::Permissions => match remembered::parse_args(args) {
            Ok(revoke) => return vec![Effect::Send(Command::Permissions { revoke })],
            Err(usage) => app.flash = Some(usage),
        },
        Verb::Context => {
            app.overlay = Some(Overlay::Context(None));
            return vec![Effect::RequestContext];
        }
        Verb::New => app.exit = Some(TuiExit::NewSession),
        Verb::Quit => app.exit = Some(TuiExit::Quit),
        Verb::Help => {
            app.help_scroll = 0;
            app.overlay = Some(Overlay::Help);
        }
        Verb::Agent => match args {
            "" => return app.switch_agent(None),
            "build" | "plan" => return app.switch_agent(Some(args)),
            other => app.flash = Some(format!("no agent named {other:?}; try build or plan")),
        },
        Verb::Model if args.is_empty() => open_model_picker(app),
        Verb::Model => pick_model(app, args),
        Verb::Sessions => {
            // Shown at once from the list held; the fresh one replaces it.
            open_session_picker(app);
            return vec![Effect::ReadSessions];
        }
        Verb::Skills => open_skill_list(app),
        Verb::Subtasks => {
            let mut effects = app.leave_child();
            effects.extend(app.pick_child());
            return effects;
        }
        Verb::Export => {
            let to = (!args.is_empty()).then(|| args.to_string());
            return vec![Effect::Export { to }];
        }
        Verb::Copy => match app.timeline.last_answer() {
            Some(answer) => return vec![Effect::Copy(answer)],
            None => app.flash = Some("no answer to copy yet".into()),
        },
        Verb::Undo | Verb::Redo => return super::undo::slash(app, command.name, args),
        Verb::Diff => return super::undo::open_diff(app),
        Verb::Mcp => return mcp_slash(app, args),
    }
    Vec::new()
}

/// `/mcp` opens the servers overlay; `/mcp restart NAME` restarts one.
fn mcp_slash(app: &mut App, args: &str) -> Vec<Effect> {
    if app.mcp.is_empty() {
        app.flash =
            Some("no MCP servers configured ([mcp.NAME] in cairn.toml, or .mcp.json)".into());
        return Vec::new();
    }
    match args.split_once(char::is_whitespace).unwrap_or((args, "")) {
        ("", _) => app.overlay = Some(Overlay::Mcp(0)),
        ("restart", name) if app.mcp.iter().any(|s| s.name == name.trim()) => {
            app.flash = Some(format!("restarting MCP server {}", name.trim()));
            return vec![Effect::McpRestart(name.trim().to_string())];
        }
        ("restart", name) => {
            app.flash = Some(format!(
                "no MCP server named {:?}; /mcp lists them",
                name.trim()
            ))
        }
        _ => app.flash = Some("usage: /mcp, or /mcp restart NAME".into()),
    }
    Vec::new()
}

/// `/model provider/model`: switches directly; on the first-run screen
/// (no session yet) the TUI restarts with that model.
pub(super) fn pick_model(app: &mut App, name: &str) {
    match crate::message::ModelRef::parse(name) {
        Ok(_) if app.session.id.is_empty() => {
            app.exit = Some(TuiExit::UseModel {
                model: name.to_string(),
                held: app.held_prompt.take(),
            })
        }
        Ok(model) => {
            app.model = Some(model);
            app.model_label = name.to_string();
        }
        Err(error) => app.flash = Some(format!("/model {name}: {error}")),
    }
}

/// `/model`: every choice, grouped by provider (the picker shows a header
/// per provider), the current model selected.
fn open_model_picker(app: &mut App) {
    if app.models.is_empty() {
        app.flash = Some(
            "no models to choose from: set a provider's key, start a local server, or set [model] in config.toml"
                .into(),
        );
        return;
    }
    let selected = app
        .models
        .iter()
        .position(|m| m.name() == app.model_label)
        .unwrap_or(0);
    app.overlay = Some(Overlay::Picker(Picker {
        kind: PickerKind::Model,
        title: "model".into(),
        entries: model_entries(&app.models),
        selected,
        filter: String::new(),
    }));
}

/// The model picker's (value, label) rows.
pub(super) fn model_entries(
    models: &[crate::session::model_choices::ModelChoice],
) -> Vec<(String, String)> {
    models.iter().map(|m| (m.name(), m.label())).collect()
}

/// `/skills`: the skills the model is offered from the session's directory
/// (found as the system prompt finds them: a few directory reads).
fn open_skill_list(app: &mut App) {
    let mut env =
        crate::session::prompt::Environment::discover(std::path::Path::new(&app.session.directory));
    env.config_dir = crate::paths::config_dir();
    let found = crate::skill::discover(&env.skill_roots());
    if found.skills.is_empty() {
        app.flash = Some(match found.problems.first() {
            Some(problem) => format!("no usable skills: {problem}"),
            None => {
                "no skills found (.cairn/skills, .claude/skills, .agents/skills, ~/.claude/skills)"
                    .into()
            }
        });
        return;
    }
    let entries = found
        .skills
        .iter()
        .map(|skill| {
            (
                skill.name.clone(),
                format!("{}  ·  {}", skill.name, skill.description),
            )
        })
        .collect();
    app.overlay = Some(Overlay::Picker(Picker {
        kind: PickerKind::Skill,
        title: "skills".into(),
        entries,
        selected: 0,
        filter: String::new(),
    }));
}

/// The sessions read again for `/sessions`: an open session picker shows
/// them, keeping what was typed to filter and the entry chosen.
pub(super) fn sessions_read(
    app: &mut App,
    sessions: Vec<Session>,
    counts: std::collections::HashMap<String, u64>,
) {
    app.sessions = sessions;
    app.message_counts = counts;
    // The counts include every message held now: only later ones are added.
    app.newest_at_open = app
        .timeline
        .messages()
        .iter()
        .map(|m| m.message.id.clone())
        .max();
    let Some(Overlay::Picker(old)) = &app.overlay else {
        return;
    };
    if old.kind != PickerKind::Session {
        return;
    }
    let filter = old.filter.clone();
    let chosen = old.visible().get(old.selected).map(|(id, _)| id.clone());
    open_session_picker(app);
    if let Some(Overlay::Picker(picker)) = &mut app.overlay {
        picker.filter = filter;
        if let Some(at) = chosen.and_then(|id| picker.visible().iter().position(|(v, _)| *v == id))
        {
            picker.selected = at;
        }
    }
}

pub(super) fn open_session_picker(app: &mut App) {
    if app.sessions.is_empty() {
        app.flash = Some("no other sessions in this directory".into());
        return;
    }
    // The list was read at start: the open session's title and cost have
    // moved since, so its live copy replaces the stale one.
    let live = |s: &Session| {
        if s.id == app.session.id {
            (app.session.clone(), app.live_message_count())
        } else {
            (
                s.clone(),
                app.message_counts.get(&s.id).copied().unwrap_or(0),
            )
        }
    };
    let entries: Vec<(String, String)> = app
        .sessions
        .iter()
        .map(|s| {
            let (session, messages) = live(s);
            (s.id.clone(), session_label(&session, messages, app.now))
        })
        .collect();
    let selected = app
        .sessions
        .iter()
        .position(|s| s.id == app.session.id)
        .unwrap_or(0);
    app.overlay = Some(Overlay::Picker(Picker {
        kind: PickerKind::Session,
        title: "sessions".into(),
        entries,
        selected,
        filter: String::new(),
    }));
}

/// `Fix the parser  ·  12 messages  ·  2h ago  ·  $0.42`: title, message
/// count, age of the last change, cost.
pub fn session_label(session: &Session, messages: u64, now: Millis) -> String {
    let title = if session.title.is_empty() {
        "(untitled)"
    } else {
        session.title.as_str()
    };
    let mut age = age(now - session.time_updated);
    // Past a day, "3d ago" alone does not say which day: the date (UTC, as
    // `cairn sessions` prints it) follows.
    if now - session.time_updated >= DAY_MS {
        let date = crate::clock::format_time(session.time_updated);
        age.push_str(&format!(" ({})", &date[..10]));
    }
    let noun = if messages == 1 { "message" } else { "messages" };
    format!(
        "{title}  ·  {messages} {noun}  ·  {age}  ·  ${:.2}",
        session.cost
    )
}

const DAY_MS: Millis = 86_400_000;

/// `just now`, `5m ago`, `3h ago`, `2d ago`.
fn age(millis: i64) -> String {
    let minutes = millis.max(0) / 60_000;
    match minutes {
        0 => "just now".to_string(),
        1..=59 => format!("{minutes}m ago"),
        60..=1439 => format!("{}h ago", minutes / 60),
        _ => format!("{}d ago", minutes / 1440),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::fixtures::{NOW, app};

    #[test]
    fn the_session_picker_shows_the_open_session_live_with_ages() {
        let mut app = app(Vec::new());
        let mut stale = app.session.clone();
        stale.title = String::new();
        stale.cost = 0.0;
        let mut older = stale.clone();
        older.id = "ses_older".into();
        older.title = "Older work".into();
        older.time_updated = NOW - 3 * 3_600_000;
        app.sessions = vec![stale, older];
        app.message_counts = [("ses_older".to_string(), 1), (app.session.id.clone(), 4)].into();
        app.session.title = "Live title".into();
        app.session.cost = 1.25;
        app.session.time_updated = NOW - 5 * 60_000;
        open_session_picker(&mut app);
        let Some(Overlay::Picker(picker)) = &app.overlay else {
            panic!("the picker opens");
        };
        let labels: Vec<&str> = picker.entries.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(
            labels,
            [
                "Live title  ·  4 messages  ·  5m ago  ·  $1.25",
                "Older work  ·  1 message  ·  3h ago  ·  $0.00"
            ]
        );
    }

    #[test]
    fn mcp_commands_open_restart_and_send_prompts() {
        let mut app = app(Vec::new());
        assert!(run_slash(&mut app, "/mcp").is_empty());
        assert!(
            app.flash
                .as_deref()
                .unwrap_or("")
                .contains("no MCP servers")
        );
        app.mcp = vec![crate::mcp::Status {
            name: "fx".into(),
            state: crate::mcp::State::Ready,
            tools: 7,
            prompts: 1,
            last_error: None,
        }];
        app.mcp_prompts = vec![crate::mcp::PromptCommand {
            command: "/fx:review".into(),
            usage: "<file>".into(),
            description: String::new(),
        }];
        run_slash(&mut app, "/mcp");
        assert_eq!(app.overlay, Some(Overlay::Mcp(0)));
        assert!(matches!(
            run_slash(&mut app, "/mcp restart fx").as_slice(),
            [Effect::McpRestart(name)] if name == "fx"
        ));
        assert!(run_slash(&mut app, "/mcp restart nope").is_empty());
        assert!(
            app.flash
                .as_deref()
                .unwrap_or("")
                .contains("no MCP server named")
        );
        assert!(matches!(
            run_slash(&mut app, "/fx:review src/a.rs").as_slice(),
            [Effect::McpPrompt(line)] if line == "/fx:review src/a.rs"
        ));
        assert!(run_slash(&mut app, "/fx:other").is_empty());
        assert!(
            app.flash
                .as_deref()
                .unwrap_or("")
                .contains("unknown command")
        );
    }

    #[test]
    fn ages_round_down_to_the_unit_shown() {
        assert_eq!(age(30_000), "just now");
        assert_eq!(age(59 * 60_000), "59m ago");
        assert_eq!(age(61 * 60_000), "1h ago");
        assert_eq!(age(50 * 3_600_000), "2d ago");
        assert_eq!(age(-5), "just now");
    }

    #[test]
    fn a_session_older_than_a_day_shows_its_date() {
        let mut session = crate::tui::fixtures::session();
        session.time_updated = NOW - 3 * DAY_MS;
        let label = session_label(&session, 4, NOW);
        let date = &crate::clock::format_time(NOW - 3 * DAY_MS)[..10];
        assert!(label.contains(&format!("3d ago ({date})")), "{label}");
        session.time_updated = NOW - 5 * 3_600_000;
        assert!(!session_label(&session, 4, NOW).contains('('));
    }
}
