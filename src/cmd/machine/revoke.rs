//! `loopx machine revoke`: a human revokes a machine's key.

use anyhow::Result;
use serde::Serialize;

use crate::cmd::{TickWire, commit_change, slug};
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::MachineName;
use crate::op::{Change, MachineRevoke};

/// Revoke a machine: its later ticks are refused (a signed human act)
///
/// Ticks it signed before stay valid. To replace a machine's key (rotation),
/// run `loopx machine setup --name NEW` there after moving its old key
/// away, admit the new name, and revoke the old one.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The machine's name
    name: String,
}

#[derive(Serialize)]
struct Wire {
    name: String,
    #[serde(flatten)]
    tick: TickWire,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let name = slug("machine", &args.name, MachineName::new)?;
    let done = commit_change(
        ctx,
        Change::MachineRevoke(MachineRevoke {
            machine: name.clone(),
        }),
    )?;
    ctx.out.emit(
        &Wire {
            name: name.to_string(),
            tick: TickWire::of(&done),
        },
        || format!("Machine {name} is revoked: its ticks from now on are refused."),
    )?;
    Ok(Exit::Ok)
}
