//! `loopx machine admit`: a human admits a proposed machine for some agents.

use anyhow::Result;
use serde::Serialize;

use crate::cmd::{TickWire, commit_change, slug};
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::MachineName;
use crate::op::{Change, MachineAdmit};

/// Admit a proposed machine to act for some agents (a signed human act)
///
/// Names the machine's key by its fingerprint (as `loopx machine setup`
/// printed it on that machine), so what is admitted is what was checked.
/// `--for` takes an agent id or a pattern with `*` (`claude-code-*`), once
/// per agent or pattern; admitting again replaces the list. Agents
/// registered before machine keys existed are bound the same way, by name:
/// no agent belongs to a machine because it registered first.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The machine's name
    name: String,
    /// The fingerprint of its key (SHA256:…)
    #[arg(long)]
    fingerprint: String,
    /// An agent id or pattern it may act for (repeatable)
    #[arg(long = "for", value_name = "PATTERN", required = true)]
    agents: Vec<String>,
}

#[derive(Serialize)]
struct Wire {
    name: String,
    agents: Vec<String>,
    #[serde(flatten)]
    tick: TickWire,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let name = slug("machine", &args.name, MachineName::new)?;
    let done = commit_change(
        ctx,
        Change::MachineAdmit(MachineAdmit {
            machine: name.clone(),
            fingerprint: args.fingerprint.trim().to_owned(),
            agents: args.agents.clone(),
        }),
    )?;
    ctx.out.emit(
        &Wire {
            name: name.to_string(),
            agents: args.agents.clone(),
            tick: TickWire::of(&done),
        },
        || {
            format!(
                "Machine {name} is admitted: it may act for {}.",
                args.agents.join(", ")
            )
        },
    )?;
    Ok(Exit::Ok)
}
