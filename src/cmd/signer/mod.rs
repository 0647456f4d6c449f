//! `loopx signer …`: the SSH keys that sign human acts. The state may
//! announce a signer's key so teammates can find it; which keys count is
//! decided on each machine by its allowed-signers file (`trust`).

pub mod announce;
pub mod list;
pub mod require;
pub mod setup;
pub mod trust;

use anyhow::Result;

use crate::ctx::Ctx;
use crate::error::Exit;

#[derive(clap::Subcommand, Debug)]
#[command(defer = true)]
pub enum Command {
    /// Announce a signer's SSH public key in the state (a human act)
    Announce(announce::Args),
    /// List announced signers and which keys this machine trusts
    List(list::Args),
    /// Require every human act to be signed, on every machine (a signed human act)
    Require(require::Args),
    /// Set up your signing key here and trust your teammates' keys (once per clone)
    Setup(setup::Args),
    /// Trust an announced signer's key on this machine
    Trust(trust::Args),
}

pub fn run(ctx: &Ctx, c: &Command) -> Result<Exit> {
    match c {
        Command::Announce(a) => announce::run(ctx, a),
        Command::List(a) => list::run(ctx, a),
        Command::Require(a) => require::run(ctx, a),
        Command::Setup(a) => setup::run(ctx, a),
        Command::Trust(a) => trust::run(ctx, a),
    }
}
