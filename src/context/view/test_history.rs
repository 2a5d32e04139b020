//! Builds message histories for tests: ids sort in creation order, every
//! assistant answers the latest user message, tool parts carry real states.

use serde_json::json;

use crate::message::{
    AssistantMessage, CompactionPart, FinishReason, Message, MessageWithParts, ModelRef, Part,
    PartKind, ReasoningPart, Role, StepFinishPart, StepStartPart, TextPart, Tokens, ToolPart,
    ToolState, ToolTime, UserMessage,
};

pub fn model() -> ModelRef {
    ModelRef::new("anthropic", "claude-test")
}

pub struct HistoryBuilder {
    pub messages: Vec<MessageWithParts>,
    next: u64,
    last_user: String,
}

impl HistoryBuilder {
    pub fn new() -> Self {
        Self {
            messages: Vec::new(),
            next: 0,
            last_user: String::new(),
        }
    }

    fn id(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("{prefix}_{:08}", self.next)
    }

    fn push_message(&mut self, role: Role) -> String {
        let id = self.id("msg");
        self.messages.push(MessageWithParts {
            message: Message {
                id: id.clone(),
                session_id: "ses_test".into(),
                time_created: self.next as i64,
                role,
            },
            parts: Vec::new(),
        });
        id
    }

    /// Adds a part to the newest message.
    pub fn part(&mut self, kind: PartKind) -> &mut Self {
        let id = self.id("prt");
        let message = self
            .messages
            .last_mut()
            .expect("a message before its parts");
        message.parts.push(Part {
            id,
            message_id: message.message.id.clone(),
            session_id: "ses_test".into(),
            kind,
            tokens: None,
        });
        self
    }

    pub fn user(&mut self, text: &str) -> &mut Self {
        let id = self.push_message(Role::User(UserMessage {
            agent: "build".into(),
            model: model(),
            system: None,
        }));
        self.last_user = id;
        self.text(text)
    }

    /// A user message with a compaction part; returns its id.
    pub fn compaction_request(&mut self, auto: bool, tail_start_id: Option<String>) -> String {
        let id = self.push_message(Role::User(UserMessage {
            agent: "build".into(),
            model: model(),
            system: None,
        }));
        self.last_user = id.clone();
        self.part(PartKind::Compaction(CompactionPart {
            auto,
            tail_start_id,
            ..CompactionPart::default()
        }));
        id
    }

    pub fn assistant_with(&mut self, model: ModelRef, summary: bool) -> &mut Self {
        let parent_id = self.last_user.clone();
        self.push_message(Role::Assistant(AssistantMessage {
            parent_id,
            agent: "build".into(),
            model,
            path: Default::default(),
            summary,
            finish: None,
            error: None,
            tokens: Tokens::default(),
            cost: 0.0,
            time_completed: None,
        }));
        self.part(PartKind::StepStart(StepStartPart::default()))
    }

    pub fn assistant(&mut self) -> &mut Self {
        self.assistant_with(model(), false)
    }

    /// A finished summary answering the latest compaction request.
    pub fn summary(&mut self, text: &str) -> &mut Self {
        self.assistant_with(model(), true).text(text).finish(1_000)
    }

    pub fn text(&mut self, text: &str) -> &mut Self {
        self.part(PartKind::Text(TextPart {
            text: text.into(),
            ..TextPart::default()
        }))
    }

    pub fn reasoning(&mut self, text: &str, signature: Option<&str>) -> &mut Self {
        self.part(PartKind::Reasoning(ReasoningPart {
            text: text.into(),
            signature: signature.map(String::from),
            ..ReasoningPart::default()
        }))
    }

    pub fn step(&mut self) -> &mut Self {
        self.part(PartKind::StepStart(StepStartPart::default()))
    }

    pub fn tool(&mut self, name: &str, state: ToolState) -> &mut Self {
        let call_id = self.id("call");
        self.part(PartKind::Tool(ToolPart {
            call_id,
            tool: name.into(),
            state,
        }))
    }

    pub fn tool_done(&mut self, name: &str, output: &str) -> &mut Self {
        self.tool(name, completed(output))
    }

    /// Ends the step with a step-finish of `input` tokens and marks the
    /// message finished.
    pub fn finish(&mut self, input: u64) -> &mut Self {
        let tokens = Tokens {
            input,
            ..Tokens::default()
        };
        self.part(PartKind::StepFinish(StepFinishPart {
            reason: FinishReason::Stop,
            tokens,
            cost: 0.0,
            snapshot: None,
        }));
        let message = self.messages.last_mut().expect("finish after a message");
        if let Some(assistant) = message.message.as_assistant_mut() {
            assistant.finish = Some(FinishReason::Stop);
            assistant.tokens = tokens;
        }
        self
    }

    pub fn build(&self) -> Vec<MessageWithParts> {
        self.messages.clone()
    }
}

pub fn completed(output: &str) -> ToolState {
    ToolState::Completed {
        input: json!({"command": "ls"}),
        output: output.into(),
        title: "ls".into(),
        metadata: json!({}),
        time: ToolTime::default(),
        attachments: Vec::new(),
    }
}
