//! The usage ledger and budgets: `usage.record` (one turn's tokens and
//! dollars, the maximum of each figure over its reports), what a goal or an
//! agent spent inside a budget's window, the `spend` gate the record that
//! reaches a budget opens in its own tick, and the `budget-exhausted` answer
//! of `should-run` (cheap: it sums only the entries of one goal).

use super::{Effect, Happened, Op, rules};
use crate::error::{Code, Hint, N, Next, Refusal};
use crate::model::{
    AgentId, Blocks, Gate, GateId, GateKind, GateStatus, Goal, GoalId, GoalStatus, OpId, State,
    gate::Answer,
    quota::Ledger,
    usage::{BUDGET_WINDOW, Budget, Entry, Spent, Usage, Usd, human_count},
};
use crate::op::{BudgetSet, GateOpen, UsageRecord};
use crate::time::{Span, Timestamp};

/// The options of a budget gate. `raised` is recorded by the `goal.set`
/// that lifts the scope back under its budget.
pub const CONTINUE_ONCE: &str = "continue-once";
pub const STOP: &str = "stop";
pub const RAISED: &str = "raised";

/// The longest `model` or `runtime` text a record keeps.
const TEXT_MAX: usize = 100;

/// A budget scope: the whole goal, or one agent on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    Goal,
    Agent(AgentId),
}

impl Scope {
    pub fn blocks(&self) -> Blocks {
        match self {
            Scope::Goal => Blocks::Goal,
            Scope::Agent(a) => Blocks::Agent(a.clone()),
        }
    }

    fn budget<'g>(&self, goal: &'g Goal) -> Option<&'g Budget> {
        match self {
            Scope::Goal => goal.budget.goal.as_ref(),
            Scope::Agent(a) => goal.budget.agents.get(a),
        }
    }
}

/// A budget with what was spent against it, at one moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Standing {
    pub scope: Scope,
    pub budget: Budget,
    pub spent: Spent,
}

impl Standing {
    pub fn reached(&self) -> bool {
        self.budget.reached(&self.spent)
    }

    /// [`Standing::figures`], then what the dollars cannot count: `$3.20
    /// of $20.00 in 1d, plus 2 turns unpriced (model claude-opus-5-5)`.
    /// For screens only: a gate's question keeps [`Standing::figures`].
    pub fn shown(&self) -> String {
        match self.spent.unpriced_note() {
            Some(n) if self.budget.usd.is_some() => format!("{}, {n}", self.figures()),
            _ => self.figures(),
        }
    }

    /// `$3.20 of $20.00, 1.2M of 5M tokens in 1d`. Recorded in a budget
    /// gate's question, so a replay must give the same words: it never
    /// changes.
    pub fn figures(&self) -> String {
        let mut parts = Vec::new();
        if let Some(u) = self.budget.usd {
            let est = if self.spent.estimated { " (est.)" } else { "" };
            parts.push(format!("{}{est} of {u}", self.spent.usd));
        }
        if let Some(t) = self.budget.tokens {
            parts.push(format!(
                "{} of {} tokens",
                human_count(self.spent.tokens),
                human_count(t)
            ));
        }
        format!("{} in {}", parts.join(", "), self.budget.window)
    }
}

/// What one goal scope spent inside `window` up to `now`.
pub fn spent(state: &State, goal: &GoalId, scope: &Scope, window: Span, now: Timestamp) -> Spent {
    let from = now.minus(window);
    let mut s = Spent::default();
    let ledgers: Vec<&Ledger> = match scope {
        Scope::Goal => state.quota.values().collect(),
        Scope::Agent(a) => state.quota.get(a).into_iter().collect(),
    };
    for e in ledgers
        .into_iter()
        .flat_map(|l| &l.usage)
        .filter(|e| &e.goal == goal && e.at > from && e.at <= now)
    {
        s.add(&e.usage);
    }
    s
}

/// The goal's budget and the agent's (if either is set), with what was
/// spent against each at `now`.
pub fn standings(
    state: &State,
    goal: &Goal,
    agent: Option<&AgentId>,
    now: Timestamp,
) -> Vec<Standing> {
    let mut scopes = vec![Scope::Goal];
    scopes.extend(agent.cloned().map(Scope::Agent));
    scopes
        .into_iter()
        .filter_map(|scope| {
            let budget = *scope.budget(goal)?;
            Some(Standing {
                spent: spent(state, &goal.id, &scope, budget.window, now),
                scope,
                budget,
            })
        })
        .collect()
}

/// Why `should-run` skips with `budget-exhausted`: the reached budget with
/// its figures, and the `spend` gate that asks a human (none once it was
/// answered `stop`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exhausted {
    pub standing: Standing,
    pub gate: Option<GateId>,
}

/// Why `should-run` skips for a budget, when it does: a reached budget
/// whose gate is open, or was answered `stop`, or was answered
/// `continue-once` and has seen a usage record since.
pub fn exhausted(state: &State, agent: &AgentId, goal: &Goal, now: Timestamp) -> Option<Exhausted> {
    if goal.budget.is_empty() {
        return None;
    }
    for st in standings(state, goal, Some(agent), now) {
        if !st.reached() {
            continue;
        }
        let open = budget_gates(state, &goal.id, &st.scope)
            .find(|g| g.is_open())
            .map(|g| g.id.clone());
        if open.is_none() && continue_once_pending(state, &goal.id, &st.scope) {
            continue;
        }
        return Some(Exhausted {
            standing: st,
            gate: open,
        });
    }
    None
}

/// The agent-wide budget of `agent` when it is reached across goals and
/// no goal's own budget of the agent is: the largest dollar and token
/// limits and window of its budgets on the goals in its scope
/// ([`State::scope`]), against what it spent on every goal in that window.
/// A budget reached on one goal is that goal's answer (its gate, its
/// `continue-once`); this one stops the spend that only adds up across
/// goals, so a second goal never raises what one agent may spend.
pub fn agent_exhausted(state: &State, agent: &AgentId, now: Timestamp) -> Option<Standing> {
    let scope = state.scope(agent);
    let budgets: Vec<&Budget> = scope
        .iter()
        .filter_map(|g| g.budget.agents.get(agent))
        .collect();
    if budgets.is_empty() {
        return None;
    }
    let one = Scope::Agent(agent.clone());
    if scope.iter().any(|g| {
        one.budget(g)
            .is_some_and(|b| b.reached(&spent(state, &g.id, &one, b.window, now)))
    }) {
        return None;
    }
    let budget = Budget {
        usd: budgets.iter().filter_map(|b| b.usd).max(),
        tokens: budgets.iter().filter_map(|b| b.tokens).max(),
        window: budgets
            .iter()
            .map(|b| b.window)
            .max()
            .unwrap_or(BUDGET_WINDOW),
    };
    let from = now.minus(budget.window);
    let mut all = Spent::default();
    for e in state
        .quota
        .get(agent)
        .into_iter()
        .flat_map(|l| &l.usage)
        .filter(|e| e.at > from && e.at <= now)
    {
        all.tokens = all.tokens.saturating_add(e.usage.tokens());
        if let Some(c) = e.usage.cost_usd {
            all.usd = all.usd.saturating_add(c);
            all.estimated |= e.usage.estimated;
        }
    }
    let st = Standing {
        scope: one,
        budget,
        spent: all,
    };
    st.reached().then_some(st)
}

/// The sentence for [`agent_exhausted`]'s skip.
pub fn agent_exhausted_message(agent: &AgentId, st: &Standing) -> String {
    format!(
        "{agent} reached its budget across every goal ({}); a human raises its budget on a goal (`goal set G --budget-agent {agent}`) before work goes on",
        st.figures()
    )
}

fn budget_gates<'s>(
    state: &'s State,
    goal: &'s GoalId,
    scope: &'s Scope,
) -> impl Iterator<Item = &'s Gate> {
    let blocks = scope.blocks();
    state
        .gates
        .values()
        .filter(move |g| g.budget && &g.goal == goal && g.blocks == blocks)
}

/// The scope's last budget gate was answered "continue once", and no usage
/// of the scope was recorded after that answer.
fn continue_once_pending(state: &State, goal: &GoalId, scope: &Scope) -> bool {
    let Some(answer) = budget_gates(state, goal, scope)
        .filter_map(|g| g.answer.as_ref())
        .max_by_key(|a| a.at)
    else {
        return false;
    };
    if answer.choice != CONTINUE_ONCE {
        return false;
    }
    let last = match scope {
        Scope::Goal => state
            .quota
            .values()
            .flat_map(|l| &l.usage)
            .collect::<Vec<_>>(),
        Scope::Agent(a) => state
            .quota
            .get(a)
            .map(|l| l.usage.iter().collect())
            .unwrap_or_default(),
    }
    .into_iter()
    .filter(|e| &e.goal == goal)
    .map(|e| e.at)
    .max();
    // A record in the same second as the answer came before it: the
    // answer followed the gate that record opened.
    last.is_none_or(|at| at <= answer.at)
}

/// A turn id or hook key: 16 lowercase hex digits.
fn check_turn(turn: &str) -> Result<(), Refusal> {
    if turn.len() == 16
        && turn
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        Ok(())
    } else {
        Err(Refusal::usage(
            Code::BadUsage,
            format!("{turn:?} is not a turn id (16 hex digits)"),
        ))
    }
}

pub(super) fn record(state: &mut State, op: &Op, c: &UsageRecord) -> Result<Effect, Refusal> {
    let UsageRecord { goal, turn, usage } = c;
    let agent = rules::acting_agent(state, &op.actor, "record usage")?
        .id
        .clone();
    if !state.goals.contains_key(goal) {
        return Err(crate::model::unknown_goal(goal));
    }
    check_turn(turn)?;
    if usage.is_empty() {
        return Err(Refusal::usage(
            Code::BadUsage,
            "the usage reports no tokens and no cost",
        ));
    }
    if usage.cached_input_tokens > usage.input_tokens {
        return Err(Refusal::usage(
            Code::BadUsage,
            "cached_input_tokens is more than input_tokens (which counts cached tokens too)",
        ));
    }
    for t in [&usage.model, &usage.runtime].into_iter().flatten() {
        if t.trim().is_empty() || t.chars().count() > TEXT_MAX || t.chars().any(char::is_control) {
            return Err(Refusal::usage(
                Code::BadUsage,
                format!(
                    "a usage's model or runtime must be one line of at most {TEXT_MAX} characters"
                ),
            ));
        }
    }
    // How long each goal's entries are kept: its longest budget window,
    // its quota window, and a day at least.
    let windows: std::collections::BTreeMap<GoalId, Span> = state
        .goals
        .values()
        .map(|g| (g.id.clone(), keep_for(g)))
        .collect();
    let ledger = state
        .quota
        .get_or_insert_with(agent.clone(), || Ledger::new(agent.clone()));
    let before = ledger.usage.iter().find(|e| e.turn == *turn).cloned();
    let added = match ledger.usage.iter_mut().find(|e| e.turn == *turn) {
        Some(e) => {
            if !e.usage.absorb(usage) {
                // The same report again, or a smaller one: nothing to add.
                return Ok(Effect::new(
                    Happened::UsageRecorded {
                        agent: agent.clone(),
                        added: None,
                        gates: Vec::new(),
                    },
                    format!("usage {agent} turn {turn} (already recorded)"),
                ));
            }
            e.at = e.at.max(op.at);
            difference(before.as_ref().map(|b| &b.usage), &e.usage)
        }
        None => {
            ledger.usage.push(Entry {
                turn: turn.clone(),
                goal: goal.clone(),
                at: op.at,
                usage: usage.clone(),
            });
            usage.clone()
        }
    };
    // Entries that have left every window of their goal no longer count;
    // the history keeps them.
    ledger.usage.retain(|e| {
        e.turn == *turn
            || e.at
                > op.at
                    .minus(windows.get(&e.goal).copied().unwrap_or(BUDGET_WINDOW))
    });
    let goal_now = state.goals[goal].clone();
    let mut gates = Vec::new();
    let mut reached = Vec::new();
    if goal_now.status != GoalStatus::Done {
        for st in standings(state, &goal_now, Some(&agent), op.at) {
            if st.reached() && !budget_gates(state, goal, &st.scope).any(Gate::is_open) {
                let id = open_gate(state, op, &goal_now, &st);
                reached.push(format!("{} ({id})", scope_name(goal, &st.scope)));
                gates.push(id);
            }
        }
    }
    let mut subject = format!("usage {agent} turn {turn} {}", describe(&added));
    if !reached.is_empty() {
        subject.push_str(&format!("; budget reached: {}", reached.join(", ")));
    }
    Ok(Effect::new(
        Happened::UsageRecorded {
            agent,
            added: Some(added),
            gates,
        },
        subject,
    ))
}

/// How long a goal's ledger entries are kept.
fn keep_for(g: &Goal) -> Span {
    [
        g.budget.longest(),
        Some(g.quota.window),
        Some(BUDGET_WINDOW),
    ]
    .into_iter()
    .flatten()
    .max()
    .unwrap_or(BUDGET_WINDOW)
}

/// What the later report adds to the earlier one, per figure.
fn difference(before: Option<&Usage>, after: &Usage) -> Usage {
    let b = before.cloned().unwrap_or_default();
    Usage {
        input_tokens: after.input_tokens - b.input_tokens,
        output_tokens: after.output_tokens - b.output_tokens,
        cached_input_tokens: after.cached_input_tokens - b.cached_input_tokens,
        cost_usd: after
            .cost_usd
            .map(|c| Usd(c.0 - b.cost_usd.unwrap_or_default().0))
            .filter(|c| c.0 > 0),
        estimated: after.estimated,
        model: after.model.clone(),
        runtime: after.runtime.clone(),
    }
}

/// `+1.2k in, +300 out, +$0.0125 (est.)`, for subjects and messages.
pub fn describe(u: &Usage) -> String {
    let mut parts = vec![
        format!("+{} in", human_count(u.input_tokens)),
        format!("+{} out", human_count(u.output_tokens)),
    ];
    if let Some(c) = u.cost_usd {
        let est = if u.estimated { " (est.)" } else { "" };
        parts.push(format!("+{c}{est}"));
    }
    parts.join(", ")
}

fn scope_name(goal: &GoalId, scope: &Scope) -> String {
    match scope {
        Scope::Goal => format!("goal {goal}"),
        Scope::Agent(a) => format!("{a} on goal {goal}"),
    }
}

/// A budget gate's id, derived from the op that opens it and its scope, so
/// a replay opens the same gate.
fn gate_id(op: &OpId, scope: &Scope) -> GateId {
    GateId::derived(op, &format!("budget {}", scope.blocks()))
}

/// Opens the human-only `spend` gate of a reached budget.
fn open_gate(state: &mut State, op: &Op, goal: &Goal, st: &Standing) -> GateId {
    let id = gate_id(&op.id, &st.scope);
    let question = format!(
        "{} reached its budget: {}. Raise the budget, continue once, or stop?",
        scope_name(&goal.id, &st.scope),
        st.figures()
    );
    state.gates.insert(
        id.clone(),
        Gate {
            budget: true,
            ..GateOpen {
                gate: id.clone(),
                goal: goal.id.clone(),
                question,
                options: vec![CONTINUE_ONCE.to_owned(), STOP.to_owned()],
                kind: GateKind::Spend,
                blocks: st.scope.blocks(),
            }
            .open(op)
        },
    );
    id
}

/// After a `goal.set` changed budgets: a scope back under its budget has
/// its open budget gate answered `raised`; a scope the new budget puts over
/// gets one opened. Returns what it did, for the subject.
pub(super) fn rebudget(state: &mut State, op: &Op, goal: &GoalId) -> Vec<String> {
    let Some(g) = state.goals.get(goal).cloned() else {
        return Vec::new();
    };
    let mut scopes = vec![Scope::Goal];
    scopes.extend(state.agents.keys().cloned().map(Scope::Agent));
    let mut done = Vec::new();
    for scope in scopes {
        let st = scope.budget(&g).map(|b| Standing {
            spent: spent(state, goal, &scope, b.window, op.at),
            scope: scope.clone(),
            budget: *b,
        });
        let reached = st.as_ref().is_some_and(Standing::reached);
        let open: Vec<GateId> = budget_gates(state, goal, &scope)
            .filter(|x| x.is_open())
            .map(|x| x.id.clone())
            .collect();
        if !reached {
            for id in open {
                let gate = state.gates.get_mut(&id).expect("listed above");
                gate.status = GateStatus::Answered;
                gate.answer = Some(Answer {
                    choice: RAISED.to_owned(),
                    by: op.actor.clone(),
                    at: op.at,
                    note: Some(match &st {
                        Some(st) => format!("budget now {}", st.figures()),
                        None => "budget removed".to_owned(),
                    }),
                    signature: op.signature.clone(),
                });
                done.push(format!("answered {id}"));
            }
        } else if open.is_empty()
            && g.status != GoalStatus::Done
            && !continue_once_pending(state, goal, &scope)
            && let Some(st) = st
        {
            let id = open_gate(state, op, &g, &st);
            done.push(format!(
                "budget reached: {} ({id})",
                scope_name(goal, &scope)
            ));
        }
    }
    done
}

/// Applies a [`BudgetSet`] to a goal; returns the words for the subject.
pub(super) fn set_budget(goal: &mut Goal, set: &BudgetSet) -> Result<Vec<String>, Refusal> {
    if set.usd.is_none() && set.tokens.is_none() && set.window.is_none() {
        return Err(Refusal::usage(
            Code::BadBudget,
            "a budget needs a dollar limit, a token limit or a window",
        ));
    }
    if set.window.is_some_and(|w| w.as_secs() == 0) {
        return Err(Refusal::usage(
            Code::BadBudget,
            "--budget-window must be longer than 0s",
        ));
    }
    let slot = match &set.agent {
        Some(a) => goal.budget.agents.get(a).copied(),
        None => goal.budget.goal,
    };
    let mut b = slot.unwrap_or(Budget {
        usd: None,
        tokens: None,
        window: BUDGET_WINDOW,
    });
    if let Some(u) = set.usd {
        b.usd = (u.0 > 0).then_some(u);
    }
    if let Some(t) = set.tokens {
        b.tokens = (t > 0).then_some(t);
    }
    if let Some(w) = set.window {
        b.window = w;
    }
    let who = set
        .agent
        .as_ref()
        .map(|a| format!("[{a}]"))
        .unwrap_or_default();
    let mut words = Vec::new();
    if let Some(u) = set.usd {
        words.push(format!(
            "budget-usd{who}={}",
            if u.0 == 0 {
                "off".to_owned()
            } else {
                u.to_string()
            }
        ));
    }
    if let Some(t) = set.tokens {
        words.push(format!(
            "budget-tokens{who}={}",
            if t == 0 {
                "off".to_owned()
            } else {
                human_count(t)
            }
        ));
    }
    if let Some(w) = set.window {
        words.push(format!("budget-window{who}={w}"));
    }
    let keep = b.usd.is_some() || b.tokens.is_some();
    if !keep && slot.is_none() && set.window.is_some() {
        return Err(Refusal::usage(
            Code::BadBudget,
            "a budget window alone sets no budget: give --budget-usd or --budget-tokens too",
        ));
    }
    match (&set.agent, keep) {
        (Some(a), true) => {
            goal.budget.agents.insert(a.clone(), b);
        }
        (Some(a), false) => {
            goal.budget.agents.remove(a);
        }
        (None, true) => goal.budget.goal = Some(b),
        (None, false) => goal.budget.goal = None,
    }
    Ok(words)
}

/// What raises a scope's budget past what it spent: the dollar limit (or,
/// for a token budget, the token limit) set to what was spent plus the
/// budget, in whole dollars: twice the budget when the scope stopped at
/// it, more when it ran past. A suggestion to edit.
pub fn raise(goal: &GoalId, st: &Standing) -> Next {
    let usd = st
        .budget
        .usd
        .map(|u| (st.spent.usd.dollars() + u.dollars()).ceil().max(1.0) as u64);
    let tokens = st
        .budget
        .tokens
        .filter(|t| usd.is_none() || st.spent.tokens >= *t)
        .map(|t| st.spent.tokens.saturating_add(t));
    Next::RaiseBudget {
        goal: goal.to_string(),
        usd,
        tokens,
        agent: match &st.scope {
            Scope::Goal => None,
            Scope::Agent(a) => Some(a.to_string()),
        },
    }
}

/// The standing of the budget a budget gate watches, now: None for a gate
/// no budget opened, or whose budget was removed since.
pub fn gate_standing(state: &State, gate: &Gate, now: Timestamp) -> Option<Standing> {
    if !gate.budget {
        return None;
    }
    let scope = match &gate.blocks {
        Blocks::Goal => Scope::Goal,
        Blocks::Agent(a) => Scope::Agent(a.clone()),
        Blocks::Todo(_) => return None,
    };
    let goal = state.goals.get(&gate.goal)?;
    let budget = *scope.budget(goal)?;
    Some(Standing {
        spent: spent(state, &goal.id, &scope, budget.window, now),
        scope,
        budget,
    })
}

/// Whether a budget gate may be answered `raised` at `now`: its budget
/// was raised past what the scope spent (or removed). Otherwise the
/// refusal names the command that raises it.
pub fn check_raised(state: &State, gate: &Gate, now: Timestamp) -> Result<(), Refusal> {
    match gate_standing(state, gate, now) {
        Some(st) if st.reached() => Err(Refusal::rule(
            Code::BadChoice,
            format!(
                "{} has not been raised: {} reached its budget ({})",
                gate.id,
                scope_name(&gate.goal, &st.scope),
                st.shown()
            ),
        )
        .with_hint(Hint::new(
            format!("raise it with {N}, which answers the gate `raised` by itself; or choose continue-once or stop"),
            [raise(&gate.goal, &st)],
        ))),
        _ => Ok(()),
    }
}

/// The line `should-run` and the hooks say for an exhausted budget.
pub fn exhausted_message(goal: &GoalId, e: &Exhausted) -> String {
    let st = &e.standing;
    let who = scope_name(goal, &st.scope);
    match &e.gate {
        Some(g) => format!(
            "{who} reached its budget ({}); gate {g} asks a human to raise it, continue once, or stop",
            st.shown()
        ),
        None => format!(
            "{who} reached its budget ({}); a human must raise it before work goes on",
            st.shown()
        ),
    }
}

#[cfg(test)]
mod tests;

/// A settle's part for its `usage.record` step, from what the step did.
pub(super) fn settle_part(h: Option<&Happened>) -> String {
    match h {
        Some(Happened::UsageRecorded {
            added: Some(u),
            gates,
            ..
        }) => {
            let mut p = format!("usage {}", describe(u));
            for g in gates {
                p.push_str(&format!(", budget reached: gate {g}"));
            }
            p
        }
        _ => "usage already recorded".to_owned(),
    }
}
