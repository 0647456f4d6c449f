//! The brief an agent's next turn should see, printed by `refresh-state`
//! and `settle`: the objective, gates, its claims, the next ready todos,
//! others' evidence since its last turn, and quota. Bounded: a few items per
//! list and short titles, so it stays under 1 KB on a large board.

use serde::Serialize;

use super::{rules, short, turn};
use crate::model::usage::{Usd, human_count};
use crate::model::{AgentId, GateId, Goal, State, Todo, TodoId, TodoStatus};
use crate::time::Timestamp;

const CLAIMS: usize = 5;
const READY: usize = 3;
const EVIDENCE: usize = 3;
const GATES: usize = 5;

#[derive(Serialize, Debug)]
pub struct Brief {
    pub goal: GoalRef,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gates: Vec<GateLine>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<TodoLine>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ready: Vec<TodoLine>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<EvidenceLine>,
    pub slots_left: u32,
    pub slots: u32,
    pub window: String,
    /// What is left of the goal's budget and the agent's, where set.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub budget: Vec<BudgetLine>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_action: Option<String>,
}

/// What is left of one budget: `goal` or `agent:<id>`.
#[derive(Serialize, Debug)]
pub struct BudgetLine {
    pub scope: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usd_left: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usd: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_left: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    pub window: String,
    /// Turns in the window no price covered: `usd_left` does not count
    /// them.
    #[serde(skip_serializing_if = "is_zero")]
    pub unpriced_turns: u64,
    /// `plus 2 turns unpriced (model …)`, for the screen.
    #[serde(skip)]
    unpriced: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl BudgetLine {
    pub fn of(st: &super::usage::Standing) -> Self {
        let b = &st.budget;
        BudgetLine {
            scope: st.scope.blocks().to_string(),
            usd_left: b
                .usd
                .map(|u| Usd(u.0.saturating_sub(st.spent.usd.0)).dollars()),
            usd: b.usd.map(Usd::dollars),
            tokens_left: b.tokens.map(|t| t.saturating_sub(st.spent.tokens)),
            tokens: b.tokens,
            window: b.window.to_string(),
            unpriced_turns: st.spent.unpriced,
            unpriced: st.spent.unpriced_note(),
        }
    }

    /// `goal: $0.90 of $5.00, 758k of 1M tokens left per 1d`.
    pub fn human(&self) -> String {
        let mut parts = Vec::new();
        if let (Some(l), Some(u)) = (self.usd_left, self.usd) {
            let d = |x: f64| Usd::from_dollars(x).unwrap_or_default();
            parts.push(format!("{} of {}", d(l), d(u)));
        }
        if let (Some(l), Some(t)) = (self.tokens_left, self.tokens) {
            parts.push(format!("{} of {} tokens", human_count(l), human_count(t)));
        }
        let mut line = format!(
            "{}: {} left per {}",
            self.scope,
            parts.join(", "),
            self.window
        );
        if let Some(n) = &self.unpriced {
            line.push_str(&format!(", {n}, which it does not count"));
        }
        line
    }
}

#[derive(Serialize, Debug)]
pub struct GoalRef {
    pub id: String,
    pub objective: String,
}

#[derive(Serialize, Debug)]
pub struct GateLine {
    pub id: GateId,
    pub status: &'static str,
    pub question: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub choice: Option<String>,
}

#[derive(Serialize, Debug)]
pub struct TodoLine {
    pub id: TodoId,
    pub title: String,
    pub priority: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_left: Option<String>,
}

#[derive(Serialize, Debug)]
pub struct EvidenceLine {
    pub todo: TodoId,
    pub id: String,
    pub by: String,
    pub passed: bool,
}

/// Keeps the first `n` of `todos` in the order `todo claim --next` picks
/// for `agent` (priority, then the agent's spread rank, then id). Only todos as urgent as the `n`-th most
/// urgent are ranked, each hashed once: at 10,000 ready todos a full sort
/// by a hashed key hashed some 280,000 times.
fn first_in_pick_order(todos: &mut Vec<&Todo>, agent: &AgentId, n: usize) {
    if n == 0 || todos.is_empty() {
        todos.clear();
        return;
    }
    let mut priorities: Vec<_> = todos.iter().map(|t| t.priority).collect();
    let last = n.min(priorities.len()) - 1;
    let (_, cut, _) = priorities.select_nth_unstable(last);
    let cut = *cut;
    let mut keyed: Vec<_> = todos
        .iter()
        .filter(|t| t.priority <= cut)
        .map(|t| {
            let key = (
                t.priority,
                std::cmp::Reverse(rules::spread_rank(agent, &t.id)),
            );
            (key, *t)
        })
        .collect();
    keyed.sort_unstable_by(|(a, x), (b, y)| (a, &x.id).cmp(&(b, &y.id)));
    keyed.truncate(n);
    *todos = keyed.into_iter().map(|(_, t)| t).collect();
}

/// Builds the brief; `since` is the end of the agent's previous turn.
/// `ready`, the agent's list on the goal from the ready index at this
/// state (`turn::ready`), spares ranking every todo when it shows enough.
pub fn build(
    state: &State,
    agent: &AgentId,
    goal: &Goal,
    now: Timestamp,
    since: Option<Timestamp>,
    ready: Option<&turn::ready::ReadyList>,
) -> Brief {
    // Open gates that concern the agent, and those answered since its last
    // turn.
    let gates = state
        .gates
        .values()
        .filter(|g| g.goal == goal.id && rules::gate_concerns(state, g, agent, Some(&goal.id)))
        .filter(|g| {
            g.is_open()
                || g.answer
                    .as_ref()
                    .is_some_and(|a| since.is_none_or(|s| a.at > s))
        })
        .take(GATES)
        .map(|g| GateLine {
            id: g.id.clone(),
            status: g.status.as_str(),
            question: short(&g.question),
            choice: g.answer.as_ref().map(|a| a.choice.clone()),
        })
        .collect();
    let mut claims: Vec<_> = state
        .todos
        .iter()
        .map(|(_, t)| t)
        .filter(|t| {
            t.goal == goal.id && t.status == TodoStatus::Claimed && t.owner() == Some(agent)
        })
        .collect();
    claims.sort_by(|a, b| rules::pick_order(a, b));
    let claims = claims
        .into_iter()
        .take(CLAIMS)
        .map(|t| TodoLine {
            id: t.id.clone(),
            title: short(&t.title),
            priority: t.priority.to_string(),
            lease_left: t.claim.as_ref().map(|c| {
                if c.lease_until > now {
                    c.lease_until.since(now).to_string()
                } else {
                    "expired".to_owned()
                }
            }),
        })
        .collect();
    let scoped = rules::Scoped::of(state);
    // The first ready todos: from the agent's ready list when it shows
    // enough, else ranked from every todo.
    let shown: Vec<&Todo> = match state.agents.get(agent) {
        Some(a) => match ready.and_then(|l| turn::ready::first_ready(state, l, a, now, READY)) {
            Some(r) => r,
            None => {
                let mut r: Vec<_> = state
                    .todos
                    .iter()
                    .map(|(_, t)| t)
                    .filter(|t| {
                        t.goal == goal.id && rules::ready_with(state, t, a, now, &scoped).is_ok()
                    })
                    .collect();
                first_in_pick_order(&mut r, agent, READY);
                r
            }
        },
        None => Vec::new(),
    };
    let ready = shown
        .into_iter()
        .take(READY)
        .map(|t| TodoLine {
            id: t.id.clone(),
            title: short(&t.title),
            priority: t.priority.to_string(),
            lease_left: None,
        })
        .collect();
    let evidence = state
        .todos
        .iter()
        .map(|(_, t)| t)
        .filter(|t| t.goal == goal.id && t.owner() == Some(agent))
        .filter_map(|t| {
            let e = t.last_evidence.as_ref()?;
            (e.by.agent() != Some(agent) && since.is_none_or(|s| e.at > s)).then(|| EvidenceLine {
                todo: t.id.clone(),
                id: e.id.to_string(),
                by: e.by.name().to_owned(),
                passed: e.passed,
            })
        })
        .take(EVIDENCE)
        .collect();
    let s = turn::slots(state, agent, goal, now);
    Brief {
        goal: GoalRef {
            id: goal.id.to_string(),
            objective: goal.objective.clone(),
        },
        gates,
        claims,
        ready,
        evidence,
        slots_left: s.left(),
        slots: s.slots,
        window: s.window.to_string(),
        budget: super::usage::standings(state, goal, Some(agent), now)
            .iter()
            .map(BudgetLine::of)
            .collect(),
        next_action: state
            .agents
            .get(agent)
            .and_then(|a| a.last_turn.as_ref())
            .and_then(|t| t.next_action.clone()),
    }
}

/// [`build`] from the state cache's head (`state`: every claimed todo,
/// every other entity whole) and the agent's ready list on the goal: None
/// when the list cannot show the first ready todos (then only the whole
/// state can).
pub fn from_ready(
    state: &State,
    agent: &AgentId,
    goal: &Goal,
    now: Timestamp,
    since: Option<Timestamp>,
    list: &turn::ready::ReadyList,
) -> Option<Brief> {
    if let Some(a) = state.agents.get(agent) {
        turn::ready::first_ready(state, list, a, now, READY)?;
    }
    Some(build(state, agent, goal, now, since, Some(list)))
}

impl Brief {
    pub fn human(&self) -> String {
        let mut s = format!("goal {}: {}\n", self.goal.id, self.goal.objective);
        for g in &self.gates {
            match &g.choice {
                Some(c) => s.push_str(&format!("gate {} answered {c}: \"{}\"\n", g.id, g.question)),
                None => s.push_str(&format!("gate {} {}: \"{}\"\n", g.id, g.status, g.question)),
            }
        }
        for c in &self.claims {
            let left = c.lease_left.as_deref().unwrap_or("-");
            s.push_str(&format!(
                "yours: {} {} \"{}\" ({left} left)\n",
                c.id, c.priority, c.title
            ));
        }
        for r in &self.ready {
            s.push_str(&format!("ready: {} {} \"{}\"\n", r.id, r.priority, r.title));
        }
        for e in &self.evidence {
            let verdict = if e.passed { "passed" } else { "failed" };
            s.push_str(&format!(
                "evidence: {} on {} by {} {verdict}\n",
                e.id, e.todo, e.by
            ));
        }
        if let Some(n) = &self.next_action {
            s.push_str(&format!("next action: {n}\n"));
        }
        s.push_str(&format!(
            "quota: {} of {} slots left per {}\n",
            self.slots_left, self.slots, self.window
        ));
        for b in &self.budget {
            s.push_str(&format!("budget {}\n", b.human()));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::{READY, build};
    use crate::op::TodoAdd;

    /// The order `todo claim --next` picks in, by a full sort: what the
    /// brief's ready list and `best_ready` must agree with.
    fn naive<'s>(state: &'s State, agent: &AgentId, now: Timestamp) -> Vec<&'s Todo> {
        let a = &state.agents[agent];
        let mut r: Vec<&Todo> = state
            .todos
            .values()
            .filter(|t| rules::ready(state, t, a, now).is_ok())
            .collect();
        r.sort_by_key(|t| {
            (
                t.priority,
                std::cmp::Reverse(rules::spread_rank(agent, &t.id)),
                t.id.clone(),
            )
        });
        r
    }

    #[test]
    fn the_ready_list_and_claim_next_pick_in_the_full_sort_order() {
        let now = t("2026-01-01T10:00:00Z");
        for size in [0usize, 1, 2, 3, 4, 7, 40] {
            let mut s = board();
            // T1 is claimed by agent-b: never ready for agent-a.
            ok(
                &mut s,
                &op(
                    agent("agent-b"),
                    "2026-01-01T09:30:00Z",
                    claim(T1, 0, Span::hours(2)),
                ),
            );
            for i in 0..size {
                let priority: Priority = format!("P{}", (i * 7) % 3 + usize::from(size > 5))
                    .parse()
                    .unwrap();
                let change = Change::TodoAdd(TodoAdd::new(
                    tid(&format!("{:08x}", 0x1000 + i * 37)),
                    gid("main"),
                    format!("todo {i}"),
                    priority,
                ));
                ok(&mut s, &op(human(), "2026-01-01T09:40:00Z", change));
            }
            for who in ["agent-a", "agent-b"] {
                let id = aid(who);
                let want = naive(&s, &id, now);
                let brief = build(&s, &id, &s.goals[&gid("main")], now, None, None);
                let got: Vec<TodoId> = brief.ready.iter().map(|l| l.id.clone()).collect();
                let first: Vec<TodoId> = want.iter().take(READY).map(|t| t.id.clone()).collect();
                assert_eq!(got, first, "{size} todos, {who}");
                let picked = rules::best_ready(&s, &s.agents[&id], None, now).ok();
                assert_eq!(
                    picked.map(|t| &t.id),
                    want.first().map(|t| &t.id),
                    "{size} todos, {who}"
                );
            }
        }
    }
}
