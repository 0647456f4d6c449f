//! The agent's turn: the read-only `should-run` decision, and the ops that
//! close a turn (`refresh-state`, `spend-slot`, `void-slot`, and `settle`,
//! which holds several of them in one tick).

use sha2::{Digest, Sha256};

use super::{
    Change, Effect, Happened, Op,
    rules::{self, non_empty},
    wrote_back,
};
use crate::error::{Code, Hint, N, Next, Refusal};
use crate::model::quota::TurnToken;
use crate::model::{
    AgentId, AgentStatus, Blocks, GateId, Goal, GoalId, GoalStatus, LastTurn, Outcome, State,
    TodoId, TodoStatus,
    quota::{Ledger, Spend, Void},
};
use crate::time::{Span, Timestamp};

mod close;
pub(super) use close::{refresh, settle, spend, void};
pub mod ready;

/// Why `should-run` says skip.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reason {
    NotRegistered,
    GoalPaused,
    GoalDone,
    GateOpen {
        gate: GateId,
        question: String,
    },
    QuotaExhausted {
        frees_at: Timestamp,
    },
    /// Parked by `quota park` until `until` (format 3).
    WaitUntil {
        until: Timestamp,
        reason: Option<String>,
    },
    /// The park ended and the goal does not resume by itself: a human's
    /// go is needed; `gate` asks for it once the agent's next tick opened it.
    AwaitingGo {
        until: Timestamp,
        gate: Option<GateId>,
    },
    NothingReady {
        detail: String,
    },
    NoChange,
    /// The agent-wide slot window is used up: the agent spent its slots
    /// across every goal (format 7, `State::agent_quota`).
    AgentQuotaExhausted {
        frees_at: Timestamp,
        slots: u32,
        window: Span,
    },
    BudgetExhausted(super::usage::Exhausted),
    /// The agent's budget is reached across goals, though no one goal's
    /// is (format 7, [`super::usage::agent_exhausted`]).
    AgentBudgetExhausted(super::usage::Standing),
    /// Advanced turns made no progress: a stall gate on the todo waits for
    /// a human (`op::progress`).
    Stalled {
        gate: GateId,
        todo: TodoId,
    },
}

impl Reason {
    pub fn code(&self) -> &'static str {
        match self {
            Reason::NotRegistered => "not-registered",
            Reason::GoalPaused => "goal-paused",
            Reason::GoalDone => "goal-done",
            Reason::GateOpen { .. } => "gate-open",
            Reason::QuotaExhausted { .. } => "quota-exhausted",
            Reason::WaitUntil { .. } => "wait-until",
            Reason::AwaitingGo { .. } => "awaiting-go",
            Reason::NothingReady { .. } => "nothing-ready",
            Reason::NoChange => "no-change",
            Reason::AgentQuotaExhausted { .. } => "agent-quota-exhausted",
            Reason::BudgetExhausted(_) | Reason::AgentBudgetExhausted(_) => "budget-exhausted",
            Reason::Stalled { .. } => "stalled",
        }
    }
}

/// Slots of one agent on one goal at one moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slots {
    pub slots: u32,
    pub used: u32,
    pub window: Span,
    /// When the oldest counted spend leaves the window.
    pub frees_at: Option<Timestamp>,
}

impl Slots {
    pub fn left(&self) -> u32 {
        self.slots.saturating_sub(self.used)
    }
}

pub fn slots(state: &State, agent: &AgentId, goal: &Goal, now: Timestamp) -> Slots {
    let counting = state
        .quota
        .get(agent)
        .map(|l| l.counting(&goal.id, goal.quota.window, now))
        .unwrap_or_default();
    Slots {
        slots: goal.quota.slots,
        used: counting.len() as u32,
        window: goal.quota.window,
        frees_at: counting.first().map(|s| s.at.plus(goal.quota.window)),
    }
}

/// The agent-wide slots of `agent` at `now` ([`State::agent_quota`]): its
/// spends on every goal inside the agent-wide window. None when there is
/// no agent-wide window (no goal in its scope and none set by the team).
pub fn agent_slots(state: &State, agent: &AgentId, now: Timestamp) -> Option<Slots> {
    let q = state.agent_quota(agent)?;
    let from = now.minus(q.window);
    let mut counting: Vec<Timestamp> = state
        .quota
        .get(agent)
        .map(|l| {
            l.spends
                .iter()
                .filter(|s| s.void.is_none() && s.at > from && s.at <= now)
                .map(|s| s.at)
                .collect()
        })
        .unwrap_or_default();
    counting.sort_unstable();
    Some(Slots {
        slots: q.slots,
        used: counting.len() as u32,
        window: q.window,
        frees_at: counting.first().map(|at| at.plus(q.window)),
    })
}

/// What `should-run` answers.
#[derive(Clone, Debug)]
pub struct Decision {
    pub skip: Option<Reason>,
    /// The todo to work on, and whether the agent already holds it.
    pub todo: Option<(TodoId, bool)>,
    /// Open gates that concern the agent.
    pub gates: Vec<GateId>,
    pub slots: Option<Slots>,
}

/// The read-only decision of DESIGN §4: run or skip, with the reason, the
/// todo (own claim first, else the best ready one), the gates that concern
/// the agent and the slots left.
pub fn decide(state: &State, agent: &AgentId, goal: &Goal, now: Timestamp) -> Decision {
    match decide_from_claims(state, agent, goal, now) {
        Ok(d) => d,
        Err(pending) => pending.finish(state, agent, goal, now),
    }
}

/// A [`decide`] that needs more than the claimed todos: the best ready
/// todo (no own claim the agent may work on), or the digest of a
/// no-change check. [`Pending::finish`] completes it on the whole state.
#[derive(Clone, Debug)]
pub struct Pending {
    d: Decision,
    /// The own claim to work on, when there is one.
    own: Option<TodoId>,
    /// The open gate on the agent's first gated claim.
    gated: Option<(GateId, String)>,
}

impl Pending {
    /// The rest of [`decide`] on the whole state (every live todo).
    pub fn finish(
        self: Box<Self>,
        state: &State,
        agent: &AgentId,
        goal: &Goal,
        now: Timestamp,
    ) -> Decision {
        let Pending { mut d, own, gated } = *self;
        let Some(a) = state.agents.get(agent) else {
            d.skip = Some(Reason::NotRegistered);
            return d;
        };
        d.todo = match own {
            Some(t) => Some((t, true)),
            None => match rules::best_ready(state, a, Some(&goal.id), now) {
                Ok(t) => Some((t.id.clone(), false)),
                Err(r) => {
                    d.skip = Some(match gated {
                        Some((gate, question)) => Reason::GateOpen { gate, question },
                        None => Reason::NothingReady { detail: r.message },
                    });
                    return d;
                }
            },
        };
        if no_change_check(state, agent, goal)
            .is_some_and(|last| last == digest(state, agent, &goal.id, now))
        {
            d.skip = Some(Reason::NoChange);
        }
        d
    }
}

impl Pending {
    /// The rest of [`decide`] from the cache's head (`state`: every
    /// claimed todo, every other entity whole) and the agent's ready list
    /// on the goal ([`ready`]): Ok with [`Pending::finish`]'s answer on the
    /// whole state, or the pending decision back when they cannot prove it
    /// (no list; a list too short to tell; nothing ready, whose reason
    /// counts every todo; a last unchanged turn whose digest the list does
    /// not hold for `now`, [`ready::Unchanged::holds_at`]).
    pub fn finish_from_ready(
        self: Box<Self>,
        state: &State,
        agent: &AgentId,
        goal: &Goal,
        now: Timestamp,
        list: Option<&ready::ReadyList>,
    ) -> Result<Decision, Box<Self>> {
        let (Some(a), Some(list)) = (state.agents.get(agent), list) else {
            return Err(self);
        };
        // Nothing ready, proven by the list's count of every todo.
        let nothing = list
            .nothing
            .as_ref()
            .filter(|n| n.holds_at(state, a, &goal.id, now));
        let todo = match (&self.own, nothing) {
            (Some(t), _) => Some((t.clone(), true)),
            (None, Some(_)) => None,
            (None, None) => {
                let Some(first) = ready::first_ready(state, list, a, now, 1) else {
                    return Err(self);
                };
                first.first().map(|t| (t.id.clone(), false))
            }
        };
        let Some(todo) = todo else {
            // Nothing ready: the open gate on a claim says why, else the
            // reasons counted on every todo, when the list holds them.
            let Pending { mut d, own, gated } = *self;
            return match (gated, nothing) {
                (Some((gate, question)), _) => {
                    d.skip = Some(Reason::GateOpen { gate, question });
                    Ok(d)
                }
                (None, Some(n)) => {
                    d.skip = Some(Reason::NothingReady {
                        detail: rules::nothing_ready(agent, &n.why),
                    });
                    Ok(d)
                }
                (None, None) => Err(Box::new(Pending {
                    d,
                    own,
                    gated: None,
                })),
            };
        };
        let same = match no_change_check(state, agent, goal) {
            None => false,
            Some(last) => match list
                .unchanged
                .as_ref()
                .and_then(|u| u.holds_at(state, agent, &goal.id, now))
            {
                Some(digest) => digest == last,
                None => return Err(self),
            },
        };
        let mut d = self.d;
        d.todo = Some(todo);
        if same {
            d.skip = Some(Reason::NoChange);
        }
        Ok(d)
    }
}

/// The digest of the agent's last turn, when it ended unchanged on `goal`
/// (then [`decide`] compares it with the [`digest`] of now).
fn no_change_check<'s>(state: &'s State, agent: &AgentId, goal: &Goal) -> Option<&'s str> {
    let last = state.agents.get(agent)?.last_turn.as_ref()?;
    (last.outcome == Outcome::Unchanged && last.goal == goal.id).then_some(last.digest.as_str())
}

/// [`decide`] as far as it goes without reading any todo that has no
/// claim: Ok with the whole answer, else what is decided so far. A state
/// whose todos are only the claimed ones (the state cache's head,
/// `crate::cache::read_claims_in`) gives the same answer as the whole
/// state: every todo read here has a claim (the agent's own claims, the
/// todo of a gate that blocks one, which is absent or unclaimed alike for
/// [`rules::gate_concerns`]).
pub fn decide_from_claims(
    state: &State,
    agent: &AgentId,
    goal: &Goal,
    now: Timestamp,
) -> Result<Decision, Box<Pending>> {
    decide_with(state, agent, goal, now, &Wide::of(state, agent, now))
}

/// What caps an agent on every goal alike, computed once for a decision
/// across its goals: the agent-wide slots and budget.
struct Wide {
    slots: Option<Slots>,
    budget: Option<super::usage::Standing>,
}

impl Wide {
    fn of(state: &State, agent: &AgentId, now: Timestamp) -> Wide {
        Wide {
            slots: agent_slots(state, agent, now),
            budget: super::usage::agent_exhausted(state, agent, now),
        }
    }
}

/// [`decide_from_claims`] with the agent-wide caps given.
fn decide_with(
    state: &State,
    agent: &AgentId,
    goal: &Goal,
    now: Timestamp,
    wide: &Wide,
) -> Result<Decision, Box<Pending>> {
    let mut d = Decision {
        skip: None,
        todo: None,
        gates: rules::gates_for(state, agent, Some(&goal.id))
            .iter()
            .map(|g| g.id.clone())
            .collect(),
        slots: None,
    };
    let Some(a) = state
        .agents
        .get(agent)
        .filter(|a| a.status == AgentStatus::Active)
    else {
        d.skip = Some(Reason::NotRegistered);
        return Ok(d);
    };
    match goal.status {
        GoalStatus::Paused => d.skip = Some(Reason::GoalPaused),
        GoalStatus::Done => d.skip = Some(Reason::GoalDone),
        GoalStatus::Active => {
            // `should-run`'s budget answer for an active goal.
            d.skip = super::usage::exhausted(state, agent, goal, now)
                .map(Reason::BudgetExhausted)
                .or_else(|| wide.budget.clone().map(Reason::AgentBudgetExhausted))
        }
    }
    if d.skip.is_some() {
        return Ok(d);
    }
    match super::park::standing(state, a, goal, now) {
        super::park::Standing::Free => {}
        super::park::Standing::Waiting { until, reason } => {
            d.skip = Some(Reason::WaitUntil { until, reason });
            return Ok(d);
        }
        // An open gate asks for the go: the gate-open answer below says so.
        super::park::Standing::NeedsGo { gate: Some(g), .. } if state.gates[&g].is_open() => {}
        super::park::Standing::NeedsGo { until, gate } => {
            d.skip = Some(Reason::AwaitingGo { until, gate });
            return Ok(d);
        }
    }
    if let Some(g) = state.gates.values().find(|g| {
        g.is_open()
            && match &g.blocks {
                Blocks::Goal => g.goal == goal.id,
                Blocks::Agent(x) => x == agent,
                Blocks::Todo(_) => false,
            }
    }) {
        d.skip = Some(Reason::GateOpen {
            gate: g.id.clone(),
            question: g.question.clone(),
        });
        return Ok(d);
    }
    if let Some((gate, todo)) = super::progress::stalled(state, agent, &goal.id) {
        d.skip = Some(Reason::Stalled { gate, todo });
        return Ok(d);
    }
    let s = slots(state, agent, goal, now);
    d.slots = Some(s);
    if s.left() == 0 {
        d.skip = Some(Reason::QuotaExhausted {
            frees_at: s.frees_at.unwrap_or(now),
        });
        return Ok(d);
    }
    // Beside the goal's window, the agent-wide one: a second goal never
    // raises what one agent spends.
    if let Some(all) = wide.slots {
        if all.left() < s.left() {
            d.slots = Some(all);
        }
        if all.left() == 0 {
            d.skip = Some(Reason::AgentQuotaExhausted {
                frees_at: all.frees_at.unwrap_or(now),
                slots: all.slots,
                window: all.window,
            });
            return Ok(d);
        }
    }
    // Own claims first; one covered by an open gate waits for its answer.
    let mut own: Vec<&crate::model::Todo> = state
        .todos
        .values()
        .filter(|t| {
            t.goal == goal.id && t.status == TodoStatus::Claimed && t.owner() == Some(agent)
        })
        .collect();
    own.sort_by(|x, y| rules::pick_order(x, y));
    let gated = own
        .iter()
        .find_map(|t| rules::gate_on(state, t, a))
        .map(|g| (g.id.clone(), g.question.clone()));
    let own = own
        .iter()
        .find(|t| rules::gate_on(state, t, a).is_none())
        .map(|t| t.id.clone());
    match own {
        Some(t) if no_change_check(state, agent, goal).is_none() => {
            d.todo = Some((t, true));
            Ok(d)
        }
        own => Err(Box::new(Pending { d, own, gated })),
    }
}

/// A hash of what concerns an agent on a goal: its claims, the todos it
/// could take, the gates on its scopes (with their status, so an answer
/// shows), and others' evidence on its todos. Equal digests mean nothing
/// that concerns the agent changed.
pub fn digest(state: &State, agent: &AgentId, goal: &GoalId, now: Timestamp) -> String {
    let mut h = Hashing(Sha256::new(), String::with_capacity(64));
    let scoped = rules::Scoped::of(state);
    let a = state.agents.get(agent);
    for (_, t) in state.todos.iter().filter(|(_, t)| &t.goal == goal) {
        h.1.clear();
        todo_lines(&mut h.1, state, agent, a, t, now, &scoped);
        h.0.update(h.1.as_bytes());
    }
    for g in state.gates.values() {
        if &g.goal == goal && rules::gate_concerns(state, g, agent, Some(goal)) {
            line(
                &mut h,
                format_args!("gate {} {}\n", g.id, g.status.as_str()),
            );
        }
    }
    crate::model::id::hex(&h.0.finalize()[..8])
}

/// The lines todo `t` (of the digest's goal) adds to `agent`'s [`digest`]
/// at `now`, appended to `out`: none, or its claim (and others' evidence
/// on it) when the agent holds it, or its ready line when it is ready for
/// the agent. The digest hashes them todo by todo, in id order.
fn todo_lines(
    out: &mut String,
    state: &State,
    agent: &AgentId,
    a: Option<&crate::model::Agent>,
    t: &crate::model::Todo,
    now: Timestamp,
    scoped: &rules::Scoped,
) {
    use std::fmt::Write;
    if t.owner() == Some(agent) {
        let _ = writeln!(out, "claim {} {} {}", t.id, t.epoch, t.status);
        if let Some(e) = t
            .last_evidence
            .as_ref()
            .filter(|e| e.by.agent() != Some(agent))
        {
            let _ = writeln!(out, "evidence {} {}", t.id, e.id);
        }
    } else if a.is_some_and(|a| rules::ready_with(state, t, a, now, scoped).is_ok()) {
        let _ = writeln!(out, "ready {} {}", t.id, t.updated_at);
    }
}

/// The lines one todo adds to the [`digest`], as a string: what a tick
/// or a reader of the ready index compares to tell that the todo's part
/// of the digest did not move (`ready::Unchanged`).
pub fn digest_part(
    state: &State,
    agent: &AgentId,
    t: &crate::model::Todo,
    now: Timestamp,
    scoped: &rules::Scoped,
) -> String {
    let mut out = String::new();
    todo_lines(
        &mut out,
        state,
        agent,
        state.agents.get(agent),
        t,
        now,
        scoped,
    );
    out
}

/// A hash fed line by line through one reused buffer, not a `String` per
/// line (the digest writes a line for each of up to 10,000 todos): the
/// same bytes as hashing each line's `format!`.
struct Hashing(Sha256, String);

fn line(h: &mut Hashing, args: std::fmt::Arguments<'_>) {
    h.1.clear();
    std::fmt::Write::write_fmt(&mut h.1, args).expect("a String takes any text");
    h.0.update(h.1.as_bytes());
}

/// A new turn token: a stable turn id from the agent, the goal, the state's
/// tip (its commit id) and the time, so two should-runs a tick apart differ and a repeated
/// poll of the same state at the same instant does not.
pub fn new_token(agent: &AgentId, goal: &GoalId, tip: &str, now: Timestamp) -> TurnToken {
    let digest = Sha256::new()
        .chain_update(agent.as_str())
        .chain_update([0])
        .chain_update(goal.as_str())
        .chain_update([0])
        .chain_update(tip)
        .chain_update(now.unix().to_le_bytes())
        .finalize();
    TurnToken {
        goal: goal.clone(),
        agent: agent.clone(),
        turn: crate::model::id::hex(&digest[..8]),
        issued: now,
    }
}

/// The sentence that explains a skip, as `should-run` and the hooks say it.
pub fn reason_message(r: &Reason, agent: &AgentId, goal: &GoalId) -> String {
    match r {
        Reason::NotRegistered => format!("agent {agent} is not registered or is retired"),
        Reason::GoalPaused => format!("goal {goal} is paused"),
        Reason::GoalDone => format!("goal {goal} is done"),
        Reason::GateOpen { gate, question } => format!("gate {gate} is open: \"{question}\""),
        Reason::QuotaExhausted { frees_at } => {
            format!("all slots are used; the next frees at {frees_at}")
        }
        Reason::WaitUntil { until, reason } => match reason {
            Some(r) => format!("parked until {until}: {r}"),
            None => format!("parked until {until}"),
        },
        Reason::AwaitingGo { until, gate: None } => format!(
            "parked until {until}, and goal {goal} does not resume by itself: your next refresh-state opens a gate that asks a human for the go"
        ),
        Reason::AwaitingGo {
            until,
            gate: Some(g),
        } => format!(
            "parked until {until}; gate {g} was answered without a go: it runs again once a human resumes {agent}"
        ),
        Reason::NothingReady { detail } => detail.clone(),
        Reason::BudgetExhausted(e) => super::usage::exhausted_message(goal, e),
        Reason::AgentBudgetExhausted(st) => super::usage::agent_exhausted_message(agent, st),
        Reason::NoChange => {
            "your last turn ended unchanged and nothing that concerns you has changed since"
                .to_owned()
        }
        Reason::Stalled { gate, todo } => super::progress::message(gate, todo),
        Reason::AgentQuotaExhausted {
            frees_at,
            slots,
            window,
        } => format!(
            "all {slots} agent-wide slots per {window} are used, across every goal; the next frees at {frees_at}"
        ),
    }
}

/// [`decide`] over the goals an agent may work on (`goals`, its
/// [`State::scope`], not empty): the goal of the pick and its decision.
/// The pick follows `claim --next`: an own claim first (in
/// [`rules::pick_order`]), else the todo [`rules::best_ready_among`]
/// picks across the goals where the agent may run; a goal whose answer is
/// a skip is passed over. When no goal runs, the skip that says most
/// ([`skip_rank`]) answers, the first goal's among equals.
pub fn decide_across<'s>(
    state: &State,
    agent: &AgentId,
    goals: &[&'s Goal],
    now: Timestamp,
) -> (&'s Goal, Decision) {
    if let [one] = goals {
        return (one, decide(state, agent, one, now));
    }
    let wide = Wide::of(state, agent, now);
    let firsts: Vec<Result<Decision, Box<Pending>>> = goals
        .iter()
        .map(|g| decide_with(state, agent, g, now, &wide))
        .collect();
    let Some(a) = state.agents.get(agent) else {
        return (goals[0], decide(state, agent, goals[0], now));
    };
    // An own claim first, in pick order.
    let own = |i: usize| -> Option<&crate::model::Todo> {
        let id = match &firsts[i] {
            Ok(d) if d.skip.is_none() => d.todo.as_ref().map(|(t, _)| t),
            Err(p) => p.own.as_ref(),
            Ok(_) => None,
        }?;
        state.todos.get(id)
    };
    let mut owners: Vec<usize> = (0..goals.len()).filter(|i| own(*i).is_some()).collect();
    owners
        .sort_by(|x, y| rules::pick_order(own(*x).expect("filtered"), own(*y).expect("filtered")));
    let mut skips: Vec<(usize, Decision)> = Vec::new();
    let mut runs: Vec<(usize, Decision)> = Vec::new();
    let mut pending: Vec<(usize, Box<Pending>)> = Vec::new();
    for (i, r) in firsts.into_iter().enumerate() {
        match r {
            Ok(d) if d.skip.is_some() => skips.push((i, d)),
            Ok(d) => runs.push((i, d)),
            Err(p) => pending.push((i, p)),
        }
    }
    // Own claims in pick order (a pending one waits on its no-change
    // check), then the goal of the best ready todo among the rest, again
    // while one's answer is a skip (its last turn ended unchanged).
    for i in owners {
        if let Some(k) = runs.iter().position(|(j, _)| *j == i) {
            let (i, d) = runs.swap_remove(k);
            return (goals[i], d);
        }
        if let Some(k) = pending.iter().position(|(j, _)| *j == i) {
            let (i, p) = pending.remove(k);
            let d = p.finish(state, agent, goals[i], now);
            if d.skip.is_none() {
                return (goals[i], d);
            }
            skips.push((i, d));
        }
    }
    while !pending.is_empty() {
        let ids: Vec<&GoalId> = pending.iter().map(|(i, _)| &goals[*i].id).collect();
        let best = match rules::best_ready_among(state, a, Some(&ids), now) {
            Ok(t) => t.goal.clone(),
            Err(r) => {
                // Nothing ready on any of them: one sentence for all.
                for (i, p) in pending.drain(..) {
                    let Pending { mut d, gated, .. } = *p;
                    d.skip = Some(match gated {
                        Some((gate, question)) => Reason::GateOpen { gate, question },
                        None => Reason::NothingReady {
                            detail: r.message.clone(),
                        },
                    });
                    skips.push((i, d));
                }
                break;
            }
        };
        let k = pending
            .iter()
            .position(|(i, _)| goals[*i].id == best)
            .expect("the pick is on one of the goals");
        let (i, p) = pending.remove(k);
        let d = p.finish(state, agent, goals[i], now);
        if d.skip.is_none() {
            return (goals[i], d);
        }
        skips.push((i, d));
    }
    let (i, d) = skips
        .into_iter()
        .min_by_key(|(i, d)| (d.skip.as_ref().map_or(0, skip_rank), *i))
        .expect("every goal answered");
    (goals[i], d)
}

/// [`decide_across`] from the cache's head (every claimed todo, every
/// other entity whole), when it proves the answer: an own claim the agent
/// works on (and no goal whose own claim waits on a no-change check), or
/// a skip on every goal. None: decide on the whole state.
pub fn decide_across_from_claims<'s>(
    state: &State,
    agent: &AgentId,
    goals: &[&'s Goal],
    now: Timestamp,
) -> Option<(&'s Goal, Decision)> {
    let wide = Wide::of(state, agent, now);
    let firsts: Vec<Result<Decision, Box<Pending>>> = goals
        .iter()
        .map(|g| decide_with(state, agent, g, now, &wide))
        .collect();
    from_firsts(state, goals, firsts).ok()
}

/// Each goal's first decision ([`decide_from_claims`]).
type Firsts = Vec<Result<Decision, Box<Pending>>>;

/// [`decide_across_from_claims`] from each goal's first decision: the
/// answer, or the decisions back when they do not prove it.
fn from_firsts<'s>(
    state: &State,
    goals: &[&'s Goal],
    firsts: Firsts,
) -> Result<(&'s Goal, Decision), Firsts> {
    if firsts
        .iter()
        .any(|r| matches!(r, Err(p) if p.own.is_some()))
    {
        return Err(firsts);
    }
    let run = firsts
        .iter()
        .enumerate()
        .filter_map(|(i, r)| match r {
            Ok(d) if d.skip.is_none() => {
                let (t, _) = d.todo.as_ref()?;
                Some((i, state.todos.get(t)?))
            }
            _ => None,
        })
        .min_by(|(_, x), (_, y)| rules::pick_order(x, y))
        .map(|(i, _)| i);
    if let Some(i) = run {
        let Some(Ok(d)) = firsts.into_iter().nth(i) else {
            unreachable!("the run was found among them");
        };
        return Ok((goals[i], d));
    }
    if firsts.iter().any(Result::is_err) {
        return Err(firsts);
    }
    let (i, d) = firsts
        .into_iter()
        .enumerate()
        .filter_map(|(i, r)| r.ok().map(|d| (i, d)))
        .min_by_key(|(i, d)| (d.skip.as_ref().map_or(0, skip_rank), *i))
        .expect("every goal answered");
    Ok((goals[i], d))
}

/// The agent's ready lists on some goals, by goal, from one read of the
/// ready index (None: it cannot give them all).
pub type ListsOf<'a> =
    dyn Fn(&[&GoalId]) -> Option<std::collections::BTreeMap<GoalId, ready::ReadyList>> + 'a;

/// [`decide_across`] from the cache's head and the agent's ready list on
/// each goal still open after [`decide_across_from_claims`] (`lists_of`,
/// every list from one read of the index),
/// as `claim --next` picks from them ([`ready::best_of`]): the goal, the
/// decision, and the todo it names when the head lacks it (unclaimed: from
/// its list). None when the lists cannot prove the whole state's answer.
pub fn decide_across_from_ready<'s>(
    state: &State,
    agent: &AgentId,
    goals: &[&'s Goal],
    now: Timestamp,
    lists_of: &ListsOf<'_>,
) -> Option<(&'s Goal, Decision, Option<crate::model::Todo>)> {
    let wide = Wide::of(state, agent, now);
    let firsts: Firsts = goals
        .iter()
        .map(|g| decide_with(state, agent, g, now, &wide))
        .collect();
    let firsts = match from_firsts(state, goals, firsts) {
        Ok((g, d)) => return Some((g, d, None)),
        Err(f) => f,
    };
    let a = state.agents.get(agent)?;
    let mut skips: Vec<(usize, Decision)> = Vec::new();
    let mut pending: Vec<(usize, Box<Pending>)> = Vec::new();
    for (i, r) in firsts.into_iter().enumerate() {
        match r {
            Ok(d) if d.skip.is_some() => skips.push((i, d)),
            // An own claim, or one waiting on its no-change check:
            // from_firsts answered or could not.
            Ok(_) => return None,
            Err(p) if p.own.is_some() => return None,
            Err(p) => pending.push((i, p)),
        }
    }
    let ids: Vec<&GoalId> = pending.iter().map(|(i, _)| &goals[*i].id).collect();
    let mut by_goal = lists_of(&ids)?;
    let mut lists: Vec<ready::ReadyList> = ids
        .iter()
        .map(|g| by_goal.remove(*g))
        .collect::<Option<_>>()?;
    while !pending.is_empty() {
        let Some(best) = ready::best_of(state, &lists, a, now) else {
            break;
        };
        let k = pending
            .iter()
            .position(|(i, _)| goals[*i].id == best.goal)?;
        let todo = best.clone();
        let (i, p) = pending.remove(k);
        let list = lists.remove(k);
        let d = p
            .finish_from_ready(state, agent, goals[i], now, Some(&list))
            .ok()?;
        if d.skip.is_none() {
            let shown = (!state.todos.contains_key(&todo.id)).then_some(todo);
            return Some((goals[i], d, shown));
        }
        skips.push((i, d));
    }
    // Nothing ready on the rest: one sentence for all, from the counts
    // each list holds (what `best_ready_among` counts on the whole state).
    let mut why: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    let mut rest = Vec::new();
    for ((i, p), list) in pending.into_iter().zip(&lists) {
        let n = list
            .nothing
            .as_ref()
            .filter(|n| n.holds_at(state, a, &goals[i].id, now))?;
        for (k, v) in &n.why {
            *why.entry(k.clone()).or_default() += v;
        }
        rest.push((i, p));
    }
    for (i, p) in rest {
        let Pending { mut d, gated, .. } = *p;
        d.skip = Some(match gated {
            Some((gate, question)) => Reason::GateOpen { gate, question },
            None => Reason::NothingReady {
                detail: rules::nothing_ready(agent, &why),
            },
        });
        skips.push((i, d));
    }
    let (i, d) = skips
        .into_iter()
        .min_by_key(|(i, d)| (d.skip.as_ref().map_or(0, skip_rank), *i))?;
    Some((goals[i], d, None))
}

/// Which skip answers when no goal runs: the lowest rank. What stops the
/// agent everywhere or says when it may run again comes before a goal
/// with nothing to do.
pub fn skip_rank(r: &Reason) -> u8 {
    match r {
        Reason::NotRegistered => 0,
        Reason::WaitUntil { .. } | Reason::AwaitingGo { .. } => 1,
        Reason::AgentQuotaExhausted { .. } => 2,
        Reason::AgentBudgetExhausted(_) => 2,
        Reason::Stalled { .. } | Reason::GateOpen { .. } | Reason::BudgetExhausted(_) => 3,
        Reason::QuotaExhausted { .. } => 4,
        Reason::NoChange => 5,
        Reason::NothingReady { .. } => 6,
        Reason::GoalPaused | Reason::GoalDone => 7,
    }
}

#[cfg(test)]
mod tests;
