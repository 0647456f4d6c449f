//! `loopx agent show`.

use anyhow::Result;
use serde::Serialize;

use crate::cmd::tx;
use crate::cmd::wire::TodoRef;
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::Agent;

/// Show one agent and the claims it holds
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The agent's id
    id: String,
}

#[derive(Serialize)]
struct Wire<'a> {
    #[serde(flatten)]
    agent: &'a Agent,
    claims: Vec<TodoRef<'a>>,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let snap = tx::load(ctx)?;
    let a = snap.state.agent(&args.id)?;
    let wire = Wire {
        agent: a,
        claims: snap
            .state
            .todos
            .values()
            .filter(|t| t.owner() == Some(&a.id))
            .map(TodoRef::of)
            .collect(),
    };
    ctx.out.emit(&wire, || {
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
        // Named goals only: none named is every active goal.
        if !a.goals.is_empty() {
            let goals: Vec<&str> = a.goals.iter().map(|g| g.as_str()).collect();
            s.push_str(&format!("\ngoals: {}", goals.join(", ")));
        }
        if !wire.claims.is_empty() {
            s.push_str("\nclaims:");
            for c in &wire.claims {
                s.push_str(&format!("\n  {}  {}", c.id, c.title));
            }
        }
        s
    })?;
    Ok(Exit::Ok)
}
