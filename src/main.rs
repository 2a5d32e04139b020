//! The `cairn` binary: parse arguments, load config, start logging, dispatch
//! to the TUI or a headless command, and turn errors into exit codes.
//!
//! Thin on purpose: behaviour lives in the library. `--version` and `--help`
//! return before any file is opened or any runtime is started.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Mutex;

use anyhow::Context;
use clap::Parser;

use cairn::cli::{Cli, Command, EXIT_FAILURE, EXIT_OK, EXIT_USAGE};
use cairn::config::{self, LoadOptions, Loaded};

fn main() -> ExitCode {
    // clap exits by itself for --version, --help and usage errors (code 2).
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(EXIT_FAILURE)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<u8> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let options = LoadOptions::from_process(cwd, cli.config_flags().to_overrides());
    let loaded = config::load(&options)?;
    for warning in &loaded.warnings {
        eprintln!("warning: {warning}");
    }
    init_logging(&loaded.config.log.level.to_string());
    tracing::info!(version = env!("CARGO_PKG_VERSION"), files = ?loaded.files, "cairn starting");
    dispatch(cli, loaded)
}

/// The one place that decides what each command does.
fn dispatch(cli: Cli, loaded: Loaded) -> anyhow::Result<u8> {
    match cli.command {
        None => {
            println!(
                "cairn: the terminal UI is not built yet; try `cairn config` or `cairn --help`"
            );
            Ok(EXIT_OK)
        }
        Some(Command::Run(_)) => not_built("cairn run"),
        Some(Command::Sessions) => not_built("cairn sessions"),
        Some(Command::Config { .. }) => {
            let mut stdout = std::io::stdout().lock();
            if loaded.files.is_empty() {
                writeln!(stdout, "# no config files found; showing defaults")?;
            } else {
                for file in &loaded.files {
                    writeln!(stdout, "# read {}", file.display())?;
                }
            }
            write!(stdout, "{}", loaded.render())?;
            Ok(EXIT_OK)
        }
    }
}

fn not_built(command: &str) -> anyhow::Result<u8> {
    eprintln!("error: {command} is not built yet");
    Ok(EXIT_USAGE)
}

/// Logs go to the data directory's log file, never to the terminal (the TUI
/// owns it). A log that cannot be opened is reported once and otherwise ignored:
/// losing logs must not stop the agent.
fn init_logging(level: &str) {
    let file = cairn::paths::log_path()
        .map_err(anyhow::Error::from)
        .and_then(|path| {
            let mut options = std::fs::OpenOptions::new();
            // The log may quote prompts and file contents: owner-only, like the data dir.
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            options
                .create(true)
                .append(true)
                .open(&path)
                .with_context(|| format!("cannot open log file {}", path.display()))
        });
    let file = match file {
        Ok(file) => file,
        Err(error) => {
            eprintln!("warning: logging disabled: {error:#}");
            return;
        }
    };
    let filter = tracing_subscriber::EnvFilter::try_new(level).unwrap_or_else(|error| {
        eprintln!("warning: log level {level:?} is not valid ({error}); using \"info\"");
        tracing_subscriber::EnvFilter::new("info")
    });
    tracing_subscriber::fmt()
        .with_writer(Mutex::new(file))
        .with_ansi(false)
        .with_env_filter(filter)
        .init();
}
