//! Runs prune: plans with the rule in `prune`, persists the cleared parts,
//! tells the user what it freed. After the loop exits and before an
//! automatic compaction (config `compaction.prune`) quietly, and on `/prune`
//! with a report either way.

use crate::clock::now_millis;
use crate::context::{prune, view};
use crate::session::ctx::SessionCtx;
use crate::session::{Error, gauge};

/// Prunes the session now. `report` says so even when nothing was pruned.
/// Returns whether anything was pruned.
pub async fn run(ctx: &SessionCtx, report: bool) -> Result<bool, Error> {
    // The model view read is enough: the plan walks back from the newest
    // message and stops at the latest summary, which the read includes.
    let limits = prune::PruneLimits::for_window(gauge::session_window(ctx).await);
    let read = ctx.read_view().await?;
    let plan = prune::plan_prune(read.messages(), limits, |part| view::part_tokens(part).0);
    let parts = plan.acts().then(|| {
        let parts = read.messages().iter().flat_map(|m| m.parts.iter());
        prune::apply(&plan, parts, now_millis())
    });
    ctx.keep_view(read);
    let Some(parts) = parts else {
        if report {
            let reason = plan
                .reason_if_none
                .unwrap_or_else(|| "nothing to prune".to_string());
            ctx.writer.notice(&ctx.session_id, reason);
        }
        return Ok(false);
    };
    ctx.writer.store.upsert_parts(&parts).await?;
    for part in &parts {
        ctx.writer.bus.publish(crate::bus::Event::PartUpdated {
            part: std::sync::Arc::new(part.clone()),
        });
    }
    ctx.writer.notice(
        &ctx.session_id,
        format!(
            "pruned {} tool outputs, freed {} tokens",
            plan.outputs,
            crate::shared::thousands(plan.freed_tokens)
        ),
    );
    gauge::refresh_session(ctx).await;
    Ok(true)
}
