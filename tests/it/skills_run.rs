//! Skills through `cairn run`: a skill folder in Claude Code's documented
//! layout, copied unchanged, is listed in the system prompt and loaded by the
//! model through the `skill` tool; `permission.skill` denies or asks per name
//! when the model asks for a skill.

use crate::project::{Project, describe, text_of};
use crate::scenario::{text, tool_call};
use crate::support::ScriptedServer;

use serde_json::json;

/// `SKILL.md` as Claude Code's skills documentation writes one, with its
/// `allowed-tools` field (cairn ignores it) and resources beside it.
const PDF_SKILL: &str = "---
name: pdf-processing
description: Extract text and tables from PDF files, fill forms, merge documents. Use when working with PDF files or when the user mentions PDFs, forms, or document extraction.
allowed-tools: Read, Grep, Glob
---

# PDF Processing

## Quick start

Use pdfplumber to extract text from PDFs:

```python
import pdfplumber

with pdfplumber.open(\"document.pdf\") as pdf:
    text = pdf.pages[0].extract_text()
```

For form filling, see [FORMS.md](FORMS.md).
Run scripts/fill_form.py to fill a form.
";

const BODY_MARK: &str = "Use pdfplumber to extract text from PDFs:";

fn install_pdf_skill(dir: &std::path::Path) {
    let skill = dir.join("pdf-processing");
    std::fs::create_dir_all(skill.join("scripts")).expect("create skill dir");
    std::fs::write(skill.join("SKILL.md"), PDF_SKILL).expect("write SKILL.md");
    std::fs::write(skill.join("FORMS.md"), "# Forms\n").expect("write FORMS.md");
    std::fs::write(skill.join("scripts/fill_form.py"), "print('fill')\n").expect("write script");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claude_code_skill_folder_is_listed_and_loaded() {
    let project = Project::new();
    install_pdf_skill(&project.path(".claude/skills"));
    // A personal skill from the home Claude Code directory is listed too.
    let personal = project.home.path().join(".claude/skills/commit-style");
    std::fs::create_dir_all(&personal).expect("create personal skill");
    std::fs::write(
        personal.join("SKILL.md"),
        "---\nname: commit-style\ndescription: How this user writes commit messages.\n---\nImperative mood.\n",
    )
    .expect("write personal skill");
    let server = ScriptedServer::start([
        tool_call("call_1", "skill", json!({ "name": "pdf-processing" }), 500),
        text("I will use pdfplumber.", 600),
    ])
    .await;
    project.use_scripted(&server);
    let output = project.cairn(&["run", "extract the text of a.pdf"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{}", describe(&output));
    let first = requests[0].json();
    let system = first["messages"][0]["content"].to_string();
    assert!(
        system.contains("<name>pdf-processing</name>")
            && system.contains("<description>Extract text and tables from PDF files, fill forms"),
        "{system}"
    );
    assert!(system.contains("<name>commit-style</name>"), "{system}");
    assert!(
        !first.to_string().contains(BODY_MARK),
        "only the description is in the first request"
    );
    let tools = first["tools"].to_string();
    assert!(tools.contains("\"skill\""), "{tools}");
    let second = requests[1].json();
    let messages = second["messages"].as_array().expect("messages");
    let result = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("a tool result")["content"]
        .to_string();
    assert!(result.contains(BODY_MARK), "{result}");
    assert!(result.contains("FORMS.md"), "{result}");
    assert!(result.contains("scripts/fill_form.py"), "{result}");
    assert!(
        !result.contains("allowed-tools"),
        "front matter is not body: {result}"
    );
    assert_eq!(text_of(&output.stdout), "I will use pdfplumber.\n");
}

/// The result the model got for its one tool call, and the run's output.
async fn run_skill_call(permission: &str, top: &str) -> (String, std::process::Output) {
    let project = Project::new();
    install_pdf_skill(&project.path(".agents/skills"));
    let server = ScriptedServer::start([
        tool_call("call_1", "skill", json!({ "name": "pdf-processing" }), 500),
        text("Done.", 600),
    ])
    .await;
    project.use_scripted_with(&server, top, permission);
    let output = project.cairn(&["run", "read a.pdf"]).await;
    let requests = server.requests();
    let result = requests
        .get(1)
        .map(|request| {
            request.json()["messages"]
                .as_array()
                .expect("messages")
                .iter()
                .find(|m| m["role"] == "tool")
                .map(|m| m["content"].to_string())
                .unwrap_or_default()
        })
        .unwrap_or_default();
    (result, output)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permission_skill_deny_refuses_the_named_skill_even_with_yolo() {
    let (result, output) = run_skill_call(
        "[permission.skill]\n\"*\" = \"allow\"\n\"pdf-*\" = \"deny\"\n",
        "yolo = true\n",
    )
    .await;
    assert!(!result.contains(BODY_MARK), "{result}");
    assert!(result.contains("pdf-processing"), "{result}");
    assert!(
        result.contains("[permission.skill]") || result.to_lowercase().contains("denied"),
        "{result}"
    );
    assert!(
        !text_of(&output.stdout).contains(BODY_MARK),
        "{}",
        describe(&output)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permission_skill_ask_is_refused_headless_and_names_the_config() {
    let (result, output) =
        run_skill_call("[permission.skill]\n\"pdf-processing\" = \"ask\"\n", "").await;
    assert!(!result.contains(BODY_MARK), "{result}");
    let stderr = text_of(&output.stderr);
    assert!(
        stderr.contains("[permission.skill]"),
        "{}",
        describe(&output)
    );
    assert!(stderr.contains("pdf-processing"), "{}", describe(&output));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_skill_loads_without_asking_and_an_unknown_one_lists_the_real_ones() {
    let project = Project::new();
    install_pdf_skill(&project.path(".cairn/skills"));
    let server = ScriptedServer::start([
        tool_call("call_1", "skill", json!({ "name": "pdf" }), 500),
        text("Done.", 600),
    ])
    .await;
    project.use_scripted_with(&server, "", "");
    let output = project.cairn(&["run", "read a.pdf"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let request = server.requests()[1].json().to_string();
    assert!(
        request.contains("No skill named `pdf`. The available skills are: pdf-processing."),
        "{request}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_skills_lists_them_without_calling_the_model() {
    let project = Project::new();
    install_pdf_skill(&project.path(".claude/skills"));
    let broken = project.path(".claude/skills/broken");
    std::fs::create_dir_all(&broken).expect("create broken skill");
    std::fs::write(
        broken.join("SKILL.md"),
        "---\nname: broken\n---\nno description\n",
    )
    .expect("write broken skill");
    let server = ScriptedServer::start([]).await;
    project.use_scripted(&server);
    let output = project.cairn(&["run", "/skills"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let stdout = text_of(&output.stdout);
    assert!(
        stdout.starts_with("pdf-processing  Extract text and tables from PDF files"),
        "{}",
        describe(&output)
    );
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let stderr = text_of(&output.stderr);
    assert!(
        stderr.contains("broken/SKILL.md") && stderr.contains("description"),
        "{}",
        describe(&output)
    );
    assert!(server.requests().is_empty(), "no model call for /skills");
}

/// The description of the eighth of [`install_fifty_skills`]: 19.6 KB.
fn huge_description() -> String {
    "Handles every kind of document. ".repeat(610)
}

fn fifty_description(i: usize) -> String {
    if i == 7 {
        huge_description()
    } else {
        format!(
            "Skill number {i}: what it does, in one long sentence of about two hundred characters, written the way real skill authors write their descriptions for the model to match on."
        )
    }
}

/// 50 skills in `.claude/skills/`, the eighth (`skill-07`) with a 19.6 KB
/// description.
fn install_fifty_skills(project: &Project) {
    for i in 0..50 {
        let dir = project.path(&format!(".claude/skills/skill-{i:02}"));
        std::fs::create_dir_all(&dir).expect("skill dir");
        std::fs::write(
            dir.join("SKILL.md"),
            format!(
                "---\nname: skill-{i:02}\ndescription: {}\n---\nBody {i}.\n",
                fifty_description(i)
            ),
        )
        .expect("SKILL.md");
    }
}

/// 50 skills, one with a 19.6 KB description: the list in the system prompt
/// is bounded (each description cut at 1,024 characters, the whole list at
/// about 12,000), and every skill is still named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_skills_and_a_huge_description_do_not_swamp_the_prompt() {
    let project = Project::new();
    install_fifty_skills(&project);
    let server = ScriptedServer::start([text("Hi.", 500)]).await;
    project.use_scripted(&server);
    project.ok(&["run", "hello"]).await;
    let request = server.requests()[0].json();
    let system = request["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        system.len() < 20_000,
        "the system prompt is {} bytes",
        system.len()
    );
    for i in 0..50 {
        assert!(
            system.contains(&format!("skill-{i:02}")),
            "skill-{i:02} is not named"
        );
    }
    assert!(
        system.contains("descriptions left out for room"),
        "{system}"
    );
}

/// An agent that cannot load a skill (Claude Code's `tools: Read, Grep`) is
/// not told about skills; the build agent, which can, is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_an_agent_with_the_skill_tool_is_told_about_skills() {
    let project = Project::new();
    install_pdf_skill(&project.path(".claude/skills"));
    std::fs::create_dir_all(project.path(".claude/agents")).expect("agents dir");
    std::fs::write(
        project.path(".claude/agents/reader.md"),
        "---\nname: reader\ndescription: Reads code and answers questions.\ntools: Read, Grep\n---\nYou read code.\n",
    )
    .expect("agent");
    let server = ScriptedServer::start([text("Hi.", 500), text("Hi again.", 500)]).await;
    project.use_scripted(&server);
    project.ok(&["run", "--agent", "reader", "hello"]).await;
    project.ok(&["run", "hello"]).await;
    let system = |i: usize| server.requests()[i].json()["messages"][0]["content"].to_string();
    assert!(!system(0).contains("pdf-processing"), "{}", system(0));
    assert!(system(1).contains("pdf-processing"), "{}", system(1));
}

/// The 50 skills again: `/context` says which descriptions were cut and
/// which skills are named only, and the `skill` tool's description says the
/// list may name skills without their descriptions. The system prompt's
/// size is counted with cairn's own counter, against the whole list as it
/// was sent before the caps (every description whole).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_names_the_skills_cut_from_the_list() {
    let project = Project::new();
    let bare = ScriptedServer::start([text("Hi.", 500)]).await;
    project.use_scripted(&bare);
    project.ok(&["run", "hello"]).await;
    let bare_system = bare.requests()[0].json()["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    install_fifty_skills(&project);
    let server = ScriptedServer::start([text("Hi.", 500)]).await;
    project.use_scripted(&server);
    project.ok(&["run", "hello"]).await;
    let request = server.requests()[0].json();
    let system = request["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let whole_list: String = (0..50)
        .map(|i| {
            format!(
                "\n  <skill>\n    <name>skill-{i:02}</name>\n    <description>{}</description>\n  </skill>",
                fifty_description(i)
            )
        })
        .collect();
    let (bare_tokens, after) = (
        cairn::token::count(&bare_system),
        cairn::token::count(&system),
    );
    let before = bare_tokens + cairn::token::count(&whole_list);
    eprintln!(
        "system prompt tokens: no skills {bare_tokens}, 50 skills uncapped {before}, capped {after}"
    );
    assert!(after < bare_tokens + 4_000, "{after} tokens");
    let skill_tool = request["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["function"]["name"] == "skill")
        .expect("the skill tool")["function"]["description"]
        .to_string();
    assert!(skill_tool.contains("named only"), "{skill_tool}");
    let context = project.ok(&["run", "--continue", "/context"]).await;
    let note = context
        .lines()
        .find(|line| line.starts_with("skills:"))
        .unwrap_or_else(|| panic!("no skills line in:\n{context}"));
    assert!(note.contains("50 skills"), "{note}");
    assert!(note.contains("skill-07"), "{note}");
    assert!(note.contains("skill-49"), "{note}");
    assert!(!note.contains("skill-00"), "{note}");
}

/// A subagent started with `task` that has no `skill` tool (Claude Code's
/// `tools: Read, Grep`, or `disallowedTools: Skill`) is not told about
/// skills; its parent is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagent_without_the_skill_tool_is_not_told_about_skills() {
    for agent in ["tools: Read, Grep", "disallowedTools: Skill"] {
        let project = Project::new();
        install_pdf_skill(&project.path(".claude/skills"));
        std::fs::create_dir_all(project.path(".claude/agents")).expect("agents dir");
        std::fs::write(
            project.path(".claude/agents/reader.md"),
            format!("---\nname: reader\ndescription: Reads code.\n{agent}\n---\nYou read code.\n"),
        )
        .expect("agent");
        let server = ScriptedServer::start([
            tool_call(
                "call_task",
                "task",
                json!({ "description": "read", "prompt": "Read it.", "subagent_type": "reader" }),
                500,
            ),
            text("Read.", 500),
            text("Done.", 500),
        ])
        .await;
        project.use_scripted(&server);
        let output = project.cairn(&["run", "delegate"]).await;
        assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
        let requests = server.requests();
        assert_eq!(requests.len(), 3, "{}", describe(&output));
        let (parent, child) = (requests[0].json(), requests[1].json());
        assert!(
            parent["messages"][0]["content"]
                .to_string()
                .contains("pdf-processing")
        );
        assert!(
            !child["messages"][0]["content"]
                .to_string()
                .contains("pdf-processing"),
            "{agent}"
        );
        assert!(!child["tools"].to_string().contains("\"skill\""), "{agent}");
    }
}
