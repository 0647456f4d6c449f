//! `loopx quota should-run`: may this agent run one turn now, and on what?
//! Read-only: a quiet poll costs neither quota nor history.

use crate::cmd::wire::BudgetWire;
use anyhow::Result;
use serde::Serialize;

use crate::cmd::agent_goals;
use crate::cmd::tx;
use crate::ctx::Ctx;
use crate::error::{Code, Exit, Refusal};
use crate::model::{GateId, TodoId};
use crate::op::turn::{new_token, ready, reason_message};
use crate::op::{short, turn};

/// Answer run (exit 0) or skip (exit 3) for the acting agent's next turn
///
/// It answers over every goal you may work on (every active goal, or
/// those `agent register --goal` names), picking as `todo claim --next`
/// does, and names the goal of its answer. A run names the todo to work
/// on (your own claim first, else the best ready one), the gates that
/// concern you, the slots left and a turn token for `spend-slot`. A skip
/// gives the reason: not-registered, goal-paused,
/// goal-done, budget-exhausted (a budget of the goal or of the agent is
/// reached; the figures say which), gate-open, quota-exhausted,
/// agent-quota-exhausted (the agent-wide slots across goals), wait-until
/// (parked by `quota park`), awaiting-go (the park ended; a human's go is
/// needed), stalled (advanced turns made no progress; a human answers the
/// stall gate),
/// nothing-ready, no-change, or
/// state-locked (a writer died holding the state ref's lock, so no tick can
/// land until a person removes it; the reason says how). Writes nothing.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Only this goal [default: git config loopx.goal, else every goal
    /// the agent may work on: the pick says which]
    #[arg(long, value_name = "G")]
    goal: Option<String>,
    /// Sync with the remote first (git config loopx.remote, else origin), so
    /// the answer sees the other machines' ticks
    #[arg(long)]
    sync: bool,
}

impl Args {
    /// The arguments as clap would parse them: `crate::cli`'s hand-written
    /// parser for should-run's command line builds them.
    pub fn new(goal: Option<String>, sync: bool) -> Self {
        Args { goal, sync }
    }

    /// Whether it syncs first (and so may move the state ref).
    pub fn syncs(&self) -> bool {
        self.sync
    }
}

#[derive(Serialize)]
struct Wire<'a> {
    decision: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<ReasonWire<'a>>,
    goal: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    todo: Option<TodoWire<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    gates: Vec<GateWire<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    slots: Option<SlotsWire>,
    #[serde(skip_serializing_if = "Option::is_none")]
    turn_token: Option<String>,
}

#[derive(Serialize, Default)]
struct ReasonWire<'a> {
    code: &'static str,
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    gate: Option<&'a GateId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    question: Option<&'a str>,
    /// The stalled todo (stalled).
    #[serde(skip_serializing_if = "Option::is_none")]
    todo: Option<&'a TodoId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    frees_at: Option<String>,
    /// When a park ends (wait-until) or ended (awaiting-go).
    #[serde(skip_serializing_if = "Option::is_none")]
    until: Option<String>,
    /// What a person must do (state-locked).
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
    /// The figures of a reached budget (budget-exhausted).
    #[serde(skip_serializing_if = "Option::is_none")]
    budget: Option<BudgetWire>,
}

#[derive(Serialize)]
struct TodoWire<'a> {
    id: &'a TodoId,
    title: String,
    own: bool,
}

#[derive(Serialize)]
struct GateWire<'a> {
    id: &'a GateId,
    kind: &'static str,
    question: String,
}

#[derive(Serialize)]
struct SlotsWire {
    left: u32,
    of: u32,
    window: String,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let actor = ctx.actor()?;
    let Some(agent) = actor.agent() else {
        return Err(Refusal::rule(
            Code::AgentsOnly,
            "should-run answers for an agent, and no agent is acting",
        )
        .with_hint("pass --agent ID (or set LOOPX_AGENT); humans read `loopx status`")
        .into());
    };
    if args.sync {
        let report = crate::cmd::sync_remote(ctx, None)?;
        ctx.out.status(&crate::cmd::wire::human(&report));
    }
    // The cache's head first: its claimed todos most often answer (an
    // own claim to work on), else the head with the agent's ready list
    // beside it (the best ready todo); else the whole state, read at the
    // tip again and decided from the start, so no answer mixes two states.
    let mut claims = tx::load_claims(ctx)?;
    let sharded = !claims.complete;
    let first = {
        let state = &claims.state;
        let goals = agent_goals(ctx, state, agent, args.goal.as_deref())?;
        let goal = goals[0];
        match turn::decide_from_claims(state, agent, goal, ctx.now) {
            // Several goals: the head proves an own claim, or a skip on
            // every goal; else the whole state decides.
            _ if goals.len() > 1 => {
                let takes = |g: &[&crate::model::GoalId]| {
                    let a = state.agents.get(agent)?;
                    claims.ready_lists_until(agent, g, ready::takes(state, a, ctx.now))
                };
                let picked = match claims.complete {
                    // The head holds every todo: it is the whole state.
                    true => {
                        let (g, d) = turn::decide_across(state, agent, &goals, ctx.now);
                        Some((g, d, None))
                    }
                    false => turn::decide_across_from_ready(state, agent, &goals, ctx.now, &takes),
                };
                match picked {
                    Some((g, d, shown)) => {
                        let g = g.id.clone();
                        if let Some(t) = shown {
                            claims.state.todos.insert(t.id.clone(), t);
                        }
                        Ok((g, d))
                    }
                    None => Err(()),
                }
            }
            Err(pending) if claims.complete => {
                Ok((goal.id.clone(), pending.finish(state, agent, goal, ctx.now)))
            }
            Err(pending) => {
                // Parsed up to the first todo ready now: the one it
                // names.
                let list = match state.agents.get(agent) {
                    Some(a) => {
                        claims.ready_list_until(agent, &goal.id, ready::takes(state, a, ctx.now))
                    }
                    None => None,
                };
                match pending.finish_from_ready(state, agent, goal, ctx.now, list.as_ref()) {
                    Ok(d) => {
                        let d = (goal.id.clone(), d);
                        // The todo it names (unclaimed: not in the head),
                        // for its title.
                        let shown =
                            d.1.todo
                                .as_ref()
                                .and_then(|(id, _)| list?.todos.into_iter().find(|t| &t.id == id));
                        if let Some(t) = shown {
                            claims.state.todos.insert(t.id.clone(), t);
                        }
                        Ok(d)
                    }
                    Err(_) => Err(()),
                }
            }
            Ok(d) => Ok((goal.id.clone(), d)),
        }
    };
    let (snap, d) = match first {
        Ok(d) => (
            tx::Snapshot {
                tip: claims.tip,
                state: claims.state,
            },
            Some(d),
        ),
        Err(()) => {
            let snap = tx::load(ctx)?;
            if sharded {
                // A damaged or missing index is written again, so the
                // next should-run answers from the head.
                tx::repair_ready(ctx, &snap);
            }
            (snap, None)
        }
    };
    let state = &snap.state;
    let (goal, d) = match d {
        Some((g, d)) => (&state.goals[&g], d),
        None => {
            let goals = agent_goals(ctx, state, agent, args.goal.as_deref())?;
            turn::decide_across(state, agent, &goals, ctx.now)
        }
    };
    let reason = d.skip.as_ref().map(|r| {
        let mut w = ReasonWire {
            code: r.code(),
            message: reason_message(r, agent, &goal.id),
            ..ReasonWire::default()
        };
        match r {
            turn::Reason::GateOpen { gate, question } => {
                w.gate = Some(gate);
                w.question = Some(question);
            }
            turn::Reason::QuotaExhausted { frees_at }
            | turn::Reason::AgentQuotaExhausted { frees_at, .. } => {
                w.frees_at = Some(frees_at.to_string())
            }
            turn::Reason::WaitUntil { until, .. } => w.until = Some(until.to_string()),
            turn::Reason::AwaitingGo { until, gate } => {
                w.until = Some(until.to_string());
                w.gate = gate.as_ref();
            }
            turn::Reason::BudgetExhausted(e) => {
                w.gate = e.gate.as_ref();
                w.budget = Some(BudgetWire::of(&goal.id, &e.standing));
            }
            turn::Reason::AgentBudgetExhausted(st) => w.budget = Some(BudgetWire::of(&goal.id, st)),
            turn::Reason::Stalled { gate, todo } => {
                w.gate = Some(gate);
                w.question = state.gates.get(gate).map(|g| g.question.as_str());
                w.todo = Some(todo);
            }
            _ => {}
        }
        w
    });
    // Every tick would fail on a stale lock: stop the agent's loop with a
    // skip that says why, rather than let its next write error.
    let locked = stale_lock(ctx);
    let reason = match &locked {
        Some((lock, age)) => Some(ReasonWire {
            code: "state-locked",
            message: format!(
                "the state ref's lock {} is {}s old: a writer died holding it, and no tick can land until it is removed",
                lock.display(),
                age.as_secs()
            ),
            fix: Some(
                "a person runs `loopx doctor --fix` once no loopx or git process is running in this repository".to_owned(),
            ),
            ..ReasonWire::default()
        }),
        None => reason,
    };
    let todo = d.todo.as_ref().map(|(id, own)| TodoWire {
        id,
        title: short(&state.todos[id].title),
        own: *own,
    });
    let gates = d
        .gates
        .iter()
        .map(|g| {
            let gate = &state.gates[g];
            GateWire {
                id: g,
                kind: gate.kind.as_str(),
                question: short(&gate.question),
            }
        })
        .collect();
    let run = d.skip.is_none() && locked.is_none();
    let token =
        run.then(|| new_token(agent, &goal.id, &snap.tip.commit.to_string(), ctx.now).to_string());
    let wire = Wire {
        decision: if run { "run" } else { "skip" },
        reason,
        goal: goal.id.as_str(),
        todo: if run { todo } else { None },
        gates,
        slots: d.slots.map(|s| SlotsWire {
            left: s.left(),
            of: s.slots,
            window: s.window.to_string(),
        }),
        turn_token: token,
    };
    ctx.out.emit(&wire, || human(&wire))?;
    Ok(if run { Exit::Ok } else { Exit::Refused })
}

fn human(w: &Wire) -> String {
    let mut s = String::new();
    match (&w.reason, &w.todo) {
        (Some(r), _) => {
            s.push_str(&format!("skip: {} — {}\n", r.code, r.message));
            if let Some(fix) = &r.fix {
                s.push_str(&format!("fix: {fix}\n"));
            }
        }
        (None, Some(t)) => {
            let whose = if t.own {
                "your claim"
            } else {
                "ready; claim it"
            };
            s.push_str(&format!("run: {} \"{}\" ({whose})\n", t.id, t.title));
        }
        (None, None) => s.push_str("run\n"),
    }
    s.push_str(&format!("goal: {}\n", w.goal));
    for g in &w.gates {
        s.push_str(&format!("gate {} ({}): \"{}\"\n", g.id, g.kind, g.question));
    }
    if let Some(sl) = &w.slots {
        s.push_str(&format!(
            "slots: {} of {} left per {}\n",
            sl.left, sl.of, sl.window
        ));
    }
    if let Some(t) = &w.turn_token {
        s.push_str(&format!("turn: {t}\n"));
    }
    s
}

/// The state ref's lock file and its age, when it is older than a live
/// writer holds it ([`tx::STALE_LOCK`]).
///
/// It is never removed here: git's lock files carry no owner, so nothing
/// proves that the writer is gone rather than paused (a suspended process,
/// a slow disk, another machine on a shared filesystem). A writer that
/// resumes after its lock was broken would rename it over a newer tip.
fn stale_lock(ctx: &Ctx) -> Option<(std::path::PathBuf, std::time::Duration)> {
    let lock = ctx.state_lock_path()?;
    let age = std::fs::metadata(&lock)
        .ok()?
        .modified()
        .ok()
        .and_then(|t| std::time::SystemTime::now().duration_since(t).ok())
        .unwrap_or_default();
    (age >= tx::STALE_LOCK).then_some((lock, age))
}
