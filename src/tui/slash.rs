//! Slash commands typed in the composer: parse `/name args` and turn it into
//! state changes and [`Effect`]s.
//!
//! The table of names and help lives in `completion`; this file is the
//! dispatch. No I/O: `/export` renders the Markdown here but the runner writes it.

use crate::session::command::Command;
use crate::session::export::export_path;

use crate::session::remembered;

use super::TuiExit;
use super::app::{App, Effect, Overlay, Picker, PickerKind};

pub fn run_slash(app: &mut App, input: &str) -> Vec<Effect> {
    let (name, args) = match input.split_once(char::is_whitespace) {
        Some((name, args)) => (name, args.trim()),
        None => (input, ""),
    };
    match name {
        "/compact" | "/summarize" => {
            let instructions = (!args.is_empty()).then(|| args.to_string());
            return vec![Effect::Send(Command::Compact { instructions })];
        }
        "/prune" => return vec![Effect::Send(Command::Prune)],
        "/permissions" => match remembered::parse_args(args) {
            Ok(revoke) => return vec![Effect::Send(Command::Permissions { revoke })],
            Err(usage) => app.flash = Some(usage),
        },
        "/context" => {
            app.overlay = Some(Overlay::Context(None));
            return vec![Effect::RequestContext];
        }
        "/new" | "/clear" => app.exit = Some(TuiExit::NewSession),
        "/quit" | "/exit" | "/q" => app.exit = Some(TuiExit::Quit),
        "/help" => app.overlay = Some(Overlay::Help),
        "/agent" | "/agents" => match args {
            "" => app.switch_agent(None),
            "build" | "plan" => app.switch_agent(Some(args)),
            other => app.flash = Some(format!("no agent named {other:?}; try build or plan")),
        },
        "/model" | "/models" => open_model_picker(app),
        "/sessions" | "/resume" => open_session_picker(app),
        "/skills" => open_skill_list(app),
        "/export" => {
            let path = export_path(&app.session);
            return vec![Effect::Export { path }];
        }
        "/copy" => match app.timeline.last_answer() {
            Some(answer) => return vec![Effect::Copy(answer)],
            None => app.flash = Some("no answer to copy yet".into()),
        },
        // Not served in the terminal UI yet (the loop would have to be idle
        // and the transcript reloaded); say how to do it rather than "unknown".
        "/undo" | "/redo" | "/diff" => {
            app.flash = Some(format!(
                "{name} is not in the terminal UI yet; in a shell: cairn run --session {} \"{name}\"",
                app.session.id
            ))
        }
        other => app.flash = Some(format!("unknown command {other}; /help lists them")),
    }
    Vec::new()
}

fn open_model_picker(app: &mut App) {
    if app.models.is_empty() {
        app.flash = Some("no models configured; set [model] in config.toml or pass --model".into());
        return;
    }
    let selected = app
        .models
        .iter()
        .position(|m| *m == app.model_label)
        .unwrap_or(0);
    app.overlay = Some(Overlay::Picker(Picker {
        kind: PickerKind::Model,
        title: "model".into(),
        entries: app.models.iter().map(|m| (m.clone(), m.clone())).collect(),
        selected,
    }));
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
    }));
}

fn open_session_picker(app: &mut App) {
    if app.sessions.is_empty() {
        app.flash = Some("no other sessions in this directory".into());
        return;
    }
    let entries: Vec<(String, String)> = app
        .sessions
        .iter()
        .map(|s| {
            let title = if s.title.is_empty() {
                "(untitled)"
            } else {
                s.title.as_str()
            };
            (s.id.clone(), format!("{title}  ·  ${:.2}", s.cost))
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
    }));
}
