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
pub mod trust;
pub mod update;

pub use super::wire::TodoRef;
use anyhow::Result;
use serde::Serialize;

use crate::cmd::TickWire;
use crate::cmd::tx::{self, Committed};
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::{State, Todo, TodoId};
use crate::op::Change;

#[derive(clap::Subcommand, Debug)]
#[command(defer = true)]
pub enum Command {
    /// Add a todo and print its id
    Add(add::Args),
    /// List todos, most urgent first
    List(list::Args),
    /// Show one todo with its claim and notes
    Show(show::Args),
    /// Claim a todo for the acting agent (registered agents only)
    Claim(claim::Args),
    /// Extend your lease on a todo you hold
    Renew(renew::Args),
    /// Hand a claimed todo to another agent, with a note it will see
    Handoff(handoff::Args),
    /// Release your claim on a todo, so others may take it
    Release(release::Args),
    /// Add a note to a todo or change its status
    Update(update::Args),
    /// Change a todo's title, priority, `after` list or validation, or add a note
    Edit(edit::Args),
    /// Mark a todo done (its owner, or anyone if it is unclaimed)
    Done(done::Args),
    /// Open a done, blocked or deferred todo again
    Reopen(reopen::Args),
    /// Move done todos to the archive, keeping the live state small
    Archive(archive::Args),
    /// Trust a todo's validation command to run (a signed human act)
    Trust(trust::Args),
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
        Command::Trust(a) => trust::run(ctx, a),
    }
}

/// One tick on a todo the user named: resolves the id (or prefix) against
/// the state the tick sees, reads the epoch the writer relies on (fencing),
/// and lets `make` build the change.
pub fn tick_on(
    ctx: &Ctx,
    held: &Held,
    make: impl Fn(&State, TodoId, u64) -> Change,
) -> Result<Committed> {
    tx::start(ctx)?.touching(&[&held.id]).run(|state| {
        let todo = state.resolve_todo(&held.id)?;
        let epoch = held.epoch_in(state, &todo);
        Ok(tx::op(ctx, make(state, todo, epoch))?)
    })
}

/// The lease a claim on `todo` gets when no `--ttl` is passed: its goal's,
/// else the team's ([`State::lease_for`]).
pub fn lease_of(state: &State, todo: &TodoId) -> crate::time::Span {
    state
        .todos
        .get(todo)
        .map_or(state.meta.settings.lease, |t| state.lease_for(&t.goal))
}

/// The todo a command acts on, and the epoch its writer holds.
#[derive(clap::Args, Debug)]
pub struct Held {
    /// The todo's id or a unique prefix
    pub id: String,
    /// The epoch you hold, as your claim printed it: if the todo changed
    /// hands since, the write is refused (fencing) [default: the current one]
    #[arg(long, value_name = "N")]
    pub epoch: Option<u64>,
}

impl Held {
    /// The epoch the op carries: the one given, else the todo's current one.
    pub fn epoch_in(&self, state: &State, todo: &TodoId) -> u64 {
        self.epoch.unwrap_or(state.todos[todo].epoch)
    }
}

/// The tick commands' output: the todo after the tick, and the tick.
#[derive(Serialize)]
struct Wire<'a> {
    todo: TodoRef<'a>,
    #[serde(flatten)]
    tick: TickWire,
}

/// Prints the todo a tick changed: JSON, or the human line `human` makes.
pub fn report(ctx: &Ctx, done: &Committed, human: impl FnOnce(&Todo) -> String) -> Result<Exit> {
    let id = done.op.change.todo().expect("a todo tick names its todo");
    let t = &done.state.todos[id];
    ctx.out.emit(
        &Wire {
            todo: TodoRef::of(t),
            tick: TickWire::of(done),
        },
        || human(t),
    )?;
    Ok(Exit::Ok)
}
