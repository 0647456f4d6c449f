//! `loopx todo …`: the work itself.

pub mod add;
pub mod archive;
pub mod claim;
pub mod done;
pub mod edit;
pub mod handoff;
pub mod list;
pub mod release;
pub mod renew;
pub mod reopen;
pub mod show;
pub mod update;

use anyhow::Result;
use serde::Serialize;

use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::{AgentId, TodoId};
use crate::time::Timestamp;

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    Add(add::Args),
    List(list::Args),
    Show(show::Args),
    Claim(claim::Args),
    Renew(renew::Args),
    Handoff(handoff::Args),
    Release(release::Args),
    Update(update::Args),
    Edit(edit::Args),
    Done(done::Args),
    Reopen(reopen::Args),
    Archive(archive::Args),
}

pub fn run(ctx: &Ctx, c: &Command) -> Result<Exit> {
    match c {
        Command::Add(a) => add::run(ctx, a),
        Command::List(a) => list::run(ctx, a),
        Command::Show(a) => show::run(ctx, a),
        Command::Claim(a) => claim::run(ctx, a),
        Command::Renew(a) => renew::run(ctx, a),
        Command::Handoff(a) => handoff::run(ctx, a),
        Command::Release(a) => release::run(ctx, a),
        Command::Update(a) => update::run(ctx, a),
        Command::Edit(a) => edit::run(ctx, a),
        Command::Done(a) => done::run(ctx, a),
        Command::Reopen(a) => reopen::run(ctx, a),
        Command::Archive(a) => archive::run(ctx, a),
    }
}

/// A todo as the tick commands report it.
#[derive(Serialize)]
pub struct TodoRef<'a> {
    pub id: &'a TodoId,
    pub title: &'a str,
    pub status: &'static str,
    pub epoch: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<&'a AgentId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_until: Option<Timestamp>,
}

impl<'a> TodoRef<'a> {
    pub fn of(t: &'a crate::model::Todo) -> Self {
        TodoRef {
            id: &t.id,
            title: &t.title,
            status: t.status.as_str(),
            epoch: t.epoch,
            owner: t.owner(),
            lease_until: t.claim.as_ref().map(|c| c.lease_until),
        }
    }
}
