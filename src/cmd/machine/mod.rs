//! `loopx machine …`: machine keys (format 5). Each clone has one key that
//! signs its agents' ticks; a signed human act admits a machine for some
//! agents, or revokes it (`trust::machine`).

pub mod admit;
pub mod list;
pub mod revoke;
pub mod setup;

use anyhow::Result;

use crate::ctx::Ctx;
use crate::error::Exit;

#[derive(clap::Subcommand, Debug)]
#[command(defer = true)]
pub enum Command {
    /// Make this clone's machine key and propose it in the state
    Setup(setup::Args),
    /// List the machines, whom each may act for, and agents no machine covers
    List(list::Args),
    /// Admit a proposed machine to act for some agents (a signed human act)
    Admit(admit::Args),
    /// Revoke a machine: its later ticks are refused (a signed human act)
    Revoke(revoke::Args),
}

pub fn run(ctx: &Ctx, c: &Command) -> Result<Exit> {
    match c {
        Command::Setup(a) => setup::run(ctx, a),
        Command::List(a) => list::run(ctx, a),
        Command::Admit(a) => admit::run(ctx, a),
        Command::Revoke(a) => revoke::run(ctx, a),
    }
}

/// A machine's standing, for people and JSON: `proposed`, `admitted` or
/// `revoked`.
pub fn status(m: &crate::model::Machine) -> &'static str {
    if m.revoked_by.is_some() {
        "revoked"
    } else if m.admitted_by.is_some() {
        "admitted"
    } else {
        "proposed"
    }
}
