//! `loopx goal show`.

use anyhow::Result;

use crate::cmd::tx;
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::usage::human_count;

/// Show one goal
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The goal's id
    id: String,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let snap = tx::load(ctx)?;
    let g = snap.state.goal(&args.id)?;
    ctx.out.emit(g, || {
        let mut s = format!(
            "goal {}  ({})\nobjective: {}\nquota: {} slots per {} per agent\ncreated {} by {}",
            g.id,
            g.status.as_str(),
            g.objective,
            g.quota.slots,
            g.quota.window,
            g.created_at,
            g.created_by.name()
        );
        if !g.scope.is_empty() {
            s.push_str(&format!("\nscope: {}", g.scope.join(", ")));
        }
        for guard in &g.guards {
            s.push_str(&format!("\nguard: {guard}"));
        }
        let budgets = g
            .budget
            .goal
            .iter()
            .map(|b| ("budget".to_owned(), b))
            .chain(
                g.budget
                    .agents
                    .iter()
                    .map(|(a, b)| (format!("budget of {a}"), b)),
            );
        for (who, b) in budgets {
            let limits: Vec<String> = b
                .usd
                .map(|u| u.to_string())
                .into_iter()
                .chain(b.tokens.map(|t| format!("{} tokens", human_count(t))))
                .collect();
            s.push_str(&format!("\n{who}: {} per {}", limits.join(", "), b.window));
        }
        if let Some(l) = g.lease {
            s.push_str(&format!("\nlease: {l} (the goal's own)"));
        }
        match g.stall_after {
            crate::model::goal::STALL_AFTER => {}
            0 => s.push_str("\nstall detection: off"),
            n => s.push_str(&format!(
                "\nstall: a gate after {n} advanced turns without progress"
            )),
        }
        s
    })?;
    Ok(Exit::Ok)
}
