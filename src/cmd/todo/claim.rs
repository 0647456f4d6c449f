//! `loopx todo claim`: take a todo, race-safe; `--next` picks the best one;
//! once the clone has a hub (or with `--sync`) it is safe across machines.

use anyhow::{Context, Result};
use serde::Serialize;

use super::{TodoRef, report};
use crate::cmd::{TickWire, pick_goal};
use crate::ctx::Ctx;
use crate::error::{Code, Exit, Refusal};
use crate::model::{Todo, TodoId};
use crate::op::{Change, Happened, rules};
use crate::sync::{Rejected, Report};
use crate::time::Span;
use crate::tx;

/// Claim a todo for the acting agent (registered agents only)
///
/// Claiming a todo you already hold renews its lease. A todo whose lease has
/// expired is taken over (and the previous holder is recorded). If another
/// agent wins the race, this exits 4 and names the winner. With --next, a
/// ready todo of the most urgent priority is picked (concurrent agents are
/// spread over that tier by their ids) and claimed in the same
/// compare-and-swap, and its id is printed.
///
/// Once this clone shares its state through a hub (`loopx sync --setup`), or
/// with --sync, the claim is safe across machines: loopx takes the hub's
/// ticks first (git config loopx.remote, else origin), claims, and pushes,
/// and the claim counts only once the hub accepted it. If another machine's
/// claim got there first, this exits 4 and names the winner. An unreachable
/// hub fails the claim (nothing is claimed); --no-sync claims here only, for
/// offline work. git config loopx.claimSync (true or false) overrides the
/// default.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The todo's id or a unique prefix
    #[arg(required_unless_present = "next", conflicts_with = "next")]
    id: Option<String>,
    /// Pick the best ready todo and print its id
    #[arg(long)]
    next: bool,
    /// With --next, pick only within this goal
    #[arg(long, value_name = "G", requires = "next")]
    goal: Option<String>,
    /// How long the lease lasts [default: the state's lease setting, 45m]
    #[arg(long, value_name = "DURATION")]
    ttl: Option<Span>,
    /// Count the claim only once the remote accepts it [default: once the clone has a hub]
    #[arg(long, overrides_with = "no_sync")]
    sync: bool,
    /// Claim here only (offline work), even with a hub
    #[arg(long, overrides_with = "sync")]
    no_sync: bool,
}

/// `todo claim --sync`'s output: the tick's, and the sync's report.
#[derive(Serialize)]
struct Wire<'a> {
    todo: TodoRef<'a>,
    #[serde(flatten)]
    tick: TickWire,
    sync: &'a Report,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let synced = crate::cmd::syncs(ctx, args.sync, args.no_sync)?;
    if synced {
        // Claim against the freshest state there is (which also pushes what
        // this clone holds that the hub lacks); the claim itself is then
        // pushed expecting the hub where this sync left it.
        let before = crate::cmd::sync_remote(ctx, None)
            .map_err(offline_hint)
            .context("nothing was claimed")?;
        for r in &before.rejected {
            ctx.out.warn(&format!(
                "sync rejected an earlier {} by {}: {}",
                r.kind,
                r.actor.name(),
                r.reason
            ));
        }
    }
    let done = tx::commit(ctx, |state| {
        let todo = match &args.id {
            Some(id) => state.resolve_todo(id)?,
            None => {
                let actor = ctx.actor()?;
                let agent = rules::acting_agent(state, &actor, "claim a todo")?;
                let goal = match &args.goal {
                    Some(g) => Some(pick_goal(ctx, state, Some(g))?),
                    None => None,
                };
                rules::best_ready(state, agent, goal.as_ref(), ctx.now)?
                    .id
                    .clone()
            }
        };
        let epoch = state.todos[&todo].epoch;
        Ok(tx::op(
            ctx,
            Change::TodoClaim {
                todo,
                epoch,
                lease: args.ttl.unwrap_or(state.meta.settings.lease),
            },
        )?)
    })?;
    let human = |t: &Todo| {
        if args.next {
            return t.id.to_string();
        }
        let until = t
            .claim
            .as_ref()
            .map(|c| c.lease_until.to_string())
            .unwrap_or_default();
        let verb = match done.effect.what {
            Happened::Renewed { .. } => "Renewed",
            Happened::Stole { .. } => "Took over",
            _ => "Claimed",
        };
        format!(
            "{verb} {} \"{}\" until {until} (epoch {}).",
            t.id, t.title, t.epoch
        )
    };
    let id = done.op.change.todo().expect("a claim names its todo");
    let (exit, t, sync_report) = if synced {
        // The claim is pushed expecting the hub where that sync left it;
        // only a refused push fetches again (DESIGN §5).
        let r = match crate::cmd::sync_push_first(ctx, None) {
            Ok(r) => r,
            Err(e) => return Err(unclaim(ctx, id, &done, offline_hint(e))),
        };
        if let Some(lost) = r.rejection_of(&done.op.id) {
            return Err(lost_claim(ctx, id, lost, &r.remote).into());
        }
        let mut tick = TickWire::of(&done);
        if let Some(replayed) = r.replay_of(&done.op.id) {
            tick.tick = replayed.to.tick;
            tick.commit = replayed.to.commit.to_string();
            tick.subject = replayed.subject.clone();
        }
        let state = tx::load(ctx)?.state;
        // Another machine may have finished and archived it meanwhile.
        let t = state.todos.get(id).cloned().ok_or_else(|| {
            crate::error::Refusal::error(
                Code::UnknownTodo,
                format!("{id} left the live state during the sync (done and archived elsewhere)"),
            )
            .with_hint(format!("`loopx todo show {id}` finds it in the archive"))
        })?;
        // Another sync on this clone may have replayed the claim first and
        // seen it lost: what counts is who holds the todo on the hub now.
        let me = done.op.actor.agent();
        if t.owner() != me {
            let why = match t.owner() {
                Some(w) => format!("{w} holds it"),
                None => format!("it is {}", t.status.as_str()),
            };
            return Err(Refusal::conflict(
                Code::Claimed,
                format!("the claim of {id} lost on {}: {why}", r.remote),
            )
            .with_hint("pick another with `loopx quota should-run` (or `loopx todo list --ready`)")
            .into());
        }
        ctx.out.emit(
            &Wire {
                todo: TodoRef::of(&t),
                tick,
                sync: &r,
            },
            || human(&t),
        )?;
        (Exit::Ok, t, Some(r))
    } else {
        let exit = report(ctx, &done, human)?;
        (exit, done.state.todos[id].clone(), None)
    };
    if args.next {
        ctx.out.status(&format!(
            "Claimed {} \"{}\" (epoch {}).",
            t.id, t.title, t.epoch
        ));
    }
    if let Some(r) = &sync_report {
        ctx.out.status(&crate::cmd::sync::human(r));
    }
    Ok(exit)
}

/// An unreachable hub: the refusal also says how to work offline.
fn offline_hint(e: anyhow::Error) -> anyhow::Error {
    match crate::error::refusal_of(&e) {
        Some(r) if matches!(r.code, Code::RemoteUnreachable | Code::PushFailed) => {
            let hint = r
                .hint
                .as_ref()
                .map(|h| format!("{h}; "))
                .unwrap_or_default();
            r.clone()
                .with_hint(format!(
                    "{hint}to work offline, claim with `--no-sync` (the claim is then not safe across machines)"
                ))
                .into()
        }
        _ => e,
    }
}

/// The sync after a claim failed (the network, the remote's history, the
/// retries): the claim never reached the remote, so it is released here
/// (a renewal is left as it was), and the error says so. The sync's own
/// refusal (`remote-unreachable`, `push-failed`, …) keeps its code.
fn unclaim(ctx: &Ctx, id: &TodoId, done: &tx::Committed, err: anyhow::Error) -> anyhow::Error {
    if matches!(done.effect.what, Happened::Renewed { .. }) {
        return err.context(format!(
            "renewed {id} here, but the renewal does not count until the remote has it"
        ));
    }
    let Some(me) = done.op.actor.agent().cloned() else {
        return err;
    };
    let released = tx::commit(ctx, |state| {
        let t = state
            .todos
            .get(id)
            .filter(|t| t.owner() == Some(&me))
            .ok_or_else(|| anyhow::anyhow!("{id} is no longer claimed here by {me}"))?;
        Ok(tx::op(
            ctx,
            Change::TodoRelease {
                todo: id.clone(),
                epoch: t.epoch,
                force: false,
            },
        )?)
    });
    match released {
        Ok(_) => err.context(format!(
            "the claim of {id} did not reach the remote, so it was released here: nothing was claimed"
        )),
        Err(undo) => err.context(format!(
            "the claim of {id} did not reach the remote, and releasing it here failed too ({undo:#}); release it with `loopx todo release {id}`"
        )),
    }
}

/// The claim lost on the remote: exit 4 (or the rule's status), naming the
/// agent that holds the todo now.
fn lost_claim(ctx: &Ctx, id: &TodoId, lost: &Rejected, remote: &str) -> Refusal {
    let winner = tx::load(ctx)
        .ok()
        .and_then(|s| s.state.todos.get(id).and_then(|t| t.owner().cloned()))
        .filter(|w| lost.actor.agent() != Some(w))
        .or_else(|| lost.winner.clone());
    let recorded = lost
        .evidence
        .as_ref()
        .map(|e| format!("your claim is recorded as {e}; "))
        .unwrap_or_default();
    let hint = match &winner {
        Some(w) => format!("{w} won it; {recorded}pick another with `loopx todo list --ready`"),
        None => format!("{recorded}pick another with `loopx todo list --ready`"),
    };
    Refusal::new(
        lost.exit,
        lost.code,
        format!("the claim of {id} lost on {remote}: {}", lost.reason),
    )
    .with_hint(hint)
}
