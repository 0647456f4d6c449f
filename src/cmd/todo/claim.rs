//! `loopx todo claim`: take a todo, race-safe; `--next` picks the best one;
//! once the clone has a hub (or with `--sync`) it is safe across machines.

use anyhow::{Context, Result};
use serde::Serialize;

use super::TodoRef;
use crate::cmd::tx;
use crate::cmd::{TickWire, pick_goal};
use crate::ctx::Ctx;
use crate::error::{Code, Exit, Refusal};
use crate::model::{Todo, TodoId};
use crate::op::{Change, Happened, TodoClaim, TodoRelease, rules};
use crate::service::worktree::{self, Opened};
use crate::sync::{Rejected, Report};
use crate::time::Span;

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
/// with --sync, the claim is safe across machines: loopx claims on the state
/// last synced with the hub (git config loopx.remote, else origin) and pushes
/// the claim, with every tick still pending here, expecting the hub unmoved;
/// only if the hub moved does it fetch, replay the claim on the hub's state
/// and push again. The claim counts only once the hub accepted it. If another
/// machine's claim got there first, this exits 4 and names the winner (with
/// --next, it first picks again, up to 3 more times). An unreachable
/// hub fails the claim (nothing is claimed); --no-sync claims here only, for
/// offline work. git config loopx.claimSync (true or false) overrides the
/// default.
///
/// With --worktree the claim gets a linked worktree of its own, on a new
/// branch `loopx/<todo>` (a suffix when that name is taken), in the folder git
/// config loopx.worktrees names (default: `<main worktree>.loopx-worktrees`
/// beside the main worktree); work there. A claim that already has one
/// finds it again. git config loopx.worktree decides without the flag:
/// always, never, or auto (the default: when another agent's session on
/// this clone is live, where loopx can tell).
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
    /// How long the lease lasts [default: the goal's lease, else the team's, 45m]
    #[arg(long, value_name = "DURATION")]
    ttl: Option<Span>,
    /// Count the claim only once the remote accepts it [default: once the clone has a hub]
    #[arg(long, overrides_with = "no_sync")]
    sync: bool,
    /// Claim here only (offline work), even with a hub
    #[arg(long, overrides_with = "sync")]
    no_sync: bool,
    /// Give the claim a linked worktree on its own branch [default: git config loopx.worktree]
    #[arg(long, overrides_with = "no_worktree")]
    worktree: bool,
    /// Work in the current checkout, whatever git config loopx.worktree says
    #[arg(long, overrides_with = "worktree")]
    no_worktree: bool,
}

/// `todo claim --sync`'s output: the tick's, and the sync's report.
#[derive(Serialize)]
struct Wire<'a> {
    todo: TodoRef<'a>,
    #[serde(flatten)]
    tick: TickWire,
    #[serde(skip_serializing_if = "Option::is_none")]
    sync: Option<&'a Report>,
    /// The claim's own worktree, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    worktree: Option<&'a Opened>,
}

/// How many times `--next` picks again when its pick lost on the hub (the
/// hub's state then known here, so each try is better informed).
const NEXT_TRIES: u32 = 4;

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let synced = crate::cmd::syncs(ctx, args.sync, args.no_sync)?;
    // Whether the state decided on is the hub's as of now (no sync, or
    // just fetched).
    let mut fresh = !synced;
    if synced
        && crate::sync::synced_tip(ctx.repo()?, None)
            .map_err(offline_hint)
            .context("nothing was claimed")?
            .is_none()
    {
        // Never synced with the hub: take its state first. Afterwards a
        // claim is decided from the last synced state and pushed expecting
        // the hub still there, fetching only when that push is refused
        // (DESIGN §5).
        let before = crate::cmd::sync_remote(ctx, None)
            .map_err(offline_hint)
            .context("nothing was claimed")?;
        warn_rejected(ctx, &before, None);
        fresh = true;
    }
    // Decided on the last synced state, which may be stale: a refusal of
    // the decision itself (an unknown id, nothing ready) fetches the hub's
    // state once and decides again.
    let mut lost: Option<Refusal> = None;
    let mut tries = 0;
    loop {
        tries += 1;
        match claim_once(ctx, args, synced)? {
            Attempt::Done(exit) => {
                if let Some(l) = &lost {
                    ctx.out.status(&format!("({}; picked again)", l.message));
                }
                return Ok(exit);
            }
            Attempt::Lost(refusal) if args.next && tries < NEXT_TRIES => {
                fresh = true;
                lost = Some(refusal);
            }
            Attempt::Lost(refusal) => return Err(refusal.into()),
            // Nothing else to pick: the lost claim is the answer.
            Attempt::Refused(_) if lost.is_some() => {
                return Err(lost.expect("checked").into());
            }
            Attempt::Refused(e) if !fresh => {
                fresh = true;
                let before = crate::cmd::sync_remote(ctx, None)
                    .map_err(offline_hint)
                    .context("nothing was claimed")?;
                warn_rejected(ctx, &before, None);
                if before.pulled == 0 {
                    return Err(e);
                }
            }
            Attempt::Refused(e) => return Err(e),
        }
    }
}

/// One claim: decided here, then (synced) pushed with every pending tick.
enum Attempt {
    Done(Exit),
    /// The claim lost on the hub (the hub's state is now the local one).
    Lost(Refusal),
    /// The claim was refused here, before anything was written.
    Refused(anyhow::Error),
}

/// `claim --next`'s pick from the cache's head and the acting agent's
/// ready lists on the goals it may pick from (`--goal`'s, else every
/// active one): `ready::best_of`, what [`rules::best_ready`] picks on the
/// whole state. None when the head holds every todo (the whole state
/// is as cheap), or any list cannot prove its answer, or nothing is ready:
/// the pick is then made on the whole state.
fn pick_from_index(ctx: &Ctx, args: &Args) -> Option<(crate::store::Oid, TodoId)> {
    use crate::model::GoalStatus;
    use crate::op::turn::ready;
    let claims = tx::load_claims(ctx).ok()?;
    if claims.complete {
        return None;
    }
    let state = &claims.state;
    let actor = ctx.actor().ok()?;
    let agent = rules::acting_agent(state, &actor, "claim a todo").ok()?;
    let goals: Vec<crate::model::GoalId> = match &args.goal {
        Some(g) => vec![pick_goal(ctx, state, Some(g)).ok()?],
        None => state
            .scope(&agent.id)
            .iter()
            .filter(|g| g.status == GoalStatus::Active)
            .map(|g| g.id.clone())
            .collect(),
    };
    let lists = goals
        .iter()
        .map(|g| claims.ready_list(&agent.id, g))
        .collect::<Option<Vec<_>>>()?;
    let t = ready::best_of(state, &lists, agent, ctx.now)?;
    Some((claims.tip.commit, t.id.clone()))
}

/// Whether the todo `claim --next` picked from the index is still ready
/// for the acting agent on `state` (the tick's, at the tip of the pick);
/// else the pick is made again on it.
fn still_ready(ctx: &Ctx, state: &crate::model::State, id: &TodoId) -> bool {
    let Ok(actor) = ctx.actor() else { return false };
    let Ok(agent) = rules::acting_agent(state, &actor, "claim a todo") else {
        return false;
    };
    state
        .todos
        .get(id)
        .is_some_and(|t| rules::ready(state, t, agent, ctx.now).is_ok())
}

/// Warns of the ops of this clone the sync rejected, other than `skip`.
fn warn_rejected(ctx: &Ctx, r: &Report, skip: Option<&crate::model::OpId>) {
    for rej in r.rejected.iter().filter(|x| Some(&x.op) != skip) {
        ctx.out.warn(&format!(
            "sync rejected an earlier {} by {}: {}",
            rej.kind,
            rej.actor.name(),
            rej.reason
        ));
    }
}

fn claim_once(ctx: &Ctx, args: &Args, synced: bool) -> Result<Attempt> {
    // `--next` on a sharded cache: the pick from the ready index beside the
    // head at the tip it was read at, when the lists prove it; the tick
    // then reads that todo's shard alone, and takes it only on that tip's
    // partial state while it is still ready there. Once the ref has moved,
    // the tick reads the whole state and picks again.
    let picked = match args.id {
        None => pick_from_index(ctx, args),
        Some(_) => None,
    };
    let build = |state: &crate::model::State| {
        let todo = match (&args.id, &picked) {
            (Some(id), _) => state.resolve_todo(id)?,
            (None, Some((_, id))) if state.todos.is_partial() && still_ready(ctx, state, id) => {
                id.clone()
            }
            (None, _) => {
                let actor = ctx.actor()?;
                let agent = rules::acting_agent(state, &actor, "claim a todo")?;
                // `--goal`'s, else the goals the agent may work on.
                let goals: Vec<crate::model::GoalId> = match &args.goal {
                    Some(g) => vec![pick_goal(ctx, state, Some(g))?],
                    None => state
                        .scope(&agent.id)
                        .iter()
                        .map(|g| g.id.clone())
                        .collect(),
                };
                let goals: Vec<&crate::model::GoalId> = goals.iter().collect();
                // None active: every goal, so the refusal counts why.
                let among = (!goals.is_empty()).then_some(goals.as_slice());
                rules::best_ready_among(state, agent, among, ctx.now)?
                    .id
                    .clone()
            }
        };
        let epoch = state.todos[&todo].epoch;
        let lease = args
            .ttl
            .unwrap_or_else(|| state.lease_for(&state.todos[&todo].goal));
        Ok(tx::op(
            ctx,
            Change::TodoClaim(TodoClaim { todo, epoch, lease }),
        )?)
    };
    // A named or picked todo: only its shard of the state is read
    // (`commit_touching`).
    let decided = match (&args.id, &picked) {
        (Some(id), _) => tx::start(ctx)?.touching(&[id.as_str()]).run(build),
        (None, Some((at, id))) => tx::start(ctx)?.touching(&[id.as_str()]).at(*at).run(build),
        (None, None) => tx::start(ctx)?.run(build),
    };
    let done = match decided {
        Ok(done) => done,
        Err(e) if crate::error::refusal_of(&e).is_some() => return Ok(Attempt::Refused(e)),
        Err(e) => return Err(e),
    };
    let human = |t: &Todo| {
        if args.next {
            return t.id.to_string();
        }
        let until = t.lease_until().map(|u| u.to_string()).unwrap_or_default();
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
        // The claim, with every tick still pending here, is pushed
        // expecting the hub at the last synced tip; only a refused push
        // fetches, replays and pushes again (DESIGN §5).
        let r = match crate::cmd::sync_remote(ctx, None) {
            Ok(r) => r,
            Err(e) => return Err(unclaim(ctx, id, &done, offline_hint(e))),
        };
        warn_rejected(ctx, &r, Some(&done.op.id));
        if let Some(lost) = r.rejection_of(&done.op.id) {
            return Ok(Attempt::Lost(lost_claim(ctx, id, lost, &r.remote)));
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
            return Ok(Attempt::Lost(
                Refusal::conflict(
                    Code::Claimed,
                    format!("the claim of {id} lost on {}: {why}", r.remote),
                )
                .with_hint(
                    "pick another with `loopx quota should-run` (or `loopx todo list --ready`)",
                ),
            ));
        }
        let wt = own_worktree(ctx, args, &t)?;
        ctx.out.emit(
            &Wire {
                todo: TodoRef::of(&t),
                tick,
                sync: Some(&r),
                worktree: wt.as_ref(),
            },
            || human(&t),
        )?;
        say_worktree(ctx, wt.as_ref());
        (Exit::Ok, t, Some(r))
    } else {
        let t = done.state.todos[id].clone();
        let wt = own_worktree(ctx, args, &t)?;
        ctx.out.emit(
            &Wire {
                todo: TodoRef::of(&t),
                tick: TickWire::of(&done),
                sync: None,
                worktree: wt.as_ref(),
            },
            || human(&t),
        )?;
        say_worktree(ctx, wt.as_ref());
        (Exit::Ok, t, None)
    };
    if args.next {
        ctx.out.status(&format!(
            "Claimed {} \"{}\" (epoch {}).",
            t.id, t.title, t.epoch
        ));
    }
    if let Some(r) = &sync_report {
        ctx.out.status(&crate::cmd::wire::human(r));
    }
    Ok(Attempt::Done(exit))
}

/// The worktree the claim of `t` owns: found again when it has one,
/// made when `--worktree` or git config `loopx.worktree` says so. The claim
/// counts either way; a worktree git cannot make fails the command after
/// it, saying so.
fn own_worktree(ctx: &Ctx, args: &Args, t: &Todo) -> Result<Option<Opened>> {
    let Some(me) = t.owner() else { return Ok(None) };
    let repo = ctx.repo()?;
    let flag = match (args.worktree, args.no_worktree) {
        (true, _) => Some(true),
        (_, true) => Some(false),
        _ => None,
    };
    let has = worktree::of(repo.store().common_dir(), &t.id, me).is_some();
    let decided = worktree::decide(repo, flag, me);
    if !has && !decided.take {
        return Ok(None);
    }
    let opened = worktree::open(repo, &t.id, me, ctx.now);
    // Taken by itself (`auto`): a worktree git cannot make leaves the
    // claim in this checkout, with a warning.
    if let Err(e) = &opened
        && decided.auto
        && !has
    {
        ctx.out.warn(&format!(
            "{} works in this checkout: {}, but its worktree could not be made ({e:#})",
            t.id, decided.why
        ));
        return Ok(None);
    }
    opened
        .map(Some)
        .with_context(|| {
            format!(
                "{} is claimed, but its worktree could not be made; run `loopx todo claim {} --worktree` again, or work in this checkout",
                t.id, t.id
            )
        })
}

/// Tells the agent where to work (stderr: stdout stays the claim's line).
fn say_worktree(ctx: &Ctx, wt: Option<&Opened>) {
    let Some(w) = wt else { return };
    if let Some(p) = &w.pruned {
        ctx.out.status(&format!(
            "The worktree at {} was deleted by hand: pruned (its branch is kept).",
            p.display()
        ));
    }
    let how = if w.created { "made" } else { "found again" };
    ctx.out.status(&format!(
        "Worktree {how}: {} on branch {}. Work there: `cd {}` before shell tools, and edit files only under it.",
        w.record.path.display(),
        w.record.branch,
        w.record.path.display()
    ));
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
    let released = tx::start(ctx).and_then(|tx| {
        tx.run(|state| {
            let t = state
                .todos
                .get(id)
                .filter(|t| t.owner() == Some(&me))
                .ok_or_else(|| anyhow::anyhow!("{id} is no longer claimed here by {me}"))?;
            Ok(tx::op(
                ctx,
                Change::TodoRelease(TodoRelease {
                    todo: id.clone(),
                    epoch: t.epoch,
                    force: false,
                }),
            )?)
        })
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
