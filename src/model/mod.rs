//! The state: plain serde data, no I/O, no git.
//!
//! [`State`] is the whole board at one tick. [`files`] maps it to and from the
//! canonical TOML files of the tree (DESIGN §2, `docs/format.md`); the rules
//! that change it live in `op`.

pub mod actor;
pub mod agent;
pub mod entities;
pub mod evidence;
pub mod files;
pub mod gate;
pub mod glob;
pub mod goal;
pub mod id;
pub mod machine;
pub mod quota;
pub mod run;
pub mod runtime;
pub mod signer;
pub mod todo;
pub mod usage;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use actor::{Actor, Caller};
pub use agent::{Agent, AgentStatus, LastTurn, Outcome, Parked, Progress};
pub use entities::Entities;
pub use evidence::{Evidence, EvidenceKind};
pub use gate::{Blocks, Gate, GateKind, GateStatus, Notified};
pub use goal::{Goal, GoalStatus, QuotaPolicy};
pub use id::{AgentId, EvidenceId, GateId, GoalId, MachineName, OpId, SignerName, TodoId};
pub use machine::Machine;
pub use runtime::Runtime;
pub use signer::{Signer, Vouch};
pub use todo::{Claim, Note, Priority, Todo, TodoStatus, Validation};

use crate::error::{Code, Hint, N, Next, Refusal};
use crate::time::Span;

/// The format version of the state and the op log this binary writes: in
/// `loopx.toml` (by `init`) and in every tick's `Loopx-Format` trailer. A
/// state with a higher number is refused with "upgrade loopx"
/// (`format-too-new`); so is a tick holding an op kind this binary does not
/// know (`unknown-op`). A newer binary reads every lower number as it is.
///
/// This is the one place the number is defined. A change that an older
/// binary would misread or drop (a new op kind, a new field in an op or a
/// file, a new meaning) bumps it and adds a line below and a row to
/// docs/format.md, "Versions and upgrades" (which also says what a team
/// running two versions sees). What each version added:
///
/// - 1 (loopx 0.1.0): the state ref, its tree and files (goals, agents,
///   todos with claims, leases, epochs, validations and notes, gates, quota
///   ledgers, evidence, the archive), the tick message, and the 23 op
///   kinds of `op::Change::KINDS`.
/// - 2 (unreleased): signed human authority and trusted validations: an op's
///   `signature`, gate answers' and withdrawals' `signature`,
///   `signers/<name>.toml`, the ops `signer.announce` and `todo.trust`, a
///   todo's `validate_from`, and `todo.edit`'s `validate`; and
///   the input limits of `op::limits` (held by `apply` for ticks of format
///   2 on, so older ticks apply as written), redacted command argv with
///   `argv_sha256`, `output_redacted` (the output digest then of the
///   redacted text), stdout and stderr in one pipe; and one
///   notification per gate: the op `gate.notified` and a gate's `notified`.
/// - 3 (unreleased): spend sanity. Parking: the ops `quota.park` and
///   `quota.resume`, an agent's `parked`, a goal's `auto_resume` and
///   `goal.set`'s `auto_resume`, gates an op opens by itself (ids from
///   `GateId::derived`). Stall detection: a goal's `stall_after` and
///   `goal.set`'s, `turn.refresh`'s `progress` fingerprint, an agent's
///   `progress`, and the stall gate a `turn.refresh` opens (`op::progress`).
///   The usage ledger: the op `usage.record`, a ledger's `usage` entries, a
///   goal's `budget` and `goal.set`'s `budget`, a gate's `budget`.
/// - 4 (unreleased): trust, closed. Every new signature binds the state's
///   identity (the root tick's commit id, `trust::record`) and its act's
///   actor must be the human the state announces for the signing key; the
///   op `signer.require` and `loopx.toml`'s `signatures` policy; the
///   agent runtimes `opencode` and `pi`. From format 4 verify also holds
///   every tick to: formats never go down along a chain, an op id appears
///   once along a chain, and the input limits of `op::limits` whatever
///   format a tick claims.
/// - 5 (unreleased): authenticated agents. `machines/<name>.toml`, the ops
///   `machine.propose`, `machine.admit` and `machine.revoke`, an agent's op
///   carrying a `signature` (its machine's, `trust::machine`), and the
///   signing policy's value `all` (`signer.require --machines`).
/// - 6 (unreleased): a ref per goal (docs/scale.md). `loopx.toml`'s
///   `goal_refs`, the op `goal.split`, and the `Loopx-Shared` trailer of a
///   tick on a goal ref (`refs/loopx/goals/<goal>`) naming the shared tip
///   (`refs/loopx/state`) it was applied against. Only a split state's
///   `loopx.toml` says 6: ticks keep recording [`WRITES`], so a team that
///   never splits writes exactly what format 5 wrote, and a format-5 binary
///   refuses a split state by its `loopx.toml` (`format-too-new`) and a
///   `goal.split` tick by its kind (`unknown-op`).
/// - 7 (unreleased): round 4, once. Authority is what the op table declares
///   (`op::authority`): from format 7 a human act is whatever only a human
///   may write, and under a policy that requires human signatures every
///   tick whose actor is a human is signed (`trust::AUTHORITY_SINCE`). The
///   op `settings.set` and `loopx.toml`'s `settings.prices` and
///   `settings.stuck_after`; a goal's `lease` and `goal.set`'s `lease`
///   (`since 7`). Every tick
///   records 7 and a new state's `loopx.toml` says 7; a state made earlier
///   keeps the number it was made with (formats never go down along a
///   chain, so its ticks from now on record 7).
pub const FORMAT: u32 = 7;

/// The format this binary records in every tick's `Loopx-Format` and in a
/// new state's `loopx.toml` (and `goal.split`, [`FORMAT`]): both 7.
pub const WRITES: u32 = 7;

/// The whole state at one tick. Serde only for the local cache
/// (`crate::cache`): the stored form is [`files`], one TOML file an entity.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct State {
    pub meta: Meta,
    pub goals: Entities<GoalId, Goal>,
    pub agents: Entities<AgentId, Agent>,
    pub todos: Entities<TodoId, Todo>,
    pub gates: Entities<GateId, Gate>,
    /// Each agent's spends, bounded by the quota windows.
    pub quota: Entities<AgentId, quota::Ledger>,
    /// Signers announced in the state, so teammates can find their keys.
    /// Which keys count is decided per machine, never here (`trust`).
    pub signers: Entities<SignerName, Signer>,
    /// Machines (one key per clone) proposed and admitted in the state
    /// (format 5): which may act for which agents (`trust::machine`).
    #[serde(default)]
    pub machines: Entities<MachineName, Machine>,
}

/// `loopx.toml`: the format version and settings shared by every machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    pub format: u32,
    /// Format 6: the state is split into a ref per goal (`goal.split`):
    /// `refs/loopx/state` holds the shared parts (this file, signers,
    /// machines) and each goal's ref its goal ([`State::shared_from`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub goal_refs: bool,
    #[serde(default)]
    pub settings: Settings,
}

impl Default for Meta {
    fn default() -> Self {
        Meta {
            format: WRITES,
            goal_refs: false,
            settings: Settings::default(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// Lease given by `todo claim` when no `--ttl` is passed.
    pub lease: Span,
    /// Grace added to every lease before it counts as expired, for machines
    /// whose clocks disagree.
    pub clock_skew: Span,
    /// Format 4: the team's one signing policy (`trust`). Set only by a
    /// signed `signer.require`.
    #[serde(default, skip_serializing_if = "Signatures::is_off")]
    pub signatures: Signatures,
    /// Format 7: the team's prices by model id, dollars per million tokens,
    /// set by `settings.set`; they come before git config and the shipped
    /// table (`config::price`), so every clone prices a turn alike.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub prices: BTreeMap<String, TeamPrice>,
    /// Format 7: how long a claim's holder may go without a tick (a turn,
    /// an update, a renew) before the views show the claim stuck, set by
    /// `settings.set`; absent, half the claim's lease ([`State::stuck_after`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stuck_after: Option<Span>,
    /// Format 7: the agent-wide slot window, set by `settings.set`: no agent
    /// spends more than `slots` turns in any rolling `window` across every
    /// goal it works on; absent, the largest of its goals' own
    /// ([`State::agent_quota`]), so a second goal adds nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_quota: Option<goal::QuotaPolicy>,
}

/// A team's price for one model: dollars per million tokens.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TeamPrice {
    pub input: f64,
    pub output: f64,
    /// Input tokens read from a cache; `input` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input: Option<f64>,
}

/// The team's signing policy, in `loopx.toml` (format 4). The one signing
/// policy in the state: machine keys for agent ticks extend it with a
/// further value rather than add a second setting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Signatures {
    /// Each machine decides, by its allowed-signers file.
    #[default]
    Off,
    /// Every human act must be signed by a key the state announces for its
    /// actor and the machine trusts, on every machine; a machine whose
    /// allowed-signers file is missing, unreadable or empty refuses every
    /// human act.
    Humans,
    /// Format 5: as `Humans`, and every agent tick must be signed by an
    /// admitted machine allowed to act for its agent (`trust::machine`).
    All,
}

impl Signatures {
    pub fn is_off(&self) -> bool {
        *self == Signatures::Off
    }

    /// Whether human acts must be signed on every machine.
    pub fn humans(self) -> bool {
        !self.is_off()
    }

    /// Whether every agent tick must be signed by an allowed machine.
    pub fn machines(self) -> bool {
        self == Signatures::All
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Signatures::Off => "off",
            Signatures::Humans => "humans",
            Signatures::All => "all",
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            lease: Span::minutes(45),
            clock_skew: Span::seconds(30),
            signatures: Signatures::Off,
            prices: BTreeMap::new(),
            stuck_after: None,
            agent_quota: None,
        }
    }
}

impl State {
    /// The lease `todo claim`, `renew` and `handoff` give on `goal` when no
    /// `--ttl` is passed: the goal's own (format 7, `goal set --lease`),
    /// else the team's (`settings.lease`).
    pub fn lease_for(&self, goal: &GoalId) -> Span {
        self.goals
            .get(goal)
            .and_then(|g| g.lease)
            .unwrap_or(self.meta.settings.lease)
    }

    /// How long the holder of a claim on `goal` may go without a tick
    /// before the claim shows stuck: the team's `stuck_after`, else half
    /// the goal's lease ([`State::lease_for`]).
    pub fn stuck_after(&self, goal: &GoalId) -> Span {
        self.meta
            .settings
            .stuck_after
            .unwrap_or_else(|| Span::seconds(self.lease_for(goal).as_secs() / 2))
    }

    /// [`Entities::settle`] on every map: after the state it was cloned
    /// from is dropped, its own writes move into its base.
    pub fn settle(&mut self) {
        self.goals.settle();
        self.agents.settle();
        self.todos.settle();
        self.gates.settle();
        self.quota.settle();
        self.signers.settle();
        self.machines.settle();
    }

    /// Takes the shared parts of a split state (`loopx.toml`, signers and
    /// machines: what `refs/loopx/state` holds after `goal.split`) from
    /// `shared`, keeping this state's goals, agents, todos, gates and quota:
    /// a goal tick is applied to its goal's state with the shared parts of
    /// the shared tip it pins (docs/scale.md).
    pub fn shared_from(&mut self, shared: &State) {
        self.meta = shared.meta.clone();
        self.signers = shared.signers.clone();
        self.machines = shared.machines.clone();
    }

    /// Whether `other` has the same shared parts as this state.
    pub fn same_shared(&self, other: &State) -> bool {
        self.meta == other.meta && self.signers == other.signers && self.machines == other.machines
    }

    /// The goal a command means when it names none: the only active goal,
    /// or the only goal.
    pub fn default_goal(&self) -> Result<&Goal, Refusal> {
        let active: Vec<&Goal> = self
            .goals
            .values()
            .filter(|g| g.status == GoalStatus::Active)
            .collect();
        match active.as_slice() {
            [one] => Ok(one),
            // A lone goal is the default whatever its status, so commands
            // can say that it is paused or done.
            [] if self.goals.len() == 1 => Ok(self.goals.values().next().expect("one goal")),
            [] if self.goals.is_empty() => Err(Refusal::rule(Code::NoGoal, "there is no goal yet")
                .with_hint(Hint::new(format!("add one with {N}"), [Next::AddGoal]))),
            [] => Err(Refusal::rule(Code::NoActiveGoal, "no goal is active")
                .with_hint("name one with --goal, or set git config loopx.goal")),
            many => Err(Refusal::usage(
                Code::AmbiguousGoal,
                format!(
                    "{} goals are active ({}), so the goal must be named",
                    many.len(),
                    many.iter()
                        .map(|g| g.id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
            .with_hint(format!(
                "pass one of {}, or set git config loopx.goal",
                many.iter()
                    .map(|g| format!("--goal {}", g.id))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    /// The goals `agent` may work on, in id order: the active goals its
    /// record names (`agent register --goal`, format 7), or every active
    /// goal when it names none. A paused, done or removed goal drops out,
    /// never an error ([`State::out_of_scope`] lists them).
    pub fn scope(&self, agent: &AgentId) -> Vec<&Goal> {
        let named = self
            .agents
            .get(agent)
            .map(|a| a.goals.as_slice())
            .unwrap_or_default();
        self.goals
            .values()
            .filter(|g| g.status == GoalStatus::Active)
            .filter(|g| named.is_empty() || named.contains(&g.id))
            .collect()
    }

    /// The goals `agent`'s record names that are not in its
    /// [`State::scope`] (paused, done, or no longer in the state), for
    /// `status` and `agent show`.
    pub fn out_of_scope(&self, agent: &AgentId) -> Vec<GoalId> {
        let Some(a) = self.agents.get(agent) else {
            return Vec::new();
        };
        a.goals
            .iter()
            .filter(|g| {
                self.goals
                    .get(*g)
                    .is_none_or(|x| x.status != GoalStatus::Active)
            })
            .cloned()
            .collect()
    }

    /// The agent-wide slot window of `agent`: the team's
    /// (`settings.agent_quota`), else the largest slots and the largest
    /// window of the goals in its scope, so a second goal never raises
    /// what one agent may spend. None when its scope is empty and the team
    /// set none.
    pub fn agent_quota(&self, agent: &AgentId) -> Option<QuotaPolicy> {
        if let Some(q) = self.meta.settings.agent_quota {
            return Some(q);
        }
        let scope = self.scope(agent);
        let slots = scope.iter().map(|g| g.quota.slots).max()?;
        let window = scope.iter().map(|g| g.quota.window).max()?;
        Some(QuotaPolicy { slots, window })
    }

    pub fn goal(&self, id: &str) -> Result<&Goal, Refusal> {
        let gid = GoalId::new(id).map_err(|e| Refusal::usage(Code::BadId, e))?;
        self.goal_by_id(&gid)
    }

    /// The goal with this id, or the one refusal every command gives for a
    /// goal that does not exist.
    pub fn goal_by_id(&self, id: &GoalId) -> Result<&Goal, Refusal> {
        self.goals.get(id).ok_or_else(|| unknown_goal(id))
    }

    pub fn agent(&self, id: &str) -> Result<&Agent, Refusal> {
        let aid = AgentId::new(id).map_err(|e| Refusal::usage(Code::BadId, e))?;
        self.agents.get(&aid).ok_or_else(|| {
            Refusal::error(Code::UnknownAgent, format!("there is no agent {aid}")).with_hint(
                Hint::new(
                    format!("{N} shows the registered agents"),
                    [Next::ListAgents],
                ),
            )
        })
    }

    /// Resolves what a user typed (a full id or a unique prefix) to a todo.
    pub fn resolve_todo(&self, typed: &str) -> Result<TodoId, Refusal> {
        // A partial map (`crate::cache::read_part`) resolves a prefix among
        // the todos it holds when it holds every todo with that prefix.
        if self.todos.is_partial()
            && let Ok(want) = id::prefix_of(TodoId::PREFIX, TodoId::KIND, typed)
            && self.todos.holds_prefix(&want)
        {
            let held: Vec<&TodoId> = self.todos.iter_held().map(|(k, _)| k).collect();
            return resolve(
                held.iter().copied(),
                TodoId::PREFIX,
                TodoId::KIND,
                typed,
                |id| id.hex(),
            );
        }
        resolve(
            self.todos.keys(),
            TodoId::PREFIX,
            TodoId::KIND,
            typed,
            |id| id.hex(),
        )
    }
}

impl State {
    /// Resolves a typed gate id or prefix.
    pub fn resolve_gate(&self, typed: &str) -> Result<GateId, Refusal> {
        resolve(
            self.gates.keys(),
            GateId::PREFIX,
            GateId::KIND,
            typed,
            |id| id.hex(),
        )
    }
}

/// Resolves a typed todo id or prefix within any set of todos (the live
/// state, or the archive).
pub fn resolve_todo_in(todos: &BTreeMap<TodoId, Todo>, typed: &str) -> Result<TodoId, Refusal> {
    resolve(todos.keys(), TodoId::PREFIX, TodoId::KIND, typed, |id| {
        id.hex()
    })
}

/// Finds the one key whose hex part starts with what the user typed.
fn resolve<'a, K: Clone + Ord + std::fmt::Display + 'a>(
    keys: impl Iterator<Item = &'a K> + Clone,
    prefix: &str,
    kind: &str,
    typed: &str,
    hex: impl Fn(&K) -> &str,
) -> Result<K, Refusal> {
    let want = id::prefix_of(prefix, kind, typed).map_err(|e| Refusal::usage(Code::BadId, e))?;
    let mut found = keys.clone().filter(|k| hex(k).starts_with(&want));
    match (found.next(), found.next()) {
        (Some(k), None) => Ok(k.clone()),
        (None, _) => Err(Refusal::error(
            Code::UnknownId,
            format!("there is no {kind} {prefix}-{want}"),
        )
        .with_hint(Hint::new(
            format!("{N} shows them"),
            [Next::List(kind.to_string())],
        ))),
        (Some(a), Some(b)) => {
            let more = keys.filter(|k| hex(k).starts_with(&want)).count();
            Err(Refusal::usage(
                Code::AmbiguousId,
                format!("{typed:?} matches {more} {kind}s ({a}, {b}, …)"),
            )
            .with_hint("type more characters of the id"))
        }
    }
}

/// The refusal for a goal that does not exist.
pub fn unknown_goal(id: &GoalId) -> Refusal {
    Refusal::error(Code::UnknownGoal, format!("there is no goal {id}"))
        .with_hint(Hint::new(format!("{N} shows the goals"), [Next::ListGoals]))
}
