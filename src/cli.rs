//! Command-line arguments (clap derive) and the exit codes cairn uses.
//!
//! Only the shape of the command line lives here; `main.rs` decides what each
//! command does. Parsing must stay cheap: `--version` never loads anything.

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::config::Overrides;

/// Everything went as asked.
pub const EXIT_OK: u8 = 0;
/// Something failed at run time: bad config, I/O, a provider error.
pub const EXIT_FAILURE: u8 = 1;
/// The command line was wrong, or asks for something this build cannot do yet.
pub const EXIT_USAGE: u8 = 2;
/// `cairn run`: the answer was delivered on stdout, then a later step (a
/// compaction, a prune) failed; stderr says what.
pub const EXIT_FAILED_AFTER_ANSWER: u8 = 3;
/// The session is open in another cairn process (`cairn run --continue`
/// twice at once, or a TUI on it): nothing was sent.
pub const EXIT_SESSION_BUSY: u8 = 4;

/// A terminal coding agent.
#[derive(Debug, Parser)]
#[command(name = "cairn", version, about, long_about = None)]
pub struct Cli {
    /// Reopen the most recent session.
    #[arg(short = 'c', long = "continue", conflicts_with = "session")]
    pub resume_last: bool,
    /// Reopen the session with this id.
    #[arg(short = 's', long, value_name = "ID")]
    pub session: Option<String>,
    #[command(flatten)]
    pub config: ConfigFlags,
    /// A first message: the terminal UI opens with it sent (`cairn "fix the
    /// failing test"`, as `claude "..."` and `codex "..."`); several words
    /// are joined with spaces.
    #[arg(value_name = "PROMPT")]
    pub prompt: Vec<String>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Flags that override config keys; accepted by the TUI, `run` and `config`.
#[derive(Debug, Clone, Default, Args)]
pub struct ConfigFlags {
    /// Model to use, as provider/model (overrides `model`).
    #[arg(short = 'm', long, value_name = "PROVIDER/MODEL")]
    pub model: Option<String>,
    /// Agent to start with (overrides `default_agent`).
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// Allow every tool call without asking (sets `yolo = true`).
    #[arg(long)]
    pub yolo: bool,
    /// How commands are confined: workspace-write (default), read-only or
    /// off (sets `sandbox.mode`; `--yolo` never leaves the sandbox).
    #[arg(long, value_name = "MODE")]
    pub sandbox: Option<String>,
}

impl ConfigFlags {
    pub fn to_overrides(&self) -> Overrides {
        Overrides {
            model: self.model.clone(),
            agent: self.agent.clone(),
            yolo: self.yolo,
            sandbox: self.sandbox.clone(),
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one message without the terminal UI and print the answer.
    Run(RunArgs),
    /// Serve the Agent Client Protocol on stdin/stdout, for an editor
    /// (Zed, JetBrains, Neovim, Emacs) to drive cairn.
    Acp,
    /// List saved sessions.
    Sessions,
    /// Print the merged configuration and where each value came from.
    Config {
        #[command(flatten)]
        config: ConfigFlags,
    },
    /// Trust the project in this directory: list the settings its files ask
    /// for (permissions, MCP servers, provider URLs) and apply them from now on.
    Trust {
        /// Forget this project's trust instead.
        #[arg(long)]
        revoke: bool,
    },
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// How to print the result (`--output-format`, claude's name, works too).
    #[arg(long, alias = "output-format", value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Continue the most recent session.
    #[arg(short = 'c', long = "continue", conflicts_with = "session")]
    pub resume_last: bool,
    /// Continue the session with this id.
    #[arg(short = 's', long, value_name = "ID")]
    pub session: Option<String>,
    #[command(flatten)]
    pub config: ConfigFlags,
    /// Apply the project's risky settings (permissions, MCP servers, provider
    /// URLs) for this run without storing trust: for CI that vetted the repository.
    #[arg(long)]
    pub trust_project: bool,
    /// The message to send; several words are joined with spaces. None, or
    /// `-`: read from stdin; piped stdin is attached after a message.
    #[arg(value_name = "MESSAGE")]
    pub message: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// The answer as plain text.
    Text,
    /// One JSON event per line, the `result` last (`stream-json`, claude's
    /// name for such lines, is the same).
    #[value(alias = "stream-json")]
    Json,
}

impl Cli {
    /// How `cairn run` prints; `None` for the other commands.
    pub fn run_format(&self) -> Option<Format> {
        match &self.command {
            Some(Command::Run(run)) => Some(run.format),
            _ => None,
        }
    }

    /// The config flags that apply to the chosen command: those given after
    /// the subcommand win, those given before it (`cairn --model X run ...`)
    /// fill in the rest.
    /// `cairn run --trust-project`.
    pub fn trusts_project(&self) -> bool {
        matches!(&self.command, Some(Command::Run(run)) if run.trust_project)
    }

    pub fn config_flags(&self) -> ConfigFlags {
        let after = match &self.command {
            Some(Command::Run(run)) => &run.config,
            Some(Command::Config { config }) => config,
            Some(Command::Sessions | Command::Acp | Command::Trust { .. }) | None => {
                return self.config.clone();
            }
        };
        ConfigFlags {
            model: after.model.clone().or_else(|| self.config.model.clone()),
            agent: after.agent.clone().or_else(|| self.config.agent.clone()),
            yolo: after.yolo || self.config.yolo,
            sandbox: after
                .sandbox
                .clone()
                .or_else(|| self.config.sandbox.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn run_joins_nothing_but_keeps_every_word() {
        let cli = Cli::try_parse_from(["cairn", "run", "--model", "a/b", "fix", "the test"])
            .expect("valid command line");
        let Some(Command::Run(run)) = &cli.command else {
            panic!("expected run, got {:?}", cli.command);
        };
        assert_eq!(run.message, ["fix", "the test"]);
        assert_eq!(cli.config_flags().model.as_deref(), Some("a/b"));
    }

    /// Issue #12: `cairn --model X run ...` ignored the flag given before
    /// the subcommand.
    #[test]
    fn flags_before_the_subcommand_apply_to_it() {
        let cli = Cli::try_parse_from(["cairn", "--model", "a/b", "--yolo", "run", "hi"])
            .expect("valid command line");
        let flags = cli.config_flags();
        assert_eq!(flags.model.as_deref(), Some("a/b"));
        assert!(flags.yolo);
        let cli = Cli::try_parse_from(["cairn", "-m", "a/b", "config", "--agent", "plan"])
            .expect("valid command line");
        let flags = cli.config_flags();
        assert_eq!(flags.model.as_deref(), Some("a/b"));
        assert_eq!(flags.agent.as_deref(), Some("plan"));
        // The later flag wins.
        let cli = Cli::try_parse_from(["cairn", "-m", "a/b", "run", "-m", "c/d", "hi"])
            .expect("valid command line");
        assert_eq!(cli.config_flags().model.as_deref(), Some("c/d"));
    }

    /// `cairn "fix the failing test"` is a prompt for the terminal UI; the
    /// subcommands keep their names.
    #[test]
    fn words_that_are_no_subcommand_are_the_first_prompt() {
        let cli = Cli::try_parse_from(["cairn", "-m", "a/b", "fix the failing test"])
            .expect("valid command line");
        assert!(cli.command.is_none());
        assert_eq!(cli.prompt, ["fix the failing test"]);
        let cli = Cli::try_parse_from(["cairn", "sessions"]).expect("valid command line");
        assert!(matches!(cli.command, Some(Command::Sessions)));
        assert!(cli.prompt.is_empty());
    }
}
