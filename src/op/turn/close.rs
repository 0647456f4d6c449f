//! The ops that close a turn: `refresh-state`, `spend-slot`, `void-slot`,
//! and `settle`, which holds several of them in one tick.

use super::*;
use crate::op::{EvidenceAdd, QuotaSpend, QuotaVoid, RefreshState, Settle, TodoUpdate};

pub(in crate::op) fn refresh(
    state: &mut State,
    op: &Op,
    c: &RefreshState,
) -> Result<Effect, Refusal> {
    let RefreshState {
        goal,
        outcome,
        turn,
        todo,
        next_action,
        progress,
    } = c;
    let agent = rules::acting_agent(state, &op.actor, "refresh its state")?
        .id
        .clone();
    if !state.goals.contains_key(goal) {
        return Err(crate::model::unknown_goal(goal));
    }
    if let Some(t) = todo {
        match state.todos.get(t) {
            None => {
                return Err(
                    Refusal::error(Code::UnknownTodo, format!("{t} is not a live todo")).with_hint(
                        Hint::new(format!("{N} shows the live todos"), [Next::Todos]),
                    ),
                );
            }
            Some(x) if &x.goal != goal => {
                return Err(Refusal::usage(
                    Code::WrongGoal,
                    format!("{t} belongs to goal {}, not {goal}", x.goal),
                ));
            }
            Some(_) => {}
        }
    }
    let next_action = next_action
        .as_deref()
        .map(|n| non_empty(n, "next action"))
        .transpose()?;
    let digest = digest(state, &agent, goal, op.at);
    let a = state
        .agents
        .get_mut(&agent)
        .expect("acting_agent checked it");
    a.last_turn = Some(LastTurn {
        at: op.at,
        goal: goal.clone(),
        outcome: *outcome,
        turn: turn.clone(),
        todo: todo.clone(),
        next_action: next_action.clone(),
        digest,
    });
    if *outcome != Outcome::Unchanged {
        wrote_back(state, op);
    }
    let gate = super::super::park::on_turn_end(state, op, &agent);
    let (stalled, stall) =
        super::super::progress::on_refresh(state, op, &agent, (goal, todo), *outcome, progress);
    let next = next_action
        .map(|n| format!(": next {}", super::super::short(&n)))
        .unwrap_or_default();
    let asked = gate
        .as_ref()
        .map(|g| format!("; park ended, gate {g} asks for a go"))
        .unwrap_or_default();
    let subject = format!("refresh {agent} {}{stall}{next}{asked}", outcome.as_str());
    Ok(Effect::new(
        Happened::Refreshed {
            agent,
            outcome: *outcome,
            gate,
            stalled,
        },
        subject,
    ))
}

pub(in crate::op) fn spend(state: &mut State, op: &Op, c: &QuotaSpend) -> Result<Effect, Refusal> {
    let &QuotaSpend {
        ref goal,
        ref turn,
        issued,
    } = c;
    let agent = rules::acting_agent(state, &op.actor, "spend a slot")?.clone();
    let g = state
        .goals
        .get(goal)
        .ok_or_else(|| crate::model::unknown_goal(goal))?;
    let window = g.quota.window;
    if state
        .quota
        .get(&agent.id)
        .is_some_and(|l| l.spent(turn).is_some())
    {
        // A second spend for the same token is a no-op (DESIGN §4), also
        // inside a settle and on replay.
        return Ok(Effect::new(
            Happened::Spent {
                agent: agent.id.clone(),
                already: true,
            },
            format!("spend {} turn {turn} (already spent)", agent.id),
        ));
    }
    super::super::progress::refuse_spend(state, op, &agent.id, goal)?;
    if op.at.since(issued) > window {
        return Err(Refusal::rule(
            Code::TokenExpired,
            format!(
                "the turn token was issued at {issued}, more than the quota window ({window}) ago"
            ),
        )
        .with_hint(Hint::new(
            format!("ask {N} for a new turn"),
            [Next::ShouldRun],
        )));
    }
    if agent.last_writeback.is_none_or(|w| w < issued) {
        return Err(Refusal::rule(
            Code::NoWriteback,
            format!(
                "{} has made no validated writeback since its turn began at {issued}, so no slot is spent",
                agent.id
            ),
        )
        .with_hint(Hint::new(
            format!("record the turn first: {N} on your claim, {N}, {N} that passes, {N}, or {N}"),
            [
                Next::UpdateTodo,
                Next::FinishTodo(None),
                Next::RunEvidence,
                Next::AddEvidence,
                Next::RefreshState,
            ],
        )));
    }
    let windows: std::collections::BTreeMap<GoalId, Span> = state
        .goals
        .values()
        .map(|g| (g.id.clone(), g.quota.window))
        .collect();
    let ledger = state
        .quota
        .get_or_insert_with(agent.id.clone(), || Ledger::new(agent.id.clone()));
    // Spends that have left their goal's window no longer count; the
    // history keeps them.
    ledger
        .spends
        .retain(|s| s.at > op.at.minus(windows.get(&s.goal).copied().unwrap_or(window)));
    ledger.spends.push(Spend {
        turn: turn.to_owned(),
        goal: goal.clone(),
        at: op.at,
        void: None,
    });
    let used = ledger.counting(goal, window, op.at).len();
    let slots = g_slots(state, goal);
    Ok(Effect::new(
        Happened::Spent {
            agent: agent.id.clone(),
            already: false,
        },
        format!(
            "spend {} turn {turn} ({used} of {slots} in {window})",
            agent.id
        ),
    ))
}

pub(super) fn g_slots(state: &State, goal: &GoalId) -> u32 {
    state.goals.get(goal).map_or(0, |g| g.quota.slots)
}

pub(in crate::op) fn void(state: &mut State, op: &Op, c: &QuotaVoid) -> Result<Effect, Refusal> {
    let QuotaVoid {
        agent,
        turn,
        reason,
    } = c;
    let reason = non_empty(reason, "reason")?;
    let spend = state
        .quota
        .get_mut(agent)
        .and_then(|l| l.spends.iter_mut().find(|s| s.turn == *turn))
        .ok_or_else(|| {
            Refusal::error(
                Code::UnknownSpend,
                format!("{agent} has no spend for turn {turn}"),
            )
            .with_hint(Hint::new(
                format!("{N} lists its spends"),
                [Next::QuotaOf(agent.to_string())],
            ))
        })?;
    if spend.void.is_some() {
        return Err(Refusal::rule(
            Code::AlreadyVoided,
            format!("turn {turn} of {agent} is already voided"),
        ));
    }
    spend.void = Some(Void {
        by: op.actor.clone(),
        at: op.at,
        reason: reason.clone(),
    });
    Ok(Effect::new(
        Happened::Voided {
            agent: agent.clone(),
        },
        format!("void {agent} turn {turn}: {}", super::super::short(&reason)),
    ))
}

/// Several changes in one tick, all or nothing, in order.
/// Whether `step` is a turn's writeback, the kinds a settle holds from
/// format 7.
fn turn_step(step: &Change) -> bool {
    matches!(
        step,
        Change::EvidenceAdd(_)
            | Change::TodoDone(_)
            | Change::TodoUpdate(_)
            | Change::RefreshState(_)
            | Change::QuotaSpend(_)
            | Change::UsageRecord(_)
    )
}

pub(in crate::op) fn settle(
    state: &mut State,
    op: &Op,
    c: &Settle,
    format: u32,
) -> Result<Effect, Refusal> {
    let steps = &c.steps;
    if steps.is_empty() {
        return Err(Refusal::usage(
            Code::EmptySettle,
            "settle has nothing to record",
        ));
    }
    let mut work = state.clone();
    let mut parts = Vec::new();
    let mut happened = Vec::new();
    let mut evidence = Vec::new();
    let mut archived = std::collections::BTreeMap::new();
    for step in steps {
        // From format 7 a settle holds a turn's writeback only: no signer,
        // machine, settings or other act that a signature or a human must
        // vouch for on its own (`trust` checks those on the op itself).
        if format >= crate::op::signer::POSSESSION_SINCE && !turn_step(step) {
            return Err(Refusal::usage(
                Code::NestedSettle,
                format!(
                    "a settle holds a turn's writeback (evidence, the todo's update or done, the refresh, the spend, usage), not {}",
                    step.kind()
                ),
            ));
        }
        if matches!(step, Change::Settle(_)) {
            return Err(Refusal::usage(
                Code::NestedSettle,
                "a settle cannot hold another settle",
            ));
        }
        let sub = Op {
            id: op.id.clone(),
            at: op.at,
            actor: op.actor.clone(),
            signature: op.signature.clone(),
            change: step.clone(),
        };
        // The steps' limits were checked with the settle's.
        let effect = super::super::dispatch(&mut work, &sub, format)?;
        happened.push(effect.what);
        evidence.extend(effect.evidence);
        archived.extend(effect.archived);
        parts.push(match step {
            Change::EvidenceAdd(EvidenceAdd { run: Some(r), .. }) if !r.passed() => {
                "evidence failed".to_owned()
            }
            Change::EvidenceAdd(_) => "evidence passed".to_owned(),
            Change::TodoDone(_) => "done".to_owned(),
            Change::TodoUpdate(TodoUpdate {
                status: Some(s), ..
            }) => s.to_string(),
            Change::TodoUpdate(_) => "noted".to_owned(),
            Change::RefreshState(RefreshState { outcome, .. }) => {
                outcome.as_str().to_owned() + &super::super::progress::note(happened.last())
            }
            Change::UsageRecord(_) => super::super::usage::settle_part(happened.last()),
            Change::QuotaSpend(QuotaSpend { goal, .. }) => {
                let agent = op.actor.agent().cloned();
                match (agent, work.goals.get(goal)) {
                    (Some(a), Some(g)) => {
                        let s = slots(&work, &a, g, op.at);
                        format!("spent {} of {}", s.used, s.slots)
                    }
                    _ => "spent".to_owned(),
                }
            }
            other => other.kind().to_owned(),
        });
    }
    let what = match steps
        .iter()
        .find_map(Change::todo)
        .and_then(|t| work.todos.get(t))
    {
        Some(t) => format!("{} \"{}\"", t.id, super::super::short(&t.title)),
        None => "turn".to_owned(),
    };
    *state = work;
    let summary = format!("{what}: {}", parts.join(", "));
    let mut effect = Effect::new(
        Happened::Settled {
            steps: happened,
            summary: summary.clone(),
        },
        format!("settle {summary}"),
    );
    effect.evidence = evidence;
    effect.archived = archived;
    Ok(effect)
}
