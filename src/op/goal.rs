//! Rules for `init`, `goal.add` and `goal.set`.

use super::{Effect, Happened, Op, rules::non_empty, short};
use crate::error::{Code, Hint, N, Next, Refusal};
use crate::model::{Goal, GoalStatus, QuotaPolicy, State};
use crate::op::{GoalAdd, GoalSet, Init};

pub(super) fn init(state: &mut State, op: &Op, c: &Init) -> Result<Effect, Refusal> {
    if !(state.goals.is_empty() && state.agents.is_empty() && state.todos.is_empty()) {
        return Err(Refusal::rule(
            Code::AlreadyInitialized,
            "the state already exists",
        ));
    }
    match (&c.goal, &c.objective) {
        (Some(goal), Some(objective)) => {
            let add_goal = GoalAdd {
                goal: goal.clone(),
                objective: objective.clone(),
            };
            add(state, op, &add_goal)?;
            Ok(Effect::new(
                Happened::Initialized,
                format!("init with goal {goal}"),
            ))
        }
        (None, None) => Ok(Effect::new(Happened::Initialized, "init")),
        _ => Err(Refusal::usage(
            Code::GoalNeedsObjective,
            "--goal and --objective go together",
        )),
    }
}

pub(super) fn add(state: &mut State, op: &Op, c: &GoalAdd) -> Result<Effect, Refusal> {
    let GoalAdd {
        goal: id,
        objective,
    } = c;
    if state.goals.contains_key(id) {
        return Err(
            Refusal::rule(Code::GoalExists, format!("goal {id} already exists")).with_hint(
                Hint::new(
                    format!("change it with {N}"),
                    [Next::SetGoal(id.to_string())],
                ),
            ),
        );
    }
    let objective = non_empty(objective, "objective")?;
    state.goals.insert(
        id.clone(),
        Goal {
            id: id.clone(),
            objective: objective.clone(),
            status: GoalStatus::Active,
            scope: Vec::new(),
            guards: Vec::new(),
            quota: QuotaPolicy::default(),
            budget: Default::default(),
            auto_resume: false,
            lease: None,
            stall_after: crate::model::goal::STALL_AFTER,
            created_at: op.at,
            created_by: op.actor.clone(),
            updated_at: op.at,
        },
    );
    Ok(Effect::new(
        Happened::GoalAdded { goal: id.clone() },
        format!("goal add {id} \"{}\"", short(&objective)),
    ))
}

pub(super) fn set(state: &mut State, op: &Op, c: &GoalSet) -> Result<Effect, Refusal> {
    let GoalSet {
        goal,
        objective,
        status,
        scope,
        guards,
        quota_slots,
        quota_window,
        budget,
        auto_resume,
        stall_after,
        lease,
    } = c;
    if !state.goals.contains_key(goal) {
        return Err(crate::model::unknown_goal(goal));
    }
    let objective = objective
        .as_deref()
        .map(|o| non_empty(o, "objective"))
        .transpose()?;
    if *quota_slots == Some(0) {
        return Err(
            Refusal::usage(Code::BadQuota, "--quota-slots must be at least 1")
                .with_hint("pause the goal instead with --status paused"),
        );
    }
    if quota_window.is_some_and(|w| w.as_secs() == 0) {
        return Err(Refusal::usage(
            Code::BadQuota,
            "--quota-window must be longer than 0s",
        ));
    }
    if stall_after.is_some_and(|n| n > super::progress::MAX_RUN) {
        return Err(Refusal::usage(
            Code::BadQuota,
            format!("--stall-after must be at most {}", super::progress::MAX_RUN),
        )
        .with_hint("0 turns stall detection off"));
    }
    if let Some(l) = lease
        && (l.as_secs() < 0 || *l > crate::time::Span::MAX)
    {
        return Err(Refusal::usage(
            Code::BadTtl,
            format!(
                "--lease must be from 0s (the team's lease) to {}",
                crate::time::Span::MAX
            ),
        ));
    }
    // The budget is checked on a copy first: nothing changes on a refusal.
    let (budgeted, budget_words) = match budget {
        Some(b) => {
            if let Some(a) = &b.agent
                && !state.agents.contains_key(a)
            {
                return Err(Refusal::error(
                    Code::UnknownAgent,
                    format!("there is no agent {a} to give a budget"),
                ));
            }
            let mut trial = state.goals[goal].clone();
            let words = super::usage::set_budget(&mut trial, b)?;
            (trial.budget, words)
        }
        None => (Default::default(), Vec::new()),
    };
    let g = state.goals.get_mut(goal).expect("checked above");
    let mut what = Vec::new();
    if let Some(o) = objective {
        g.objective = o;
        what.push("objective".to_owned());
    }
    if let Some(s) = status {
        g.status = *s;
        what.push(format!("status={}", s.as_str()));
    }
    if let Some(s) = scope {
        g.scope = super::agent::normalize(s);
        what.push("scope".to_owned());
    }
    if let Some(gs) = guards {
        g.guards = gs
            .iter()
            .map(|p| p.trim().to_owned())
            .filter(|p| !p.is_empty())
            .collect();
        what.push("guards".to_owned());
    }
    if let Some(n) = quota_slots {
        g.quota.slots = *n;
        what.push(format!("quota-slots={n}"));
    }
    if let Some(w) = quota_window {
        g.quota.window = *w;
        what.push(format!("quota-window={w}"));
    }
    if budget.is_some() {
        g.budget = budgeted;
        what.extend(budget_words);
    }
    if let Some(r) = auto_resume {
        g.auto_resume = *r;
        what.push(format!("auto-resume={r}"));
    }
    if let Some(n) = stall_after {
        g.stall_after = *n;
        what.push(format!("stall-after={n}"));
    }
    match lease {
        Some(l) if l.as_secs() == 0 => {
            g.lease = None;
            what.push("lease=the team's".to_owned());
        }
        Some(l) => {
            g.lease = Some(*l);
            what.push(format!("lease={l}"));
        }
        None => {}
    }
    if what.is_empty() {
        return Err(
            Refusal::usage(Code::NothingToSet, "goal set needs something to change").with_hint(
                "pass --objective, --status, --scope, --guard, --quota-slots, --quota-window, --auto-resume, --stall-after, --lease or a budget",
            ),
        );
    }
    state.goals.get_mut(goal).expect("checked above").updated_at = op.at;
    if budget.is_some() {
        what.extend(super::usage::rebudget(state, op, goal));
    }
    let subject = format!("goal set {goal} {}", what.join(" "));
    Ok(Effect::new(
        Happened::GoalSet {
            goal: goal.clone(),
            changed: what,
        },
        subject,
    ))
}

#[cfg(test)]
mod tests;
