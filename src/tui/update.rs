//! `update`: applies a user [`Action`] to the [`App`], layer by layer.
//!
//! The top layer takes the action: the permission dialog, then an overlay
//! (picker, /context, help, first run), then the completion popup, then the
//! composer. Never does I/O: requests for the outside world are returned as
//! [`Effect`]s.

use crate::message::ModelRef;
use crate::permission::PermissionAnswer;
use crate::session::command::Command;

use super::TuiExit;
use super::action::Action;
use super::app::{
    App, Choice, DOUBLE_PRESS_MS, Effect, INTERRUPTING, Overlay, PickerKind, QUEUE_HELD, choices,
};
use super::completion::{custom_candidates, file_candidates, prompt_candidates, slash_candidates};
use super::slash::{is_command, run_slash};
pub fn update(app: &mut App, action: Action) -> Vec<Effect> {
    app.dirty = true;
    match action {
        Action::Resize => return Vec::new(),
        Action::Focus(on) => {
            app.focused = on;
            return Vec::new();
        }
        Action::Suspend => return vec![Effect::Suspend],
        _ => app.last_key = Some(app.now),
    }
    let action = home_or_end(app, action);
    if !app.permissions.is_empty() {
        return permission_key(app, action);
    }
    if app.overlay.is_some() {
        return overlay_key(app, action);
    }
    if app.history_search.is_some() {
        super::history_search::key(&mut app.history_search, &mut app.composer, action);
        return Vec::new();
    }
    if !app.completion.is_empty()
        && let Some(effects) = completion_key(app, &action)
    {
        return effects;
    }
    let effects = composer_key(app, action);
    refresh_completion(app);
    effects
}

/// Home / End edit the composer's line while it has text and no overlay is
/// open; otherwise they scroll, as they always did.
fn home_or_end(app: &App, action: Action) -> Action {
    let editing = !app.composer.is_empty() && app.overlay.is_none();
    match action {
        Action::Home if editing => Action::LineStart,
        Action::End if editing => Action::LineEnd,
        Action::Home => Action::ScrollTop,
        Action::End => Action::ScrollBottom,
        other => other,
    }
}

/// Keys while a permission dialog is open. Nothing typed by chance answers
/// it: text keys go to the composer (and move the focus there, so the Enter
/// ending a message sends the message); no answer is chosen until ↑/↓ choose
/// one, so Enter alone never answers (issue #28: a habit Enter approved);
/// only ↑/↓ then Enter, or Esc, pressed with the dialog focused and after
/// its guard time answer. Scrolling is never an
/// answer and works at any time.
fn permission_key(app: &mut App, action: Action) -> Vec<Effect> {
    let Some(request) = app.permissions.front().cloned() else {
        return Vec::new();
    };
    match action {
        Action::PageUp
        | Action::PageDown
        | Action::ScrollTop
        | Action::ScrollBottom
        | Action::ToggleDetails
        | Action::ToggleReasoning
        | Action::CtrlC => return composer_key(app, action),
        Action::ScrollLines(n) => {
            let dialog = &mut app.permission_dialog;
            dialog.preview_scroll = dialog.preview_scroll.saturating_add_signed(n as i16);
            return Vec::new();
        }
        _ => {}
    }
    if let Some(reason) = &mut app.permission_dialog.reason {
        // Reached only through a deliberate Enter on "Reject": typing here is for the reason.
        match action {
            Action::Insert(c) => reason.push(c),
            Action::Paste(text) => reason.push_str(&text),
            Action::Backspace => {
                reason.pop();
            }
            Action::Escape => app.permission_dialog.reason = None,
            Action::Enter => {
                let message = reason.trim().to_string();
                let answer = PermissionAnswer::Reject {
                    message: (!message.is_empty()).then_some(message),
                };
                return answer_permission(app, &request.id, answer);
            }
            _ => {}
        }
        return Vec::new();
    }
    if is_text_key(&action) {
        app.permission_dialog.composer_focused = true;
        let effects = composer_key(app, action);
        refresh_completion(app);
        return effects;
    }
    let dialog = &mut app.permission_dialog;
    if dialog.composer_focused && action == Action::Enter {
        return composer_key(app, action);
    }
    if app.now < dialog.armed_at {
        return Vec::new();
    }
    let offered = choices(&request);
    let last = offered.len() - 1;
    match action {
        Action::Up | Action::Down if dialog.composer_focused => dialog.composer_focused = false,
        Action::Up => dialog.selected = Some(dialog.selected.map_or(last, |i| i.saturating_sub(1))),
        Action::Down => dialog.selected = Some(dialog.selected.map_or(0, |i| (i + 1).min(last))),
        Action::Escape => {
            return answer_permission(app, &request.id, PermissionAnswer::Reject { message: None });
        }
        // Nothing chosen yet: this Enter was meant for the composer.
        Action::Enter if dialog.selected.is_none() => return composer_key(app, action),
        Action::Enter => {
            let answer = match dialog
                .selected
                .and_then(|i| offered.get(i))
                .copied()
                .unwrap_or(Choice::Reject)
            {
                Choice::Once => PermissionAnswer::Once,
                Choice::Always => PermissionAnswer::Always,
                Choice::AlwaysBroad => PermissionAnswer::AlwaysBroad,
                Choice::Reject => {
                    dialog.reason = Some(String::new());
                    return Vec::new();
                }
            };
            return answer_permission(app, &request.id, answer);
        }
        _ => {}
    }
    Vec::new()
}

/// Keys that edit text: while a dialog is open they go to the composer.
fn is_text_key(action: &Action) -> bool {
    matches!(
        action,
        Action::Insert(_)
            | Action::Paste(_)
            | Action::Newline
            | Action::Backspace
            | Action::Delete
            | Action::Left
            | Action::Right
            | Action::LineStart
            | Action::LineEnd
            | Action::KillToEnd
            | Action::KillToStart
            | Action::DeleteWordBack
            | Action::WordBack
            | Action::WordForward
    )
}

fn answer_permission(app: &mut App, request_id: &str, answer: PermissionAnswer) -> Vec<Effect> {
    app.permissions.pop_front();
    app.open_permission_dialog();
    vec![Effect::Send(Command::AnswerPermission {
        request_id: request_id.to_string(),
        answer,
    })]
}

/// The trust dialog: only `t` trusts; Enter, Esc and `c` continue without.
fn trust_key(app: &mut App, action: &Action) -> Vec<Effect> {
    match action {
        Action::Insert('t' | 'T') => {
            app.overlay = None;
            app.flash = Some("trusting the project…".into());
            app.exit = Some(super::TuiExit::TrustProject);
        }
        Action::Insert('c' | 'C') | Action::Escape | Action::Enter => {
            app.overlay = None;
            app.flash =
                Some("the project's settings are not applied; `cairn trust` trusts it".into());
        }
        _ => {}
    }
    Vec::new()
}

fn overlay_key(app: &mut App, action: Action) -> Vec<Effect> {
    if action == Action::CtrlC {
        return composer_key(app, action);
    }
    if let Some(Overlay::Mcp(selected)) = app.overlay {
        return mcp_key(app, selected, action);
    }
    if matches!(app.overlay, Some(Overlay::Trust(_))) {
        return trust_key(app, &action);
    }
    if matches!(app.overlay, Some(Overlay::FirstRun(_))) && is_text_key(&action) {
        // Typing is not lost behind the welcome box (`/model` as it
        // suggests, or a first message): the box gives way to the composer.
        app.overlay = None;
        let effects = composer_key(app, action);
        refresh_completion(app);
        return effects;
    }
    if matches!(app.overlay, Some(Overlay::UndoConflict(_))) {
        return super::undo::conflict_key(app, &action);
    }
    if matches!(app.overlay, Some(Overlay::Diff(_))) {
        super::undo::diff_key(app, &action);
        return Vec::new();
    }
    if app.overlay == Some(Overlay::Help) {
        // Taller than a small terminal: it scrolls (`view::prepare` keeps it in range).
        let by: i32 = match action {
            Action::Up => -1,
            Action::Down => 1,
            Action::ScrollLines(n) => n,
            Action::PageUp => -10,
            Action::PageDown => 10,
            _ => 0,
        };
        app.help_scroll = app
            .help_scroll
            .saturating_add_signed(by.clamp(-100, 100) as i16);
    }
    let Some(Overlay::Picker(picker)) = &mut app.overlay else {
        // Read-only overlays close on Esc, Enter or q.
        if matches!(action, Action::Escape | Action::Enter | Action::Insert('q')) {
            app.overlay = None;
        }
        return Vec::new();
    };
    match action {
        Action::Up => picker.selected = picker.selected.saturating_sub(1),
        Action::Down => {
            picker.selected = (picker.selected + 1).min(picker.visible().len().saturating_sub(1))
        }
        Action::Insert(typed) => {
            picker.filter.push(typed);
            picker.selected = 0;
        }
        Action::Backspace => {
            picker.filter.pop();
            picker.selected = 0;
        }
        Action::Escape => app.overlay = None,
        Action::Enter => {
            let kind = picker.kind;
            let Some((value, _)) = picker.visible().get(picker.selected).copied().cloned() else {
                app.overlay = None;
                return Vec::new();
            };
            app.overlay = None;
            match kind {
                PickerKind::Model if app.session.id.is_empty() => {
                    app.exit = Some(TuiExit::UseModel {
                        model: value,
                        held: app.held_prompt.take(),
                    });
                }
                PickerKind::Model => {
                    app.model = ModelRef::parse(&value).ok();
                    app.model_label = value;
                }
                PickerKind::Session => {
                    if value != app.session.id {
                        app.exit = Some(TuiExit::SwitchSession(value));
                    }
                }
                // The skill is named in the composer; the user says what
                // it is for and sends it (the model loads it by name).
                PickerKind::Skill => app.composer.set_text(&format!("use the {value} skill: ")),
                PickerKind::Subtask => return app.open_child(&value),
            }
        }
        _ => {}
    }
    Vec::new()
}

/// Keys in the `/mcp` overlay: ↑/↓ select a server, `r` restarts it, Esc,
/// Enter or `q` close.
fn mcp_key(app: &mut App, selected: usize, action: Action) -> Vec<Effect> {
    let last = app.mcp.len().saturating_sub(1);
    match action {
        Action::Up => app.overlay = Some(Overlay::Mcp(selected.saturating_sub(1))),
        Action::Down => app.overlay = Some(Overlay::Mcp((selected + 1).min(last))),
        Action::Insert('r') => {
            if let Some(server) = app.mcp.get(selected) {
                let name = server.name.clone();
                app.flash = Some(format!("restarting MCP server {name}"));
                return vec![Effect::McpRestart(name)];
            }
        }
        Action::Escape | Action::Enter | Action::Insert('q') => app.overlay = None,
        _ => {}
    }
    Vec::new()
}

/// Keys for the completion popup; `None` lets the composer have the key.
fn completion_key(app: &mut App, action: &Action) -> Option<Vec<Effect>> {
    match action {
        Action::Up => {
            app.completion_selected = app.completion_selected.saturating_sub(1);
        }
        Action::Down => {
            app.completion_selected = (app.completion_selected + 1).min(app.completion.len() - 1);
        }
        Action::Tab | Action::Enter => {
            let candidate = app.completion.get(app.completion_selected)?.clone();
            let (start, token) = app.composer.token_at_cursor()?;
            // Enter on an exact slash command runs it instead of completing it.
            if *action == Action::Enter && token == candidate.insert {
                return None;
            }
            let insert = if candidate.insert.starts_with('@') {
                format!("{} ", candidate.insert)
            } else {
                candidate.insert.clone()
            };
            app.composer.replace_token(start, &insert);
            app.completion.clear();
        }
        Action::Escape => app.completion.clear(),
        _ => return None,
    }
    Some(Vec::new())
}

pub(super) fn refresh_completion(app: &mut App) {
    let candidates = match app.composer.token_at_cursor() {
        Some((0, token)) if token.starts_with('/') && !app.composer.text().contains(' ') => {
            let mut candidates = slash_candidates(token);
            candidates.extend(prompt_candidates(&app.mcp_prompts, token));
            candidates.extend(custom_candidates(&app.custom_commands, token));
            candidates
        }
        Some((_, token)) if token.starts_with('@') => file_candidates(&app.files, &token[1..]),
        _ => Vec::new(),
    };
    if candidates != app.completion {
        app.completion_selected = 0;
    }
    app.completion = candidates;
}

fn composer_key(app: &mut App, action: Action) -> Vec<Effect> {
    let composer = &mut app.composer;
    match action {
        Action::Insert(c) => composer.insert_char(c),
        Action::Paste(text) => composer.paste(&text),
        Action::Newline => composer.insert_char('\n'),
        Action::Backspace => composer.backspace(),
        Action::Delete => composer.delete(),
        Action::Left => composer.move_left(),
        Action::Right => composer.move_right(),
        Action::Up if composer.is_on_first_line() => composer.history_back(),
        Action::Up => move_vertically(composer, true),
        Action::Down if composer.is_on_last_line() => composer.history_forward(),
        Action::Down => move_vertically(composer, false),
        Action::LineStart => composer.move_line_start(),
        Action::LineEnd => composer.move_line_end(),
        Action::KillToEnd => composer.kill_to_end(),
        Action::KillToStart => composer.kill_to_start(),
        Action::DeleteWordBack => composer.delete_word_back(),
        Action::WordBack => composer.move_word_back(),
        Action::WordForward => composer.move_word_forward(),
        Action::Enter => return submit(app),
        Action::Tab => return app.switch_agent(None),
        Action::CycleMode => return app.cycle_mode(),
        Action::ExternalEditor => return vec![Effect::EditDraft(composer.text().to_string())],
        Action::Escape => return escape(app),
        Action::CtrlC => return ctrl_c(app),
        Action::ScrollLines(n) => app.scroll.by(n.into()),
        Action::PageUp => app.scroll.by(-page(app)),
        Action::PageDown => app.scroll.by(page(app)),
        Action::ScrollTop => app.scroll.top(),
        Action::ScrollBottom => app.scroll.follow(),
        Action::ToggleDetails => {
            app.expand_details = !app.expand_details;
            app.flash = Some(toggle_notice(app.expand_details, TOGGLE_DETAILS));
            app.timeline.bump_all();
            // Expanded patch cards show their step's diff, read on demand.
            return super::undo::wanted_patch_diffs(app);
        }
        Action::ToggleReasoning => {
            app.show_reasoning = !app.show_reasoning;
            app.flash = Some(toggle_notice(app.show_reasoning, TOGGLE_REASONING));
            app.timeline.bump_all();
        }
        Action::OpenSubtask => return app.open_subtask_key(),
        Action::SearchHistory => {
            super::history_search::open(&mut app.history_search, &mut app.composer);
        }
        Action::Resize | Action::Suspend | Action::Home | Action::End | Action::Focus(_) => {}
    }
    Vec::new()
}

/// What Ctrl+O and Ctrl+T toggle, for the notice saying which way it went.
const TOGGLE_DETAILS: (&str, &str) = ("Ctrl+O", "tool output and summaries");
const TOGGLE_REASONING: (&str, &str) = ("Ctrl+T", "reasoning");

/// `Ctrl+O: tool output and summaries expanded (Ctrl+O folds)`.
fn toggle_notice(on: bool, (key, what): (&str, &str)) -> String {
    if on {
        format!("{what} expanded ({key} folds)")
    } else {
        format!("{what} folded ({key} expands)")
    }
}

fn page(app: &App) -> i64 {
    i64::from(app.viewport.height.saturating_sub(2).max(1))
}

fn move_vertically(composer: &mut super::composer::Composer, up: bool) {
    // Keep it simple and predictable: jump to the same line's edge, then step.
    if up {
        composer.move_line_start();
        composer.move_left();
    } else {
        composer.move_line_end();
        composer.move_right();
    }
}

fn submit(app: &mut App) -> Vec<Effect> {
    let draft = app.composer.text().trim();
    if app.child_view.is_some() && !draft.is_empty() && !is_command(app, draft) {
        // The child is shown read-only; the draft stays for the parent.
        app.flash = Some(format!(
            "this is a subagent's session, read-only · Esc or {} goes back to send it",
            app.open_key
        ));
        return Vec::new();
    }
    let text = app.composer.take();
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return send_held_queue(app);
    }
    app.scroll.follow();
    app.flash = None;
    if is_command(app, trimmed) {
        return run_slash(app, trimmed);
    }
    if let Some(command) = trimmed.strip_prefix('!') {
        return vec![Effect::Send(Command::Shell {
            command: command.trim().to_string(),
        })];
    }
    if app.session.id.is_empty() {
        // The first-run screen: no session answers yet. Held, and sent by
        // the TUI that opens once `/model` picks a model.
        app.held_prompt = Some(text);
        app.flash = Some(HELD.into());
        return Vec::new();
    }
    if app.is_busy() {
        app.queued.push_back(text);
        return Vec::new();
    }
    // Sending releases prompts Esc held: they were typed first, so go first.
    app.queue_held = false;
    let mut effects = Vec::new();
    app.flush_queue(&mut effects);
    effects.push(Effect::Send(app.prompt(text)));
    effects
}

/// Said when a message is sent before any model is chosen.
const HELD: &str = "no model yet: your message is kept and sent once you pick a model with /model";

/// `text` sent as if typed and entered (`cairn "PROMPT"`).
pub fn send_now(app: &mut App, text: &str) -> Vec<Effect> {
    app.composer.set_text(text);
    submit(app)
}

/// Enter on an empty composer after Esc held the queue: send it now.
fn send_held_queue(app: &mut App) -> Vec<Effect> {
    let mut effects = Vec::new();
    if app.queue_held && !app.is_busy() {
        app.queue_held = false;
        app.flash = None;
        app.flush_queue(&mut effects);
    }
    effects
}

fn escape(app: &mut App) -> Vec<Effect> {
    if app.child_view.is_some() {
        // Esc leaves the child first; the next one interrupts as usual.
        return app.leave_child();
    }
    let now = app.now;
    if app.escape_is_recent() && !app.queued.is_empty() {
        restore_queued(app);
        app.last_escape = None;
        return Vec::new();
    }
    app.last_escape = Some(now);
    if app.is_busy() {
        // What was queued is not sent behind the user's back once the
        // interrupt lands: it waits for Enter (or Esc Esc to edit it).
        app.queue_held = !app.queued.is_empty();
        app.flash = Some(if app.queued.is_empty() {
            INTERRUPTING.to_string()
        } else {
            format!("{INTERRUPTING} {QUEUE_HELD}")
        });
        return vec![Effect::Send(Command::Interrupt)];
    }
    Vec::new()
}

/// Esc Esc: queued prompts go back into the composer (oldest first, before
/// whatever is being typed) instead of being dropped.
fn restore_queued(app: &mut App) {
    app.queue_held = false;
    let mut texts: Vec<String> = app.queued.drain(..).collect();
    if !app.composer.is_empty() {
        texts.push(app.composer.text().to_string());
    }
    app.composer.set_text(&texts.join("\n"));
    app.flash = Some("queued message back in the composer".into());
}

/// Ctrl+C: a busy turn is interrupted first (the draft stays); otherwise the
/// draft is cleared; with nothing to clear, a second press quits.
fn ctrl_c(app: &mut App) -> Vec<Effect> {
    let recent = app
        .last_ctrl_c
        .is_some_and(|t| app.now - t <= DOUBLE_PRESS_MS);
    if app.is_busy() && !recent {
        app.last_ctrl_c = Some(app.now);
        app.flash = Some(format!("{INTERRUPTING} (Ctrl+C again to quit)"));
        return vec![Effect::Send(Command::Interrupt)];
    }
    if !app.composer.is_empty() {
        app.composer.clear();
        app.last_ctrl_c = None;
        return Vec::new();
    }
    if recent {
        app.exit = Some(TuiExit::Quit);
        return Vec::new();
    }
    app.last_ctrl_c = Some(app.now);
    app.flash = Some("press Ctrl+C again to quit".into());
    Vec::new()
}
