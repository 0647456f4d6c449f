//! One file per command: each holds its clap `Args` and a `run` that returns
//! the exit status. Verb groups (`goal`, `agent`, `todo`) are directories.
//! This module dispatches and holds the small helpers commands share.

pub mod agent;
pub mod brief;
pub mod demo;
pub mod diff;
pub mod doctor;
pub mod evidence;
pub mod gate;
pub mod gc;
pub mod goal;
pub mod hook;
pub mod hooks;
pub mod init;
pub mod log;
pub mod mcp;
pub mod quota;
pub mod refresh_state;
pub mod settle;
pub mod show;
pub mod signer;
pub mod status;
pub mod sync;
pub mod todo;

use anyhow::Result;
use serde::Serialize;

use crate::cli::{Command, Global};
use crate::ctx::Ctx;
use crate::error::{Exit, Refusal};
use crate::model::{GoalId, State};
use crate::tx::Committed;

/// Runs a command from the command line: `hooks` and `mcp` also work
/// outside a repository and build their own context; the rest get a full
/// one. (`hook` never gets here: it always exits 0, see `cmd::hook::main`.)
pub fn run_cli(global: &Global, command: &Command) -> Result<Exit> {
    match command {
        Command::Hooks(c) => hooks::run(global, c),
        Command::Mcp(args) => mcp::run(global, args),
        // The demo makes its own repositories; it needs none to start in.
        Command::Demo(args) => {
            let env = crate::ctx::Env::capture();
            demo::run(args, global.format(), env.get("LOOPX_NOW"))
        }
        command => {
            let ctx = Ctx::new(global.dir.clone(), global.format(), global.agent.as_deref())?;
            run(&ctx, command)
        }
    }
}

pub fn run(ctx: &Ctx, command: &Command) -> Result<Exit> {
    match command {
        Command::Init(args) => init::run(ctx, args),
        Command::Demo(_) => unreachable!("run_cli runs the demo without a Ctx"),
        Command::Status(args) => status::run(ctx, args),
        Command::Log(args) => log::run(ctx, args),
        Command::Show(args) => show::run(ctx, args),
        Command::Diff(args) => diff::run(ctx, args),
        Command::Goal(c) => goal::run(ctx, c),
        Command::Agent(c) => agent::run(ctx, c),
        Command::Todo(c) => todo::run(ctx, c),
        Command::Gate(c) => gate::run(ctx, c),
        Command::Signer(c) => signer::run(ctx, c),
        Command::Evidence(c) => evidence::run(ctx, c),
        Command::Quota(c) => quota::run(ctx, c),
        Command::RefreshState(args) => refresh_state::run(ctx, args),
        Command::Settle(args) => settle::run(ctx, args),
        Command::Sync(args) => sync::run(ctx, args),
        Command::Doctor(args) => doctor::run(ctx, args),
        Command::Gc(args) => gc::run(ctx, args),
        Command::Hook(_) | Command::Hooks(_) | Command::Mcp(_) => {
            unreachable!("run_cli and lib::main dispatch these without a Ctx")
        }
    }
}

/// The fields every tick's JSON output carries.
#[derive(Serialize)]
pub struct TickWire {
    pub tick: u64,
    pub commit: String,
    pub op: &'static str,
    pub subject: String,
}

impl TickWire {
    pub fn of(done: &Committed) -> Self {
        TickWire {
            tick: done.tip.tick,
            commit: done.tip.commit.to_string(),
            op: done.op.change.kind(),
            subject: done.effect.subject.clone(),
        }
    }
}

/// The goal a command acts on: `--goal`, else git config `loopx.goal`, else
/// the only active goal.
pub fn pick_goal(ctx: &Ctx, state: &State, flag: Option<&str>) -> Result<GoalId, Refusal> {
    if let Some(g) = flag {
        return state.goal(g).map(|g| g.id.clone());
    }
    if let Some(g) = ctx.store.config("loopx.goal") {
        return state
            .goal(&g)
            .map(|g| g.id.clone())
            .map_err(|r| r.with_hint("git config loopx.goal names it; fix or unset that setting"));
    }
    state.default_goal().map(|g| g.id.clone())
}

/// Parses a slug id given on the command line.
pub fn slug<T>(kind: &str, s: &str, new: impl Fn(&str) -> Result<T, String>) -> Result<T, Refusal> {
    new(s).map_err(|e| Refusal::usage("bad-id", e).with_hint(format!("choose another {kind} id")))
}
