//! The incremental tick against a cold full rewrite, over random ops in a
//! real repository: every tick's tree, state and cache must be exactly what
//! writing every file from nothing and reading it back gives.

use std::collections::BTreeMap;

use super::*;
use crate::model::{
    Actor, AgentId, Blocks, EvidenceId, EvidenceKind, GateId, GateKind, GoalId, Outcome, Priority,
    Runtime, TodoId, TodoStatus,
};
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
            Change::TodoAdd {
                todo: TodoId::from_hex(&format!("{:08x}", rng.next() as u32)),
                goal: main_goal(),
                title: format!("Todo {n}"),
                priority: Priority::DEFAULT,
                after: Vec::new(),
                capabilities: Vec::new(),
                scope: Vec::new(),
                note: (rng.below(2) == 0).then(|| format!("note {n}")),
                validate: None,
            },
        ),
        2 | 3 => match rng.pick(&todos) {
            Some(t) => (
                Actor::Agent(agent),
                Change::TodoClaim {
                    todo: t.id.clone(),
                    epoch: t.epoch,
                    lease: Span::minutes(10),
                },
            ),
            None => return random_op(rng, state, n, at),
        },
        4 | 5 => match rng.pick(&claimed) {
            Some(t) => (
                owner_op(t),
                Change::TodoUpdate {
                    todo: t.id.clone(),
                    epoch: t.epoch,
                    status: [None, Some(TodoStatus::Blocked)][rng.below(2)],
                    note: Some(format!("progress {n}")),
                },
            ),
            None => return random_op(rng, state, n, at),
        },
        6 => match rng.pick(&claimed) {
            Some(t) => (
                owner_op(t),
                Change::TodoDone {
                    todo: t.id.clone(),
                    epoch: t.epoch,
                    note: None,
                    validation: None,
                },
            ),
            None => return random_op(rng, state, n, at),
        },
        7 => match rng.pick(&claimed) {
            Some(t) => (
                owner_op(t),
                Change::TodoRelease {
                    todo: t.id.clone(),
                    epoch: t.epoch,
                    force: false,
                },
            ),
            None => return random_op(rng, state, n, at),
        },
        8 => (
            human(),
            Change::TodoArchive {
                todos: todos
                    .iter()
                    .filter(|t| t.status == TodoStatus::Done)
                    .map(|t| t.id.clone())
                    .collect(),
            },
        ),
        9 => match state.gates.values().find(|g| g.is_open()) {
            Some(g) if rng.below(2) == 0 => (
                human(),
                Change::GateAnswer {
                    gate: g.id.clone(),
                    choice: g.options[0].clone(),
                    note: None,
                },
            ),
            _ => (
                Actor::Agent(agent),
                Change::GateOpen {
                    gate: GateId::from_hex(&format!("{:08x}", rng.next() as u32)),
                    goal: main_goal(),
                    question: format!("Which way, {n}?"),
                    options: vec!["left".to_owned(), "right".to_owned()],
                    kind: GateKind::Decision,
                    blocks: Blocks::Goal,
                },
            ),
        },
        10 => (
            Actor::Agent(agent),
            Change::RefreshState {
                goal: main_goal(),
                outcome: [Outcome::Advanced, Outcome::Unchanged][rng.below(2)],
                turn: None,
                todo: claimed.first().map(|t| t.id.clone()),
                next_action: Some(format!("next {n}")),
                progress: None,
            },
        ),
        _ => (
            human(),
            Change::EvidenceAdd {
                evidence: EvidenceId::from_hex(&format!("{:08x}", rng.next() as u32)),
                goal: main_goal(),
                todo: rng.pick(&todos).map(|t| t.id.clone()),
                kind: EvidenceKind::Note,
                summary: format!("looked at {n}"),
                code: None,
                run: None,
                artifact: None,
            },
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

/// The cache file's bytes after writing `state` at `tip`.
fn cache_bytes(store: &Store, tip: &Tip, state: &State) -> Vec<u8> {
    cache::write(store, tip, state);
    let dir = cache::dir(store);
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "state"))
        .expect("a cache file");
    std::fs::read(file).unwrap()
}

#[test]
fn every_incremental_tick_writes_what_a_cold_full_rewrite_writes() {
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
    let setup = std::iter::once(Change::Init {
        goal: Some(main_goal()),
        objective: Some("Ship".to_owned()),
    })
    .chain(AGENTS.iter().map(|a| Change::AgentRegister {
        agent: AgentId::new(a).unwrap(),
        runtime: Runtime::Codex,
        capabilities: Vec::new(),
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
                    Change::AgentRegister { agent, .. } => Actor::Agent(agent.clone()),
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
        let written =
            write_tick(&store, tip.as_ref(), &state, &op, &[], &who, Empty::Skip).unwrap();
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
        assert_eq!(
            cache_bytes(&store, &new, &written.state),
            cache_bytes(&store, &new, &cold.state),
            "tick {n}: the cache"
        );
        store
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
    assert!(
        records.keys().any(|p| p.starts_with("archive/")),
        "no archive written"
    );
    assert!(
        records.keys().any(|p| p.starts_with("evidence/")),
        "no evidence written"
    );
}
