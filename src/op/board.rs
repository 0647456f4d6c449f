//! The operator's board: one derivation, from a `State`, a time and the
//! last ticks, of what waits on a human, who holds what, what is ready,
//! waiting, blocked, deferred or done lately, per goal and per agent.
//! `status`, `status --json` and `status --html` all render this value,
//! so they cannot disagree. Pure: no git, no I/O.

use crate::model::{Agent, AgentId, AgentStatus, Gate, Goal, GoalStatus, State, Todo, TodoStatus};
use crate::op::{Change, EvidenceAdd, Settle, TodoDone, rules, turn};
use crate::time::{Span, Timestamp};

/// How far back "done recently" reaches.
pub const RECENT_DONE: Span = Span::hours(24);

/// One tick of the history, as the caller read it (newest first).
#[derive(Debug, Clone)]
pub struct TickLine {
    pub tick: u64,
    pub at: Timestamp,
    /// The acting agent or human.
    pub actor: String,
    /// The op kind (`todo.claim`), or what stands in for it.
    pub kind: String,
    /// The first line of the message.
    pub subject: String,
    /// A check ran in this tick and failed (a validation or `evidence run`).
    pub failed: bool,
    /// For a human act: "signed by NAME (SHA256:…)" or "unsigned".
    pub signature: Option<String>,
}

/// Where a todo stands on the board.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Column {
    Claimed,
    /// Open, its dependencies done, and some active agent may claim it.
    Ready,
    /// Open and its dependencies done, but no active agent may claim it
    /// now (a gate, a capability, the goal's status).
    Open,
    /// Open, waiting on a dependency.
    Waiting,
    Blocked,
    Deferred,
    Done,
}

impl Column {
    pub const ALL: [Column; 7] = [
        Column::Claimed,
        Column::Ready,
        Column::Open,
        Column::Waiting,
        Column::Blocked,
        Column::Deferred,
        Column::Done,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Column::Claimed => "claimed",
            Column::Ready => "ready",
            Column::Open => "open",
            Column::Waiting => "waiting",
            Column::Blocked => "blocked",
            Column::Deferred => "deferred",
            Column::Done => "done",
        }
    }
}

/// One todo on the board.
#[derive(Debug)]
pub struct Card<'s> {
    pub todo: &'s Todo,
    pub column: Column,
    /// Some active agent may claim it now.
    pub ready: bool,
    /// Its claim's lease has run out (judged with the clock skew).
    pub expired: bool,
    /// Dependencies not done yet.
    pub pending: Vec<&'s Todo>,
    /// The open gates that hold it: on the todo itself, on its whole goal,
    /// or on the agent that holds its claim (a gate on an agent holds only
    /// that agent). None for a done todo.
    pub gates: Vec<&'s Gate>,
    /// Why no active agent may claim it, for an open todo that is not
    /// ready: the first active agent's reason (None when there is no
    /// active agent, or it is not open).
    pub why: Option<rules::NotReady>,
}

impl Card<'_> {
    /// What holds it back and what would free it, in a few words, for a
    /// todo that is stuck: blocked (its newest note), an expired lease, a
    /// gate, or an open todo nobody may take. None when it is not stuck.
    pub fn stuck(&self) -> Option<String> {
        let t = self.todo;
        if self.expired
            && let Some(c) = &t.claim
        {
            return Some(format!(
                "{}'s lease expired at {}: the owner renews it, or another agent claims it (loopx todo claim {})",
                c.owner, c.lease_until, t.id
            ));
        }
        match self.column {
            Column::Blocked => Some(match t.notes.last() {
                Some(n) => format!("blocked: {}", n.text),
                None => "blocked, with no note saying why".to_owned(),
            }),
            // The gate's question is the gate's to show, once.
            Column::Open | Column::Waiting | Column::Ready if !self.gates.is_empty() => {
                let g = self.gates[0];
                Some(format!("held by gate {} ({})", g.id, held_by(g)))
            }
            Column::Open => Some(match &self.why {
                Some(why) => format!("no agent may take it: {why}"),
                None => "no active agent may take it".to_owned(),
            }),
            _ => None,
        }
    }
}

/// What a gate holds, in a word, as cards and stuck rows say it: `todo`,
/// `goal` or `agent` (the CLI's `todo:…`, `goal`, `agent:…`).
pub fn held_by(g: &Gate) -> &'static str {
    match g.blocks {
        crate::model::Blocks::Todo(_) => "todo",
        crate::model::Blocks::Goal => "goal",
        crate::model::Blocks::Agent(_) => "agent",
    }
}

/// A goal and its todos, by column.
#[derive(Debug)]
pub struct GoalBoard<'s> {
    pub goal: &'s Goal,
    /// Every live todo of the goal, ordered by column, priority, id; done
    /// todos only when done within [`RECENT_DONE`].
    pub cards: Vec<Card<'s>>,
    pub counts: Counts,
}

/// How many todos stand where. `open`, `waiting`, `claimed`, `blocked`,
/// `deferred` and `done` are disjoint (each live todo once); `ready`
/// overlaps them (an open todo an agent may claim now, or a claimed one
/// whose lease ran out: `reclaimable`), and `held` is the part of `open`
/// that no active agent may claim now. [`Counts::ready_open`] is the rest.
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Counts {
    pub ready: usize,
    pub open: usize,
    pub waiting: usize,
    pub claimed: usize,
    pub blocked: usize,
    pub deferred: usize,
    pub done: usize,
    /// Open todos whose `after` todos are done but that no active agent may
    /// claim now (a gate, a capability, the goal's status); part of `open`.
    #[serde(default)]
    pub held: usize,
    /// Claimed todos whose lease ran out and that an agent may take; part
    /// of `claimed` and of `ready`.
    #[serde(default)]
    pub reclaimable: usize,
}

impl Counts {
    /// Open todos an active agent may claim now: `ready` without the
    /// claims that ran out.
    pub fn ready_open(&self) -> usize {
        self.ready.saturating_sub(self.reclaimable)
    }
}

/// A claim, live or expired.
#[derive(Debug)]
pub struct ClaimLine<'s> {
    pub todo: &'s Todo,
    pub owner: &'s AgentId,
    pub lease_until: Timestamp,
    pub expired: bool,
}

/// The slots an agent used on a goal in its window.
#[derive(Debug)]
pub struct QuotaLine<'s> {
    pub agent: &'s AgentId,
    pub goal: &'s Goal,
    pub slots: turn::Slots,
}

/// One active agent.
#[derive(Debug)]
pub struct AgentLine<'s> {
    pub agent: &'s Agent,
    /// The todos it holds a claim on.
    pub holds: Vec<&'s Todo>,
    /// Its newest tick among those given to [`derive()`].
    pub last_tick: Option<&'s TickLine>,
    /// When it was last heard from: its newest tick given, its last turn,
    /// its last validated writeback, else its registration.
    pub last_seen: Timestamp,
    /// Active, not parked, and not heard from for [`QUIET_AFTER`].
    pub quiet: bool,
}

/// An active agent not heard from for this long is flagged quiet (as
/// `digest` does).
pub const QUIET_AFTER: Span = Span::hours(1);
/// How long an agent a runtime session registered may go without a claim,
/// a turn or a tick before the views list it as idle.
pub const SESSION_IDLE: crate::time::Span = crate::time::Span::hours(1);

impl AgentLine<'_> {
    /// An agent a runtime's session registered (`<runtime>-<8 hex digits>`,
    /// as the hooks derive it) that holds no claim and has had no turn,
    /// writeback or tick for [`SESSION_IDLE`]: a session that ended, most
    /// likely. The views list these apart from the agents that matter.
    pub fn idle_session(&self, now: Timestamp) -> bool {
        let id = self.agent.id.as_str();
        let derived = crate::model::Runtime::HOOKED.iter().any(|r| {
            id.strip_prefix(r.as_str())
                .and_then(|rest| rest.strip_prefix('-'))
                .is_some_and(|h| h.len() == 8 && h.bytes().all(|b| b.is_ascii_hexdigit()))
        });
        let last = [
            Some(self.agent.registered_at),
            self.agent.last_writeback,
            self.agent.last_turn.as_ref().map(|t| t.at),
            self.last_tick.map(|t| t.at),
        ]
        .into_iter()
        .flatten()
        .max();
        derived && self.holds.is_empty() && last.is_none_or(|at| now.since(at) >= SESSION_IDLE)
    }
}

/// Everything the operator's views show.
#[derive(Debug)]
pub struct Board<'s> {
    pub now: Timestamp,
    /// Open gates, those waiting on a human first, then oldest first.
    pub gates: Vec<&'s Gate>,
    pub goals: Vec<GoalBoard<'s>>,
    /// Active agents, by id.
    pub agents: Vec<AgentLine<'s>>,
    pub counts: Counts,
    /// Every claim, by owner and lease end.
    pub claims: Vec<ClaimLine<'s>>,
    /// Slots per active agent on each active goal.
    pub quota: Vec<QuotaLine<'s>>,
    /// Each active goal's budgets (the goal's, then its agents'), with what
    /// was spent against them.
    pub budgets: Vec<(&'s crate::model::GoalId, super::usage::Standing)>,
    /// The ticks given, newest first.
    pub ticks: &'s [TickLine],
}

/// What a tick's op ran and saw fail: a validation or an `evidence run`.
pub fn failed_check(change: &Change) -> bool {
    match change {
        Change::EvidenceAdd(EvidenceAdd { run: Some(r), .. }) => !r.passed(),
        Change::TodoDone(TodoDone {
            validation: Some(r),
            ..
        }) => !r.passed(),
        Change::Settle(Settle { steps, .. }) => steps.iter().any(failed_check),
        _ => false,
    }
}

/// A todo's column and whether some active agent may take it now.
fn place(
    state: &State,
    t: &Todo,
    active: &[&Agent],
    now: Timestamp,
    scoped: &rules::Scoped,
) -> (Column, bool) {
    let ready = active
        .iter()
        .any(|a| rules::ready_with(state, t, a, now, scoped).is_ok());
    let pending = || {
        t.after
            .iter()
            .filter_map(|a| state.todos.get(a))
            .any(|x| x.status != TodoStatus::Done)
    };
    let column = match t.status {
        // An `after` no longer in the live set was archived: done.
        TodoStatus::Open if pending() => Column::Waiting,
        TodoStatus::Open if ready => Column::Ready,
        TodoStatus::Open => Column::Open,
        TodoStatus::Claimed => Column::Claimed,
        TodoStatus::Blocked => Column::Blocked,
        TodoStatus::Deferred => Column::Deferred,
        TodoStatus::Done => Column::Done,
    };
    (column, ready)
}

/// The agents a todo's readiness is judged against.
fn active_agents(state: &State) -> Vec<&Agent> {
    state
        .agents
        .values()
        .filter(|a| a.status == AgentStatus::Active)
        .collect()
}

/// The board's [`Counts`] of every live todo at `now` (`derive`'s
/// `counts`), without the cards: what the state cache keeps beside its
/// head, so `status` shows them without reading every todo.
pub fn counts(state: &State, now: Timestamp) -> Counts {
    let active = active_agents(state);
    let scoped = rules::Scoped::of(state);
    let mut c = Counts::default();
    for t in state.todos.values() {
        let (column, ready) = place(state, t, &active, now, &scoped);
        tally(&mut c, column, ready);
    }
    c
}

/// The board's [`Counts`] of only `todos` of `state` at `now`: the part of
/// [`counts`] they make up.
pub fn counts_of<'a>(
    state: &State,
    todos: impl Iterator<Item = &'a Todo>,
    now: Timestamp,
) -> Counts {
    let active = active_agents(state);
    let scoped = rules::Scoped::of(state);
    let mut c = Counts::default();
    for t in todos {
        let (column, ready) = place(state, t, &active, now, &scoped);
        tally(&mut c, column, ready);
    }
    c
}

/// `total` with the part `was` taken out and `now` put in; None when `was`
/// is not part of `total`.
pub fn carry(total: &Counts, was: &Counts, now: &Counts) -> Option<Counts> {
    let f = |t: usize, w: usize, n: usize| t.checked_sub(w).map(|x| x + n);
    Some(Counts {
        ready: f(total.ready, was.ready, now.ready)?,
        open: f(total.open, was.open, now.open)?,
        waiting: f(total.waiting, was.waiting, now.waiting)?,
        claimed: f(total.claimed, was.claimed, now.claimed)?,
        blocked: f(total.blocked, was.blocked, now.blocked)?,
        deferred: f(total.deferred, was.deferred, now.deferred)?,
        done: f(total.done, was.done, now.done)?,
        held: f(total.held, was.held, now.held)?,
        reclaimable: f(total.reclaimable, was.reclaimable, now.reclaimable)?,
    })
}

/// The scoped claims live in `state` at `now` (owned), which every
/// unclaimed todo's readiness depends on (`rules::Scoped::live_at`).
pub fn live_scoped(
    state: &State,
    now: Timestamp,
) -> Vec<(crate::model::TodoId, Vec<String>, AgentId)> {
    rules::Scoped::of(state)
        .live_at(state.meta.settings.clock_skew, now)
        .into_iter()
        .map(|(t, s, o)| (t.clone(), s.to_vec(), o.clone()))
        .collect()
}

/// The board of `state` at `now`, with `ticks` (newest first) for the
/// timeline and each agent's last tick.
pub fn derive<'s>(state: &'s State, now: Timestamp, ticks: &'s [TickLine]) -> Board<'s> {
    let skew = state.meta.settings.clock_skew;
    let active = active_agents(state);
    let scoped = rules::Scoped::of(state);
    let mut counts = Counts::default();
    let mut goals: Vec<GoalBoard> = state
        .goals
        .values()
        .map(|goal| GoalBoard {
            goal,
            cards: Vec::new(),
            counts: Counts::default(),
        })
        .collect();
    for t in state.todos.values() {
        let pending: Vec<&Todo> = t
            .after
            .iter()
            .filter_map(|a| state.todos.get(a))
            .filter(|x| x.status != TodoStatus::Done)
            .collect();
        let (column, ready) = place(state, t, &active, now, &scoped);
        // Nothing holds a done todo.
        let gates: Vec<&Gate> = state
            .gates
            .values()
            .filter(|g| {
                g.is_open()
                    && t.status != TodoStatus::Done
                    && match &g.blocks {
                        crate::model::Blocks::Todo(id) => *id == t.id,
                        crate::model::Blocks::Goal => g.goal == t.goal,
                        crate::model::Blocks::Agent(a) => g.goal == t.goal && t.owner() == Some(a),
                    }
            })
            .collect();
        let why = (column == Column::Open)
            .then(|| {
                active
                    .iter()
                    .find_map(|a| rules::ready_with(state, t, a, now, &scoped).err())
            })
            .flatten();
        let card = Card {
            todo: t,
            column,
            ready,
            expired: t.claim.is_some() && t.live_claim(now, skew).is_none(),
            pending,
            gates,
            why,
        };
        let gb = goals.iter_mut().find(|g| g.goal.id == t.goal);
        for c in std::iter::once(&mut counts).chain(gb.map(|g| &mut g.counts)) {
            count(c, &card);
        }
        let recent = t.done_at.is_none_or(|d| now.since(d) <= RECENT_DONE);
        if let Some(g) = goals.iter_mut().find(|g| g.goal.id == t.goal)
            && (column != Column::Done || recent)
        {
            g.cards.push(card);
        }
    }
    for g in &mut goals {
        g.cards.sort_by(|a, b| {
            (a.column, a.todo.priority.level(), &a.todo.id).cmp(&(
                b.column,
                b.todo.priority.level(),
                &b.todo.id,
            ))
        });
    }
    let mut claims: Vec<ClaimLine> = state
        .todos
        .values()
        .filter_map(|t| {
            let c = t.claim.as_ref()?;
            Some(ClaimLine {
                todo: t,
                owner: &c.owner,
                lease_until: c.lease_until,
                expired: t.live_claim(now, skew).is_none(),
            })
        })
        .collect();
    claims.sort_by(|a, b| (a.owner, a.lease_until).cmp(&(b.owner, b.lease_until)));
    let mut gates: Vec<&Gate> = state.gates.values().filter(|g| g.is_open()).collect();
    gates.sort_by_key(|g| (!g.kind.human_only(), g.opened_at, g.id.clone()));
    let quota = state
        .goals
        .values()
        .filter(|g| g.status == GoalStatus::Active)
        .flat_map(|g| active.iter().map(move |a| (g, *a)))
        .map(|(g, a)| QuotaLine {
            agent: &a.id,
            goal: g,
            slots: turn::slots(state, &a.id, g, now),
        })
        .collect();
    let budgets = state
        .goals
        .values()
        .filter(|g| g.status == GoalStatus::Active && !g.budget.is_empty())
        .flat_map(|g| {
            let mut v: Vec<_> = super::usage::standings(state, g, None, now)
                .into_iter()
                .map(|st| (&g.id, st))
                .collect();
            for a in g.budget.agents.keys() {
                v.extend(
                    super::usage::standings(state, g, Some(a), now)
                        .into_iter()
                        .filter(|st| st.scope != super::usage::Scope::Goal)
                        .map(|st| (&g.id, st)),
                );
            }
            v
        })
        .collect();
    let agents = active
        .iter()
        .map(|a| AgentLine {
            agent: a,
            holds: claims
                .iter()
                .filter(|c| c.owner == &a.id)
                .map(|c| c.todo)
                .collect(),
            last_tick: ticks.iter().find(|t| t.actor == a.id.as_str()),
            last_seen: Timestamp::from_unix(0),
            quiet: false,
        })
        .map(|mut line: AgentLine| {
            let a = line.agent;
            line.last_seen = [
                line.last_tick.map(|t| t.at),
                a.last_turn.as_ref().map(|t| t.at),
                a.last_writeback,
                Some(a.registered_at),
            ]
            .into_iter()
            .flatten()
            .max()
            .unwrap_or(a.registered_at);
            line.quiet = a.parked.is_none() && now.since(line.last_seen) > QUIET_AFTER;
            line
        })
        .collect();
    Board {
        now,
        gates,
        goals,
        agents,
        counts,
        claims,
        quota,
        budgets,
        ticks,
    }
}

fn count(c: &mut Counts, card: &Card) {
    tally(c, card.column, card.ready);
}

fn tally(c: &mut Counts, column: Column, ready: bool) {
    match column {
        Column::Ready => c.open += 1,
        Column::Open => {
            c.open += 1;
            c.held += 1;
        }
        Column::Waiting => c.waiting += 1,
        Column::Claimed => c.claimed += 1,
        Column::Blocked => c.blocked += 1,
        Column::Deferred => c.deferred += 1,
        Column::Done => c.done += 1,
    }
    if ready {
        c.ready += 1;
        if column == Column::Claimed {
            c.reclaimable += 1;
        }
    }
}

/// Ticks per hour over the day before `now`: 24 buckets, the oldest first.
pub fn per_hour(ticks: &[Timestamp], now: Timestamp) -> [u32; 24] {
    let mut out = [0; 24];
    for t in ticks {
        let age = now.unix() - t.unix();
        if (0..24 * 3600).contains(&age) {
            out[23 - (age / 3600) as usize] += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_hour_buckets_the_last_day_oldest_first() {
        let now = Timestamp::from_unix(100_000);
        let at = |ago: i64| Timestamp::from_unix(100_000 - ago);
        let h = per_hour(
            &[at(0), at(10), at(3599), at(3600), at(86_399), at(86_400)],
            now,
        );
        assert_eq!(h[23], 3);
        assert_eq!(h[22], 1);
        assert_eq!(h[0], 1);
        assert_eq!(h.iter().sum::<u32>(), 5);
    }
}
