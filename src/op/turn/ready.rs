//! The ready index: for each active agent and each active goal, the first
//! todos that could be ready for the agent, in the order `todo claim
//! --next` picks for it (priority, then the agent's spread rank, then id).
//! The state cache keeps it beside a sharded head (`crate::cache`), so
//! `should-run` for an agent without a claim of its own reads the head and
//! one agent's lists instead of every live todo.
//!
//! A *candidate* of an agent on a goal is a todo of the goal that is open
//! or claimed (live or expired), waits for no `after` todo that is not
//! done, and asks for no capability the agent lacks. Whether a candidate
//! is ready at a given time depends only on what the head holds whole: the
//! claims (every claimed todo is in the head), the gates, the goal's status
//! and the other claims' scopes. So a list holds no answer that ages: at
//! any `now`, the first ready todos are the first candidates of the list
//! that [`rules::ready_unless_waiting`] accepts on the head, as long as
//! the list holds them ([`first_ready`] says None when it cannot tell).
//!
//! A list is exactly the first candidates in the agent's pick order, up to
//! the [`Sizes::cap`]-th open one (all of them when `complete`). A tick
//! keeps it so ([`update`]): every changed todo, and every todo that waits
//! on one (its `after` may have become done), leaves the list and goes in
//! again where it ranks, when it ranks before the list's last entry (or
//! the list is complete); a list left with fewer than [`Sizes::low`] open
//! todos is ranked again from the whole board.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::model::files::Touched;
use crate::model::{
    Agent, AgentId, AgentStatus, GoalId, GoalStatus, Priority, State, Todo, TodoId, TodoStatus,
};
use crate::op::rules;
use crate::time::Timestamp;

/// How long a list is: cut after its `cap`-th open todo, ranked again from
/// the whole board once fewer than `low` open todos are left in it.
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    pub cap: usize,
    pub low: usize,
}

/// The sizes the cache uses: a brief shows 3 ready todos, and an agent's
/// own claims take its first ones one by one, so a list lasts for about
/// `cap - low` of them before the tick ranks the board again.
pub const SIZES: Sizes = Sizes { cap: 32, low: 6 };

/// One agent's list on one goal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReadyList {
    /// The first candidates, in the agent's pick order.
    pub todos: Vec<Todo>,
    /// Whether `todos` holds every candidate.
    pub complete: bool,
    /// On the goal of the agent's last turn, when that turn ended
    /// unchanged: the agent's no-change digest there (None: not known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unchanged: Option<Unchanged>,
    /// When nothing on the goal was ready for the agent at a time: why
    /// (None: something was ready, or not known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nothing: Option<Nothing>,
}

/// Nothing on a goal ready for an agent at `at` (unix seconds), and why:
/// how many of the goal's todos that are not done each reason
/// (`rules::NotReady::kind`) held back, as `rules::best_ready` counts
/// them. `should-run` says nothing-ready from it, at any time when every
/// todo provably stands where it stood at `at` ([`Nothing::holds_at`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Nothing {
    pub at: i64,
    pub why: BTreeMap<String, usize>,
}

/// Where todo `t` stands for `agent` at `now` in `best_ready`'s count:
/// None for a done todo or one of another goal, else ready (`Ok`) or the
/// reason's kind.
fn stands(
    state: &State,
    t: &Todo,
    agent: &Agent,
    goal: &GoalId,
    now: Timestamp,
    scoped: &rules::Scoped,
) -> Option<Result<(), &'static str>> {
    if &t.goal != goal || t.status == TodoStatus::Done {
        return None;
    }
    Some(rules::ready_with(state, t, agent, now, scoped).map_err(|n| n.kind()))
}

impl Nothing {
    /// From the whole `state`: Some when nothing on `goal` is ready for
    /// `agent` at `at`, with why.
    fn of(state: &State, agent: &Agent, goal: &GoalId, at: Timestamp) -> Option<Nothing> {
        let scoped = rules::Scoped::of(state);
        let mut why: BTreeMap<String, usize> = BTreeMap::new();
        for (_, t) in state.todos.iter() {
            match stands(state, t, agent, goal, at, &scoped) {
                None => {}
                Some(Ok(())) => return None,
                Some(Err(k)) => *why.entry(k.to_owned()).or_default() += 1,
            }
        }
        Some(Nothing { at: at.unix(), why })
    }

    /// Whether nothing is ready at `now` too, asked of `state`, which
    /// holds every claimed todo and every other entity whole (the cache's
    /// head): the live scoped claims are the same at both times (an
    /// unclaimed todo moves with time only through them) and every claimed
    /// todo of the goal stands where it stood at `at`.
    pub fn holds_at(&self, state: &State, agent: &Agent, goal: &GoalId, now: Timestamp) -> bool {
        let then = Timestamp::from_unix(self.at);
        if live_scoped(state, now) != live_scoped(state, then) {
            return false;
        }
        let scoped = rules::Scoped::of(state);
        state
            .todos
            .iter_held()
            .map(|(_, t)| t)
            .filter(|t| t.claim.is_some())
            .all(|t| {
                stands(state, t, agent, goal, now, &scoped)
                    == stands(state, t, agent, goal, then, &scoped)
            })
    }
}

/// The no-change digest (`turn::digest`) of an agent on the goal of its
/// last turn, which ended unchanged, at the time `at` (unix seconds):
/// what `should-run` compares the turn's digest with instead of hashing
/// every todo, at any time when the digest is provably what it was at
/// `at` ([`Unchanged::holds_at`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Unchanged {
    pub at: i64,
    pub digest: String,
}

impl Unchanged {
    /// The digest of `agent` on `goal` at `at`, from the whole `state`.
    fn of(state: &State, agent: &AgentId, goal: &GoalId, at: Timestamp) -> Unchanged {
        Unchanged {
            at: at.unix(),
            digest: super::digest(state, agent, goal, at),
        }
    }

    /// The digest at `now` when it is provably the one at `at`, asked of
    /// `state`, which holds every claimed todo and every other entity
    /// whole (the cache's head): the live scoped claims are the same at
    /// both times (an unclaimed todo's readiness moves with time only
    /// through them) and every claimed todo of the goal adds the same
    /// lines at both times. None otherwise.
    pub fn holds_at(
        &self,
        state: &State,
        agent: &AgentId,
        goal: &GoalId,
        now: Timestamp,
    ) -> Option<&str> {
        let then = Timestamp::from_unix(self.at);
        if live_scoped(state, now) != live_scoped(state, then) {
            return None;
        }
        let scoped = rules::Scoped::of(state);
        let same = state
            .todos
            .iter_held()
            .map(|(_, t)| t)
            .filter(|t| &t.goal == goal && t.claim.is_some())
            .all(|t| {
                super::digest_part(state, agent, t, now, &scoped)
                    == super::digest_part(state, agent, t, then, &scoped)
            });
        same.then_some(self.digest.as_str())
    }
}

/// The scoped claims live in `state` at `at`: every unclaimed todo's
/// readiness moves with time only through them.
fn live_scoped(state: &State, at: Timestamp) -> Vec<(&TodoId, &[String], &AgentId)> {
    rules::Scoped::of(state).live_at(state.meta.settings.clock_skew, at)
}

/// The goal of `agent`'s last turn when it ended unchanged.
fn unchanged_goal(agent: &Agent) -> Option<&GoalId> {
    agent
        .last_turn
        .as_ref()
        .filter(|l| l.outcome == crate::model::Outcome::Unchanged)
        .map(|l| &l.goal)
}

/// When an index's digests are taken: the newest of the claims' starts
/// and the agent's last turn (every claim live at a later time was live
/// then, so readers later than every tick most often find the digest
/// still holds).
fn digest_time(state: &State, agent: &Agent) -> Timestamp {
    let claims = state
        .todos
        .iter_held()
        .filter_map(|(_, t)| t.claim.as_ref())
        .map(|c| c.since);
    let turn = agent.last_turn.as_ref().map(|l| l.at);
    claims.chain(turn).max().unwrap_or(Timestamp::from_unix(0))
}

/// One agent's lists: the capabilities they were ranked for, and a list
/// for each active goal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentReady {
    pub capabilities: Vec<String>,
    pub goals: BTreeMap<GoalId, ReadyList>,
}

/// The whole index: every active agent's lists.
pub type Index = BTreeMap<AgentId, AgentReady>;

/// The pick order's key of `t` for `agent`.
type Key = (Priority, Reverse<u64>, TodoId);

fn key(agent: &AgentId, t: &Todo) -> Key {
    (
        t.priority,
        Reverse(rules::spread_rank(agent, &t.id)),
        t.id.clone(),
    )
}

/// Whether `t` is a candidate of `agent` on `goal` (see the module docs).
pub fn candidate(state: &State, t: &Todo, agent: &Agent, goal: &GoalId) -> bool {
    &t.goal == goal
        && matches!(t.status, TodoStatus::Open | TodoStatus::Claimed)
        && t.capabilities
            .iter()
            .all(|c| agent.capabilities.contains(c))
        && rules::waits_for_nothing(state, t)
}

/// Cuts `list` after its `cap`-th open todo.
fn cap(list: &mut ReadyList, sizes: Sizes) {
    let mut open = 0;
    let cut = list.todos.iter().position(|t| {
        open += usize::from(t.status == TodoStatus::Open);
        open == sizes.cap
    });
    if let Some(i) = cut
        && i + 1 < list.todos.len()
    {
        list.todos.truncate(i + 1);
        list.complete = false;
    }
}

fn open_count(list: &ReadyList) -> usize {
    list.todos
        .iter()
        .filter(|t| t.status == TodoStatus::Open)
        .count()
}

/// `agent`'s list on `goal`, ranked from the whole board. Only the
/// priorities up to that of the `cap`-th open candidate are ranked (a hash
/// each).
pub fn build(state: &State, agent: &Agent, goal: &GoalId, sizes: Sizes) -> ReadyList {
    let cands: Vec<&Todo> = state
        .todos
        .iter()
        .map(|(_, t)| t)
        .filter(|t| candidate(state, t, agent, goal))
        .collect();
    let mut open: Vec<Priority> = cands
        .iter()
        .filter(|t| t.status == TodoStatus::Open)
        .map(|t| t.priority)
        .collect();
    let cut = (sizes.cap > 0 && open.len() > sizes.cap).then(|| {
        let (_, p, _) = open.select_nth_unstable(sizes.cap - 1);
        *p
    });
    let mut keyed: Vec<(Key, &Todo)> = cands
        .into_iter()
        .filter(|t| cut.is_none_or(|c| t.priority <= c))
        .map(|t| (key(&agent.id, t), t))
        .collect();
    keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut list = ReadyList {
        todos: keyed.into_iter().map(|(_, t)| t.clone()).collect(),
        complete: cut.is_none(),
        unchanged: None,
        nothing: None,
    };
    cap(&mut list, sizes);
    list
}

/// `list` after a tick that changed the todos `changed` (with every todo
/// that waits on one of them), `state` being the state after it.
pub fn update(
    list: &mut ReadyList,
    state: &State,
    agent: &Agent,
    goal: &GoalId,
    changed: &BTreeSet<&TodoId>,
    sizes: Sizes,
) {
    list.todos.retain(|t| !changed.contains(&t.id));
    let came: Vec<&Todo> = changed
        .iter()
        .filter_map(|id| state.todos.get(*id))
        .filter(|t| candidate(state, t, agent, goal))
        .collect();
    if !came.is_empty() {
        if !list.complete && list.todos.is_empty() {
            // Nothing left to say where the list ends.
            *list = build(state, agent, goal, sizes);
            return;
        }
        let mut keys: Vec<Key> = list.todos.iter().map(|t| key(&agent.id, t)).collect();
        let last = keys.last().cloned();
        for t in came {
            let k = key(&agent.id, t);
            if !list.complete && last.as_ref().is_some_and(|l| &k > l) {
                continue;
            }
            let at = keys.partition_point(|x| x < &k);
            keys.insert(at, k);
            list.todos.insert(at, t.clone());
        }
        cap(list, sizes);
    }
    if !list.complete && open_count(list) < sizes.low {
        *list = build(state, agent, goal, sizes);
    }
}

/// Whether `old` holds every digest and nothing-ready entry that `new`
/// (ranked from the whole state) holds: the answers `should-run` takes
/// from the index without reading every todo.
pub fn same_answers(old: &Index, new: &Index) -> bool {
    new.iter().all(|(agent, r)| {
        r.goals.iter().all(|(goal, l)| {
            let o = old.get(agent).and_then(|o| o.goals.get(goal));
            o.is_some_and(|o| o.unchanged == l.unchanged && o.nothing == l.nothing)
        })
    })
}

/// The whole index of `state`, ranked from the board.
pub fn build_all(state: &State, sizes: Sizes) -> Index {
    update_all(None, state, &Touched::default(), sizes)
}

/// The index after a tick that changed `touched`, from the index before it
/// (`old`; None: rank everything), `state` being the state after it.
pub fn update_all(old: Option<Index>, state: &State, touched: &Touched, sizes: Sizes) -> Index {
    let mut index = update_lists(old, state, touched, sizes);
    // Each unchanged agent's digest, from the whole state; no other.
    // Where the list shows no todo ready, whether nothing is.
    for r in index.values_mut() {
        for l in r.goals.values_mut() {
            l.unchanged = None;
            l.nothing = None;
        }
    }
    for a in state.agents.values() {
        let at = digest_time(state, a);
        let Some(r) = index.get_mut(&a.id) else {
            continue;
        };
        for (g, l) in r.goals.iter_mut() {
            let shown = first_ready(state, l, a, at, 1);
            if shown.is_none_or(|s| s.is_empty()) {
                l.nothing = Nothing::of(state, a, g, at);
            }
        }
    }
    for a in state.agents.values() {
        if let (Some(g), Some(r)) = (unchanged_goal(a), index.get_mut(&a.id))
            && let Some(list) = r.goals.get_mut(g)
        {
            list.unchanged = Some(Unchanged::of(state, &a.id, g, digest_time(state, a)));
        }
    }
    index
}

/// [`update_all`]'s lists, without the digests.
fn update_lists(old: Option<Index>, state: &State, touched: &Touched, sizes: Sizes) -> Index {
    // The changed todos and every todo that waits on one of them.
    let mut changed: BTreeSet<&TodoId> = touched.todos.iter().collect();
    if !touched.todos.is_empty() {
        let set: BTreeSet<&TodoId> = touched.todos.iter().collect();
        for (id, t) in state.todos.iter() {
            if t.after.iter().any(|a| set.contains(a)) {
                changed.insert(id);
            }
        }
    }
    update_changed(old.unwrap_or_default(), state, touched, &changed, sizes)
}

/// [`update_all`] after a tick in which no todo became or stopped being
/// done, none was added or removed: then no todo that waits on a touched
/// one changed whether it is a candidate, so only the touched todos move
/// and the board is not walked to find their waiters (a partial state,
/// `crate::cache`'s tick on named todos, need not hold them).
///
/// An unchanged agent's digest (`before` being the state before the tick)
/// is carried when the agent's last turn is the same and every touched or
/// claimed todo of its goal adds the same lines to it before and after at
/// the digest's time (then, with nothing else moved, every line is the
/// same); else it is dropped (not known: `should-run` reads every todo).
pub fn update_touched(
    old: Index,
    before: &State,
    state: &State,
    touched: &Touched,
    sizes: Sizes,
) -> Index {
    let changed: BTreeSet<&TodoId> = touched.todos.iter().collect();
    let digests: Vec<(AgentId, GoalId, Unchanged)> = old
        .iter()
        .filter_map(|(id, r)| {
            let (a, b) = (before.agents.get(id)?, state.agents.get(id)?);
            let goal = unchanged_goal(b)?;
            let u = r.goals.get(goal)?.unchanged.clone()?;
            (a.last_turn == b.last_turn && digest_kept(before, state, id, goal, &changed, &u))
                .then(|| (id.clone(), goal.clone(), u))
        })
        .collect();
    let nothing: Vec<(AgentId, GoalId, Nothing)> = old
        .iter()
        .flat_map(|(id, r)| r.goals.iter().map(move |(g, l)| (id, g, l)))
        .filter_map(|(id, g, l)| {
            let n = l.nothing.clone()?;
            let (a, b) = (before.agents.get(id)?, state.agents.get(id)?);
            nothing_kept(before, state, a, b, g, &changed, &n).then(|| (id.clone(), g.clone(), n))
        })
        .collect();
    let mut index = update_changed(old, state, touched, &changed, sizes);
    for r in index.values_mut() {
        for l in r.goals.values_mut() {
            l.unchanged = None;
            l.nothing = None;
        }
    }
    for (id, goal, n) in nothing {
        if let Some(l) = index.get_mut(&id).and_then(|r| r.goals.get_mut(&goal)) {
            l.nothing = Some(n);
        }
    }
    for (id, goal, u) in digests {
        if let Some(l) = index.get_mut(&id).and_then(|r| r.goals.get_mut(&goal)) {
            l.unchanged = Some(u);
        }
    }
    index
}

/// Whether nothing on `goal` is still ready for the agent (`a` before,
/// `b` after) at `n.at` after a tick from `before` to `after` (partial
/// states) that changed the todos `changed`: every changed and every
/// claimed todo stands where it stood, and the live scoped claims at that
/// time are the same (the caller's other conditions hold, as for
/// [`digest_kept`]).
fn nothing_kept(
    before: &State,
    after: &State,
    a: &Agent,
    b: &Agent,
    goal: &GoalId,
    changed: &BTreeSet<&TodoId>,
    n: &Nothing,
) -> bool {
    let at = Timestamp::from_unix(n.at);
    if a.capabilities != b.capabilities || live_scoped(before, at) != live_scoped(after, at) {
        return false;
    }
    let (sb, sa) = (rules::Scoped::of(before), rules::Scoped::of(after));
    let (cb, ca) = (claimed(before), claimed(after));
    let ids = changed.iter().copied().chain(cb.iter()).chain(ca.iter());
    for id in ids {
        let x = before
            .todos
            .get(id)
            .and_then(|t| stands(before, t, a, goal, at, &sb));
        let y = after
            .todos
            .get(id)
            .and_then(|t| stands(after, t, b, goal, at, &sa));
        if x != y {
            return false;
        }
    }
    !before.todos.fell_short_of_whole() && !after.todos.fell_short_of_whole()
}

/// The todos with a claim (live or expired) that `s` holds.
fn claimed(s: &State) -> Vec<TodoId> {
    s.todos
        .iter_held()
        .filter(|(_, t)| t.claim.is_some())
        .map(|(k, _)| k.clone())
        .collect()
}

/// Whether `agent`'s digest on `goal` at `u.at` is the same after a tick
/// from `before` to `after` (partial states) that changed the todos
/// `changed`: every changed and every claimed todo of the goal adds the
/// same lines on both sides, and the live scoped claims at that time are
/// the same (the caller's other conditions, `crate::cache`'s carried
/// counts, hold: no goal, gate, settings or done status moved).
fn digest_kept(
    before: &State,
    after: &State,
    agent: &AgentId,
    goal: &GoalId,
    changed: &BTreeSet<&TodoId>,
    u: &Unchanged,
) -> bool {
    let at = Timestamp::from_unix(u.at);
    if live_scoped(before, at) != live_scoped(after, at) {
        return false;
    }
    let (sb, sa) = (rules::Scoped::of(before), rules::Scoped::of(after));
    let (cb, ca) = (claimed(before), claimed(after));
    let ids = changed.iter().copied().chain(cb.iter()).chain(ca.iter());
    for id in ids {
        let part = |s: &State, sc: &rules::Scoped| {
            s.todos
                .get(id)
                .filter(|t| &t.goal == goal)
                .map(|t| super::digest_part(s, agent, t, at, sc))
                .unwrap_or_default()
        };
        if part(before, &sb) != part(after, &sa) {
            return false;
        }
    }
    !before.todos.fell_short_of_whole() && !after.todos.fell_short_of_whole()
}

/// The index after a tick that changed the todos `changed`.
fn update_changed(
    mut old: Index,
    state: &State,
    touched: &Touched,
    changed: &BTreeSet<&TodoId>,
    sizes: Sizes,
) -> Index {
    let goals: Vec<&GoalId> = state
        .goals
        .values()
        .filter(|g| g.status == GoalStatus::Active)
        .map(|g| &g.id)
        .collect();
    let mut index = Index::new();
    for a in state
        .agents
        .values()
        .filter(|a| a.status == AgentStatus::Active)
    {
        let mut lists = old
            .remove(&a.id)
            .filter(|r| r.capabilities == a.capabilities)
            .map(|r| r.goals)
            .unwrap_or_default();
        let mut goals_of = BTreeMap::new();
        for g in &goals {
            let list = match lists.remove(*g) {
                Some(mut l) if !touched.goals.contains(g) => {
                    update(&mut l, state, a, g, changed, sizes);
                    l
                }
                _ => build(state, a, g, sizes),
            };
            goals_of.insert((*g).clone(), list);
        }
        index.insert(
            a.id.clone(),
            AgentReady {
                capabilities: a.capabilities.clone(),
                goals: goals_of,
            },
        );
    }
    index
}

/// The first `n` todos of `list` ready for `agent` at `now`, asked of
/// `state`, which holds at least every claimed todo and every other entity
/// whole (the cache's head); None when the list ends before `n` of them
/// and does not hold every candidate.
pub fn first_ready<'l>(
    state: &State,
    list: &'l ReadyList,
    agent: &Agent,
    now: Timestamp,
    n: usize,
) -> Option<Vec<&'l Todo>> {
    let mut take = takes(state, agent, now);
    let mut out = Vec::with_capacity(n);
    for t in &list.todos {
        if out.len() == n {
            break;
        }
        if take(t) {
            out.push(t);
        }
    }
    (out.len() == n || list.complete).then_some(out)
}

/// The test [`first_ready`] takes a todo of a list by, for `agent` at
/// `now` on `state` (the cache's head): a reader that wants one ready todo
/// parses a list up to the first this accepts
/// (`crate::cache::Claims::ready_list_until`).
pub fn takes<'s>(
    state: &'s State,
    agent: &'s Agent,
    now: Timestamp,
) -> impl FnMut(&Todo) -> bool + 's {
    let scoped = rules::Scoped::of(state);
    move |t| rules::ready_unless_waiting(state, t, agent, now, &scoped).is_ok()
}

/// `todo claim --next`'s pick for `agent` at `now` from its lists on the
/// goals it may pick from: the first ready todo of each list, and of
/// those the first in the agent's pick order, which is what
/// [`rules::best_ready`] picks on the whole state. `state` holds at least
/// every claimed todo and every other entity whole (the cache's head).
/// None when a list cannot tell or nothing is ready (the whole state then
/// says why).
pub fn best_of<'l>(
    state: &State,
    lists: &'l [ReadyList],
    agent: &Agent,
    now: Timestamp,
) -> Option<&'l Todo> {
    let mut best: Option<(Key, &Todo)> = None;
    for list in lists {
        if let Some(t) = first_ready(state, list, agent, now, 1)?.first() {
            let k = key(&agent.id, t);
            if best.as_ref().is_none_or(|(b, _)| &k < b) {
                best = Some((k, t));
            }
        }
    }
    best.map(|(_, t)| t)
}
