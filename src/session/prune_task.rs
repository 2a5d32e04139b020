//! Runs prune: plans with the rule in `prune`, persists the cleared parts,
//! tells the user what it freed. After the loop exits (config
//! `compaction.prune`) quietly, and on `/prune` with a report either way.

use crate::message::now_millis;
use crate::session::runtime::SessionCtx;
use crate::session::{Error, context, gauge, prune};

/// Prunes the session now. `report` says so even when nothing was pruned.
pub async fn run(ctx: &SessionCtx, report: bool) -> Result<(), Error> {
    let all = ctx.writer.store.read_all(&ctx.session_id).await?;
    let plan = prune::plan_prune(&all, |part| context::part_tokens(part).0);
    if !plan.acts() {
        if report {
            let reason = plan
                .reason_if_none
                .unwrap_or_else(|| "nothing to prune".to_string());
            ctx.writer.notice(&ctx.session_id, reason);
        }
        return Ok(());
    }
    let parts = prune::apply(&plan, all.iter().flat_map(|m| m.parts.iter()), now_millis());
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
            prune::thousands(plan.freed_tokens)
        ),
    );
    gauge::refresh_session(ctx).await;
    Ok(())
}
