//! `view`: draws the prepared [`App`] into a frame, pane by pane.
//!
//! Layout: transcript (fills), activity row (working / retrying / queued),
//! composer, status line; overlays and the permission dialog drawn on top.
//! Reads state only: no I/O, no awaiting, no mutation (the measuring half of a
//! frame is `Viewport::prepare`, run just before).

pub mod card_body;
pub mod composer;
pub mod context;
pub mod diff;
pub mod first_run;
pub mod help;
pub mod mcp;
pub mod permission;
pub mod picker;
pub mod status;
pub mod subtask_card;
pub mod tool_card;
pub mod transcript;
pub mod trust;
pub mod undo;
pub mod welcome;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::Line;
use ratatui::widgets::{Clear, Paragraph};

use std::collections::HashSet;

use super::app::{App, Overlay};
use transcript::BlockInputs;

/// Where each pane goes for a given screen size.
pub struct Areas {
    /// One row naming the child session shown (empty otherwise).
    pub breadcrumb: Rect,
    /// The welcome above an empty transcript (zero rows once a message is sent).
    pub welcome: Rect,
    pub transcript: Rect,
    pub activity: Rect,
    pub composer: Rect,
    pub status: Rect,
}

pub fn areas(app: &App, area: Rect) -> Areas {
    let activity_rows = activity_rows(app, area.width).len() as u16;
    let composer_rows = composer::height(app, area.width)
        .min(area.height / 2)
        .max(2);
    let status_rows = status::rows(app, area.width as usize)
        .height()
        .min(area.height / 2)
        .max(1);
    let breadcrumb_rows = u16::from(app.child_view.is_some());
    let [breadcrumb, transcript, activity, composer, status] = Layout::vertical([
        Constraint::Length(breadcrumb_rows),
        Constraint::Min(1),
        Constraint::Length(activity_rows),
        Constraint::Length(composer_rows),
        Constraint::Length(status_rows),
    ])
    .areas(area);
    // The welcome takes the top of the transcript's room when it fits whole;
    // notes shown before the first message (warnings, errors) keep at
    // least half of that room.
    // Never over a child session being opened (empty until its history arrives).
    let welcome_rows = if welcome::is_shown(app) && app.child_view.is_none() {
        let room = match app.timeline.notes().is_empty() {
            true => transcript.height,
            false => transcript.height / 2,
        };
        Some(welcome::lines(app, area.width).len() as u16).filter(|rows| *rows <= room)
    } else {
        None
    }
    .unwrap_or(0);
    let [welcome, transcript] =
        Layout::vertical([Constraint::Length(welcome_rows), Constraint::Min(0)]).areas(transcript);
    Areas {
        breadcrumb,
        welcome,
        transcript,
        activity,
        composer,
        status,
    }
}

/// Measures and caches what the next frame shows; call before [`draw`].
pub fn prepare(app: &mut App, area: Rect) {
    app.help_scroll = app
        .help_scroll
        .min(help::max_scroll(area, &app.custom_commands));
    let transcript = areas(app, area).transcript;
    let awaiting: HashSet<String> = app
        .permissions
        .iter()
        .filter_map(|r| r.call_id.clone())
        .collect();
    app.timeline.blocks();
    let App {
        timeline,
        viewport,
        scroll,
        now,
        expand_details,
        show_reasoning,
        children,
        open_key,
        ..
    } = app;
    let cx = BlockInputs {
        timeline,
        now: *now,
        expand_details: *expand_details,
        show_reasoning: *show_reasoning,
        awaiting: &awaiting,
        children,
        open_key,
    };
    viewport.prepare(&cx, scroll, transcript.width, transcript.height);
}

pub fn draw(app: &App, frame: &mut Frame<'_>) {
    let area = frame.area();
    if let Some(Overlay::FirstRun(text)) = &app.overlay {
        first_run::draw(text, frame, area);
        return;
    }
    let areas = areas(app, area);
    if let Some(view) = &app.child_view {
        frame.render_widget(
            Paragraph::new(subtask_card::breadcrumb(
                &view.label,
                &app.session.title,
                &app.open_key,
                areas.breadcrumb.width,
            )),
            areas.breadcrumb,
        );
    }
    if areas.welcome.height > 0 {
        let lines = welcome::lines(app, areas.welcome.width);
        frame.render_widget(Paragraph::new(lines), areas.welcome);
    }
    frame.render_widget(Paragraph::new(app.viewport.rows.clone()), areas.transcript);
    if !app.viewport.at_bottom && areas.transcript.height > 0 {
        let hint = " ↓ newer below · End ";
        let width = (hint.chars().count() as u16).min(areas.transcript.width);
        let at = Rect {
            x: areas.transcript.right().saturating_sub(width),
            y: areas.transcript.bottom() - 1,
            width,
            height: 1,
        };
        frame.render_widget(
            Paragraph::new(Line::styled(
                hint,
                Style::default().fg(Color::Black).bg(Color::Yellow),
            )),
            at,
        );
    }
    frame.render_widget(
        Paragraph::new(activity_rows(app, areas.activity.width)),
        areas.activity,
    );
    composer::draw(app, frame, areas.composer);
    status::draw(app, frame, areas.status);
    if !app.completion.is_empty() && app.overlay.is_none() && app.permissions.is_empty() {
        composer::draw_completion(app, frame, areas.composer);
    }
    match &app.overlay {
        Some(Overlay::Context(breakdown)) => context::draw(breakdown.as_ref(), frame, area),
        Some(Overlay::Help) => help::draw(frame, area, app.help_scroll, &app.custom_commands),
        Some(Overlay::Picker(picker)) => picker::draw(picker, frame, area),
        Some(Overlay::Mcp(selected)) => mcp::draw(&app.mcp, *selected, frame, area),
        Some(Overlay::UndoConflict(files)) => undo::draw(files, frame, area),
        Some(Overlay::Diff(view)) => diff::draw(view, frame, area),
        Some(Overlay::Trust(settings)) => trust::draw(settings, frame, area),
        Some(Overlay::FirstRun(_)) | None => {}
    }
    if let Some(request) = app.permissions.front() {
        // An ask from a subagent names it: the user must know who asks.
        let from =
            (request.session_id != app.session.id).then(|| app.child_label(&request.session_id));
        permission::draw(
            request,
            from.as_deref(),
            &app.permission_dialog,
            app.permissions.len(),
            frame,
            areas.transcript,
        );
    }
}

/// The activity lines wrapped at words to `width`: a retry's reason (the
/// provider's error) is read whole, not cut at the edge.
fn activity_rows(app: &App, width: u16) -> Vec<Line<'static>> {
    let mut rows = Vec::new();
    for line in status::activity_lines(app) {
        super::wrap::wrap_into(&line, usize::from(width).max(1), 2, &mut rows);
    }
    rows
}

/// A centred rectangle of at most `width` x `height`, cleared for a popup.
pub fn popup_area(frame: &mut Frame<'_>, area: Rect, width: u16, height: u16) -> Rect {
    let width = width.min(area.width);
    let height = height.min(area.height);
    let rect = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    };
    frame.render_widget(Clear, rect);
    rect
}
