//! Small windows through `cairn run` (issue #30): a server that counts each
//! request with cairn's tokenizer, rejects what is over its window as
//! llama-server does, answers summary requests "ok" and everything else
//! from a model function. Each test names the bug it guards against.

use serde_json::{Value, json};

use crate::counting::{Counting, Model, is_summary_request};
use crate::project::{Project, describe};
use crate::scenario::{text, tool_call};
use crate::support::{ScriptedResponse, ScriptedServer};

/// A project on `server` whose model has a `context`-token window and a
/// quarter of it for output (what cairn assumes for a local server).
fn project_on(server: &ScriptedServer, context: u64) -> Project {
    let project = Project::new();
    project.use_scripted(server);
    let config = std::fs::read_to_string(project.path("cairn.toml")).expect("config");
    let config = config
        .replace("context = 200000", &format!("context = {context}"))
        .replace("output = 32000", &format!("output = {}", context / 4));
    std::fs::write(project.path("cairn.toml"), config).expect("write config");
    project.trust();
    project
}

fn content(message: &Value) -> String {
    match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Null => message["tool_calls"].to_string(),
        other => other.to_string(),
    }
}

/// The first message that appears twice in a request (same role, same
/// content, same call for a tool result), if any: a repeated tool call or user message.
fn repeated_message(request: &Value) -> Option<String> {
    let messages = request["messages"].as_array()?;
    let keys: Vec<(String, String)> = messages
        .iter()
        .filter(|m| m["role"] != "system")
        // A tool result is told apart by its call (pruned ones share a text).
        .map(|m| (format!("{} {}", m["role"], m["tool_call_id"]), content(m)))
        .filter(|(_, c)| !c.trim().is_empty())
        .collect();
    keys.iter()
        .enumerate()
        .find(|(i, k)| keys[i + 1..].contains(k))
        .map(|(_, (role, c))| format!("{role}: {}", c.chars().take(200).collect::<String>()))
}

/// Asserts that no request the server saw holds a message twice, nor the
/// user's `marker` in more than one message.
fn assert_no_repeats(seen: &[(Value, u64)], marker: &str) {
    for (i, (request, _)) in seen.iter().enumerate() {
        if let Some(twice) = repeated_message(request) {
            panic!("request {i} holds a message twice: {twice}");
        }
        let holding = request["messages"]
            .as_array()
            .map(|ms| ms.iter().filter(|m| content(m).contains(marker)).count())
            .unwrap_or(0);
        assert!(
            holding <= 1,
            "request {i}: {holding} messages hold {marker:?}"
        );
    }
}

/// One `cairn run` turn (`--continue` after the first) that must succeed
/// and print `expected`; its output, for more checks.
async fn answered_turn(
    project: &Project,
    first: bool,
    prompt: &str,
    expected: &str,
) -> std::process::Output {
    let args: Vec<&str> = if first {
        vec!["run", prompt]
    } else {
        vec!["run", "--continue", prompt]
    };
    let out = project.cairn(&args).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{prompt:.60}: {}",
        describe(&out)
    );
    assert!(
        crate::project::text_of(&out.stdout).contains(expected),
        "{prompt:.60} unanswered: {}",
        describe(&out)
    );
    out
}

fn lines_of(words: usize, count: usize) -> String {
    (0..count)
        .map(|i| {
            format!(
                "{i:05} {}\n",
                "lorem ipsum dolor sit amet ".repeat(words / 5)
            )
        })
        .collect()
}

/// Issue #30 item 3: `read` returned up to 50 KB whatever the window, so a
/// 15 KB read at 4k forced a compaction at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_at_4k_obeys_the_window_scaled_cap_and_says_how_to_continue() {
    let model: Model = Box::new(|n, _, tokens| match n {
        0 => tool_call("r", "read", json!({ "path": "big.txt" }), tokens),
        _ => text("Read the first part.", tokens),
    });
    let counting = Counting::start(4_096, model).await;
    let project = project_on(&counting.server, 4_096);
    std::fs::write(project.path("big.txt"), lines_of(15, 200)).expect("write");
    assert!(project.read("big.txt").unwrap().len() > 15_000);
    project.ok(&["run", "read big.txt"]).await;
    let seen = counting.seen();
    let result = seen
        .iter()
        .flat_map(|(r, _)| r["messages"].as_array().cloned().unwrap_or_default())
        .find(|m| m["role"] == "tool")
        .map(|m| content(&m))
        .expect("the read's result was sent");
    // A quarter of the usable window at 3 bytes a token, plus the ending.
    assert!(result.len() < 2_560 + 300, "{} bytes", result.len());
    assert!(result.contains("offset="), "{result}");
    assert_eq!(counting.summaries(), 0, "the read forced a compaction");
    assert_eq!(counting.rejected(), 0);
}

/// The text of the last user message of a request.
fn last_user_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|ms| ms.iter().rev().find(|m| m["role"] == "user"))
        .map(content)
        .unwrap_or_default()
}

/// A model that, for a user message saying `steps=K`, runs K commands with
/// a bulky output (one a step) and then answers; other messages are
/// answered at once.
fn bulky_steps() -> Model {
    Box::new(|n, body, tokens| {
        let task = last_user_text(body);
        let steps: usize = task
            .split_whitespace()
            .find_map(|w| w.strip_prefix("steps="))
            .and_then(|k| k.trim_end_matches(['.', ',', ':']).parse().ok())
            .unwrap_or(0);
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let last_user = messages
            .iter()
            .rposition(|m| m["role"] == "user")
            .unwrap_or(0);
        let done = messages[last_user..]
            .iter()
            .filter(|m| m["role"] == "tool")
            .count();
        if done < steps {
            let command = format!("seq {} {}", 100_000 + n * 1_000, 100_400 + n * 1_000);
            tool_call(
                &format!("c{n}"),
                "bash",
                json!({ "command": command }),
                tokens,
            )
        } else {
            text(&format!("Done with the steps of request {n}."), tokens)
        }
    })
}

const MARKER: &str = "Marker-7f3a: count the numbers, keep MSRV 1.70.";

/// Earlier turns, so a compaction keeps a verbatim tail, then the marked
/// message with `steps` bulky steps.
async fn session_then_marker(
    project: &Project,
    earlier: &[&str],
    steps: usize,
    padding: usize,
) -> String {
    for (i, turn) in earlier.iter().enumerate() {
        let args: Vec<&str> = if i == 0 {
            vec!["run", turn]
        } else {
            vec!["run", "--continue", turn]
        };
        project.ok(&args).await;
    }
    let pasted = "the log line reads fine and ends here ".repeat(padding / 8);
    let marked = format!("steps={steps} {MARKER} {pasted}");
    let out = project.cairn(&["run", "--continue", &marked]).await;
    describe(&out)
}

/// Issue #30 item 1: after an automatic compaction before a request (the
/// new question replayed after the summary), every later request carried
/// the user's message twice: once in the verbatim tail, once replayed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_message_is_sent_twice_after_an_automatic_compaction() {
    let counting = Counting::start(8_192, bulky_steps()).await;
    let project = project_on(&counting.server, 8_192);
    // Prune would clear the old outputs and put the compaction off.
    let config = std::fs::read_to_string(project.path("cairn.toml")).expect("config");
    std::fs::write(
        project.path("cairn.toml"),
        format!("{config}\n[compaction]\nprune = false\n"),
    )
    .expect("config");
    project.trust();
    let earlier = ["steps=1 first", "steps=1 second", "steps=1 third"];
    let said = session_then_marker(&project, &earlier, 1, 2_000).await;
    let sizes: Vec<u64> = counting.seen().iter().map(|(_, t)| *t).collect();
    assert!(
        counting.summaries() > 0,
        "no compaction happened: {sizes:?} {said}"
    );
    assert!(said.starts_with("exit Some(0)"), "{sizes:?} {said}");
    assert_eq!(counting.rejected(), 0, "{said}");
    eprintln!(
        "sizes {sizes:?}, {} summaries: {said}",
        counting.summaries()
    );
    assert_no_repeats(&counting.seen(), "Marker-7f3a");
}

/// Issue #30 item 1, the replay path: the server's window is smaller than
/// cairn assumed, it rejects a request, and the compaction replays the
/// user's message: later requests carried it twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_message_is_sent_twice_after_a_rejected_request_is_replayed() {
    let counting = Counting::start(7_000, bulky_steps()).await;
    let project = project_on(&counting.server, 32_768);
    let earlier = ["steps=1 first look", "steps=1 second look", "steps=1 third"];
    let said = session_then_marker(&project, &earlier, 3, 0).await;
    assert!(counting.rejected() > 0, "never rejected: {said}");
    assert!(counting.summaries() > 0, "no compaction happened: {said}");
    assert!(said.starts_with("exit Some(0)"), "{said}");
    assert_no_repeats(&counting.seen(), "Marker-7f3a");
}

/// Issue #30 item 4: the first request after a compaction skipped the
/// overflow check. A turn stopped with "compaction cannot help" (a pasted
/// log replayed after the summary still filled the window); the next
/// message went out unchecked, over the compaction point, where it must be
/// compacted first (the paste is history now, and summarizing it helps).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_request_after_a_compaction_is_checked_too() {
    let counting = Counting::start(4_096, bulky_steps()).await;
    let project = project_on(&counting.server, 4_096);
    let said = session_then_marker(&project, &["first", "second"], 0, 3_800).await;
    assert!(said.contains("compaction cannot help"), "{said}");
    let before = counting.seen().len();
    let out = project.cairn(&["run", "--continue", "what failed?"]).await;
    let seen = counting.seen();
    let sizes: Vec<u64> = seen.iter().map(|(_, t)| *t).collect();
    // Compacted first, or refused in one line: never sent unchecked.
    if let Some((first, tokens)) = seen.get(before) {
        assert!(
            is_summary_request(first),
            "sent unchecked ({tokens} tokens) before compacting: {sizes:?} {}",
            describe(&out)
        );
    } else {
        let stderr = crate::project::text_of(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains("history is too large"), "{stderr}");
    }
    assert_eq!(counting.rejected(), 0, "{sizes:?}");
}

/// Issue #30 item 2: a model that re-reads files after each compaction
/// looped read, compact, continue without limit (618 compactions in 60 s):
/// each compaction freed plenty, so the guard saw progress. The turn must
/// stop after a few compactions the model did not get past, and say why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_rereads_after_each_compaction_is_stopped_with_a_reason() {
    /// Requests the model makes before giving up on its own.
    const PATIENCE: usize = 120;
    let model: Model = Box::new(|n, _, tokens| {
        if n < PATIENCE {
            let file = format!("f{}.txt", n % 3);
            tool_call(&format!("r{n}"), "read", json!({ "path": file }), tokens)
        } else {
            text("I give up.", tokens)
        }
    });
    let counting = Counting::start(4_096, model).await;
    let project = project_on(&counting.server, 4_096);
    for i in 0..3 {
        std::fs::write(project.path(&format!("f{i}.txt")), lines_of(15, 200)).expect("write");
    }
    let out = project
        .cairn(&["run", "read f0.txt, f1.txt and f2.txt"])
        .await;
    let summaries = counting.summaries();
    let requests = counting.seen().len();
    eprintln!("{summaries} compactions, {requests} requests");
    let stderr = crate::project::text_of(&out.stderr);
    assert!(summaries <= 4, "{summaries} compactions: {stderr}");
    assert!(
        stderr.contains("compaction cannot help") && stderr.contains("read"),
        "{}",
        describe(&out)
    );
    assert_eq!(counting.rejected(), 0);
}

/// A small agent: for "turn N: ... fN.txt", read the file, count its lines
/// with `wc`, then answer (each answer its own words).
fn small_agent() -> Model {
    Box::new(|n, body, tokens| {
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        // The task is the newest user message asking one (after a
        // compaction, the working state quotes it, newest first).
        let Some(last_user) = messages
            .iter()
            .rposition(|m| m["role"] == "user" && content(m).contains("how many lines"))
        else {
            return text(&format!("Nothing to do ({n})."), tokens);
        };
        let task = content(&messages[last_user]);
        let task = &task[task.find("how many lines").unwrap_or(0)..];
        let Some(file) = task
            .split_whitespace()
            .map(|w| w.trim_end_matches(['?', '"', '\\']))
            .find(|w| w.ends_with(".txt"))
            .map(str::to_string)
        else {
            return text(&format!("Nothing to do ({n})."), tokens);
        };
        let done = messages[last_user..]
            .iter()
            .filter(|m| m["role"] == "tool")
            .count();
        match done {
            0 => tool_call(&format!("r{n}"), "read", json!({ "path": file }), tokens),
            1 => tool_call(
                &format!("w{n}"),
                "bash",
                json!({ "command": format!("wc -l {file}") }),
                tokens,
            ),
            _ => text(
                &format!("{file} has 200 lines; request {n} checked it twice over."),
                tokens,
            ),
        }
    })
}

/// Issue #30 item 6: twenty tool-using turns at `window`, each its own
/// `cairn run`: every request fits, no message is sent twice, every turn
/// is answered; returns the compactions.
async fn twenty_turns_through_cairn_run(window: u64) -> usize {
    let counting = Counting::start(window, small_agent()).await;
    let project = project_on(&counting.server, window);
    for turn in 1..=20 {
        let file = format!("f{turn}.txt");
        std::fs::write(project.path(&file), lines_of(10, window as usize / 40)).expect("write");
        let prompt = format!("turn {turn}: how many lines in {file}?");
        let out = answered_turn(&project, turn == 1, &prompt, &format!("{file} has")).await;
        // A prune rewrites old tool parts; that is not news to print again.
        let stderr = crate::project::text_of(&out.stderr);
        let reprinted: Vec<&str> = stderr
            .lines()
            .filter(|line| line.contains(" done in "))
            .filter(|line| (1..turn).any(|old| line.contains(&format!("f{old}.txt"))))
            .collect();
        assert!(
            reprinted.is_empty(),
            "turn {turn} reprints earlier calls: {reprinted:?}"
        );
    }
    let seen = counting.seen();
    let compactions = counting.summaries();
    let largest = seen.iter().map(|(_, t)| *t).max().unwrap_or(0);
    eprintln!(
        "{window}: {} requests, {compactions} compactions, largest {largest} tokens",
        seen.len()
    );
    assert_eq!(counting.rejected(), 0, "{window}: a request was rejected");
    assert_no_repeats(&seen, "how many lines in f1.txt");
    compactions
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_turns_through_cairn_run_at_4k_fit_and_repeat_nothing() {
    let compactions = twenty_turns_through_cairn_run(4_096).await;
    // 8 on this branch; 19 before it (a 50 KB read at 4k, growing the
    // window for prompts the server took).
    assert!((1..=12).contains(&compactions), "{compactions} compactions");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_turns_through_cairn_run_at_8k_fit_and_repeat_nothing() {
    let compactions = twenty_turns_through_cairn_run(8_192).await;
    // 3 to 6 on this branch (prune timing varies); 19 before it.
    assert!((1..=10).contains(&compactions), "{compactions} compactions");
}

/// Issue #30 item 5: an answer cut short by the window (finish reason
/// "length") raised no notice. It is delivered and the exit stays 0 (the
/// user has an answer, part of one), but stderr says it was cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_cut_short_by_the_window_says_so() {
    use crate::scenario::{chunk, usage};
    let model: Model = Box::new(|_, _, tokens| {
        ScriptedResponse::sse()
            .chunk(chunk(
                json!({"role": "assistant", "content": "The failure is in"}),
                None,
            ))
            .chunk(chunk(json!({}), Some("length")))
            .chunk(usage(tokens, 1_000))
            .chunk("data: [DONE]\n\n")
    });
    let counting = Counting::start(4_096, model).await;
    let project = project_on(&counting.server, 4_096);
    let out = project.cairn(&["run", "what failed?"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(crate::project::text_of(&out.stdout).contains("The failure is in"));
    let stderr = crate::project::text_of(&out.stderr);
    assert!(stderr.contains("the answer was cut short"), "{stderr}");
}

/// Issue #30 item 5: at 2k, `/compact` still sent a summary request where
/// every other path refuses in one line that the window is too small.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_at_2k_refuses_in_one_line_and_sends_nothing() {
    let model: Model = Box::new(|n, _, tokens| text(&format!("Answer {n}."), tokens));
    let counting = Counting::start(2_048, model).await;
    let project = project_on(&counting.server, 2_048);
    let first = project.cairn(&["run", "what does this project do?"]).await;
    assert_eq!(first.status.code(), Some(1), "{}", describe(&first));
    let out = project.cairn(&["run", "--continue", "/compact"]).await;
    let stderr = crate::project::text_of(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].contains("window of 2,048 tokens is smaller than"),
        "{stderr}"
    );
    assert!(
        counting.seen().is_empty(),
        "sent {} requests",
        counting.seen().len()
    );
}

/// Issue #30 item 5: when a finished step's reported usage is over the
/// compaction point, the notice's "before" was the gauge measured before
/// that request, not the size that triggered the compaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_compaction_notice_says_the_size_that_triggered_it() {
    /// What the server says the step held: over the 8k compaction point.
    const REPORTED: u64 = 7_777;
    let model: Model = Box::new(|n, _, tokens| match n {
        0 => tool_call("c0", "bash", json!({ "command": "echo hi" }), REPORTED),
        _ => text(&format!("Done ({n})."), tokens),
    });
    let counting = Counting::start(8_192, model).await;
    let project = project_on(&counting.server, 8_192);
    let out = project.cairn(&["run", "say hi"]).await;
    let stderr = crate::project::text_of(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let notice = stderr
        .lines()
        .find(|l| l.contains("compacted the conversation"))
        .unwrap_or_else(|| panic!("no compaction: {stderr}"));
    // The reported prompt and the call's 30 output tokens: the step's size.
    assert!(notice.contains("(auto): 7,807 -> "), "{notice}");
}

/// A log full of numbers, `lines` lines long (SmolLM2 counts each digit).
fn numbers_log(lines: usize) -> String {
    (0..lines)
        .map(|i| {
            format!(
                "2026-11-{:02} 22:{:02}:{:02}.{:03} worker={} id={} took {}ms rows={} status=200\n",
                1 + i % 28,
                i % 60,
                (i * 7) % 60,
                (i * 37) % 1000,
                i % 16,
                48_213 + i * 131,
                1_000 + i * 17,
                90_000 + i * 311
            )
        })
        .collect()
}

/// Issue #30: one calibration ratio per model, learned from digit-heavy
/// text, made the fixed prompt look too large for the window, and every
/// later message (even "hello") was refused with "the window is smaller
/// than the smallest prompt". A refusal must rest on a count, not on a
/// ratio learned from other content: on llama-server (which counts
/// exactly) and on a server that cannot count, the turns are answered.
async fn numbers_then_prose(kind: crate::counting::Kind) {
    use crate::counting::Tokenizer;
    let window = 4_096;
    let model: Model = Box::new(|n, _, tokens| text(&format!("Noted ({n})."), tokens));
    let counting = Counting::start_as(window, model, Tokenizer::DigitsApart, kind).await;
    let project = project_on(&counting.server, window);
    let prompts = [
        format!("look at this log:\n{}", numbers_log(25)),
        format!("and this one:\n{}", numbers_log(25)),
        format!("and this:\n{}", numbers_log(20)),
        "hello".to_string(),
        "what did the logs have in common?".to_string(),
    ];
    for (turn, prompt) in prompts.iter().enumerate() {
        let args: Vec<&str> = if turn == 0 {
            vec!["run", prompt]
        } else {
            vec!["run", "--continue", prompt]
        };
        let out = project.cairn(&args).await;
        let stderr = crate::project::text_of(&out.stderr);
        assert!(
            !stderr.contains("is smaller than"),
            "{kind:?} turn {turn} refused from an estimate: {stderr}"
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{kind:?} turn {turn}: {}",
            describe(&out)
        );
        assert!(
            crate::project::text_of(&out.stdout).contains("Noted"),
            "{kind:?} turn {turn} unanswered: {}",
            describe(&out)
        );
    }
    if kind == crate::counting::Kind::LlamaServer {
        assert_eq!(counting.rejected(), 0, "an exact count never oversends");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ratio_learned_from_numbers_refuses_nothing_on_llama_server() {
    numbers_then_prose(crate::counting::Kind::LlamaServer).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ratio_learned_from_numbers_refuses_nothing_on_a_server_that_cannot_count() {
    numbers_then_prose(crate::counting::Kind::Generic).await;
}

/// Issue #30: `/context`'s fixed part was our count (507) where the server
/// counted 812. On a server that counts, the system prompt, instruction
/// file and tool rows add up to the server's own count of that part.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_shows_the_fixed_part_as_the_server_counts_it() {
    use crate::counting::{Kind, Tokenizer};
    let model: Model = Box::new(|n, _, tokens| text(&format!("Noted ({n})."), tokens));
    let counting =
        Counting::start_as(8_192, model, Tokenizer::DigitsApart, Kind::LlamaServer).await;
    let project = project_on(&counting.server, 8_192);
    std::fs::write(
        project.path("AGENTS.md"),
        format!("Ports in use: {}\n", numbers_log(3)),
    )
    .expect("AGENTS.md");
    let out = project.cairn(&["run", "hello"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let before = counting.tokenized().len();
    let out = project
        .cairn(&["run", "--continue", "--format", "json", "/context"])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let counted = counting.tokenized();
    let fixed = *counted[before..]
        .last()
        .unwrap_or_else(|| panic!("the fixed part was not counted: {counted:?}"));
    let stdout = crate::project::text_of(&out.stdout);
    let event: Value = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|event| event["type"] == "context")
        .unwrap_or_else(|| panic!("no context event: {stdout}"));
    let rows: u64 = event["breakdown"]["categories"]
        .as_array()
        .expect("categories")
        .iter()
        .filter(|row| {
            ["system prompt", "instruction files", "tool definitions"]
                .contains(&row[0].as_str().unwrap_or(""))
        })
        .map(|row| row[1].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(rows, fixed, "{event}");
}

/// Issue #30: `/compact` at 4k on the real llama-server sent summary
/// requests it rejected, and retried. On a server that counts, each summary
/// request is checked on its count before it is sent: none is rejected.
/// (This scripted server's tokenizer did not reproduce the rejection on the
/// old code; it guards the path, the real-server run is the evidence.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_at_4k_on_llama_server_sends_no_summary_request_it_rejects() {
    use crate::counting::{Kind, Tokenizer};
    let window = 4_096;
    let model: Model = Box::new(|n, _, tokens| text(&format!("Noted ({n})."), tokens));
    let counting =
        Counting::start_as(window, model, Tokenizer::DigitsApart, Kind::LlamaServer).await;
    let project = project_on(&counting.server, window);
    for (turn, lines) in [12, 12, 10, 10].into_iter().enumerate() {
        let prompt = format!("log {turn}:\n{}", numbers_log(lines));
        let args: Vec<&str> = if turn == 0 {
            vec!["run", &prompt]
        } else {
            vec!["run", "--continue", &prompt]
        };
        let out = project.cairn(&args).await;
        assert_eq!(
            out.status.code(),
            Some(0),
            "turn {turn}: {}",
            describe(&out)
        );
    }
    let before = counting.rejected();
    let out = project.cairn(&["run", "--continue", "/compact"]).await;
    let stderr = crate::project::text_of(&out.stderr);
    assert_eq!(
        counting.rejected() - before,
        0,
        "a summary request was rejected: {stderr}"
    );
    assert!(
        counting.summaries() >= 1,
        "no summary was asked for: {stderr}"
    );
    assert!(!stderr.contains("retrying with less history"), "{stderr}");
}

/// Some Rust, `n` functions long, different for each `seed`.
fn code_paste(seed: usize, n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "fn step_{seed}_{i}(input: &[u8]) -> Result<usize, Error> {{\n    let count = input.iter().filter(|b| **b == b'\\n').count();\n    if count > {limit} {{\n        return Err(Error::TooLong(count));\n    }}\n    Ok(count + {i})\n}}\n",
                limit = 1_000 + seed * 10 + i
            )
        })
        .collect()
}

/// Issue #30: a 20-turn plain conversation at 4k, the user pasting logs and
/// code: every turn is answered, no request is rejected, no message is sent
/// twice; the compactions are counted and bounded. Run on a server counting
/// as cairn does, and on a llama-server counting numbers digit by digit.
async fn twenty_pasting_turns_at_4k(
    tokenizer: crate::counting::Tokenizer,
    kind: crate::counting::Kind,
) -> usize {
    let window = 4_096;
    let model: Model = Box::new(|n, _, tokens| text(&format!("Noted ({n}): looks fine."), tokens));
    let counting = Counting::start_as(window, model, tokenizer, kind).await;
    let project = project_on(&counting.server, window);
    for turn in 1..=20 {
        let paste = if turn % 2 == 0 {
            numbers_log(6 + turn % 5)
        } else {
            code_paste(turn, 3 + turn % 3)
        };
        let prompt = format!("paste {turn}: is this fine?\n{paste}");
        answered_turn(&project, turn == 1, &prompt, "Noted").await;
    }
    let seen = counting.seen();
    let compactions = counting.summaries();
    eprintln!(
        "{tokenizer:?}/{kind:?} at 4k: {} requests, {compactions} compactions, {} rejected",
        seen.len(),
        counting.rejected()
    );
    assert_eq!(counting.rejected(), 0, "{kind:?}: a request was rejected");
    assert_no_repeats(&seen, "paste 1: is this fine?");
    assert!(compactions <= 12, "{compactions} compactions in 20 turns");
    compactions
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_pasting_turns_at_4k_fit_and_repeat_nothing() {
    use crate::counting::{Kind, Tokenizer};
    twenty_pasting_turns_at_4k(Tokenizer::Ours, Kind::Generic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_pasting_turns_at_4k_on_llama_server_counting_digits_apart() {
    use crate::counting::{Kind, Tokenizer};
    twenty_pasting_turns_at_4k(Tokenizer::DigitsApart, Kind::LlamaServer).await;
}
