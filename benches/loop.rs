//! Loop overhead per step on a 1,000-message session (issue 4, target < 5 ms):
//! what one iteration of `session::run` does besides calling the model, i.e.
//! the kept model view read (`SessionCtx::read_view`), `context::model_view`,
//! `request::build_request` and `gauge::measure_request`, as a whole and one by
//! one. Real SQLite file, real tools,
//! real system prompt (with an AGENTS.md); no network is touched.
//!
//! Run: `cargo bench --bench loop`

use std::sync::Arc;
use std::time::Duration;

use cairn::app::{App, SessionChoice};
use cairn::context::view::{model_view, order_for_model};
use cairn::message::MessageWithParts;
use cairn::permission::{Mode, Permissions};
use cairn::session::agent::Agents;
use cairn::session::ctx::{ResolvedModel, SessionCtx, Settings};
use cairn::session::gauge;
use cairn::session::prompt::Environment;
use cairn::session::request::build_request;
use cairn::session::writer::Writer;
use cairn::tool::OutputLimits;
use criterion::{Criterion, criterion_group, criterion_main};

#[path = "../tests/common/history/mod.rs"]
mod history;

const MESSAGES: usize = 1_000;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime always builds")
}

/// The session context `App::start` would build. `App::session_ctx` is
/// private, so this repeats its wiring from the public pieces.
fn session_ctx(app: &App, session_id: &str) -> SessionCtx {
    let config = &app.config;
    let rules = cairn::permission::ruleset(&config.permission, config.yolo);
    SessionCtx {
        session_id: session_id.into(),
        depth: 0,
        writer: Writer::new(app.store.clone(), app.bus.clone()),
        tools: app.tools.clone(),
        permissions: Arc::new(Permissions::new(rules, app.bus.clone(), Mode::Headless)),
        agents: Agents::builtin(),
        models: app.models.clone(),
        settings: Settings {
            compaction: Default::default(),
            doom_threshold: 3,
            doom_hard_stop: 6,
            tool_limits: OutputLimits {
                max_lines: config.tool_output.max_lines,
                max_bytes: config.tool_output.max_bytes,
                bash_timeout: Duration::from_millis(config.bash.timeout_ms),
            },
            tool_output_dir: app.data_dir.join("tool-output"),
            default_agent: "build".into(),
            retry: Default::default(),
            task: Default::default(),
            small_model: None,
            sandbox: Arc::new(cairn::sandbox::Policy::new(
                &config.sandbox,
                &app.cwd,
                std::slice::from_ref(&app.data_dir),
            )),
            editor: None,
            hooks: Default::default(),
            commands_trusted: false,
        },
        env: Environment::discover(&app.cwd),
        default_model: history::model(),
        accounting: Default::default(),
        kept_view: Default::default(),
        reported: Default::default(),
        remote_instructions: Default::default(),
        instruction_folders: Default::default(),
        snapshots: None,
        snapshot_chain: Default::default(),
    }
}

struct Fixture {
    _project: tempfile::TempDir,
    _data: tempfile::TempDir,
    ctx: SessionCtx,
    model: Arc<ResolvedModel>,
}

fn fixture(rt: &tokio::runtime::Runtime) -> Fixture {
    let project = tempfile::tempdir().expect("temp project dir");
    std::fs::create_dir(project.path().join(".git")).expect("mark the project as a git repo");
    std::fs::write(
        project.path().join("AGENTS.md"),
        "# Project rules\n\n- Run `cargo test` before saying a change works.\n- Keep files under 400 lines.\n",
    )
    .expect("write AGENTS.md");
    let data = tempfile::tempdir().expect("temp data dir");
    // Nothing listens here: the bench never sends a request.
    let config = history::config("http://127.0.0.1:9/v1");
    let app = App::open(config, project.path().to_path_buf(), data.path()).expect("open the app");
    let (ctx, model) = rt.block_on(async {
        let (session, _handle) = app
            .start(SessionChoice::New, Mode::Headless)
            .await
            .expect("start a session");
        let messages = history::HistoryBuilder::new(&session.id).build(MESSAGES);
        app.store
            .upsert_messages(&messages)
            .await
            .expect("write the session");
        let model = app
            .models
            .resolve(&history::model())
            .await
            .expect("the configured model resolves without the network");
        (session_ctx(&app, &session.id), model)
    });
    Fixture {
        _project: project,
        _data: data,
        ctx,
        model,
    }
}

/// One step's work before the model is called, as `session::run` does it:
/// the kept model view read brought up to date, the model's view, the request,
/// the gauge and our count of the request.
async fn step(ctx: &SessionCtx, model: &ResolvedModel) -> u64 {
    let context = ctx.read_view().await.expect("read the session");
    let used = {
        let view = model_view(context.messages());
        let agent = ctx.agents.get("build");
        let (request, _) = build_request(ctx, agent, model, &view, false);
        gauge::measure_request(ctx, model, &view, &request)
            .gauge
            .used
    };
    ctx.keep_view(context);
    used
}

fn describe(view: &[MessageWithParts], request: &cairn::provider::ChatRequest) {
    let parts: usize = view.iter().map(|m| m.parts.len()).sum();
    let body = serde_json::to_string(&request.messages).map_or(0, |s| s.len());
    eprintln!(
        "loop fixture: {} messages, {parts} parts, request {} messages / {} KB of JSON, {} tools",
        view.len(),
        request.messages.len(),
        body / 1024,
        request.tools.len()
    );
}

fn benches(c: &mut Criterion) {
    let rt = runtime();
    let Fixture { ctx, model, .. } = &fixture(&rt);
    let read = rt
        .block_on(ctx.writer.store.read_view(&ctx.session_id))
        .expect("read the session");
    assert_eq!(read.len(), MESSAGES, "the whole session is in context");
    let view = order_for_model(read.clone());
    let agent = ctx.agents.get("build");
    let (request, _) = build_request(ctx, agent, model, &view, false);
    describe(&view, &request);
    let gauge = gauge::measure(ctx, model, &view, &request);
    eprintln!(
        "gauge: {} tokens used of {} usable",
        gauge.used, gauge.usable
    );

    let mut group = c.benchmark_group("loop step, 1,000 messages");
    group.sample_size(30);
    group.bench_function("whole step (kept read + view + build + measure)", |b| {
        b.iter(|| rt.block_on(step(ctx, model)))
    });
    group.bench_function("kept read (SessionCtx::read_view)", |b| {
        b.iter(|| {
            rt.block_on(async {
                let context = ctx.read_view().await.expect("read the session");
                ctx.keep_view(context);
            })
        })
    });
    group.bench_function("store.read_view (a fresh copy)", |b| {
        b.iter(|| rt.block_on(ctx.writer.store.read_view(&ctx.session_id)))
    });
    group.bench_function("context::order_for_model", |b| {
        b.iter_batched(
            || read.clone(),
            order_for_model,
            criterion::BatchSize::LargeInput,
        )
    });
    group.bench_function("request::build_request", |b| {
        b.iter(|| build_request(ctx, agent, model, &view, false))
    });
    group.bench_function("gauge::measure", |b| {
        b.iter(|| gauge::measure(ctx, model, &view, &request))
    });
    // The gauge after a run, a prune or on opening: anchored on the last
    // step's usage, it counts only what was added since and builds no request.
    group.bench_function("gauge::refresh (anchored, kept read)", |b| {
        b.iter(|| rt.block_on(gauge::refresh(ctx, model)).expect("refresh"))
    });
    group.finish();
}

criterion_group!(loop_step, benches);
criterion_main!(loop_step);
