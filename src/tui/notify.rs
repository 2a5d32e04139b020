//! Notifications through the terminal itself: OSC 9 where the terminal
//! shows it as a desktop notification (iTerm2, WezTerm, Ghostty, kitty,
//! Windows Terminal), OSC 777 where that is the spelling (rxvt-unicode,
//! foot and other VTE terminals), else a bell. Pure: the caller writes it.

/// What is known of the terminal from the environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Terminal {
    /// `TERM_PROGRAM`
    pub program: String,
    /// `TERM`
    pub term: String,
    /// `VTE_VERSION` is set (GNOME Terminal, Tilix and other VTE terminals).
    pub vte: bool,
    /// `KITTY_WINDOW_ID` is set.
    pub kitty: bool,
}

impl Terminal {
    pub fn from_env() -> Self {
        let var = |name| std::env::var(name).unwrap_or_default();
        Self {
            program: var("TERM_PROGRAM"),
            term: var("TERM"),
            vte: std::env::var_os("VTE_VERSION").is_some(),
            kitty: std::env::var_os("KITTY_WINDOW_ID").is_some(),
        }
    }
}

/// The bytes that notify `text` on `terminal`.
pub fn sequence(text: &str, terminal: &Terminal) -> String {
    // Control characters would end the sequence early or start another.
    let text: String = text.chars().filter(|c| !c.is_control()).collect();
    let program = terminal.program.to_ascii_lowercase();
    let osc9 = ["iterm.app", "wezterm", "ghostty", "windowsterminal"]
        .iter()
        .any(|p| program.contains(p))
        || terminal.kitty;
    if osc9 {
        format!("\x1b]9;{text}\x07")
    } else if terminal.vte || terminal.term.contains("rxvt") || terminal.term.starts_with("foot") {
        format!("\x1b]777;notify;cairn;{text}\x07")
    } else {
        "\x07".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_terminal_gets_the_sequence_it_shows() {
        let wezterm = Terminal {
            program: "WezTerm".into(),
            ..Terminal::default()
        };
        assert_eq!(sequence("done\x07", &wezterm), "\x1b]9;done\x07");
        let vte = Terminal {
            term: "xterm-256color".into(),
            vte: true,
            ..Terminal::default()
        };
        assert_eq!(sequence("done", &vte), "\x1b]777;notify;cairn;done\x07");
        let xterm = Terminal {
            term: "xterm-256color".into(),
            ..Terminal::default()
        };
        assert_eq!(sequence("done", &xterm), "\x07");
    }
}
