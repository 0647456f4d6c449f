//! The rules every command shares: who may act, and whether a todo is ready
//! for an agent. Defined once; `apply`, `todo list --ready`, `claim --next`
//! and (later) `should-run` all ask here.

use std::collections::BTreeMap;
use std::fmt;

use crate::error::{Code, Hint, N, Next, Refusal};
use crate::model::{
    Actor, Agent, AgentId, AgentStatus, Blocks, Gate, GateId, GoalStatus, State, Todo, TodoId,
    TodoStatus, glob,
};
use crate::time::Timestamp;

/// Why a todo is not ready for an agent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotReady {
    Done,
    Status(TodoStatus),
    /// Someone holds a live claim.
    ClaimedBy {
        owner: AgentId,
        until: Timestamp,
    },
    /// These `after` todos are not done yet.
    Waiting(Vec<TodoId>),
    /// The agent lacks these capabilities.
    Lacks(Vec<String>),
    /// The todo's goal is paused or done.
    Goal(GoalStatus),
    /// An open gate covers the goal, the agent or the todo.
    Gated {
        gate: GateId,
        question: String,
    },
    /// Another agent's live claim writes an overlapping path.
    ScopeBusy {
        holder: AgentId,
        todo: TodoId,
        ours: String,
        theirs: String,
    },
}

impl NotReady {
    /// A short stable name, for counting reasons.
    pub fn kind(&self) -> &'static str {
        match self {
            NotReady::Done => "done",
            NotReady::Status(_) => "not open",
            NotReady::ClaimedBy { .. } => "claimed",
            NotReady::Waiting(_) => "waiting",
            NotReady::Lacks(_) => "missing capability",
            NotReady::Goal(_) => "goal not active",
            NotReady::ScopeBusy { .. } => "scope busy",
            NotReady::Gated { .. } => "gated",
        }
    }
}

impl fmt::Display for NotReady {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotReady::Done => f.write_str("it is done"),
            NotReady::Status(s) => write!(f, "it is {s}"),
            NotReady::ClaimedBy { owner, until } => {
                write!(f, "{owner} holds it until {until}")
            }
            NotReady::Waiting(ids) => write!(
                f,
                "it waits for {}",
                ids.iter()
                    .map(TodoId::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            NotReady::Lacks(caps) => write!(f, "it needs capability {}", caps.join(", ")),
            NotReady::Goal(s) => write!(f, "its goal is {}", s.as_str()),
            NotReady::Gated { gate, question } => {
                write!(f, "gate {gate} is open: \"{question}\"")
            }
            NotReady::ScopeBusy {
                holder,
                todo,
                ours,
                theirs,
            } => {
                if ours == theirs {
                    write!(f, "{holder} holds {todo}, which also writes {ours}")
                } else {
                    write!(
                        f,
                        "{holder} holds {todo}, which writes {theirs}, overlapping {ours}"
                    )
                }
            }
        }
    }
}

impl NotReady {
    /// As a refusal: a live claim by another (on the todo or on an
    /// overlapping scope) is a conflict (exit 4), the rest are rules (exit 3).
    pub fn refusal(&self, todo: &Todo) -> Refusal {
        let msg = format!("{} is not ready: {self}", todo.id);
        match self {
            NotReady::ClaimedBy { owner, .. } => {
                Refusal::conflict(Code::Claimed, msg).with_hint(Hint::new(
                    format!("{owner} won it; pick another with {N}"),
                    [Next::ReadyTodos],
                ))
            }
            NotReady::ScopeBusy { holder, .. } => Refusal::conflict(Code::ScopeBusy, msg)
                .with_hint(Hint::new(
                    format!("wait for {holder} to finish, or pick other work with {N}"),
                    [Next::ReadyTodos],
                )),
            NotReady::Done => Refusal::rule(Code::TodoDone, msg).with_hint(Hint::new(
                format!("{N} shows what is left"),
                [Next::ReadyTodos],
            )),
            NotReady::Waiting(_) => Refusal::rule(Code::Waiting, msg).with_hint(Hint::new(
                format!("finish those first, or {N} for other work"),
                [Next::ReadyTodos],
            )),
            NotReady::Lacks(_) => Refusal::rule(Code::MissingCapability, msg).with_hint(
                "register the agent with --capability, or leave it to an agent that has it",
            ),
            NotReady::Goal(_) => Refusal::rule(Code::GoalNotActive, msg).with_hint(Hint::new(
                format!("a human can resume it with {N}"),
                [Next::ResumeGoal("ID".to_owned())],
            )),
            NotReady::Gated { gate, .. } => {
                Refusal::rule(Code::GateOpen, msg).with_hint(Hint::new(
                    format!("wait for the answer ({N}), or pick work outside its scope with {N}"),
                    [Next::ShowGate(gate.to_string()), Next::ReadyTodos],
                ))
            }
            NotReady::Status(_) => Refusal::rule(Code::NotOpen, msg).with_hint(Hint::new(
                format!("reopen it with {N}"),
                [Next::ReopenTodo("ID".to_owned())],
            )),
        }
    }
}

/// `ready(todo, agent)` of DESIGN §4: the todo is open, or claimed with an
/// expired lease; and it [`fits`] the agent. A todo with a live claim, even
/// the agent's own, is not ready: callers treat their own claims separately.
pub fn ready(state: &State, todo: &Todo, agent: &Agent, now: Timestamp) -> Result<(), NotReady> {
    ready_with(state, todo, agent, now, &Scoped::of(state))
}

/// The claimed todos that declare a write scope: what [`fits`] checks a
/// todo's scope against. Callers that ask about many todos build it once.
pub struct Scoped<'s>(Vec<&'s Todo>);

impl<'s> Scoped<'s> {
    pub fn of(state: &'s State) -> Self {
        Scoped(
            // `iter`, not `values`: a state after a tick has an overlay,
            // which `values` would first collect (10,000 entries).
            // `iter_held`: every claimed todo is held even by a partial
            // map (`crate::cache::read_part`).
            state
                .todos
                .iter_held()
                .map(|(_, t)| t)
                .filter(|t| t.claim.is_some() && !t.scope.is_empty())
                .collect(),
        )
    }

    /// The scoped claims live at `now`: (todo, its scope, the owner), in
    /// todo order. Every unclaimed todo's readiness depends on claims only
    /// through these.
    pub fn live_at(
        &self,
        skew: crate::time::Span,
        now: Timestamp,
    ) -> Vec<(&'s TodoId, &'s [String], &'s AgentId)> {
        self.0
            .iter()
            .filter_map(|t| {
                let c = t.live_claim(now, skew)?;
                Some((&t.id, t.scope.as_slice(), &c.owner))
            })
            .collect()
    }
}

/// [`ready`] with the scoped claims already gathered.
pub fn ready_with(
    state: &State,
    todo: &Todo,
    agent: &Agent,
    now: Timestamp,
    scoped: &Scoped,
) -> Result<(), NotReady> {
    free_now(state, todo, now)?;
    fits_with(state, todo, agent, now, scoped, true)
}

/// Whether `todo` is open, or claimed with no live claim, at `now`.
fn free_now(state: &State, todo: &Todo, now: Timestamp) -> Result<(), NotReady> {
    match todo.status {
        TodoStatus::Open => Ok(()),
        TodoStatus::Claimed => match todo.live_claim(now, state.meta.settings.clock_skew) {
            Some(c) => Err(NotReady::ClaimedBy {
                owner: c.owner.clone(),
                until: c.lease_until,
            }),
            None => Ok(()),
        },
        TodoStatus::Done => Err(NotReady::Done),
        s => Err(NotReady::Status(s)),
    }
}

/// [`ready_with`] without the `after` check, for a todo already known to
/// wait for nothing: what the ready index (`turn::ready`) asks of a state
/// that holds only the claimed todos, where an `after` todo may be absent
/// without having been archived.
pub fn ready_unless_waiting(
    state: &State,
    todo: &Todo,
    agent: &Agent,
    now: Timestamp,
    scoped: &Scoped,
) -> Result<(), NotReady> {
    free_now(state, todo, now)?;
    fits_with(state, todo, agent, now, scoped, false)
}

/// Whether every `after` todo of `todo` is done (an id no longer in the
/// live set was archived, which only happens to done todos).
pub fn waits_for_nothing(state: &State, todo: &Todo) -> bool {
    todo.after.iter().all(|id| {
        state
            .todos
            .get(id)
            .is_none_or(|t| t.status == TodoStatus::Done)
    })
}

/// Whether the agent could hold the todo, whatever its claim: the goal is
/// active, every `after` is done (an id no longer in the live set was
/// archived, which only happens to done todos), the agent has the required
/// capabilities, and no other agent's live claim writes an overlapping path.
pub fn fits(state: &State, todo: &Todo, agent: &Agent, now: Timestamp) -> Result<(), NotReady> {
    fits_with(state, todo, agent, now, &Scoped::of(state), true)
}

fn fits_with(
    state: &State,
    todo: &Todo,
    agent: &Agent,
    now: Timestamp,
    scoped: &Scoped,
    after: bool,
) -> Result<(), NotReady> {
    if let Some(g) = gate_on(state, todo, agent) {
        return Err(NotReady::Gated {
            gate: g.id.clone(),
            question: g.question.clone(),
        });
    }
    if let Some(goal) = state.goals.get(&todo.goal)
        && goal.status != GoalStatus::Active
    {
        return Err(NotReady::Goal(goal.status));
    }
    let waiting: Vec<TodoId> = todo
        .after
        .iter()
        .filter(|_| after)
        .filter(|id| {
            state
                .todos
                .get(*id)
                .is_some_and(|t| t.status != TodoStatus::Done)
        })
        .cloned()
        .collect();
    if !waiting.is_empty() {
        return Err(NotReady::Waiting(waiting));
    }
    let lacks: Vec<String> = todo
        .capabilities
        .iter()
        .filter(|c| !agent.capabilities.contains(c))
        .cloned()
        .collect();
    if !lacks.is_empty() {
        return Err(NotReady::Lacks(lacks));
    }
    if !todo.scope.is_empty() {
        let skew = state.meta.settings.clock_skew;
        for other in &scoped.0 {
            if other.id == todo.id {
                continue;
            }
            let Some(c) = other.live_claim(now, skew) else {
                continue;
            };
            if c.owner == agent.id {
                continue;
            }
            if let Some((ours, theirs)) = glob::first_overlap(&todo.scope, &other.scope) {
                return Err(NotReady::ScopeBusy {
                    holder: c.owner.clone(),
                    todo: other.id.clone(),
                    ours: ours.to_owned(),
                    theirs: theirs.to_owned(),
                });
            }
        }
    }
    Ok(())
}

/// The first open gate that stops `agent` from taking `todo`.
pub fn gate_on<'s>(state: &'s State, todo: &Todo, agent: &Agent) -> Option<&'s Gate> {
    state
        .gates
        .values()
        .find(|g| g.covers(&todo.goal, &agent.id, &todo.id))
}

/// Whether a gate concerns an agent: it is on the agent's goal (when one is
/// given), on the agent itself, or on a todo the agent holds.
pub fn gate_concerns(
    state: &State,
    g: &Gate,
    agent: &AgentId,
    goal: Option<&crate::model::GoalId>,
) -> bool {
    match &g.blocks {
        Blocks::Goal => goal.is_none_or(|x| *x == g.goal),
        Blocks::Agent(a) => a == agent,
        Blocks::Todo(t) => state.todos.get(t).is_some_and(|t| t.owner() == Some(agent)),
    }
}

/// How much `agent` wants `todo` among equally urgent ones: a stable hash
/// of both ids, the same on every machine.
pub fn spread_rank(agent: &AgentId, todo: &TodoId) -> u64 {
    use sha2::{Digest, Sha256};
    let d = Sha256::new()
        .chain_update(agent.as_str().as_bytes())
        .chain_update(b"\n")
        .chain_update(todo.as_str().as_bytes())
        .finalize();
    u64::from_be_bytes(d[..8].try_into().expect("a SHA-256 has 8 bytes"))
}

/// The open gates that concern an agent.
pub fn gates_for<'s>(
    state: &'s State,
    agent: &AgentId,
    goal: Option<&crate::model::GoalId>,
) -> Vec<&'s Gate> {
    state
        .gates
        .values()
        .filter(|g| g.is_open() && gate_concerns(state, g, agent, goal))
        .collect()
}

/// Orders todos as work should be picked: priority, then age, then id.
pub fn pick_order(a: &Todo, b: &Todo) -> std::cmp::Ordering {
    (a.priority, a.created_at, &a.id).cmp(&(b.priority, b.created_at, &b.id))
}

/// The ready todo an agent should take next, optionally within one goal;
/// or a summary of why none is. Only the most urgent priority among the
/// ready todos counts, never a lower one; within it, agents are spread: each
/// takes the todo that ranks first for its own id (the highest hash of the
/// agent id and the todo id, rendezvous hashing), so concurrent claimers
/// on several machines mostly want different todos, and an agent keeps
/// wanting the same one while it stays ready.
pub fn best_ready<'s>(
    state: &'s State,
    agent: &Agent,
    goal: Option<&crate::model::GoalId>,
    now: Timestamp,
) -> Result<&'s Todo, Refusal> {
    let one = goal.map(|g| [g]);
    best_ready_among(state, agent, one.as_ref().map(|g| g.as_slice()), now)
}

/// [`best_ready`] within a set of goals (`None`: every goal): `claim
/// --next`'s pick across the goals an agent may work on.
pub fn best_ready_among<'s>(
    state: &'s State,
    agent: &Agent,
    goals: Option<&[&crate::model::GoalId]>,
    now: Timestamp,
) -> Result<&'s Todo, Refusal> {
    let mut why: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut best: Option<(&Todo, u64)> = None;
    let scoped = Scoped::of(state);
    for (_, t) in state.todos.iter() {
        if goals.is_some_and(|g| !g.contains(&&t.goal)) || t.status == TodoStatus::Done {
            continue;
        }
        match ready_with(state, t, agent, now, &scoped) {
            // A less urgent todo can never be better: not ranked (a hash).
            Ok(()) if best.is_some_and(|(b, _)| t.priority > b.priority) => {}
            Ok(()) => {
                let rank = spread_rank(&agent.id, &t.id);
                let better = match best {
                    None => true,
                    Some((b, r)) => (t.priority, std::cmp::Reverse(rank), &t.id).lt(&(
                        b.priority,
                        std::cmp::Reverse(r),
                        &b.id,
                    )),
                };
                if better {
                    best = Some((t, rank));
                }
            }
            Err(n) => *why.entry(n.kind()).or_default() += 1,
        }
    }
    best.map(|(t, _)| t).ok_or_else(|| {
        Refusal::rule(Code::NothingReady, nothing_ready(&agent.id, &why)).with_hint(Hint::new(
            format!("add work with {N}, or look with {N}"),
            [Next::AddTodo, Next::Todos],
        ))
    })
}

/// [`best_ready`]'s sentence when nothing is ready for `agent`, from how
/// many todos each reason (`NotReady::kind`) holds back.
pub fn nothing_ready<K: AsRef<str>>(agent: &AgentId, why: &BTreeMap<K, usize>) -> String {
    let detail = if why.is_empty() {
        "there are no open todos".to_owned()
    } else {
        why.iter()
            .map(|(k, n)| format!("{n} {}", k.as_ref()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!("no todo is ready for {agent}: {detail}")
}

/// The registered, active agent behind an actor, or why there is none.
pub fn acting_agent<'s>(
    state: &'s State,
    actor: &Actor,
    action: &str,
) -> Result<&'s Agent, Refusal> {
    let Some(id) = actor.agent() else {
        return Err(Refusal::rule(
            Code::AgentsOnly,
            format!("only a registered agent may {action}: claims belong to registered agents"),
        )
        .with_hint(Hint::new(
            format!("pass --agent ID (or set LOOPX_AGENT) for an agent registered with {N}"),
            [Next::RegisterAgent(None)],
        )));
    };
    registered(state, id)
}

/// An agent acting must be registered and not retired.
pub fn registered<'s>(state: &'s State, id: &AgentId) -> Result<&'s Agent, Refusal> {
    match state.agents.get(id) {
        Some(a) if a.status == AgentStatus::Active => Ok(a),
        Some(_) => Err(
            Refusal::rule(Code::AgentRetired, format!("agent {id} is retired")).with_hint(
                Hint::new(
                    format!("register it again with {N}"),
                    [Next::RegisterAgent(Some(id.to_string()))],
                ),
            ),
        ),
        None => Err(
            Refusal::rule(Code::NotRegistered, format!("agent {id} is not registered")).with_hint(
                Hint::new(
                    format!("register it first: {N}"),
                    [Next::RegisterAgent(Some(id.to_string()))],
                ),
            ),
        ),
    }
}

/// Trims text a user gave and refuses it when nothing is left.
pub(crate) fn non_empty(text: &str, what: &str) -> Result<String, Refusal> {
    let t = text.trim();
    if t.is_empty() {
        Err(Refusal::usage(
            Code::EmptyText,
            format!("the {what} is empty"),
        ))
    } else {
        Ok(t.to_owned())
    }
}
