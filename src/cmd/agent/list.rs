//! `loopx agent list`.

use anyhow::Result;
use serde::Serialize;

use crate::cmd::tx;
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::AgentId;

/// List the registered agents and what they hold
#[derive(clap::Args, Debug)]
pub struct Args {}

#[derive(Serialize)]
struct Row<'a> {
    id: &'a AgentId,
    runtime: &'static str,
    status: &'static str,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    capabilities: &'a [String],
    claims: usize,
}

#[derive(Serialize)]
struct Wire<'a> {
    agents: Vec<Row<'a>>,
}

pub fn run(ctx: &Ctx, _args: &Args) -> Result<Exit> {
    let snap = tx::load(ctx)?;
    let state = &snap.state;
    let wire = Wire {
        agents: state
            .agents
            .values()
            .map(|a| Row {
                id: &a.id,
                runtime: a.runtime.as_str(),
                status: a.status.as_str(),
                capabilities: &a.capabilities,
                claims: state
                    .todos
                    .values()
                    .filter(|t| t.owner() == Some(&a.id))
                    .count(),
            })
            .collect(),
    };
    ctx.out.emit(&wire, || {
        if wire.agents.is_empty() {
            return "No agents yet. Register one with `loopx agent register ID`.".to_owned();
        }
        let w = wire
            .agents
            .iter()
            .map(|r| r.id.as_str().len())
            .max()
            .unwrap_or(0);
        wire.agents
            .iter()
            .map(|r| {
                let caps = if r.capabilities.is_empty() {
                    String::new()
                } else {
                    format!("  [{}]", r.capabilities.join(", "))
                };
                format!(
                    "{:w$}  {:11}  {:7}  {} claim{}{caps}",
                    r.id.as_str(),
                    r.runtime,
                    r.status,
                    r.claims,
                    if r.claims == 1 { "" } else { "s" }
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    })?;
    Ok(Exit::Ok)
}
