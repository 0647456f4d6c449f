//! `loopx signer …`: the SSH keys that sign human acts. The state may
//! announce a signer's key so teammates can find it; which keys count is
//! decided on each machine by its allowed-signers file (`trust`).

pub mod announce;
pub mod approve;
pub mod list;
pub mod reclaim;
pub mod require;
pub mod setup;
pub mod trust;

use anyhow::Result;

use crate::ctx::Ctx;
use crate::error::Exit;

#[derive(clap::Subcommand, Debug)]
#[command(defer = true)]
pub enum Command {
    /// Announce your SSH public key in the state, signed with it (a human act)
    Announce(announce::Args),
    /// Approve a signer's new key, announced by its holder (a signed human act)
    Approve(approve::Args),
    /// List announced signers and which keys this machine trusts
    List(list::Args),
    /// Require every human act to be signed, on every machine (a signed human act)
    Require(require::Args),
    /// Reclaim your SSH key from someone else's announcement, signed with it (a human act)
    Reclaim(reclaim::Args),
    /// Set up your signing key here and trust your teammates' keys (once per clone)
    Setup(setup::Args),
    /// Trust an announced signer's key on this machine
    Trust(trust::Args),
}

pub fn run(ctx: &Ctx, c: &Command) -> Result<Exit> {
    match c {
        Command::Announce(a) => announce::run(ctx, a),
        Command::Approve(a) => approve::run(ctx, a),
        Command::Reclaim(a) => reclaim::run(ctx, a),
        Command::List(a) => list::run(ctx, a),
        Command::Require(a) => require::run(ctx, a),
        Command::Setup(a) => setup::run(ctx, a),
        Command::Trust(a) => trust::run(ctx, a),
    }
}
