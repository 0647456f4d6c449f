//! `loopx notify-run` (hidden): the detached runner that sends the
//! notifications a command found due ([`crate::notify`]). Commands start
//! it; people never need to.

use anyhow::Result;

use crate::ctx::{Caller, Ctx};
use crate::error::Exit;
use crate::op::{Change, GateNotified};

/// Send the notifications that are due (started by loopx itself)
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(ctx: &Ctx, _args: &Args) -> Result<Exit> {
    let place = place(ctx)?;
    let runner = crate::notify::Runner {
        place: &place,
        load: &|| crate::cmd::tx::load(ctx).ok().map(|s| s.state),
        record: &|id| {
            let gate = id.clone();
            crate::cmd::tx::start(ctx)
                .and_then(|tx| {
                    tx.run(|_| {
                        Ok(crate::cmd::tx::op(
                            ctx,
                            Change::GateNotified(GateNotified { gate: gate.clone() }),
                        )?)
                    })
                })
                .is_ok()
        },
    };
    crate::notify::run_pending(ctx.repo()?, ctx.now, &runner)?;
    Ok(Exit::Ok)
}

/// The repository as a notification names it: its folder, the remote's
/// URL without credentials (`insteadOf` applied), the state ref.
fn place(ctx: &Ctx) -> Result<crate::notify::Place> {
    let repo = ctx.repo()?;
    let store = repo.store();
    // The main worktree, even when the command ticked in a claim's linked
    // worktree (which goes when its claim is done): `<main>/.git` is the
    // common git dir of both.
    let common = std::fs::canonicalize(store.common_dir())
        .unwrap_or_else(|_| store.common_dir().to_path_buf());
    let path = match (common.file_name(), common.parent()) {
        (Some(n), Some(main)) if n == ".git" => main.to_path_buf(),
        _ => store.root().to_path_buf(),
    };
    Ok(crate::notify::Place {
        name: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        url: crate::git::remote_url(store.common_dir(), &repo.config().remote),
        state_ref: store.state_ref().to_owned(),
        path,
    })
}

/// Starts the runner detached when [`crate::notify::after`] says a gate is
/// due: in the same repository, as the same agent. Never fails (a warning).
pub fn start(ctx: &Ctx) {
    let agent = match ctx.caller() {
        Caller::Agent(id) => Some(id.as_str()),
        _ => None,
    };
    let started = ctx
        .store()
        .and_then(|s| crate::notify::start_runner(s.root(), agent));
    if let Err(e) = started {
        ctx.out
            .warn(&format!("could not start the loopx.notify runner: {e:#}"));
    }
}
