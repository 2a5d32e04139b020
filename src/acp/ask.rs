//! Permission bridge: a cairn ask -> `session/request_permission`, and the
//! editor's pick -> the answer cairn stores.
//!
//! The ask itself was decided by cairn's rules and sandbox before it got
//! here; this only carries the question and the answer. The options are the
//! ones the terminal UI offers: allow once, always (the exact command or
//! path), always with the broader pattern when one is safe, reject. An
//! editor that answers `cancelled` (its turn was cancelled, or its dialog
//! closed) means reject.

use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    ToolCallUpdate, ToolCallUpdateFields,
};

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Client, Error};

use super::session::Open;
use crate::permission_request::{PermissionAnswer, PermissionRequest};
use crate::session::command::Command;

const ONCE: &str = "allow_once";
const ALWAYS: &str = "allow_always";
const ALWAYS_BROAD: &str = "allow_always_broad";
const REJECT: &str = "reject";

/// The `session/request_permission` for `request`.
pub fn question(acp_session: &str, request: &PermissionRequest) -> RequestPermissionRequest {
    let mut options = vec![PermissionOption::new(
        ONCE,
        "Allow once",
        PermissionOptionKind::AllowOnce,
    )];
    if !request.always.is_empty() {
        options.push(PermissionOption::new(
            ALWAYS,
            format!("Always allow {}", request.always.join(", ")),
            PermissionOptionKind::AllowAlways,
        ));
    }
    if !request.always_broad.is_empty() {
        options.push(PermissionOption::new(
            ALWAYS_BROAD,
            format!("Always allow {}", request.always_broad.join(", ")),
            PermissionOptionKind::AllowAlways,
        ));
    }
    options.push(PermissionOption::new(
        REJECT,
        "Reject",
        PermissionOptionKind::RejectOnce,
    ));
    let call_id = request
        .call_id
        .clone()
        .unwrap_or_else(|| request.id.clone());
    let mut title = request.title.clone();
    for reason in &request.reasons {
        title.push_str(&format!("\n- {reason}"));
    }
    let fields = ToolCallUpdateFields::new().title(title);
    RequestPermissionRequest::new(
        acp_session.to_string(),
        ToolCallUpdate::new(call_id, fields),
        options,
    )
}

/// cairn's answer to the editor's `outcome`: anything but an allow (a
/// cancelled question, an option cairn did not offer) is a reject.
pub fn answer(
    question: &RequestPermissionRequest,
    outcome: &RequestPermissionOutcome,
) -> PermissionAnswer {
    let RequestPermissionOutcome::Selected(selected) = outcome else {
        return reject("the editor cancelled the question");
    };
    // Only an option this question offered answers it: an "always" sent to
    // a question that offered "once" (running outside the sandbox) is no
    // yes (the blind review of #33).
    let offered = question
        .options
        .iter()
        .any(|option| option.option_id == selected.option_id);
    if !offered {
        return reject(&format!(
            "the editor answered with an option it was not offered: {:?}",
            &*selected.option_id.0
        ));
    }
    match &*selected.option_id.0 {
        ONCE => PermissionAnswer::Once,
        ALWAYS => PermissionAnswer::Always,
        ALWAYS_BROAD => PermissionAnswer::AlwaysBroad,
        REJECT => reject("the user rejected it in the editor"),
        other => reject(&format!(
            "the editor answered with an unknown option {other:?}"
        )),
    }
}

fn reject(why: &str) -> PermissionAnswer {
    PermissionAnswer::Reject {
        message: Some(why.to_string()),
    }
}

/// Asks the editor `request` and gives cairn its answer, off the dispatch
/// loop: the answer arrives as a response the loop must be free to route.
pub fn forward(
    cx: &ConnectionTo<Client>,
    open: &Open,
    request: PermissionRequest,
) -> Result<(), Error> {
    let question = question(&open.session.id, &request);
    let handle = open.handle.clone();
    let connection = cx.clone();
    cx.spawn(async move {
        let asked = question.clone();
        let answer = match connection.send_request(question).block_task().await {
            Ok(response) => answer(&asked, &response.outcome),
            Err(error) => {
                tracing::warn!(%error, "the editor did not answer a permission question");
                answer(&asked, &RequestPermissionOutcome::Cancelled)
            }
        };
        handle.send(Command::AnswerPermission {
            request_id: request.id,
            answer,
        });
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use agent_client_protocol::v1::schema::SelectedPermissionOutcome;

    use super::*;

    fn picked(id: &str) -> RequestPermissionOutcome {
        RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id.to_string()))
    }

    #[test]
    fn only_an_allow_allows() {
        let request = PermissionRequest {
            always: vec!["npm run build".into()],
            always_broad: vec!["npm run *".into()],
            ..Default::default()
        };
        let asked = question("s", &request);
        assert_eq!(answer(&asked, &picked(ONCE)), PermissionAnswer::Once);
        assert_eq!(answer(&asked, &picked(ALWAYS)), PermissionAnswer::Always);
        assert_eq!(
            answer(&asked, &picked(ALWAYS_BROAD)),
            PermissionAnswer::AlwaysBroad
        );
        for outcome in [
            picked(REJECT),
            picked("allow_everything"),
            RequestPermissionOutcome::Cancelled,
        ] {
            assert!(
                matches!(answer(&asked, &outcome), PermissionAnswer::Reject { .. }),
                "{outcome:?}"
            );
        }
    }

    /// The blind review of #33: "always" sent to a question that offered
    /// only "once" (running outside the sandbox) was a yes.
    #[test]
    fn an_option_not_offered_is_a_reject() {
        let once_only = question("s", &PermissionRequest::default());
        for id in [ALWAYS, ALWAYS_BROAD] {
            assert!(
                matches!(
                    answer(&once_only, &picked(id)),
                    PermissionAnswer::Reject { .. }
                ),
                "{id}"
            );
        }
    }

    #[test]
    fn the_broad_offer_is_an_option_only_when_cairn_makes_it() {
        let mut request = PermissionRequest {
            always: vec!["git status -s".into()],
            ..Default::default()
        };
        let ids = |q: RequestPermissionRequest| {
            q.options
                .iter()
                .map(|o| o.option_id.0.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(question("s", &request)), [ONCE, ALWAYS, REJECT]);
        request.always_broad = vec!["git status *".into()];
        assert_eq!(
            ids(question("s", &request)),
            [ONCE, ALWAYS, ALWAYS_BROAD, REJECT]
        );
    }
}
