//! What the user wants, decoded from input: the vocabulary between `keys`
//! (which produces actions) and `update` (which applies them).
//!
//! Actions are mode-free: `update` decides what `Up` or `Enter` means for the
//! layer on top (composer, popup, dialog, picker).

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Insert(char),
    Paste(String),
    Newline,
    Backspace,
    Delete,
    Left,
    Right,
    Up,
    Down,
    LineStart,
    LineEnd,
    KillToEnd,
    KillToStart,
    DeleteWordBack,
    WordBack,
    WordForward,
    /// Enter: send, confirm a choice, accept a completion.
    Enter,
    /// Tab: accept a completion, or switch agent (build <-> plan).
    Tab,
    /// Shift+Tab: the next mode, build → accept edits → plan → build.
    CycleMode,
    /// Ctrl+X: edit the draft in `$VISUAL`/`$EDITOR`.
    ExternalEditor,
    /// The terminal gained (`true`) or lost the focus.
    Focus(bool),
    /// Esc: close the top layer, or interrupt the agent.
    Escape,
    /// Ctrl+C: interrupt a busy turn, else clear the input; twice in a row quits.
    CtrlC,
    /// Home / End: the composer line's edges while it has text, else the
    /// transcript's top / bottom (Ctrl+Home / Ctrl+End always scroll).
    Home,
    End,
    ScrollLines(i32),
    PageUp,
    PageDown,
    ScrollTop,
    ScrollBottom,
    /// Ctrl+O: expand or collapse tool outputs and compaction summaries.
    ToggleDetails,
    /// Ctrl+T: show or fold reasoning.
    ToggleReasoning,
    Resize,
    /// Ctrl+Z: suspend to the shell.
    Suspend,
    /// Ctrl+G: open a subtask's child session, or go back from one.
    OpenSubtask,
    /// Ctrl+R: search the prompts typed earlier in this project.
    SearchHistory,
}
