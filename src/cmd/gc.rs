//! `loopx gc`: pack the repository's loose objects now.

use anyhow::Result;
use serde::Serialize;

use crate::ctx::Ctx;
use crate::error::Exit;
use crate::git::{self, ObjectCount};

/// Pack loose objects written by ticks
///
/// Runs `git repack -d --geometric=2`. Ticks also start it in the background
/// every N ticks (git config loopx.autoPack, default 200; 0 turns it off), so
/// this is rarely needed by hand.
#[derive(clap::Args, Debug)]
pub struct Args {}

#[derive(Serialize)]
struct Wire {
    before: ObjectCount,
    after: ObjectCount,
}

pub fn run(ctx: &Ctx, _args: &Args) -> Result<Exit> {
    let dir = ctx.store()?.common_dir();
    let before = git::count_objects(dir)?;
    git::output(dir, &git::REPACK)?;
    let after = git::count_objects(dir)?;
    ctx.out.emit(&Wire { before, after }, || {
        format!(
            "Packed: {} loose objects before, {} after; {} pack{} holding {} objects.",
            before.loose,
            after.loose,
            after.packs,
            if after.packs == 1 { "" } else { "s" },
            after.in_pack
        )
    })?;
    Ok(Exit::Ok)
}
