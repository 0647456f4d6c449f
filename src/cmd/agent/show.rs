//! `loopx agent show`.

use anyhow::Result;

use crate::ctx::Ctx;
use crate::error::Exit;
use crate::tx;

/// Show one agent
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The agent's id
    id: String,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let snap = tx::load(ctx)?;
    let a = snap.state.agent(&args.id)?;
    ctx.out.emit(a, || {
        let mut s = format!(
            "agent {}  ({}, {})\nregistered {} by {}",
            a.id,
            a.runtime.as_str(),
            a.status.as_str(),
            a.registered_at,
            a.registered_by.name()
        );
        if !a.capabilities.is_empty() {
            s.push_str(&format!("\ncapabilities: {}", a.capabilities.join(", ")));
        }
        let held: Vec<String> = snap
            .state
            .todos
            .values()
            .filter(|t| t.owner() == Some(&a.id))
            .map(|t| format!("  {}  {}", t.id, t.title))
            .collect();
        if !held.is_empty() {
            s.push_str(&format!("\nclaims:\n{}", held.join("\n")));
        }
        s
    })?;
    Ok(Exit::Ok)
}
