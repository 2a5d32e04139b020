//! The slash-command table: every `/name` a user can type, its arguments,
//! its help line and the front ends that offer it. Data only, no I/O.
//!
//! Completion, `/help`, the TUI's dispatch and `cairn run` all read
//! [`COMMANDS`]; each front end matches on [`Verb`], so a command added here
//! and not handled there is a compile error, not a silent gap (issue #26:
//! five copies had drifted apart). A command is matched by its whole name,
//! never a prefix: `/mcp.json is broken` and `/etc/hosts` are text for the model.

/// Which front end a command is offered in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrontEnd {
    /// The terminal UI.
    Tui,
    /// `cairn run "..."`, one message from a script.
    Run,
    /// An editor speaking the Agent Client Protocol (`cairn acp`): no screen of
    /// ours, no process of its own to end.
    Acp,
}

impl FrontEnd {
    /// How `/help` names it: "(not in `cairn run`: pass --agent NAME)".
    pub fn label(self) -> &'static str {
        match self {
            FrontEnd::Tui => "the terminal UI",
            FrontEnd::Run => "`cairn run`",
            FrontEnd::Acp => "the editor",
        }
    }
}

/// What a command does, for the front ends' dispatch to match on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Compact,
    Prune,
    Context,
    Permissions,
    Undo,
    Redo,
    Diff,
    New,
    Sessions,
    Model,
    Skills,
    Subtasks,
    Mcp,
    Agent,
    Export,
    Copy,
    Help,
    Quit,
}

/// One row of the table.
#[derive(Debug)]
pub struct SlashCommand {
    pub verb: Verb,
    /// `/compact`: what completion inserts and `/help` shows.
    pub name: &'static str,
    /// Other whole names that run it (`/summarize`, OpenCode's word).
    pub aliases: &'static [&'static str],
    /// The arguments, as `/help` shows them (`[path]`); empty when none.
    pub args: &'static str,
    pub help: &'static str,
    pub front_ends: &'static [FrontEnd],
    /// What to do instead where the command is not offered (said by
    /// `cairn run` when it refuses one).
    pub instead: &'static str,
}

const EVERYWHERE: &[FrontEnd] = &[FrontEnd::Tui, FrontEnd::Run, FrontEnd::Acp];
const NO_SCREEN: &[FrontEnd] = &[FrontEnd::Tui, FrontEnd::Run];
const TUI_ONLY: &[FrontEnd] = &[FrontEnd::Tui];

/// Every slash command, in the order `/help` and completion list them.
pub const COMMANDS: &[SlashCommand] = &[
    SlashCommand {
        verb: Verb::Compact,
        name: "/compact",
        aliases: &["/summarize"],
        args: "[instructions]",
        help: "summarise the history now, with an optional focus",
        front_ends: EVERYWHERE,
        instead: "",
    },
    SlashCommand {
        verb: Verb::Prune,
        name: "/prune",
        aliases: &[],
        args: "",
        help: "clear old tool outputs now and say what it freed",
        front_ends: EVERYWHERE,
        instead: "",
    },
    SlashCommand {
        verb: Verb::Context,
        name: "/context",
        aliases: &[],
        args: "",
        help: "what fills the context window, by category",
        front_ends: EVERYWHERE,
        instead: "",
    },
    SlashCommand {
        verb: Verb::Permissions,
        name: "/permissions",
        aliases: &[],
        args: "[revoke N]",
        help: "list the \"always\" answers this project remembers, or forget one",
        front_ends: EVERYWHERE,
        instead: "",
    },
    SlashCommand {
        verb: Verb::Undo,
        name: "/undo",
        aliases: &[],
        args: "[--force]",
        help: "take the last turn back (files and messages) and give back its prompt",
        front_ends: EVERYWHERE,
        instead: "",
    },
    SlashCommand {
        verb: Verb::Redo,
        name: "/redo",
        aliases: &[],
        args: "[--force]",
        help: "bring back the turn undone last",
        front_ends: EVERYWHERE,
        instead: "",
    },
    SlashCommand {
        verb: Verb::Diff,
        name: "/diff",
        aliases: &[],
        args: "",
        help: "the session's changes so far, as a diff",
        front_ends: EVERYWHERE,
        instead: "",
    },
    SlashCommand {
        verb: Verb::New,
        name: "/new",
        aliases: &["/clear"],
        args: "",
        help: "start a new session",
        front_ends: TUI_ONLY,
        instead: "leave out --continue and --session to start a new session",
    },
    SlashCommand {
        verb: Verb::Sessions,
        name: "/sessions",
        aliases: &["/resume"],
        args: "",
        help: "switch to another session",
        front_ends: TUI_ONLY,
        instead: "run `cairn sessions`, then `cairn run --session ID`",
    },
    SlashCommand {
        verb: Verb::Model,
        name: "/model",
        aliases: &["/models"],
        args: "[provider/model]",
        help: "choose the model for the next messages; alone, list the choices",
        front_ends: EVERYWHERE,
        instead: "",
    },
    SlashCommand {
        verb: Verb::Skills,
        name: "/skills",
        aliases: &[],
        args: "",
        help: "list the skills the model can load",
        front_ends: EVERYWHERE,
        instead: "",
    },
    SlashCommand {
        verb: Verb::Subtasks,
        name: "/subtasks",
        aliases: &["/subtask"],
        args: "",
        help: "open a subagent's session (Ctrl+G; Esc goes back)",
        front_ends: TUI_ONLY,
        instead: "open it in the terminal UI: `cairn --session ID`",
    },
    SlashCommand {
        verb: Verb::Mcp,
        name: "/mcp",
        aliases: &[],
        args: "[restart NAME]",
        help: "MCP servers: state, tools, last error; or restart one",
        front_ends: NO_SCREEN,
        instead: "run `cairn run /mcp` in the project",
    },
    SlashCommand {
        verb: Verb::Agent,
        name: "/agent",
        aliases: &["/agents"],
        args: "[build|plan]",
        help: "switch agent (Tab also switches)",
        front_ends: TUI_ONLY,
        instead: "pass --agent NAME",
    },
    SlashCommand {
        verb: Verb::Export,
        name: "/export",
        aliases: &[],
        args: "[path]",
        help: "write the session as Markdown to exports/ in the data directory, or to path",
        front_ends: EVERYWHERE,
        instead: "",
    },
    SlashCommand {
        verb: Verb::Copy,
        name: "/copy",
        aliases: &[],
        args: "",
        help: "copy the last answer to the clipboard (OSC 52)",
        front_ends: TUI_ONLY,
        instead: "the answer is on stdout",
    },
    SlashCommand {
        verb: Verb::Help,
        name: "/help",
        aliases: &[],
        args: "",
        help: "this list: keys and commands in the terminal UI, commands elsewhere",
        front_ends: EVERYWHERE,
        instead: "",
    },
    SlashCommand {
        verb: Verb::Quit,
        name: "/quit",
        aliases: &["/exit", "/q"],
        args: "",
        help: "leave cairn",
        front_ends: TUI_ONLY,
        instead: "`cairn run` ends by itself",
    },
];

impl SlashCommand {
    /// `/export [path]`: the name and its arguments, as `/help` shows them.
    pub fn usage(&self) -> String {
        if self.args.is_empty() {
            self.name.to_string()
        } else {
            format!("{} {}", self.name, self.args)
        }
    }

    pub fn is_offered_in(&self, front_end: FrontEnd) -> bool {
        self.front_ends.contains(&front_end)
    }

    fn is_named(&self, word: &str) -> bool {
        self.name == word || self.aliases.contains(&word)
    }
}

/// The command whose whole name (or alias) is `word`.
pub fn find(word: &str) -> Option<&'static SlashCommand> {
    COMMANDS.iter().find(|command| command.is_named(word))
}

/// The command `message` runs and its arguments (trimmed), or `None` when
/// the message is text for the model: its first word is not a command's
/// whole name (`/etc/hosts is empty?`, `/mcp.json`, `/compactly`).
pub fn parse(message: &str) -> Option<(&'static SlashCommand, &str)> {
    let message = message.trim();
    let (word, args) = message
        .split_once(char::is_whitespace)
        .unwrap_or((message, ""));
    find(word).map(|command| (command, args.trim()))
}

/// `/help`'s rows for `front_end`: (usage, help), every command in table
/// order; one not offered there says so and what to do instead.
pub fn help_rows(front_end: FrontEnd) -> Vec<(String, String)> {
    COMMANDS
        .iter()
        .map(|command| {
            let help = if command.is_offered_in(front_end) {
                command.help.to_string()
            } else {
                let label = front_end.label();
                format!("{} (not in {label}: {})", command.help, command.instead)
            };
            (command.usage(), help)
        })
        .collect()
}

/// [`help_rows`] as plain text, the usage column padded: what `cairn run
/// /help` prints.
pub fn help_text(front_end: FrontEnd) -> String {
    let rows = help_rows(front_end);
    let width = rows.iter().map(|(usage, _)| usage.len()).max().unwrap_or(0);
    rows.iter()
        .map(|(usage, help)| format!("{usage:<width$}  {help}\n"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_match_by_whole_name_only() {
        let verb = |message| parse(message).map(|(command, args)| (command.verb, args));
        assert_eq!(verb("/mcp restart fx"), Some((Verb::Mcp, "restart fx")));
        assert_eq!(
            verb(" /summarize  keep the plan "),
            Some((Verb::Compact, "keep the plan"))
        );
        assert_eq!(verb("/q"), Some((Verb::Quit, "")));
        assert_eq!(verb("/mcp.json is broken, why?"), None);
        assert_eq!(verb("/etc/hosts is empty?"), None);
        assert_eq!(verb("/compactly say hi"), None);
        assert_eq!(verb("fix /prune in the docs"), None);
    }

    #[test]
    fn every_name_and_verb_is_in_the_table_once() {
        let mut names: Vec<&str> = COMMANDS
            .iter()
            .flat_map(|c| std::iter::once(c.name).chain(c.aliases.iter().copied()))
            .collect();
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count, "a name used twice");
        for command in COMMANDS {
            let rows = COMMANDS.iter().filter(|c| c.verb == command.verb).count();
            assert_eq!(rows, 1, "{:?}", command.verb);
            // A command some front end lacks says what to use there.
            let everywhere = EVERYWHERE.iter().all(|f| command.is_offered_in(*f));
            assert!(
                everywhere || !command.instead.is_empty(),
                "{}",
                command.name
            );
        }
    }

    /// The README describes every command of the table, by its usage.
    #[test]
    fn the_readme_names_every_command() {
        let readme = include_str!("../README.md");
        for command in COMMANDS {
            assert!(
                readme.contains(&format!("`{}", command.name)),
                "{}",
                command.name
            );
        }
        assert!(readme.contains("`/export [path]`"));
    }

    #[test]
    fn help_text_is_the_table_with_what_run_lacks_marked() {
        let text = help_text(FrontEnd::Run);
        assert_eq!(text.lines().count(), COMMANDS.len());
        let export = text.lines().find(|l| l.starts_with("/export [path] "));
        assert!(
            export.is_some_and(|l| l.ends_with(
                "  write the session as Markdown to exports/ in the data directory, or to path"
            )),
            "{text}"
        );
        assert!(
            text.contains("(not in `cairn run`: pass --agent NAME)"),
            "{text}"
        );
        assert!(!help_text(FrontEnd::Tui).contains("(not in "));
    }
}
