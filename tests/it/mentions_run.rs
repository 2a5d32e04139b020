//! `@path` mentions through `cairn run`: what the scripted server receives
//! for a mentioned file, directory, image and missing path.

use crate::project::{Project, describe};
use crate::scenario::text;
use crate::support::ScriptedServer;

use serde_json::{Value, json};

/// The user message of the first request, after running `message`.
async fn user_message(project: &Project, message: &str) -> Value {
    let server = ScriptedServer::start([text("Seen.", 300)]).await;
    project.use_scripted(&server);
    let output = project.cairn(&["run", message]).await;
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let request = server.requests()[0].json();
    request["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .expect("a user message")
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mentioned_file_is_sent_in_the_read_tools_format() {
    let project = Project::new();
    std::fs::write(project.path("notes.txt"), "alpha\nbeta\n").expect("write notes");
    let user = user_message(&project, "summarise @notes.txt.").await;
    let path = project.path("notes.txt").display().to_string();
    assert_eq!(
        user["content"],
        json!([
            { "type": "text", "text": "summarise @notes.txt." },
            { "type": "text", "text": format!(
                "Called the Read tool with the following input: {{\"path\":\"{path}\"}}\n\
                 <path>{path}</path>\n<type>file</type>\n<content>\n1: alpha\n2: beta\n\n(End of file - total 2 lines)\n</content>"
            ) }
        ]),
        "{user}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mentioned_directory_is_sent_as_a_listing() {
    let project = Project::new();
    std::fs::create_dir_all(project.path("docs/deep")).expect("mkdir");
    std::fs::write(project.path("docs/a.md"), "a").expect("write");
    let user = user_message(&project, "what is in @docs/").await;
    let path = project.path("docs/").display().to_string();
    assert_eq!(
        user["content"][1]["text"],
        format!(
            "Called the Read tool with the following input: {{\"path\":\"{path}\"}}\n\
             <path>{path}</path>\n<type>directory</type>\n<entries>\na.md\ndeep/\n(2 entries)\n</entries>"
        ),
        "{user}"
    );
    assert_eq!(user["content"].as_array().map(Vec::len), Some(2), "{user}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mentioned_image_is_sent_as_an_image_part() {
    let project = Project::new();
    let png: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
    std::fs::write(project.path("shot.png"), png).expect("write png");
    let user = user_message(&project, "what is wrong in @shot.png").await;
    use base64::Engine;
    let data = base64::engine::general_purpose::STANDARD.encode(png);
    let content = user["content"].to_string();
    assert!(
        content.contains(&format!("data:image/png;base64,{data}")),
        "{user}"
    );
    assert_eq!(
        user["content"][0]["text"], "what is wrong in @shot.png",
        "{user}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_mention_is_left_as_typed() {
    let project = Project::new();
    let user = user_message(&project, "ask @nobody.txt or me@example.org").await;
    let content = &user["content"];
    let only_text = content == "ask @nobody.txt or me@example.org"
        || *content == json!([{ "type": "text", "text": "ask @nobody.txt or me@example.org" }]);
    assert!(only_text, "{user}");
}

/// Issue #28's blind review: `@key.txt`, a project file that links to a
/// file outside the project, attached that file unasked. It is not attached
/// now, and the model is told why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mention_linked_out_of_the_project_is_not_attached() {
    let project = Project::new();
    let outside = tempfile::tempdir().expect("outside");
    std::fs::write(outside.path().join("secret.txt"), "OUTSIDE-SECRET").expect("write");
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), project.path("key.txt"))
        .expect("link");
    let user = user_message(&project, "summarize @key.txt").await;
    let sent = user.to_string();
    assert!(!sent.contains("OUTSIDE-SECRET"), "{sent}");
    assert!(sent.contains("link out of the project"), "{sent}");
}
