//! Permissions: may this tool do this, here? allow / ask / deny per tool and pattern.
//!
//! Owns the rules (defaults, config, answers given with "always"), the
//! evaluation of a request against them, and the waiting for a user's answer.
//! It never runs a tool and never draws anything: asks go out on the bus and
//! answers come back through `answer`.

use std::collections::HashMap;

use serde::Serialize;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::bus::{Bus, Event};

pub mod bash_rules;
pub mod claude_rules;
mod deny_spellings;
mod path;
pub mod read_only;
pub mod shell;

pub use crate::permission_request::{
    Action, PermissionAnswer, PermissionConfig, PermissionRequest, PermissionSetting, Preview,
};
pub use path::{is_external, lexical, resolve_path};

/// One line of a ruleset: for `permission` acting on something matching
/// `pattern`, do `action`. Both fields are wildcards (see [`wildcard_match`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rule {
    pub permission: String,
    pub pattern: String,
    pub action: Action,
}

impl Rule {
    pub fn new(permission: &str, pattern: &str, action: Action) -> Self {
        Self {
            permission: permission.to_string(),
            pattern: pattern.to_string(),
            action,
        }
    }
}

/// cairn's built-in rules, evaluated before config (so config overrides them):
///
/// - anything not listed: ask;
/// - `read`: allow, except `*.env` and `*.env.*` (secrets) which ask; `*.env.example` allow;
/// - `bash`, `edit`: ask;
/// - `external_directory` (a path outside the project root, after resolving
///   symlinks and `..`): ask;
/// - `doom_loop` (the same call three times in a row): ask;
/// - `glob`, `grep`, `list`, `todowrite`: allow (they read names and lines the
///   model could get with `read` anyway, or touch no file at all);
/// - `skill` (by skill name): allow — loading one reads instructions the
///   user installed; `permission.skill` denies or asks per name.
pub fn default_rules() -> Vec<Rule> {
    use Action::{Allow, Ask};
    vec![
        Rule::new("*", "*", Ask),
        Rule::new("read", "*", Allow),
        Rule::new("read", "*.env", Ask),
        Rule::new("read", "*.env.*", Ask),
        Rule::new("read", "*.env.example", Allow),
        Rule::new("bash", "*", Ask),
        Rule::new("edit", "*", Ask),
        Rule::new("external_directory", "*", Ask),
        Rule::new("doom_loop", "*", Ask),
        Rule::new("glob", "*", Allow),
        Rule::new("grep", "*", Allow),
        Rule::new("list", "*", Allow),
        Rule::new("todowrite", "*", Allow),
        Rule::new("skill", "*", Allow),
    ]
}

/// The rules a session runs with: the defaults, then the config's rules (so
/// they win). Within one permission's pattern table, `*` comes first and
/// longer patterns later, so the more specific entry wins whatever the
/// table's (alphabetical) order. `~` and `$HOME` are expanded in patterns.
///
/// `yolo` turns every `ask` into `allow`: nothing is asked, but an explicit
/// `deny` still holds.
pub fn ruleset(config: &PermissionConfig, yolo: bool) -> Vec<Rule> {
    ruleset_with_imported(config, Vec::new(), yolo)
}

/// [`ruleset`] with `imported` rules (Claude Code's settings files) between
/// the defaults and the config: they override the defaults, and cairn's
/// own config has the last word.
pub fn ruleset_with_imported(
    config: &PermissionConfig,
    imported: Vec<Rule>,
    yolo: bool,
) -> Vec<Rule> {
    let mut rules = default_rules();
    rules.extend(imported);
    rules.extend(config_rules(config));
    if yolo {
        for rule in &mut rules {
            if rule.action == Action::Ask {
                rule.action = Action::Allow;
            }
        }
    }
    rules
}

/// The rules a `[permission]` table (or an agent's `permission:`) writes,
/// in the order they apply: `*` first, longer patterns later.
pub fn config_rules(config: &PermissionConfig) -> Vec<Rule> {
    let mut rules = Vec::new();
    for (permission, setting) in config {
        match setting {
            PermissionSetting::Action(action) => rules.push(Rule::new(permission, "*", *action)),
            PermissionSetting::Patterns(table) => {
                let mut entries: Vec<(&String, &Action)> = table.iter().collect();
                entries.sort_by_key(|(pattern, _)| (pattern.as_str() != "*", pattern.len()));
                for (pattern, action) in entries {
                    rules.push(Rule::new(permission, &expand_home(pattern), *action));
                }
            }
        }
    }
    rules
}

fn expand_home(pattern: &str) -> String {
    let Some(home) = std::env::var_os("HOME") else {
        return pattern.to_string();
    };
    let home = home.to_string_lossy();
    if let Some(rest) = pattern.strip_prefix("~/") {
        format!("{home}/{rest}")
    } else if let Some(rest) = pattern.strip_prefix("$HOME/") {
        format!("{home}/{rest}")
    } else {
        pattern.to_string()
    }
}

/// The action for `permission` on `pattern`: the LAST rule matching both
/// wins (so later rulesets override earlier ones); no match means ask.
pub fn evaluate<'a>(
    permission: &str,
    pattern: &str,
    rules: &'a [Rule],
) -> (Action, Option<&'a Rule>) {
    rules
        .iter()
        .rev()
        .find(|rule| {
            wildcard_match(permission, &rule.permission) && wildcard_match(pattern, &rule.pattern)
        })
        .map_or((Action::Ask, None), |rule| (rule.action, Some(rule)))
}

/// Allow < ask < deny.
fn strictness(action: Action) -> u8 {
    match action {
        Action::Allow => 0,
        Action::Ask => 1,
        Action::Deny => 2,
    }
}

/// `*` matches any run of characters (including `/`), `?` exactly one. A
/// pattern ending in ` *` also matches without the tail, so `cargo test *`
/// covers a bare `cargo test`.
pub fn wildcard_match(text: &str, pattern: &str) -> bool {
    if let Some(stem) = pattern.strip_suffix(" *")
        && glob_chars(
            &text.chars().collect::<Vec<_>>(),
            &stem.chars().collect::<Vec<_>>(),
        )
    {
        return true;
    }
    glob_chars(
        &text.chars().collect::<Vec<_>>(),
        &pattern.chars().collect::<Vec<_>>(),
    )
}

/// Iterative wildcard match with single-star backtracking: linear in practice,
/// never exponential.
fn glob_chars(text: &[char], pattern: &[char]) -> bool {
    let (mut t, mut p) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == '*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && (pattern[p] == '?' || pattern[p] == text[t]) {
            t += 1;
            p += 1;
        } else if let Some((star_p, star_t)) = star {
            p = star_p + 1;
            t = star_t + 1;
            star = Some((star_p, star_t + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|c| *c == '*')
}

/// The patterns an "always" answer may store for a call named by `text`.
/// A name that itself holds `*` or `?` (an MCP server chooses its tools'
/// names) would, stored as a pattern, allow more than this call, and rules
/// have no escape for them: such a call is allowed once at a time.
pub fn exact_always(text: &str) -> Vec<String> {
    if text.contains(['*', '?']) {
        Vec::new()
    } else {
        vec![text.to_string()]
    }
}

/// Why a permission check did not let the tool proceed.
#[derive(thiserror::Error, Debug, Clone, PartialEq)]
pub enum PermissionError {
    /// A rule (config or default) says deny, or nobody can be asked.
    #[error("{message}")]
    Denied { message: String, rule: Option<Rule> },
    /// The user said no; `message` is their feedback for the model.
    #[error("permission rejected by the user")]
    Rejected { message: Option<String> },
    /// The turn was cancelled while the question was open.
    #[error("cancelled while waiting for permission")]
    Cancelled,
}

/// Whether someone is there to answer an ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A TUI shows the question and sends the answer back.
    Interactive,
    /// Nobody can answer: an `ask` fails closed.
    Headless,
}

struct Pending {
    request: PermissionRequest,
    reply: oneshot::Sender<Result<(), PermissionError>>,
}

/// The permission state of one session runtime: the ruleset, the allow rules
/// added by "always" answers, and the questions waiting for an answer.
pub struct Permissions {
    rules: Vec<Rule>,
    /// Rules that may only make an answer stricter (an untrusted project's
    /// `ask`/`deny` entries): evaluated on their own, and when one matches,
    /// the stricter of its action and the ruleset's is taken. Appended to
    /// `rules` instead, a project's `"*" = "ask"` would reopen the user's deny.
    restrictions: Vec<Rule>,
    /// Added by "always" answers; evaluated after `rules`, so they win.
    /// Shared with [`Permissions::for_agent`] copies, like the two below:
    /// an answer given to a subagent's ask holds for the whole session.
    approved: Arc<Mutex<Vec<Rule>>>,
    pending: Arc<Mutex<HashMap<String, Pending>>>,
    /// Milliseconds each tool call (by call id) spent waiting for answers,
    /// so its duration can leave out the user's thinking time.
    waited: Arc<Mutex<HashMap<String, i64>>>,
    /// The session's accept-edits mode (Shift+Tab in the TUI): an `edit`
    /// ask for a path inside the project is allowed unasked; see
    /// [`Permissions::accepts_edit`]. Shared with the agent copies.
    accept_edits: Arc<std::sync::atomic::AtomicBool>,
    bus: Bus,
    mode: Mode,
}

impl std::fmt::Debug for Permissions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Permissions")
            .field("rules", &self.rules.len())
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl Permissions {
    pub fn new(rules: Vec<Rule>, bus: Bus, mode: Mode) -> Self {
        Self {
            rules,
            restrictions: Vec::new(),
            approved: Arc::default(),
            pending: Arc::default(),
            waited: Arc::default(),
            accept_edits: Arc::default(),
            bus,
            mode,
        }
    }

    /// Turns the session's accept-edits mode on or off.
    pub fn set_accept_edits(&self, on: bool) {
        self.accept_edits
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether `request`, an `edit` of a path inside the project (the
    /// caller knows where the path is), is allowed by the accept-edits
    /// mode: only what would be asked is, never what a rule denies. Bash
    /// commands and paths outside the project ask as before.
    pub fn accepts_edit(&self, request: &PermissionRequest) -> bool {
        request.permission == "edit"
            && self.accept_edits.load(std::sync::atomic::Ordering::Relaxed)
            && self.check(request).0 != Action::Deny
    }

    /// These permissions with `rules` that may only tighten an answer (see
    /// the field). Under `--yolo` their `ask` rules are dropped, as yolo
    /// drops every ask; their `deny` rules hold.
    pub fn with_restrictions(mut self, rules: Vec<Rule>) -> Self {
        let yolo = self.is_yolo();
        self.restrictions = rules
            .into_iter()
            .filter(|rule| rule.action == Action::Deny || (rule.action == Action::Ask && !yolo))
            .collect();
        self
    }

    /// The ruleset's verdict for one pattern, made stricter by a matching
    /// restriction.
    fn ruled(&self, permission: &str, pattern: &str) -> (Action, Option<Rule>) {
        let (action, rule) = evaluate(permission, pattern, &self.rules);
        match evaluate(permission, pattern, &self.restrictions) {
            (restricted, Some(by)) if strictness(restricted) > strictness(action) => {
                (restricted, Some(by.clone()))
            }
            _ => (action, rule.cloned()),
        }
    }

    /// These permissions with an agent's own rules after the session's (so
    /// they win), for that agent's calls. Asks, answers and "always" rules
    /// stay shared: the same front end answers them. Under `--yolo` the
    /// agent's `ask` rules allow too; its `deny` rules hold.
    pub fn for_agent(&self, agent_rules: &[Rule]) -> Permissions {
        let yolo = self.is_yolo();
        let mut rules = self.rules.clone();
        rules.extend(agent_rules.iter().cloned().map(|mut rule| {
            if yolo && rule.action == Action::Ask {
                rule.action = Action::Allow;
            }
            rule
        }));
        Permissions {
            rules,
            restrictions: self.restrictions.clone(),
            approved: self.approved.clone(),
            pending: self.pending.clone(),
            waited: self.waited.clone(),
            accept_edits: self.accept_edits.clone(),
            bus: self.bus.clone(),
            mode: self.mode,
        }
    }

    /// Allows `permission` on `pattern` from now on, as an "always" answer
    /// does: for the answers a project remembers, loaded at start.
    pub fn approve(&self, permission: &str, pattern: &str) {
        let rule = Rule::new(permission, pattern, Action::Allow);
        let mut approved = self.lock_approved();
        if !approved.contains(&rule) {
            approved.push(rule);
        }
    }

    /// Stops allowing what [`Permissions::approve`] or an "always" answer
    /// allowed; returns whether it was allowed that way.
    pub fn revoke(&self, permission: &str, pattern: &str) -> bool {
        let rule = Rule::new(permission, pattern, Action::Allow);
        let mut approved = self.lock_approved();
        let before = approved.len();
        approved.retain(|kept| *kept != rule);
        approved.len() != before
    }

    /// The allow rules added by "always" answers and [`Permissions::approve`],
    /// oldest first.
    pub fn approved(&self) -> Vec<Rule> {
        self.lock_approved().clone()
    }

    fn lock_approved(&self) -> std::sync::MutexGuard<'_, Vec<Rule>> {
        self.approved
            .lock()
            .expect("permission lock is never poisoned: no panics while held")
    }

    /// How long the call `call_id` waited for answers so far (then forgotten).
    pub fn take_waited(&self, call_id: &str) -> i64 {
        self.lock_waited().remove(call_id).unwrap_or(0)
    }

    fn lock_waited(&self) -> std::sync::MutexGuard<'_, HashMap<String, i64>> {
        self.waited
            .lock()
            .expect("permission lock is never poisoned: no panics while held")
    }

    /// What the rules say about every pattern of `request`, without asking:
    /// deny if any pattern is denied, allow if all are allowed, else ask.
    pub fn check(&self, request: &PermissionRequest) -> (Action, Option<Rule>) {
        let approved = self
            .approved
            .lock()
            .expect("permission lock is never poisoned: no panics while held");
        let mut verdict = (Action::Allow, None);
        for pattern in &request.patterns {
            let ruled = self.ruled(&request.permission, pattern);
            // A deny in the rules (config, defaults, an agent's own) holds
            // over any "always" answer: an answer given for the session, or
            // a broad one, must not reopen what a rule closed.
            if ruled.0 == Action::Deny {
                return ruled;
            }
            // Otherwise `approved` comes after `rules`, so a match there wins.
            let decided = match evaluate(&request.permission, pattern, &approved) {
                (_, None) => ruled,
                (action, rule) => (action, rule.cloned()),
            };
            match decided {
                (Action::Deny, rule) => return (Action::Deny, rule),
                (Action::Ask, rule) => verdict = (Action::Ask, rule),
                (Action::Allow, _) => {}
            }
        }
        verdict
    }

    /// Whether the session runs with `--yolo`: [`ruleset`] then leaves no
    /// `ask` rule at all (the defaults always have one).
    pub fn is_yolo(&self) -> bool {
        !self.rules.iter().any(|rule| rule.action == Action::Ask)
    }

    /// The first pattern of `patterns` a rule denies for `permission`, with
    /// that rule; "always" answers never deny, so only the ruleset is read.
    pub fn denied<'a>(&self, permission: &str, patterns: &'a [String]) -> Option<(&'a str, Rule)> {
        patterns
            .iter()
            .find_map(|pattern| match self.ruled(permission, pattern) {
                (Action::Deny, Some(rule)) => Some((pattern.as_str(), rule)),
                _ => None,
            })
    }

    /// What the rules say about one planned bash ask, without asking: deny
    /// when a rule denies any spelling, ask when it is forced (unless
    /// `--yolo`) or any pattern asks, else allow.
    pub fn check_planned(&self, ask: &bash_rules::Ask) -> (Action, Option<Rule>) {
        let spellings: Vec<String> = ask.patterns.iter().chain(&ask.spellings).cloned().collect();
        if let Some((_, rule)) = self.denied(&ask.permission, &spellings) {
            return (Action::Deny, Some(rule));
        }
        // A word known only at run time may become what a deny rule names.
        if let Some(rule) = self.rules.iter().chain(&self.restrictions).find(|rule| {
            rule.action == Action::Deny
                && wildcard_match(&ask.permission, &rule.permission)
                && ask
                    .templates
                    .iter()
                    .any(|t| bash_rules::could_match(t, &rule.pattern))
        }) {
            return (Action::Deny, Some(rule.clone()));
        }
        if !ask.forced.is_empty() && !self.is_yolo() {
            return (Action::Ask, None);
        }
        self.check(&PermissionRequest {
            permission: ask.permission.clone(),
            patterns: ask.patterns.clone(),
            ..PermissionRequest::default()
        })
    }

    /// Whether `pattern` alone passes for `permission` (rules and "always"
    /// answers), for choosing which reasons to show.
    pub fn allows(&self, permission: &str, pattern: &str) -> bool {
        self.check(&PermissionRequest {
            permission: permission.to_string(),
            patterns: vec![pattern.to_string()],
            ..PermissionRequest::default()
        })
        .0 == Action::Allow
    }

    /// Like [`Permissions::ask_cancellable`], but an `allow` rule does not
    /// skip the question: for commands whose effect cannot be known from
    /// their text. `deny` still denies and `--yolo` still allows.
    ///
    /// # Errors
    /// As [`Permissions::ask_cancellable`].
    pub async fn ask_forced(
        &self,
        request: PermissionRequest,
        cancel: &CancellationToken,
    ) -> Result<(), PermissionError> {
        match self.check(&request) {
            (Action::Deny, _) => self.ask_cancellable(request, cancel).await,
            _ if self.is_yolo() => Ok(()),
            (_, rule) if self.mode == Mode::Headless => Err(self.unanswered(
                request.clone(),
                format!(
                    "Permission `{}` for {} needs an answer whatever the rules say, because of: {}. \
                     cairn is running without a terminal to ask in, so it was refused; only --yolo \
                     runs such commands unasked. Rewrite it as plain commands instead.",
                    request.permission,
                    request.patterns.join(", "),
                    request.reasons.join("; ")
                ),
                rule,
            )),
            _ => self.wait_for_answer(request, cancel).await,
        }
    }

    /// Asks the person at the terminal whatever the rules and `--yolo` say:
    /// for what only a person may grant (a command outside the sandbox).
    /// An "always" answer stores nothing (the request offers none).
    ///
    /// # Errors
    /// `Denied` when headless (with `refused`, which says how to grant it
    /// instead), `Rejected` and `Cancelled` as [`Permissions::ask_cancellable`].
    pub async fn ask_person(
        &self,
        mut request: PermissionRequest,
        refused: &str,
        cancel: &CancellationToken,
    ) -> Result<(), PermissionError> {
        if self.mode == Mode::Headless {
            return Err(self.unanswered(request, refused.to_string(), None));
        }
        request.always.clear();
        request.always_broad.clear();
        self.wait_for_answer(request, cancel).await
    }

    /// The refusal of a question nobody can answer (headless). It is still
    /// published, and closed at once, so that `cairn run --format json`
    /// shows what was asked and refused.
    fn unanswered(
        &self,
        request: PermissionRequest,
        message: String,
        rule: Option<Rule>,
    ) -> PermissionError {
        let session_id = request.session_id.clone();
        let request_id = request.id.clone();
        self.bus.publish(Event::PermissionAsked {
            session_id: session_id.clone(),
            request: Arc::new(request),
        });
        self.bus.publish(Event::PermissionReplied {
            session_id,
            request_id,
        });
        PermissionError::Denied { message, rule }
    }

    /// Asks without a way to cancel; see [`Permissions::ask_cancellable`].
    pub async fn ask(&self, request: PermissionRequest) -> Result<(), PermissionError> {
        self.ask_cancellable(request, &CancellationToken::new())
            .await
    }

    /// Resolves `request` against the rules; when they say ask, publishes
    /// [`Event::PermissionAsked`] and waits for [`Permissions::answer`] or
    /// for `cancel`.
    ///
    /// # Errors
    /// `Denied` when a rule denies or when headless (fail closed),
    /// `Rejected` when the user says no, `Cancelled` when `cancel` fires.
    pub async fn ask_cancellable(
        &self,
        request: PermissionRequest,
        cancel: &CancellationToken,
    ) -> Result<(), PermissionError> {
        match self.check(&request) {
            (Action::Allow, _) => return Ok(()),
            (Action::Deny, rule) => return Err(denied(&request, rule)),
            (Action::Ask, rule) if self.mode == Mode::Headless => {
                let message = headless_message(&request);
                return Err(self.unanswered(request, message, rule));
            }
            (Action::Ask, _) => {}
        }
        self.wait_for_answer(request, cancel).await
    }

    /// Asks the user even where the rules (or yolo) allow: a PreToolUse
    /// hook asked for a human look. A deny rule still refuses, and with
    /// nobody to answer (headless) the call is refused.
    ///
    /// # Errors
    /// As [`Self::ask_cancellable`].
    pub async fn ask_even_if_allowed(
        &self,
        request: PermissionRequest,
        cancel: &CancellationToken,
    ) -> Result<(), PermissionError> {
        match self.check(&request) {
            (Action::Deny, rule) => return Err(denied(&request, rule)),
            (_, rule) if self.mode == Mode::Headless => {
                let message = headless_message(&request);
                return Err(self.unanswered(request, message, rule));
            }
            _ => {}
        }
        self.wait_for_answer(request, cancel).await
    }

    /// Publishes the question and waits for its answer or for `cancel`.
    async fn wait_for_answer(
        &self,
        request: PermissionRequest,
        cancel: &CancellationToken,
    ) -> Result<(), PermissionError> {
        let asked_at = tokio::time::Instant::now();
        let call_id = request.call_id.clone();
        let result = self.publish_and_wait(request, cancel).await;
        if let Some(call_id) = call_id {
            let waited = i64::try_from(asked_at.elapsed().as_millis()).unwrap_or(i64::MAX);
            *self.lock_waited().entry(call_id).or_default() += waited;
        }
        result
    }

    async fn publish_and_wait(
        &self,
        request: PermissionRequest,
        cancel: &CancellationToken,
    ) -> Result<(), PermissionError> {
        let (reply, answer) = oneshot::channel();
        let id = request.id.clone();
        let session_id = request.session_id.clone();
        self.lock_pending().insert(
            id.clone(),
            Pending {
                request: request.clone(),
                reply,
            },
        );
        self.bus.publish(Event::PermissionAsked {
            session_id: session_id.clone(),
            request: std::sync::Arc::new(request),
        });
        tokio::select! {
            biased;
            result = answer => result.unwrap_or(Err(PermissionError::Cancelled)),
            () = cancel.cancelled() => {
                if self.lock_pending().remove(&id).is_some() {
                    self.bus.publish(Event::PermissionReplied { session_id, request_id: id });
                }
                Err(PermissionError::Cancelled)
            }
        }
    }

    /// The questions waiting for an answer, oldest id first.
    pub fn pending(&self) -> Vec<PermissionRequest> {
        let mut requests: Vec<PermissionRequest> = self
            .lock_pending()
            .values()
            .map(|p| p.request.clone())
            .collect();
        requests.sort_by(|a, b| a.id.cmp(&b.id));
        requests
    }

    /// Answers the question `request_id`; returns false when it is not (or
    /// no longer) pending. `Always` also allows the request's `always`
    /// patterns from now on and releases other pending asks that now pass;
    /// `Reject` also rejects every other pending ask of the same session.
    pub fn answer(&self, request_id: &str, answer: PermissionAnswer) -> bool {
        let Some(answered) = self.lock_pending().remove(request_id) else {
            return false;
        };
        // An "always" the question did not offer (one that may run outside
        // the sandbox offers none) is no yes, whoever sent it.
        let offered = match answer {
            PermissionAnswer::Always => !answered.request.always.is_empty(),
            PermissionAnswer::AlwaysBroad => !answered.request.always_broad.is_empty(),
            _ => true,
        };
        let answer = if offered {
            answer
        } else {
            PermissionAnswer::Reject {
                message: Some("the answer chose an option the question did not offer".into()),
            }
        };
        let session_id = answered.request.session_id.clone();
        let mut released: Vec<String> = Vec::new();
        match answer {
            PermissionAnswer::Once => {
                let _ = answered.reply.send(Ok(()));
            }
            PermissionAnswer::Always | PermissionAnswer::AlwaysBroad => {
                let request = &answered.request;
                let patterns = match answer {
                    PermissionAnswer::AlwaysBroad if !request.always_broad.is_empty() => {
                        &request.always_broad
                    }
                    _ => &request.always,
                };
                {
                    let mut approved = self
                        .approved
                        .lock()
                        .expect("permission lock is never poisoned: no panics while held");
                    for pattern in patterns {
                        approved.push(Rule::new(
                            &answered.request.permission,
                            pattern,
                            Action::Allow,
                        ));
                    }
                }
                let _ = answered.reply.send(Ok(()));
                let passing: Vec<String> = self
                    .lock_pending()
                    .values()
                    .filter(|p| {
                        p.request.session_id == session_id
                            && self.check(&p.request).0 == Action::Allow
                    })
                    .map(|p| p.request.id.clone())
                    .collect();
                let mut pending = self.lock_pending();
                for id in passing {
                    if let Some(p) = pending.remove(&id) {
                        let _ = p.reply.send(Ok(()));
                        released.push(p.request.id);
                    }
                }
            }
            PermissionAnswer::Reject { message } => {
                let _ = answered
                    .reply
                    .send(Err(PermissionError::Rejected { message }));
                let mut pending = self.lock_pending();
                let same_session: Vec<String> = pending
                    .values()
                    .filter(|p| p.request.session_id == session_id)
                    .map(|p| p.request.id.clone())
                    .collect();
                for id in same_session {
                    if let Some(p) = pending.remove(&id) {
                        let _ = p
                            .reply
                            .send(Err(PermissionError::Rejected { message: None }));
                        released.push(p.request.id);
                    }
                }
            }
        }
        self.bus.publish(Event::PermissionReplied {
            session_id: session_id.clone(),
            request_id: request_id.to_string(),
        });
        for request_id in released {
            self.bus.publish(Event::PermissionReplied {
                session_id: session_id.clone(),
                request_id,
            });
        }
        true
    }

    fn lock_pending(&self) -> std::sync::MutexGuard<'_, HashMap<String, Pending>> {
        self.pending
            .lock()
            .expect("permission lock is never poisoned: no panics while held")
    }
}

/// What the model reads when a rule denies: which call and which rule.
pub fn denied_message(permission: &str, what: &str, rule: Option<&Rule>) -> String {
    let rule = rule.map_or(String::new(), |rule| {
        format!(
            " (config rule [permission.{}] \"{}\" = \"deny\")",
            rule.permission, rule.pattern
        )
    });
    format!(
        "The user has specified a rule which prevents you from using this specific tool call: \
         `{permission}` is denied for {what}{rule}. Do not retry it in another spelling."
    )
}

/// The refusal of `request` by the deny `rule`.
fn denied(request: &PermissionRequest, rule: Option<Rule>) -> PermissionError {
    let message = denied_message(
        &request.permission,
        &request.patterns.join(", "),
        rule.as_ref(),
    );
    PermissionError::Denied { message, rule }
}

fn headless_message(request: &PermissionRequest) -> String {
    // Without an "always" pattern the call's own name is advised, unless
    // that name would be read as a wildcard (see `exact_always`).
    let pattern = request.always.first().or(request
        .patterns
        .first()
        .filter(|p| !exact_always(p).is_empty()));
    let why = if request.reasons.is_empty() {
        String::new()
    } else {
        format!(
            " It needs an answer because of: {}.",
            request.reasons.join("; ")
        )
    };
    let permission = &request.permission;
    let what = request.patterns.join(", ");
    let Some(pattern) = pattern else {
        return format!(
            "Permission `{permission}` for {what} needs an answer, but cairn is running without \
             a terminal to ask in, so it was refused.{why} Its name holds a wildcard character, \
             so no rule can allow it alone; run with --yolo to allow everything not explicitly \
             denied."
        );
    };
    format!(
        "Permission `{permission}` for {what} needs an answer, but cairn is running without a \
         terminal to ask in, so it was refused.{why} To allow it, add to the config:\n\
         [permission.{permission}]\n\"{pattern}\" = \"allow\"\n\
         or run with --yolo to allow everything not explicitly denied."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_of(path: &str) -> PermissionRequest {
        PermissionRequest {
            permission: "read".into(),
            patterns: vec![path.into()],
            ..Default::default()
        }
    }

    /// Names an MCP server chooses: only a name without wildcard
    /// characters may be stored as an "always" pattern or advised as a rule.
    #[test]
    fn a_name_holding_a_wildcard_is_never_offered_as_a_pattern() {
        let cases: [(&str, bool); 6] = [
            ("fixture/echo", true),
            ("fixture/a/b", true),
            ("fixture/*", false),
            ("fixture/e?ho", false),
            ("*/echo", false),
            ("fix*/echo", false),
        ];
        for (name, offered) in cases {
            assert_eq!(!exact_always(name).is_empty(), offered, "{name}");
            let request = PermissionRequest {
                permission: "mcp".into(),
                patterns: vec![name.into()],
                always: exact_always(name),
                ..Default::default()
            };
            let advice = headless_message(&request);
            assert_eq!(
                advice.contains(&format!("\"{name}\" = \"allow\"")),
                offered,
                "{advice}"
            );
        }
    }

    #[test]
    fn an_agents_rules_win_for_it_alone_and_answers_stay_shared() {
        let session = Permissions::new(default_rules(), Bus::new(), Mode::Headless);
        let agent = session.for_agent(&[
            Rule::new("read", "*secret*", Action::Deny),
            Rule::new("bash", "*", Action::Allow),
        ]);
        assert_eq!(agent.check(&read_of("/p/secret.txt")).0, Action::Deny);
        assert_eq!(session.check(&read_of("/p/secret.txt")).0, Action::Allow);
        assert_eq!(agent.check(&read_of("/p/notes.txt")).0, Action::Allow);
        // An "always" answer given to either holds for both.
        agent.approve("edit", "*");
        assert!(
            session
                .approved()
                .contains(&Rule::new("edit", "*", Action::Allow))
        );
        // Under --yolo the agent's asks allow; its denies hold.
        let yolo = Permissions::new(
            ruleset(&PermissionConfig::new(), true),
            Bus::new(),
            Mode::Headless,
        );
        let agent = yolo.for_agent(&[
            Rule::new("read", "*", Action::Ask),
            Rule::new("read", "*secret*", Action::Deny),
        ]);
        assert!(agent.is_yolo());
        assert_eq!(agent.check(&read_of("/p/notes.txt")).0, Action::Allow);
        assert_eq!(agent.check(&read_of("/p/secret.txt")).0, Action::Deny);
    }

    /// The accept-edits mode allows what would ask, for `edit` only; a deny
    /// holds, bash still asks, and an agent copy (a subagent) shares it.
    #[test]
    fn accept_edits_allows_only_edits_that_would_ask() {
        let config: PermissionConfig =
            toml::from_str("[edit]\n\"*.lock\" = \"deny\"\n").expect("valid");
        let permissions = Permissions::new(ruleset(&config, false), Bus::new(), Mode::Headless);
        let request = |permission: &str, pattern: &str| PermissionRequest {
            permission: permission.into(),
            patterns: vec![pattern.into()],
            ..PermissionRequest::default()
        };
        let agent = permissions.for_agent(&[]);
        assert!(!permissions.accepts_edit(&request("edit", "src/a.rs")));
        permissions.set_accept_edits(true);
        assert!(permissions.accepts_edit(&request("edit", "src/a.rs")));
        assert!(agent.accepts_edit(&request("edit", "src/a.rs")));
        assert!(!permissions.accepts_edit(&request("edit", "Cargo.lock")));
        assert!(!permissions.accepts_edit(&request("bash", "touch x")));
        permissions.set_accept_edits(false);
        assert!(!agent.accepts_edit(&request("edit", "src/a.rs")));
    }

    /// An untrusted project's ask/deny entries only tighten: a project
    /// `"*" = "ask"` does not reopen the user's deny, a project deny holds
    /// over the user's allow, and under yolo only the denies stay.
    #[test]
    fn restrictions_only_make_an_answer_stricter() {
        let user: PermissionConfig =
            toml::from_str("[bash]\n\"*\" = \"allow\"\n\"rm *\" = \"deny\"\n").expect("valid");
        let project: PermissionConfig =
            toml::from_str("bash = \"ask\"\nedit = \"deny\"\n").expect("valid");
        let bash = |command: &str| PermissionRequest {
            permission: "bash".into(),
            patterns: vec![command.into()],
            ..PermissionRequest::default()
        };
        let edit = PermissionRequest {
            permission: "edit".into(),
            patterns: vec!["/p/a.rs".into()],
            ..PermissionRequest::default()
        };
        // (yolo, request, want)
        let cases = [
            (false, bash("rm -rf x"), Action::Deny),
            (false, bash("ls"), Action::Ask),
            (false, edit.clone(), Action::Deny),
            (true, bash("rm -rf x"), Action::Deny),
            (true, bash("ls"), Action::Allow),
            (true, edit.clone(), Action::Deny),
        ];
        for (yolo, request, want) in cases {
            let permissions = Permissions::new(ruleset(&user, yolo), Bus::new(), Mode::Headless)
                .with_restrictions(config_rules(&project));
            assert_eq!(permissions.check(&request).0, want, "{yolo} {request:?}");
            let agent = permissions.for_agent(&[Rule::new("edit", "*", Action::Allow)]);
            assert_eq!(
                agent.check(&edit).0,
                Action::Deny,
                "agents keep restrictions"
            );
        }
    }

    /// "Always" answers, exact or broad, given in the session or to a
    /// subagent, never reopen what a rule denies (here the agent's own).
    #[test]
    fn an_always_answer_never_overrides_a_deny_rule() {
        let session = Permissions::new(default_rules(), Bus::new(), Mode::Headless);
        let agent = session.for_agent(&[Rule::new("read", "*secret*", Action::Deny)]);
        for approval in ["/p/secret.txt", "*", "/p/*"] {
            session.approve("read", approval);
            assert_eq!(
                agent.check(&read_of("/p/secret.txt")).0,
                Action::Deny,
                "{approval}"
            );
            assert_eq!(
                session.check(&read_of("/p/secret.txt")).0,
                Action::Allow,
                "{approval}"
            );
        }
        assert_eq!(agent.check(&read_of("/p/notes.txt")).0, Action::Allow);
    }
}
