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

use cairn::app::{App, SessionChoice};
use cairn::cli::{Cli, Command, EXIT_FAILURE, EXIT_OK, EXIT_SESSION_BUSY, EXIT_USAGE, RunArgs};
use cairn::config::{self, LoadOptions, Loaded};
use cairn::headless;
use cairn::permission::Mode;
use cairn::provider::discover::LocalServer;
use cairn::session::lock::LockError;
use cairn::slash::{FrontEnd, Verb};
use cairn::tui::keymap::KeyMap;
use cairn::tui::wrap::str_width;
use cairn::tui::{Discovered, HISTORY_PAGE, History, HistoryRead, TuiExit, TuiInput};
use std::sync::Arc;

fn main() -> ExitCode {
    ignore_file_size_signal();
    // clap exits by itself for --version, --help and usage errors (code 2).
    let cli = Cli::parse();
    let json_run = cli.run_format() == Some(cairn::cli::Format::Json);
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            // Not eprintln!: with the terminal gone it would panic (101).
            let _ = writeln!(std::io::stderr(), "error: {error:#}");
            let code = exit_code_of(&error);
            if json_run {
                // A script reads one result whatever the failure.
                let message = format!("{error:#}");
                let _ = headless::write_failure_result(&mut std::io::stdout(), &message, code);
            }
            ExitCode::from(code)
        }
    }
}

/// A file size limit (`ulimit -f`) would kill cairn with SIGXFSZ in the
/// middle of a database write; ignored, the write fails with EFBIG and is
/// reported like a full disk ("may NOT be saved"). Children inherit it: a
/// tool's write past the limit fails the same way instead of killing it.
fn ignore_file_size_signal() {
    // SAFETY: signal(2) with SIG_IGN, before any other thread exists.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// A session held by another process has its own code: a script can wait
/// and try again instead of treating it as a failed run.
fn exit_code_of(error: &anyhow::Error) -> u8 {
    let busy = error
        .chain()
        .any(|cause| matches!(cause.downcast_ref::<LockError>(), Some(LockError::Busy(_))));
    if busy {
        EXIT_SESSION_BUSY
    } else {
        EXIT_FAILURE
    }
}

fn run(cli: Cli) -> anyhow::Result<u8> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let mut options = LoadOptions::from_process(cwd, cli.config_flags().to_overrides());
    options.trust = config::Trust {
        all: cli.trusts_project(),
        store: cairn::paths::locate_data_dir()
            .ok()
            .map(|dir| cairn::trust::Store::in_dir(&dir)),
    };
    let loaded = cairn::app::load_config(&options)?;
    for warning in &loaded.warnings {
        eprintln!("warning: {warning}");
    }
    // Said once, and only when the data has somewhere to go: without it, the
    // command that needs the data dir says what to set instead.
    if cairn::paths::locate_data_dir().is_ok()
        && let Some(problem) = cairn::paths::home_problem()
    {
        eprintln!("warning: {problem}");
    }
    init_logging(&loaded.config.log.level.to_string());
    // Before any command runs: none may read cairn's environment (the keys).
    cairn::sandbox::protect_own_process();
    tracing::info!(version = env!("CARGO_PKG_VERSION"), files = ?loaded.files, "cairn starting");
    dispatch(cli, &options, loaded)
}

/// The one place that decides what each command does.
fn dispatch(cli: Cli, options: &LoadOptions, loaded: Loaded) -> anyhow::Result<u8> {
    let flag_model = cli.config_flags().model;
    match cli.command {
        None => {
            let choice = match (cli.resume_last, cli.session) {
                (_, Some(id)) => SessionChoice::Id(id),
                (true, None) => SessionChoice::Latest,
                (false, None) => SessionChoice::New,
            };
            let prompt = (!cli.prompt.is_empty()).then(|| cli.prompt.join(" "));
            run_tui(choice, flag_model, prompt, options, loaded)
        }
        Some(Command::Run(args)) => run_headless(args, flag_model, loaded),
        Some(Command::Acp) => run_acp(options, loaded),
        Some(Command::Sessions) => list_sessions(loaded),
        Some(Command::Config { .. }) => show_config(&options.cwd, &loaded),
        Some(Command::Trust { revoke }) => trust_project(&options.cwd, &loaded, revoke),
    }
}

/// `cairn config`: the merged config, then what the untrusted project asks
/// for and does not get.
fn show_config(cwd: &std::path::Path, loaded: &Loaded) -> anyhow::Result<u8> {
    let mut stdout = std::io::stdout().lock();
    if loaded.files.is_empty() {
        writeln!(stdout, "# no config files found; showing defaults")?;
    } else {
        for file in &loaded.files {
            writeln!(stdout, "# read {}", file.display())?;
        }
    }
    write!(stdout, "{}", loaded.render())?;
    let restrictions = cairn::permission::config_rules(&loaded.config.restrictions);
    if !restrictions.is_empty() {
        writeln!(
            stdout,
            "\n# the untrusted project's ask/deny rules: they only make answers stricter"
        )?;
        for rule in &restrictions {
            writeln!(
                stdout,
                "# permission.{}.{:?} = {:?}",
                rule.permission, rule.pattern, rule.action
            )?;
        }
    }
    let risks = cairn::app::ProjectRisks::gather(loaded, cwd);
    if !risks.pending.is_empty() {
        writeln!(
            stdout,
            "\n# not applied: `cairn trust` applies them (see README, Project trust)"
        )?;
        for risk in &risks.pending {
            let place = match risk.line {
                Some(line) => format!("{}:{line}", risk.file.display()),
                None => risk.file.display().to_string(),
            };
            writeln!(
                stdout,
                "# {} = {}  # {place} (ignored: project not trusted)",
                risk.key, risk.value
            )?;
        }
    }
    Ok(EXIT_OK)
}

/// `cairn trust [--revoke]`: lists the project's risky settings and stores
/// trust in them (or forgets it).
fn trust_project(cwd: &std::path::Path, loaded: &Loaded, revoke: bool) -> anyhow::Result<u8> {
    let store = cairn::trust::Store::in_dir(&cairn::paths::data_dir()?);
    let risks = cairn::app::ProjectRisks::gather(loaded, cwd);
    let mut stdout = std::io::stdout().lock();
    if revoke {
        let mut roots = cairn::trust::roots(&risks.all);
        roots.push(cairn::trust::canonical(
            &cairn::session::prompt::Environment::discover(cwd).root,
        ));
        roots.extend(loaded.project_root.clone());
        roots.sort();
        roots.dedup();
        let removed = store.revoke(&roots)?;
        if removed == 0 {
            writeln!(stdout, "this project was not trusted")?;
        } else {
            writeln!(
                stdout,
                "trust revoked: the project's risky settings no longer apply"
            )?;
        }
        return Ok(EXIT_OK);
    }
    if risks.all.is_empty() {
        writeln!(stdout, "nothing in this project needs trust")?;
        return Ok(EXIT_OK);
    }
    writeln!(stdout, "trusting these settings of this project:")?;
    for risk in &risks.all {
        writeln!(stdout, "  {risk}")?;
    }
    store.trust(
        &cairn::trust::roots(&risks.all),
        &risks.all,
        cairn::clock::now_millis(),
    )?;
    writeln!(
        stdout,
        "stored in {}; `cairn trust --revoke` forgets it",
        store.path().display()
    )?;
    Ok(EXIT_OK)
}

/// `cairn run /mcp [restart NAME]`: the servers' states (no model needed);
/// with `--format json`, as the text of a `result`.
async fn mcp_command(app: &App, args: &str, format: cairn::cli::Format) -> anyhow::Result<u8> {
    let Some(hub) = app.tools.mcp() else {
        if format == cairn::cli::Format::Json {
            headless::write_report_result(&mut std::io::stdout(), "", EXIT_OK)?;
        }
        return Ok(EXIT_OK);
    };
    hub.start();
    hub.wait_ready(MCP_RUN_WAIT).await;
    if let Some(name) = args.strip_prefix("restart").map(str::trim) {
        anyhow::ensure!(
            hub.restart(name),
            "no MCP server named `{name}`; `/mcp` lists them"
        );
        hub.wait_ready(MCP_RUN_WAIT).await;
    }
    let report = cairn::mcp::render(&hub.statuses());
    hub.shutdown();
    if format == cairn::cli::Format::Json {
        headless::write_report_result(&mut std::io::stdout(), &report, EXIT_OK)?;
    } else {
        print!("{report}");
    }
    Ok(EXIT_OK)
}

/// `cairn run /model`: what `/model provider/model` can switch to, one per
/// line grouped by provider (local ones marked), or one `models` event.
async fn list_models(app: &App, format: cairn::cli::Format) -> anyhow::Result<u8> {
    use cairn::provider::discover;
    let candidates = discover::candidates().map_err(anyhow::Error::msg)?;
    let servers = discover::discover(&candidates, discover::BUDGET).await;
    let choices = app.model_choices(&servers);
    let mut stdout = std::io::stdout().lock();
    if format == cairn::cli::Format::Json {
        let models: Vec<serde_json::Value> = choices
            .iter()
            .map(|c| serde_json::json!({ "model": c.name(), "local": c.local }))
            .collect();
        let event = serde_json::json!({ "type": "models", "models": models });
        writeln!(stdout, "{event}")?;
        headless::write_report_result(&mut stdout, "", EXIT_OK)?;
        return Ok(EXIT_OK);
    }
    if choices.is_empty() {
        writeln!(stdout, "{}", discover::ADVICE)?;
        return Ok(EXIT_FAILURE);
    }
    for choice in &choices {
        writeln!(stdout, "{}", choice.label())?;
    }
    Ok(EXIT_OK)
}

/// How long `cairn run` waits for MCP servers before its first request.
const MCP_RUN_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

fn open_app(loaded: Loaded) -> anyhow::Result<App> {
    open_app_with(loaded.config)
}

fn open_app_with(config: config::Config) -> anyhow::Result<App> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let data_dir = cairn::paths::data_dir()?;
    App::open(config, cwd, &data_dir)
}

/// `cairn run`: one message, answered without the TUI.
fn run_headless(
    args: RunArgs,
    flag_model: Option<String>,
    mut loaded: Loaded,
) -> anyhow::Result<u8> {
    // First: a missing message is a usage error before anything is opened.
    let piped = headless::is_piped(&args.message);
    let message = match headless::read_message(&args.message) {
        Ok(message) => message,
        Err(error) => return usage_error(&error.to_string(), args.format),
    };
    if matches!(cairn::slash::parse(&message), Some((command, _)) if command.verb == Verb::Help) {
        // No session is opened (or created) just to print the table.
        print!("{}", cairn::slash::help_text(FrontEnd::Run));
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        let custom = cairn::app::custom_commands(&cwd);
        if !custom.commands.is_empty() || !custom.problems.is_empty() {
            print!("\ncustom commands:\n{}", custom.help_text());
        }
        return Ok(EXIT_OK);
    }
    let runtime = runtime()?;
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    for problem in cairn::app::custom_commands(&cwd).problems {
        eprintln!("warning: {problem}");
    }
    let risks = cairn::app::ProjectRisks::gather(&loaded, &cwd);
    for warning in &risks.shadowed {
        eprintln!("warning: {warning}");
    }
    if !risks.pending.is_empty() {
        eprintln!("{}", cairn::trust::headless_notice(&risks.pending));
    }
    // Nothing configured: a local server that answers is the model.
    runtime.block_on(cairn::app::discover_local_model(&mut loaded.config))?;
    let app = open_app(loaded)?;
    let choice = match (args.resume_last, args.session) {
        (_, Some(id)) => SessionChoice::Id(id),
        (true, None) => SessionChoice::Latest,
        (false, None) => SessionChoice::New,
    };
    // Whole command names only: `/mcp.json is broken` is a question.
    match cairn::slash::parse(&message).map(|(command, rest)| (command.verb, rest)) {
        Some((Verb::Mcp, rest)) => return runtime.block_on(mcp_command(&app, rest, args.format)),
        Some((Verb::Model, "")) => return runtime.block_on(list_models(&app, args.format)),
        _ => {}
    }
    let code = runtime.block_on(async {
        // Listening before the servers start (in `app.start`): a Ctrl+C
        // while they start is cairn's to handle, never a silent kill that
        // leaves them running.
        let mut stops = headless::Stops::listen()?;
        let continued = choice != SessionChoice::New;
        // Before the session opens: what opening it reports is printed too.
        let events = app.bus.subscribe();
        let (session, handle) = app.start(choice, Mode::Headless).await?;
        tracing::info!(session = %session.id, "headless run");
        // A continued session follows its last model; `--model` given on
        // this command line is chosen for it, as `/model` would.
        if let Some(model) = flag_model.filter(|_| continued) {
            choose_model(&app, &session.id, &model).await?;
        }
        // Wait for a slow reader even on a non-blocking descriptor.
        let mut stdout = headless::out::stdout()?;
        let mut stderr = headless::out::stderr()?;
        if let Some(command) = headless::HistoryCommand::parse(&message) {
            let snapshots = app.snapshots(&session);
            let outcome = headless::run_history_command(
                &app.store,
                snapshots.as_ref(),
                &session.id,
                command,
                args.format,
                &mut stdout,
                &mut stderr,
            )
            .await?;
            return Ok(outcome.exit_code());
        }
        // Scripts see the configured servers' tools in the first request.
        let mut message = message;
        if let Some(hub) = app.tools.mcp() {
            if let Some(code) = wait_for_servers(hub, &mut stops, &mut stderr).await? {
                return Ok(code);
            }
            // `/server:prompt args`: the prompt's messages are the message.
            match hub.expand_prompt(&message).await {
                Some(Ok(text)) => message = text,
                Some(Err(error)) => {
                    writeln!(stderr, "cairn: {error}")?;
                    if args.format == cairn::cli::Format::Json {
                        let error = error.to_string();
                        headless::write_failure_result(&mut stdout, &error, EXIT_FAILURE)?;
                    }
                    return Ok(EXIT_FAILURE);
                }
                None => {}
            }
        }
        drop(stops);
        let outcome = headless::run_watching(
            &handle,
            events,
            &app.store,
            (message, piped),
            args.format,
            &mut stdout,
            &mut stderr,
        )
        .await?;
        Ok(outcome.exit_code())
    });
    if let Some(hub) = app.tools.mcp() {
        hub.shutdown();
    }
    // An interrupted run does not wait for a store call or tool still stuck
    // in a blocking thread: the session is repaired when it is reopened.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    code
}

/// Waits for the servers before the first request; `Some(exit code)` when
/// a stop signal came first: the run ends before anything is sent, and the
/// servers (those still starting too) are killed with it.
async fn wait_for_servers(
    hub: &Arc<cairn::mcp::Hub>,
    stops: &mut headless::Stops,
    stderr: &mut impl Write,
) -> anyhow::Result<Option<u8>> {
    let stopped = tokio::select! {
        () = hub.wait_ready(MCP_RUN_WAIT) => None,
        signal = stops.next() => Some(signal),
    };
    if let Some(signal) = stopped {
        hub.shutdown();
        writeln!(
            stderr,
            "cairn: {signal} while waiting for MCP servers; stopped"
        )?;
        return Ok(Some(headless::Stops::exit_code(signal)));
    }
    // Where a script's user looks: a server (or a server file) that failed
    // is said, not left to the log, now and whenever one fails later.
    tokio::spawn(say_failed_servers(hub.clone()));
    Ok(None)
}

/// Says on stderr each MCP server that is failed (at the start, and later
/// when one dies), once per failure.
async fn say_failed_servers(hub: Arc<cairn::mcp::Hub>) {
    let mut changes = hub.subscribe();
    let mut said: std::collections::BTreeMap<String, Option<String>> = Default::default();
    loop {
        for status in hub.statuses() {
            if status.state != cairn::mcp::State::Failed {
                said.remove(&status.name);
                continue;
            }
            if said.get(&status.name) == Some(&status.last_error) {
                continue;
            }
            let why = status.last_error.as_deref().unwrap_or("no reason given");
            let _ = writeln!(
                std::io::stderr(),
                "cairn: MCP {} failed: {why}",
                status.name
            );
            said.insert(status.name.clone(), status.last_error.clone());
        }
        if changes.changed().await.is_err() {
            return;
        }
    }
}

/// `cairn acp`: the Agent Client Protocol on stdin/stdout until the editor
/// closes it. stdout is the protocol's: everything else goes to the log.
fn run_acp(options: &LoadOptions, mut loaded: Loaded) -> anyhow::Result<u8> {
    let runtime = runtime()?;
    runtime.block_on(cairn::app::discover_local_model(&mut loaded.config))?;
    let data_dir = cairn::paths::data_dir()?;
    let served = runtime.block_on(cairn::acp::serve(loaded.config, options.clone(), data_dir));
    // As after `cairn run`: a tool stuck in a blocking thread does not keep
    // the editor waiting for the process to end.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    served.map(|()| EXIT_OK)
}

/// A `cairn run` that cannot start: said on stderr (and in a result with
/// `--format json`), exit 2.
fn usage_error(message: &str, format: cairn::cli::Format) -> anyhow::Result<u8> {
    writeln!(std::io::stderr(), "error: {message}")?;
    if format == cairn::cli::Format::Json {
        headless::write_failure_result(&mut std::io::stdout(), message, EXIT_USAGE)?;
    }
    Ok(EXIT_USAGE)
}

/// `cairn`: the terminal UI, reopened on another session when the user
/// picks one with `/sessions` or `/new`.
fn run_tui(
    mut choice: SessionChoice,
    mut flag_model: Option<String>,
    mut prompt: Option<String>,
    options: &LoadOptions,
    loaded: Loaded,
) -> anyhow::Result<u8> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        anyhow::bail!("cairn's terminal UI needs a terminal; in scripts use `cairn run \"...\"`");
    }
    let mut risks = cairn::app::ProjectRisks::gather(&loaded, &options.cwd);
    let mut app = open_app(loaded)?;
    // Filled by the first-run screen's search for local servers.
    let found: Found = Arc::default();
    // What the last `/new` or `/sessions` did, said on the next screen.
    let mut notice = None;
    runtime()?.block_on(async {
        loop {
            let mut input = match app.default_model() {
                Some(_) => tui_input(&app, choice, &found, flag_model.take()).await?,
                None => first_run_input(&app, &found).await?,
            };
            input.notice = notice.take();
            // Sent once a model can answer it; the first-run screen holds it.
            input.initial_prompt = prompt.take();
            input.untrusted = risks.pending.iter().map(ToString::to_string).collect();
            if input.notice.is_none() {
                input.notice = risks.shadowed.first().cloned();
            }
            let session_id = input.session.id.clone();
            match cairn::tui::run(input).await? {
                TuiExit::Quit => {
                    // Printed after the terminal is restored, so it stays on
                    // screen; the first-run screen has no session to resume.
                    // Ignored when the terminal has gone (closed window):
                    // nobody can read it, and println! would panic.
                    if !session_id.is_empty() {
                        let _ = writeln!(std::io::stdout(), "{}", resume_hint(&session_id));
                    }
                    return Ok(EXIT_OK);
                }
                TuiExit::SwitchSession(id) => {
                    notice = Some("session resumed".to_string());
                    choice = SessionChoice::Id(id);
                }
                TuiExit::NewSession => {
                    notice = Some("new session started".to_string());
                    choice = SessionChoice::New;
                }
                TuiExit::TrustProject => {
                    // Stored, then the config is loaded again with it: the
                    // project's settings and servers apply without a restart.
                    let store = options.trust.store.as_ref().context("no data directory")?;
                    store.trust(
                        &cairn::trust::roots(&risks.all),
                        &risks.all,
                        cairn::clock::now_millis(),
                    )?;
                    let loaded = config::load(options)?;
                    risks = cairn::app::ProjectRisks::gather(&loaded, &options.cwd);
                    drop(app);
                    app = open_app(loaded)?;
                    notice = Some("project trusted: its settings apply".to_string());
                    choice = if session_id.is_empty() {
                        SessionChoice::New
                    } else {
                        SessionChoice::Id(session_id)
                    };
                }
                TuiExit::UseModel { model: name, held } => {
                    prompt = held;
                    let config = with_model(&app.config, &name, &found)?;
                    drop(app);
                    app = open_app_with(config)?;
                    choice = SessionChoice::New;
                }
            }
        }
    })
}

/// `--model` on a continued session: chosen for its next prompts, as
/// `/model` does (a continued session otherwise keeps its last model).
async fn choose_model(app: &App, session_id: &str, model: &str) -> anyhow::Result<()> {
    let model = cairn::message::ModelRef::parse(model).map_err(anyhow::Error::msg)?;
    app.store.set_chosen_model(session_id, Some(&model)).await?;
    Ok(())
}

/// How to come back to the session just left.
fn resume_hint(session_id: &str) -> String {
    format!("resume with `cairn --continue` or `cairn --session {session_id}`")
}

type Found = Arc<std::sync::Mutex<Vec<LocalServer>>>;

/// `config` with `name` as the model; a model a found local server lists
/// is reached at that server.
fn with_model(
    config: &cairn::config::Config,
    name: &str,
    found: &Found,
) -> anyhow::Result<cairn::config::Config> {
    let model = cairn::message::ModelRef::parse(name).map_err(anyhow::Error::msg)?;
    let mut config = config.clone();
    let servers = found.lock().map(|s| s.clone()).unwrap_or_default();
    let server = servers.iter().find(|server| {
        server.flavour.provider() == model.provider && server.models.contains(&model.model)
    });
    match server {
        Some(server) => cairn::app::use_local_server(&mut config, server, model),
        None => config.model = Some(model),
    }
    Ok(config)
}

/// Searches for local servers after the first frame: their models join
/// `/model`'s choices and are reached where they answered; on the first-run
/// screen the result replaces its text.
fn spawn_discovery(
    app: &App,
    found: &Found,
    first_run: bool,
) -> anyhow::Result<tokio::sync::oneshot::Receiver<Discovered>> {
    use cairn::provider::discover;
    let candidates = discover::candidates().map_err(anyhow::Error::msg)?;
    let (tx, rx) = tokio::sync::oneshot::channel();
    let found = found.clone();
    let config = app.config.clone();
    let default = app.default_model();
    let models = app.models.clone();
    tokio::spawn(async move {
        let servers = discover::discover(&candidates, discover::BUDGET).await;
        models.learn_local(&servers);
        let choices = cairn::session::model_choices::choices(
            &config,
            default.as_ref(),
            &servers,
            |variable| std::env::var(variable).ok(),
        );
        let text = if first_run {
            first_run_text(&servers)
        } else {
            String::new()
        };
        let _ = tx.send(Discovered {
            models: choices,
            text,
        });
        if let Ok(mut found) = found.lock() {
            *found = servers;
        }
    });
    Ok(rx)
}

/// The first-run screen's text for what was found.
fn first_run_text(servers: &[LocalServer]) -> String {
    if servers.is_empty() {
        return format!(
            "{FIRST_RUN}\n\nNo local server answered (llama-server :8080, Ollama :11434, LM Studio :1234, vLLM :8000)."
        );
    }
    let mut text = String::from("cairn found local model servers:\n");
    for server in servers {
        let window = server
            .context
            .map(|n| format!(", {n}-token window"))
            .unwrap_or_default();
        text.push_str(&format!(
            "\n  {} at {}{window}\n",
            server.flavour.provider(),
            server.root
        ));
        for model in &server.models {
            let name = format!("{}/{model}", server.flavour.provider());
            text.push_str(&format!("    {name}  (local)\n"));
        }
    }
    text.push_str("\nPress Esc, then type /model to pick one or /model provider/model.");
    text
}

/// `flag_model`: `--model` given when the TUI was started; a reopened
/// session is switched to it (it would otherwise keep its last model).
/// How many of the project's earlier prompts Up/Down and Ctrl+R reach.
const PROMPT_HISTORY: i64 = 1_000;

async fn tui_input(
    app: &App,
    choice: SessionChoice,
    found: &Found,
    flag_model: Option<String>,
) -> anyhow::Result<TuiInput> {
    let continued = choice != SessionChoice::New;
    // Subscribe before reading the history, so no event falls in between.
    let events = app.bus.subscribe();
    let (session, handle) = app.start(choice, Mode::Interactive).await?;
    if let Some(model) = flag_model.filter(|_| continued) {
        choose_model(app, &session.id, &model).await?;
    }
    // Only the newest page: a long session opens as fast as a short one,
    // and older pages are read as the user scrolls back.
    let history = app
        .store
        .messages_before(&session.id, None, HISTORY_PAGE)
        .await?;
    let store = app.store.clone();
    let session_id = session.id.clone();
    let read_history: Arc<History> = Arc::new(move |read| {
        let store = store.clone();
        let session_id = session_id.clone();
        Box::pin(async move {
            Ok(match read {
                HistoryRead::Page { before } => {
                    store
                        .messages_before(&session_id, before.as_deref(), HISTORY_PAGE)
                        .await?
                }
                HistoryRead::All => store.read_all(&session_id).await?,
                HistoryRead::Child { session_id, before } => {
                    store
                        .messages_before(&session_id, before.as_deref(), HISTORY_PAGE)
                        .await?
                }
            })
        })
    });
    let model = app
        .next_model(&session.id, &history)
        .await?
        .map(|m| m.to_string())
        .unwrap_or_default();
    let sessions = listed_sessions(&app.store).await?;
    let root =
        cairn::session::prompt::Environment::discover(std::path::Path::new(&session.directory))
            .root;
    let prompt_history = app
        .store
        .prompt_history(&root.display().to_string(), PROMPT_HISTORY)
        .await?;
    let message_counts = app
        .store
        .message_counts(sessions.iter().map(|s| s.id.clone()).collect())
        .await?;
    let store = app.store.clone();
    let read_sessions: Arc<cairn::tui::ReadSessions> = Arc::new(move || {
        let store = store.clone();
        Box::pin(async move {
            let sessions = listed_sessions(&store).await?;
            let counts = store
                .message_counts(sessions.iter().map(|s| s.id.clone()).collect())
                .await?;
            Ok((sessions, counts))
        })
    });
    // The exact tokenizer is built in the background once the UI is up.
    cairn::token::warm_up();
    Ok(TuiInput {
        session,
        history,
        events,
        commands: handle.sender(),
        models: app.model_choices(&found.lock().map(|s| s.clone()).unwrap_or_default()),
        model_label: model,
        agent: app.config.default_agent.as_str().to_string(),
        gauge: None,
        first_run: None,
        sessions,
        read_history: Some(read_history),
        keymap: KeyMap::default(),
        discovery: Some(spawn_discovery(app, found, false)?),
        mcp: app.tools.mcp().cloned(),
        notice: None,
        message_counts,
        untrusted: Vec::new(),
        prompt_history,
        initial_prompt: None,
        read_sessions: Some(read_sessions),
        notify_after: notify_after(&app.config),
    })
}

/// `[tui] notify` and `notify_after_secs`.
fn notify_after(config: &cairn::config::Config) -> Option<std::time::Duration> {
    config
        .tui
        .notify
        .then(|| std::time::Duration::from_secs(config.tui.notify_after_secs))
}

/// What `/sessions` offers: the user's own sessions, not the children
/// cairn keeps under them (a subagent's, the undone turns of `/undo`).
async fn listed_sessions(
    store: &cairn::store::Store,
) -> anyhow::Result<Vec<cairn::message::Session>> {
    // Read past 50: children between them would leave fewer than 50.
    let mut sessions = store.list_sessions(200).await?;
    sessions.retain(|s| s.parent_id.is_none());
    sessions.truncate(50);
    Ok(sessions)
}

/// No provider is usable: show how to set one up instead of failing.
async fn first_run_input(app: &App, found: &Found) -> anyhow::Result<TuiInput> {
    let now = cairn::clock::now_millis();
    let session = cairn::message::Session {
        id: String::new(),
        title: String::new(),
        directory: app.cwd.display().to_string(),
        parent_id: None,
        time_created: now,
        time_updated: now,
        cost: 0.0,
        tokens: Default::default(),
    };
    // Nothing serves these commands: the TUI reports a stopped session.
    let (commands, _) = tokio::sync::mpsc::unbounded_channel();
    Ok(TuiInput {
        session,
        history: Vec::new(),
        events: app.bus.subscribe(),
        commands,
        model_label: "no model".into(),
        agent: app.config.default_agent.as_str().to_string(),
        gauge: None,
        first_run: Some(format!("{FIRST_RUN}\n\nLooking for a local server...")),
        discovery: Some(spawn_discovery(app, found, true)?),
        models: Vec::new(),
        sessions: Vec::new(),
        read_history: None,
        keymap: KeyMap::default(),
        mcp: None,
        notice: None,
        message_counts: Default::default(),
        untrusted: Vec::new(),
        prompt_history: Vec::new(),
        initial_prompt: None,
        read_sessions: None,
        notify_after: notify_after(&app.config),
    })
}

/// The first-run screen's one paragraph on setting up; what the search
/// for local servers found follows it.
const FIRST_RUN: &str = "cairn needs a model. Set a provider's key (ANTHROPIC_API_KEY, OPENAI_API_KEY, OPENROUTER_API_KEY, ...) and start cairn again; or start a local server (llama-server, Ollama, LM Studio, vLLM) and pick its model here with /model provider/model; or set `model = \"provider/model\"` in ~/.config/cairn/config.toml (see config.example.toml).";

/// The widest the title column of `cairn sessions` is padded to.
const MAX_TITLE_COLUMN: usize = 40;

/// `cairn sessions`: newest first, one line each; a header row above them
/// when a person reads it (stdout is a terminal), none for scripts, which
/// count and cut the lines.
fn list_sessions(loaded: Loaded) -> anyhow::Result<u8> {
    use std::io::IsTerminal;
    let app = open_app(loaded)?;
    let runtime = runtime()?;
    let sessions = runtime.block_on(app.store.list_sessions(100))?;
    let ids = sessions.iter().map(|s| s.id.clone()).collect();
    let counts = runtime.block_on(app.store.message_counts(ids))?;
    let mut stdout = std::io::stdout().lock();
    if sessions.is_empty() {
        writeln!(
            stdout,
            "no sessions yet: run `cairn` or `cairn run \"...\"` in a project"
        )?;
        return Ok(EXIT_OK);
    }
    let id_width = sessions.iter().map(|s| s.id.len()).max().unwrap_or(0);
    let time_width = cairn::clock::format_time(0).len();
    let title_of = |s: &cairn::message::Session| match s.title.as_str() {
        "" => "(untitled)".to_string(),
        title => title.to_string(),
    };
    // Titles are padded so the directories line up under their header; a
    // title longer than the cap runs on rather than being cut.
    let title_width = sessions
        .iter()
        .map(|s| str_width(&title_of(s)))
        .chain([str_width("TITLE")])
        .max()
        .unwrap_or(0)
        .min(MAX_TITLE_COLUMN);
    let padded = |title: &str| {
        let pad = title_width.saturating_sub(str_width(title));
        format!("{title}{}", " ".repeat(pad))
    };
    if std::io::stdout().is_terminal() {
        writeln!(
            stdout,
            "{:<id_width$}  {:<time_width$}  {:>12}  {:>9}  {:>9}  {}  DIRECTORY",
            "SESSION",
            "UPDATED",
            "TOKENS",
            "COST",
            "MESSAGES",
            padded("TITLE")
        )?;
    }
    for session in sessions {
        let tokens = session.tokens.input
            + session.tokens.output
            + session.tokens.cache.read
            + session.tokens.cache.write;
        let title = padded(&title_of(&session));
        let messages = counts.get(&session.id).copied().unwrap_or(0);
        writeln!(
            stdout,
            "{:<id_width$}  {:<time_width$}  {:>8} tok  {:>9}  {:>5} msg  {}  {}",
            session.id,
            cairn::clock::format_time(session.time_updated),
            tokens,
            format!("${:.4}", session.cost),
            messages,
            title,
            session.directory
        )?;
    }
    Ok(EXIT_OK)
}

/// Logs go to the data directory's log file, never to the terminal (the TUI
/// owns it). A log that cannot be opened is reported once and otherwise ignored:
/// losing logs must not stop the agent.
fn init_logging(level: &str) {
    let file = cairn::paths::log_path()
        .map_err(anyhow::Error::from)
        .and_then(|path| {
            // The log may quote prompts and file contents: owner-only, like the data dir.
            cairn::paths::private_file_options()
                .create(true)
                .append(true)
                .open(&path)
                .with_context(|| format!("cannot open log file {}", path.display()))
        });
    let file = match file {
        Ok(file) => file,
        // The command that needs the data dir says why there is none.
        Err(error)
            if error
                .downcast_ref::<cairn::paths::Error>()
                .is_some_and(|e| matches!(e, cairn::paths::Error::NoHome)) =>
        {
            return;
        }
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
