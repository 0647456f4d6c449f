//! The incremental tick against a cold full rewrite, over random ops in a
//! real repository: every tick's tree, state and cache must be exactly what
//! writing every file from nothing and reading it back gives.

use std::collections::BTreeMap;

use super::write::on_read;
use super::*;
use crate::cache;
use crate::error::{Code, Refusal};
use crate::model::{
    Actor, AgentId, Blocks, EvidenceId, EvidenceKind, GateId, GateKind, GoalId, Outcome, Priority,
    Runtime, TodoId, TodoStatus,
};
use crate::model::{State, files};
use crate::op::{
    AgentRegister, EvidenceAdd, GateAnswer, GateOpen, Init, RefreshState, TodoAdd, TodoArchive,
    TodoClaim, TodoDone, TodoRelease, TodoUpdate,
};
use crate::op::{Change, Op};
use crate::store::{Person, Store, Tip};
use crate::time::{Span, Timestamp};

/// splitmix64: a repeatable sequence from a seed (no extra crate).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, from: &'a [T]) -> Option<&'a T> {
        (!from.is_empty()).then(|| &from[self.below(from.len())])
    }
}

const AGENTS: [&str; 3] = ["agent-a", "agent-b", "agent-c"];

fn human() -> Actor {
    Actor::Human {
        name: "Ada".to_owned(),
        email: "ada@example.com".to_owned(),
    }
}

fn main_goal() -> GoalId {
    GoalId::new("main").unwrap()
}

/// A random op that the state may well take (and may refuse: a refusal
/// must leave nothing behind either).
fn random_op(rng: &mut Rng, state: &State, n: u64, at: Timestamp) -> Op {
    let todos: Vec<&crate::model::Todo> = state.todos.values().collect();
    let agent = AgentId::new(AGENTS[rng.below(AGENTS.len())]).unwrap();
    let claimed: Vec<&crate::model::Todo> = todos
        .iter()
        .copied()
        .filter(|t| t.claim.is_some())
        .collect();
    let owner_op = |t: &crate::model::Todo| Actor::Agent(t.claim.as_ref().unwrap().owner.clone());
    let (actor, change) = match rng.below(12) {
        0 | 1 => (
            human(),
            Change::TodoAdd(TodoAdd {
                note: (rng.below(2) == 0).then(|| format!("note {n}")),
                ..TodoAdd::new(
                    TodoId::from_hex(&format!("{:08x}", rng.next() as u32)),
                    main_goal(),
                    format!("Todo {n}"),
                    Priority::DEFAULT,
                )
            }),
        ),
        2 | 3 => match rng.pick(&todos) {
            Some(t) => (
                Actor::Agent(agent),
                Change::TodoClaim(TodoClaim {
                    todo: t.id.clone(),
                    epoch: t.epoch,
                    lease: Span::minutes(10),
                }),
            ),
            None => return random_op(rng, state, n, at),
        },
        4 | 5 => match rng.pick(&claimed) {
            Some(t) => (
                owner_op(t),
                Change::TodoUpdate(TodoUpdate {
                    todo: t.id.clone(),
                    epoch: t.epoch,
                    status: [None, Some(TodoStatus::Blocked)][rng.below(2)],
                    note: Some(format!("progress {n}")),
                }),
            ),
            None => return random_op(rng, state, n, at),
        },
        6 => match rng.pick(&claimed) {
            Some(t) => (
                owner_op(t),
                Change::TodoDone(TodoDone {
                    todo: t.id.clone(),
                    epoch: t.epoch,
                    note: None,
                    validation: None,
                }),
            ),
            None => return random_op(rng, state, n, at),
        },
        7 => match rng.pick(&claimed) {
            Some(t) => (
                owner_op(t),
                Change::TodoRelease(TodoRelease {
                    todo: t.id.clone(),
                    epoch: t.epoch,
                    force: false,
                }),
            ),
            None => return random_op(rng, state, n, at),
        },
        8 => (
            human(),
            Change::TodoArchive(TodoArchive {
                todos: todos
                    .iter()
                    .filter(|t| t.status == TodoStatus::Done)
                    .map(|t| t.id.clone())
                    .collect(),
            }),
        ),
        9 => match state.gates.values().find(|g| g.is_open()) {
            Some(g) if rng.below(2) == 0 => (
                human(),
                Change::GateAnswer(GateAnswer {
                    gate: g.id.clone(),
                    choice: g.options[0].clone(),
                    note: None,
                }),
            ),
            _ => (
                Actor::Agent(agent),
                Change::GateOpen(GateOpen {
                    gate: GateId::from_hex(&format!("{:08x}", rng.next() as u32)),
                    goal: main_goal(),
                    question: format!("Which way, {n}?"),
                    options: vec!["left".to_owned(), "right".to_owned()],
                    kind: GateKind::Decision,
                    blocks: Blocks::Goal,
                }),
            ),
        },
        10 => (
            Actor::Agent(agent),
            Change::RefreshState(RefreshState {
                todo: claimed.first().map(|t| t.id.clone()),
                next_action: Some(format!("next {n}")),
                ..RefreshState::new(
                    main_goal(),
                    [Outcome::Advanced, Outcome::Unchanged][rng.below(2)],
                )
            }),
        ),
        _ => (
            human(),
            Change::EvidenceAdd(EvidenceAdd {
                todo: rng.pick(&todos).map(|t| t.id.clone()),
                ..EvidenceAdd::new(
                    EvidenceId::from_hex(&format!("{:08x}", rng.next() as u32)),
                    main_goal(),
                    EvidenceKind::Note,
                    format!("looked at {n}"),
                )
            }),
        ),
    };
    Op {
        id: crate::model::OpId::from_hex(&format!("{n:016x}")),
        at,
        actor,
        signature: None,
        change,
    }
}

/// The same state with nothing shared: every map rebuilt from its entries,
/// so comparing two of them visits every entity (the full path).
fn unshared(s: &State) -> State {
    fn copy<K: Ord + Clone, V: Clone>(
        m: &crate::model::Entities<K, V>,
    ) -> crate::model::Entities<K, V> {
        m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }
    State {
        meta: s.meta.clone(),
        goals: copy(&s.goals),
        agents: copy(&s.agents),
        todos: copy(&s.todos),
        gates: copy(&s.gates),
        quota: copy(&s.quota),
        signers: copy(&s.signers),
        machines: copy(&s.machines),
    }
}

/// The cache files' names and bytes after writing `state` at `tip`.
fn cache_bytes(store: &Store, tip: &Tip, state: &State) -> Vec<(String, Vec<u8>)> {
    cache::write(store, tip, state);
    cache_files(store)
}

/// The cache files of the state ref, by name.
fn cache_files(store: &Store) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(cache::folder(store))
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&path).unwrap())
        })
        .collect();
    files.sort();
    assert!(files.iter().any(|(n, _)| n == "head"), "a head file");
    files
}

#[test]
fn every_incremental_tick_writes_what_a_cold_full_rewrite_writes() {
    // A small board sharded (from 8 todos, 2 a shard), so updating the
    // cache in place is exercised shard by shard.
    cache::SHARD_FROM_TEST.with(|c| c.set(Some(8)));
    let mut reused = 0;
    let mut sharded = 0;
    let dir = tempfile::tempdir().unwrap();
    crate::git::stdout_of(crate::git::command_in(dir.path(), &["init", "-q"]), &[]).unwrap();
    let store = Store::discover(dir.path()).unwrap();
    let who = Person {
        name: "Ada".to_owned(),
        email: "ada@example.com".to_owned(),
    };
    let mut at = Timestamp::parse("2026-01-01T09:00:00Z").unwrap();
    let mut rng = Rng(29);
    let mut tip: Option<Tip> = None;
    let mut state = State::default();
    // Everything written outside the live state so far, for the full tree.
    let mut records: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut landed = 0;
    let setup = std::iter::once(Change::Init(Init {
        goal: Some(main_goal()),
        objective: Some("Ship".to_owned()),
    }))
    .chain(AGENTS.iter().map(|a| {
        Change::AgentRegister(AgentRegister {
            agent: AgentId::new(a).unwrap(),
            runtime: Runtime::Codex,
            capabilities: Vec::new(),
            goals: None,
        })
    }));
    let mut setup: Vec<Change> = setup.collect();
    setup.reverse();
    for n in 1..=300u64 {
        at = at.plus(Span::minutes(1));
        let op = match setup.pop() {
            Some(change) => Op {
                id: crate::model::OpId::from_hex(&format!("{n:016x}")),
                at,
                actor: match &change {
                    Change::AgentRegister(AgentRegister { agent, .. }) => {
                        Actor::Agent(agent.clone())
                    }
                    _ => human(),
                },
                signature: None,
                change,
            },
            None => random_op(&mut rng, &state, n, at),
        };
        // The full path: the same op on a copy that shares nothing, its
        // files found by comparing every entity (below).
        let full = plan_tick(
            tip.as_ref(),
            &unshared(&state),
            &op,
            crate::model::WRITES,
            &[],
        );
        let written = match Tick::new(&store, tip.as_ref(), &state, &op, &who)
            .skip_empty()
            .write()
        {
            Ok(w) => Ok(w),
            Err(TickError::Refused(r)) => Err(r),
            Err(TickError::Failed(e)) => panic!("{e:#}"),
        };
        let (written, full) = match (written, full) {
            (Ok(w), Ok(f)) => (w, f),
            (Err(a), Err(b)) => {
                assert_eq!(a.code, b.code, "tick {n}: both paths refuse alike");
                continue;
            }
            (w, f) => panic!(
                "tick {n}: the paths disagree: incremental {:?}, full {:?}",
                w.err().map(|r| r.message),
                f.err().map(|r| r.message)
            ),
        };
        // Two maps that share nothing are compared entry by entry.
        assert_eq!(written.state, full.state, "tick {n}: the state after");
        let full_changes = match &tip {
            Some(_) => files::changes(
                &unshared(&state),
                &unshared(&full.state),
                &files::Records {
                    evidence: &full.effect.evidence,
                    archived: Some(&full.effect.archived),
                },
            ),
            None => files::encode_all(&full.state),
        };
        let Some(new) = written.tip else {
            assert!(
                full_changes.is_empty(),
                "tick {n}: skipped, yet files change"
            );
            continue;
        };
        landed += 1;
        let changes = plan_tick(tip.as_ref(), &state, &op, crate::model::WRITES, &[])
            .expect("planned once already")
            .changes;
        assert_eq!(changes, full_changes, "tick {n}: the files written");
        // What the cache is told the tick touched: the live files written
        // (the first tick writes every file, whatever it is told).
        let t = files::touched(&state, &written.state);
        let mut told: Vec<String> = t.meta.then(|| files::META.to_owned()).into_iter().collect();
        told.extend(t.goals.iter().map(files::goal_path));
        told.extend(t.agents.iter().map(files::agent_path));
        told.extend(t.todos.iter().map(files::todo_path));
        told.extend(t.gates.iter().map(files::gate_path));
        told.extend(t.quota.iter().map(files::quota_path));
        told.extend(t.signers.iter().map(files::signer_path));
        told.extend(t.machines.iter().map(files::machine_path));
        let mut live: Vec<String> = changes
            .iter()
            .map(|(p, _)| p.clone())
            .filter(|p| {
                !matches!(
                    files::kind_of(p),
                    files::Kind::Evidence | files::Kind::Archived
                )
            })
            .collect();
        told.sort();
        live.sort();
        if tip.is_some() {
            assert_eq!(told, live, "tick {n}: the entities touched");
        }
        for (path, bytes) in &changes {
            if files::kind_of(path) == files::Kind::Evidence
                || files::kind_of(path) == files::Kind::Archived
            {
                records.insert(path.clone(), bytes.clone().expect("records are written"));
            }
        }
        // The cold full rewrite: every file from nothing gives the very
        // same tree.
        let mut all = files::encode_all(&written.state);
        all.extend(records.iter().map(|(p, b)| (p.clone(), Some(b.clone()))));
        let cold = store
            .write_commit(None, &all, "cold", &who, &who, 0)
            .unwrap();
        assert_eq!(cold.tree, new.tree, "tick {n}: the tree");
        // Read back cold, the state and the cache are the same bytes.
        let cold = snapshot(&store, new.clone()).unwrap();
        assert_eq!(cold.state, written.state, "tick {n}: the state read back");
        // The cache updated in place from the parent's (the shards of the
        // touched todos and the head) reads back as the cold state.
        cache::update(&store, tip.as_ref(), &new, &written.state, &t);
        let (at, from_cache) = cache::read(&store, new.commit).expect("the updated cache reads");
        assert_eq!(at, new, "tick {n}: the cached tip");
        assert_eq!(from_cache, cold.state, "tick {n}: the updated cache");
        let files = cache_files(&store);
        let head = String::from_utf8_lossy(&files.iter().find(|(n, _)| n == "head").unwrap().1)
            .into_owned();
        if files.len() > 1 {
            sharded += 1;
        }
        if head
            .lines()
            .any(|l| l.starts_with("shard ") && !l.contains(&new.commit.to_string()))
        {
            reused += 1;
        }
        // Now and then a full rewrite, the same bytes from either state;
        // else the next update builds on this one.
        if rng.below(4) == 0 {
            assert_eq!(
                cache_bytes(&store, &new, &written.state),
                cache_bytes(&store, &new, &cold.state),
                "tick {n}: the cache"
            );
        }
        store
            .writer()
            .cas(new.commit, tip.as_ref().map(|t| t.commit), "test", &who)
            .unwrap();
        tip = Some(new);
        // Sometimes the next tick starts from a fresh read (a new
        // process), sometimes from the state in hand (a replay).
        state = if rng.below(8) == 0 {
            cold.state
        } else {
            written.state
        };
    }
    assert!(landed > 150, "only {landed} of 300 ticks landed");
    assert!(sharded > 100, "only {sharded} ticks had a sharded cache");
    assert!(reused > 50, "only {reused} ticks reused an untouched shard");
    assert!(
        records.keys().any(|p| p.starts_with("archive/")),
        "no archive written"
    );
    assert!(
        records.keys().any(|p| p.starts_with("evidence/")),
        "no evidence written"
    );
}

/// A tick through the repository handle alone, as the layers below the
/// commands write one: no command context; the caller, the actor, the time
/// and the id source passed as values; what the redactor took out returned
/// to the caller, not printed. (The changes are read from their stored
/// form, which does not depend on how `Change` is spelled in Rust.)
#[test]
fn a_tick_lands_through_the_repository_handle_alone() {
    use crate::ids::IdGen;
    use crate::model::Caller;
    use crate::repo::{Clock, Repo};
    let dir = tempfile::tempdir().unwrap();
    crate::git::stdout_of(crate::git::command_in(dir.path(), &["init", "-q"]), &[]).unwrap();
    let at = Timestamp::parse("2026-01-01T09:00:00Z").unwrap();
    let repo = Repo::open(dir.path(), None, Clock::Fixed(at)).unwrap();
    let ids = IdGen::new(Some("seed".to_owned()), 1);
    let change = |stored: &str| -> Change { toml::from_str(stored).unwrap() };
    let none = load(&repo).err().expect("no state yet");
    assert_eq!(
        none.downcast_ref::<Refusal>().map(|r| r.code),
        Some(Code::NoState)
    );

    let first = op(
        human(),
        at,
        &ids,
        change("op = \"init\"\ngoal = \"main\"\nobjective = \"Ship\"\n"),
    )
    .unwrap();
    assert!(first.redacted.is_empty());
    let started = init(&repo, &Caller::Human, first.op).unwrap();
    assert_eq!(started.tip.tick, 1);
    // The first tick cannot be made twice.
    let again = op(human(), at, &ids, change("op = \"init\"\n")).unwrap();
    let refused = init(&repo, &Caller::Human, again.op).err().unwrap();
    assert_eq!(
        refused.downcast_ref::<Refusal>().map(|r| r.code),
        Some(Code::AlreadyInitialized)
    );

    let agent = AgentId::new("agent-a").unwrap();
    let register = "op = \"agent.register\"\nagent = \"agent-a\"\nruntime = \"codex\"\n";
    let mut built = 0;
    let caller = Caller::Agent(agent.clone());
    let done = Commit::new(&repo, &caller)
        .run(|state| {
            built += 1;
            assert_eq!(state, &started.state, "built from the tip it lands on");
            Ok(op(Actor::Agent(agent.clone()), at, &ids, change(register))?.op)
        })
        .unwrap();
    assert_eq!((done.tip.tick, built), (2, 1));
    assert_eq!(done.op.actor, Actor::Agent(agent));
    let snap = load(&repo).unwrap();
    assert_eq!(snap.tip, done.tip);
    assert_eq!(snap.state, done.state);

    let secret = format!(
        "op = \"init\"\nobjective = \"deploy with GH_PAT=ghp_{}\"\n",
        "a1".repeat(18)
    );
    let stamped = op(human(), at, &ids, change(&secret)).unwrap();
    assert_eq!(stamped.redacted, ["objective"]);
    let toml = toml::to_string(&stamped.op.change).unwrap();
    assert!(
        !toml.contains("ghp_a1a1") && toml.contains(crate::redact::MARK),
        "{toml}"
    );
}

/// `on_read` builds the tick from the state the caller read while the
/// state ref still names its commit, and reads again once the ref moved:
/// a stale read never becomes the parent of a tick.
#[test]
fn a_tick_from_a_read_state_uses_it_only_while_the_ref_names_it() {
    use crate::ids::IdGen;
    use crate::model::Caller;
    use crate::repo::{Clock, Repo};
    let dir = tempfile::tempdir().unwrap();
    crate::git::stdout_of(crate::git::command_in(dir.path(), &["init", "-q"]), &[]).unwrap();
    let at = Timestamp::parse("2026-01-01T09:00:00Z").unwrap();
    let repo = Repo::open(dir.path(), None, Clock::Fixed(at)).unwrap();
    let ids = IdGen::new(Some("seed".to_owned()), 1);
    let change = |stored: &str| -> Change { toml::from_str(stored).unwrap() };
    let agent = |n: &str| -> Change {
        change(&format!(
            "op = \"agent.register\"\nagent = \"{n}\"\nruntime = \"codex\"\n"
        ))
    };
    let first = op(
        human(),
        at,
        &ids,
        change("op = \"init\"\ngoal = \"main\"\nobjective = \"Ship\"\n"),
    )
    .unwrap();
    init(&repo, &Caller::Human, first.op).unwrap();

    // Read now, and the ref does not move: the tick starts from what was
    // read (marked here, so using it shows; the build then stops, so the
    // mark is never written).
    let mut read = load(&repo).unwrap();
    read.state.meta.settings.lease = Span::minutes(7);
    let mut seen = Vec::new();
    let stopped = on_read(&repo, &Caller::Human, Some(read), |state| {
        seen.push(state.meta.settings.lease);
        anyhow::bail!("stop here")
    });
    assert!(stopped.is_err());
    assert_eq!(seen, [Span::minutes(7)], "the read state, once");
    let done = on_read(&repo, &Caller::Human, Some(load(&repo).unwrap()), |_| {
        Ok(op(human(), at, &ids, agent("agent-a"))?.op)
    })
    .unwrap();
    assert_eq!(done.tip.tick, 2);

    // Read, then another tick lands: the stale read is dropped and the
    // tick is built from, and lands on, the new tip.
    let stale = load(&repo).unwrap();
    let moved = Commit::new(&repo, &Caller::Human)
        .run(|_| Ok(op(human(), at, &ids, agent("agent-b"))?.op))
        .unwrap();
    assert_eq!(moved.tip.tick, 3);
    let mut parents = Vec::new();
    let last = on_read(&repo, &Caller::Human, Some(stale), |state| {
        parents.push(state.agents.len());
        Ok(op(human(), at, &ids, agent("agent-c"))?.op)
    })
    .unwrap();
    assert_eq!(
        parents,
        [2],
        "built from the moved tip (agent-a and agent-b)"
    );
    assert_eq!(last.tip.tick, 4);
    assert_eq!(last.state.agents.len(), 3);
    let back = snapshot(repo.store(), last.tip.clone()).unwrap();
    assert_eq!(back.state, last.state, "the tree holds every tick");
}

/// The body of the cache's head file (after its header, whose shard table
/// names the commit each shard was written at).
fn head_body(store: &Store) -> Vec<u8> {
    let files = cache_files(store);
    let head = &files.iter().find(|(n, _)| n == "head").unwrap().1;
    let end = head.windows(2).position(|w| w == b"\n\n").unwrap() + 2;
    head[end..].to_vec()
}

#[test]
fn a_tick_from_a_partial_read_writes_what_a_cold_full_read_writes() {
    // Sharded from 16 todos (4 a shard): most ticks' todos sit in a shard
    // of their own, beside shards the tick never reads.
    cache::SHARD_FROM_TEST.with(|c| c.set(Some(16)));
    let dir = tempfile::tempdir().unwrap();
    crate::git::stdout_of(crate::git::command_in(dir.path(), &["init", "-q"]), &[]).unwrap();
    let store = Store::discover(dir.path()).unwrap();
    let who = Person {
        name: "Ada".to_owned(),
        email: "ada@example.com".to_owned(),
    };
    let mut at = Timestamp::parse("2026-01-01T09:00:00Z").unwrap();
    let mut rng = Rng(2929);
    let mut tip: Option<Tip> = None;
    let mut state = State::default();
    let (mut partial, mut fell_short, mut carried, mut completed, mut refused) = (0, 0, 0, 0, 0);
    let mut digests_after_part = 0;
    let mut setup: Vec<Change> = std::iter::once(Change::Init(Init {
        goal: Some(main_goal()),
        objective: Some("Ship".to_owned()),
    }))
    .chain(AGENTS.iter().map(|a| {
        Change::AgentRegister(AgentRegister {
            agent: AgentId::new(a).unwrap(),
            runtime: Runtime::Codex,
            // Only agent-a can take a todo that needs rust: its readiness
            // then hangs on the other agents' scoped claims.
            capabilities: if *a == "agent-a" {
                vec!["rust".to_owned()]
            } else {
                Vec::new()
            },
            goals: None,
        })
    }))
    .collect();
    setup.reverse();
    for n in 1..=400u64 {
        at = at.plus(Span::minutes(1 + rng.below(7) as i64));
        let mut op = match setup.pop() {
            Some(change) => Op {
                id: crate::model::OpId::from_hex(&format!("{n:016x}")),
                at,
                actor: match &change {
                    Change::AgentRegister(AgentRegister { agent, .. }) => {
                        Actor::Agent(agent.clone())
                    }
                    _ => human(),
                },
                signature: None,
                change,
            },
            None => todo_op(&mut rng, &state, n, at),
        };
        // Todos that wait for others, need a capability or hold a scope,
        // so the head's counts depend on more than the todo itself.
        if let Change::TodoAdd(add) = &mut op.change {
            let ids: Vec<TodoId> = state.todos.keys().cloned().collect();
            if let Some(a) = rng.pick(&ids)
                && rng.below(3) == 0
            {
                add.after.push(a.clone());
            }
            if rng.below(4) == 0 {
                add.scope.push(format!("src/{}/**", rng.below(3)));
            }
            if rng.below(2) == 0 {
                add.capabilities.push("rust".to_owned());
            }
        }
        // The first 40 ticks fill the board, only adds and claims after.
        if n < 40 && !matches!(op.change, Change::TodoAdd(_)) && tip.is_some() && n > 4 {
            let add = TodoAdd::new(
                TodoId::from_hex(&format!("{:08x}", rng.next() as u32)),
                main_goal(),
                format!("Todo {n}"),
                Priority::DEFAULT,
            );
            op = Op {
                actor: human(),
                change: Change::TodoAdd(add),
                ..op
            };
        }
        let full = plan_tick(
            tip.as_ref(),
            &unshared(&state),
            &op,
            crate::model::WRITES,
            &[],
        );
        // The partial read of the todo the op names (as typed: the whole
        // id or a prefix of it), from the cache at the parent.
        let part = match (&tip, op.change.todo()) {
            (Some(t), Some(id)) => {
                let hex = id.hex();
                let typed = &hex[..2 + rng.below(hex.len() - 1)];
                cache::read_part(&store, t.commit, &[typed])
            }
            _ => None,
        };
        let part = part.filter(|(_, s)| s.todos.is_partial());
        let mut from_part = None;
        if let Some((at_tip, before)) = &part {
            assert_eq!(
                Some(at_tip),
                tip.as_ref(),
                "tick {n}: the partial read's tip"
            );
            let planned = plan_tick(tip.as_ref(), before, &op, crate::model::WRITES, &[]);
            if before.todos.fell_short_of_whole() {
                fell_short += 1;
            } else {
                partial += 1;
                match (&planned, &full) {
                    (Ok(p), Ok(f)) => {
                        assert_eq!(
                            p.changes, f.changes,
                            "tick {n}: the files a partial tick writes"
                        );
                        assert_eq!(p.message, f.message, "tick {n}: the message");
                    }
                    (Err(a), Err(b)) => {
                        assert_eq!(a.code, b.code, "tick {n}: both refuse alike");
                        refused += 1;
                    }
                    (p, f) => panic!(
                        "tick {n}: partial {:?}, full {:?}",
                        p.as_ref().err().map(|r| &r.message),
                        f.as_ref().err().map(|r| &r.message)
                    ),
                }
                from_part = planned.ok().map(|p| (before.clone(), p.state));
            }
        }
        let written = match Tick::new(&store, tip.as_ref(), &state, &op, &who)
            .skip_empty()
            .write()
        {
            Ok(w) => Ok(w),
            Err(TickError::Refused(r)) => Err(r),
            Err(TickError::Failed(e)) => panic!("{e:#}"),
        };
        let Ok(written) = written else { continue };
        let Some(new) = written.tip else { continue };
        let cold = snapshot(&store, new.clone()).unwrap();
        match &from_part {
            Some((before, after)) => {
                let t = files::touched(before, after);
                cache::update_from(&store, tip.as_ref(), Some(before), &new, after, &t);
                if let Ok(bytes) = std::fs::read(cache::head_path(&cache::folder(&store)))
                    && String::from_utf8_lossy(&bytes)
                        .lines()
                        .any(|l| l.starts_with("shard ") && !l.contains(&new.commit.to_string()))
                {
                    carried += 1;
                } else {
                    completed += 1;
                }
            }
            None => {
                let t = files::touched(&state, &written.state);
                cache::update(&store, tip.as_ref(), &new, &written.state, &t);
            }
        }
        // Whatever path wrote it, the cache reads back as the cold state,
        // and its head's body (the claimed todos and the board's counts)
        // is byte for byte a cold write's.
        if std::fs::symlink_metadata(cache::head_path(&cache::folder(&store))).is_ok() {
            let (_, from_cache) = cache::read(&store, new.commit).expect("the updated cache reads");
            assert_eq!(from_cache, cold.state, "tick {n}: the updated cache");
            let d = ready_lists_start_the_pick_order(&store, &new, &cold.state, n);
            if from_part.is_some() {
                digests_after_part += d;
            }
            let body = head_body(&store);
            cache::write(&store, &new, &cold.state);
            assert_eq!(
                String::from_utf8_lossy(&body),
                String::from_utf8_lossy(&head_body(&store)),
                "tick {n}: the head"
            );
        } else {
            cache::write(&store, &new, &cold.state);
        }
        store
            .writer()
            .cas(new.commit, tip.as_ref().map(|t| t.commit), "test", &who)
            .unwrap();
        tip = Some(new);
        state = cold.state;
    }
    assert!(
        partial > 200,
        "only {partial} ticks decided from a partial read"
    );
    assert!(
        carried > 100,
        "only {carried} partial ticks carried the head's counts"
    );
    assert!(
        completed > 20,
        "only {completed} partial ticks completed the state from the parent's shards"
    );
    assert!(
        fell_short > 20,
        "only {fell_short} partial reads fell short"
    );
    assert!(
        refused > 20,
        "only {refused} partial ticks were refused alike"
    );
    assert!(
        digests_after_part > 50,
        "only {digests_after_part} unchanged agents' digests and nothing-ready lists checked after a partial tick"
    );
}

/// Every list of the ready index the cache at `tip` holds is the start of
/// its agent's whole pick order on `state` (all of it when complete):
/// whichever path kept the index, a partial tick's included.
fn ready_lists_start_the_pick_order(store: &Store, tip: &Tip, state: &State, n: u64) -> usize {
    use crate::op::turn::ready;
    let mut digests = 0;
    let all = ready::Sizes {
        cap: usize::MAX,
        low: 0,
    };
    let claims = cache::read_claims(store, tip.commit).expect("the cache's head");
    for agent in state.agents.values() {
        for goal in state.goals.keys() {
            let Some(list) = cache::ready_list(store, tip.commit, &agent.id, goal) else {
                continue;
            };
            let whole = ready::build(state, agent, goal, all).todos;
            let want = if list.complete {
                &whole[..]
            } else {
                &whole[..list.todos.len().min(whole.len())]
            };
            assert_eq!(
                list.todos, want,
                "tick {n}: {}'s ready list on {goal}",
                agent.id
            );
            // An unchanged agent's digest, on its last turn's goal only,
            // is the whole state's at its time.
            if let Some(u) = &list.unchanged {
                let last = agent.last_turn.as_ref().expect("an unchanged last turn");
                assert!(
                    last.outcome == Outcome::Unchanged && &last.goal == goal,
                    "tick {n}: a digest for {} on {goal}",
                    agent.id
                );
                let at = Timestamp::from_unix(u.at);
                assert_eq!(
                    u.digest,
                    crate::op::turn::digest(state, &agent.id, goal, at),
                    "tick {n}: {}'s digest on {goal}",
                    agent.id
                );
                digests += 1;
            }
            // Nothing ready, with the whole state's reasons, at its time.
            if let Some(nothing) = &list.nothing {
                let at = Timestamp::from_unix(nothing.at);
                let whole = crate::op::rules::best_ready(state, agent, Some(goal), at);
                assert_eq!(
                    whole.err().map(|r| r.message),
                    Some(crate::op::rules::nothing_ready(&agent.id, &nothing.why)),
                    "tick {n}: nothing ready for {} on {goal}",
                    agent.id
                );
                digests += 1;
            }
            // Parsed only up to its first ready todo (what should-run
            // reads), the list answers as the whole list does: at the
            // times claims start and end, where readiness moves.
            let times = claims
                .state
                .todos
                .values()
                .filter_map(|t| t.claim.as_ref())
                .flat_map(|c| [c.since, c.lease_until, c.lease_until.plus(Span::seconds(1))]);
            for now in times.chain([Timestamp::from_unix(0)]) {
                let short = claims
                    .ready_list_until(&agent.id, goal, ready::takes(&claims.state, agent, now))
                    .expect("the index's list");
                assert!(
                    list.todos.starts_with(&short.todos),
                    "tick {n}: {}'s shortened list on {goal} starts the list",
                    agent.id
                );
                assert!(
                    !short.complete || (list.complete && short.todos == list.todos),
                    "tick {n}: {}'s shortened list on {goal} reads as complete only when whole",
                    agent.id
                );
                let firsts = |l| {
                    ready::first_ready(&claims.state, l, agent, now, 1)
                        .map(|v| v.into_iter().map(|t| t.id.clone()).collect::<Vec<_>>())
                };
                assert_eq!(
                    firsts(&short),
                    firsts(&list),
                    "tick {n}: {}'s first ready todo on {goal} at {now} from the shortened list",
                    agent.id
                );
                assert!(
                    short.nothing == list.nothing && short.unchanged == list.unchanged,
                    "tick {n}: the shortened list's flags"
                );
            }
        }
    }
    digests
}

/// A random op for the partial tick's test: mostly one on a todo (a claim
/// of a todo nobody holds, or the owner's update, release or done), an
/// open gate answered, else any of [`random_op`]'s.
fn todo_op(rng: &mut Rng, state: &State, n: u64, at: Timestamp) -> Op {
    let todos: Vec<&crate::model::Todo> = state.todos.values().collect();
    let claimed: Vec<&&crate::model::Todo> = todos.iter().filter(|t| t.claim.is_some()).collect();
    let free: Vec<&&crate::model::Todo> = todos
        .iter()
        .filter(|t| t.claim.is_none() && t.status == TodoStatus::Open)
        .collect();
    let agent = AgentId::new(AGENTS[rng.below(AGENTS.len())]).unwrap();
    let op = |actor, change| Op {
        id: crate::model::OpId::from_hex(&format!("{n:016x}")),
        at,
        actor,
        signature: None,
        change,
    };
    if let Some(g) = state.gates.values().find(|g| g.is_open())
        && rng.below(2) == 0
    {
        let change = Change::GateAnswer(GateAnswer {
            gate: g.id.clone(),
            choice: g.options[0].clone(),
            note: None,
        });
        return op(human(), change);
    }
    let owner = |t: &crate::model::Todo| Actor::Agent(t.claim.as_ref().unwrap().owner.clone());
    match rng.below(8) {
        0..=2 => match rng.pick(&free) {
            Some(t) => op(
                Actor::Agent(agent),
                Change::TodoClaim(TodoClaim {
                    todo: t.id.clone(),
                    epoch: t.epoch,
                    lease: Span::minutes(5 + rng.below(20) as i64),
                }),
            ),
            None => random_op(rng, state, n, at),
        },
        3 | 4 => match rng.pick(&claimed) {
            Some(t) => op(
                owner(t),
                Change::TodoUpdate(TodoUpdate {
                    todo: t.id.clone(),
                    epoch: t.epoch,
                    status: [None, None, Some(TodoStatus::Blocked)][rng.below(3)],
                    note: Some(format!("progress {n}")),
                }),
            ),
            None => random_op(rng, state, n, at),
        },
        5 => match rng.pick(&claimed) {
            Some(t) => op(
                owner(t),
                Change::TodoRelease(TodoRelease {
                    todo: t.id.clone(),
                    epoch: t.epoch,
                    force: false,
                }),
            ),
            None => random_op(rng, state, n, at),
        },
        6 => match rng.pick(&claimed) {
            Some(t) => op(
                owner(t),
                Change::TodoDone(TodoDone {
                    todo: t.id.clone(),
                    epoch: t.epoch,
                    note: None,
                    validation: None,
                }),
            ),
            None => random_op(rng, state, n, at),
        },
        _ => random_op(rng, state, n, at),
    }
}
