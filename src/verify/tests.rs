//! Rules a chain's check keeps whichever way it reads trees: ticks written
//! through the one tick planner into a real repository, then checked on
//! one thread and pipelined.

use super::*;
use crate::model::{Actor, EvidenceId, EvidenceKind, GoalId, OpId};
use crate::op::{EvidenceAdd, Init, Op};
use crate::store::Person;
use crate::time::Span;

fn human() -> Actor {
    Actor::Human {
        name: "Ada".to_owned(),
        email: "ada@example.com".to_owned(),
    }
}

/// A repository whose state ref is the chain of `changes`, each written as
/// loopx plans it (message, files, author and date) on the state before,
/// whatever a live command would have refused to write.
fn chain_of_changes(changes: Vec<Change>) -> (tempfile::TempDir, Store, Oid) {
    let dir = tempfile::tempdir().unwrap();
    crate::git::stdout_of(crate::git::command_in(dir.path(), &["init", "-q"]), &[]).unwrap();
    let store = Store::discover(dir.path()).unwrap();
    let mut at = Timestamp::parse("2026-11-02T09:00:00Z").unwrap();
    let mut tip: Option<Tip> = None;
    let mut state = State::default();
    for (n, change) in changes.into_iter().enumerate() {
        at = at.plus(Span::minutes(1));
        let op = Op {
            id: OpId::from_hex(&format!("{:016x}", n + 1)),
            at,
            actor: human(),
            signature: None,
            change,
        };
        let planned =
            tx::plan_tick(tip.as_ref(), &state, &op, crate::model::WRITES, &[]).expect("planned");
        let who = Person {
            name: op.actor.name().to_owned(),
            email: op.actor.email(),
        };
        tip = Some(
            store
                .write_commit(
                    tip.as_ref(),
                    &planned.changes,
                    &planned.message,
                    &who,
                    &who,
                    at.unix(),
                )
                .unwrap(),
        );
        state = planned.state;
    }
    let tip = tip.expect("at least one tick").commit;
    (dir, store, tip)
}

fn evidence(id: &str, summary: &str) -> Change {
    Change::EvidenceAdd(EvidenceAdd::new(
        EvidenceId::from_hex(id),
        GoalId::new("main").unwrap(),
        EvidenceKind::Note,
        summary,
    ))
}

/// The chain checked on one thread and pipelined: both answers.
fn both_ways(store: &Store, tip: Oid) -> [Checked; 2] {
    let now = Timestamp::parse("2026-12-01T00:00:00Z").unwrap();
    let signing = Signing::none();
    let ids = store.chain_ids_since(tip, None).unwrap();
    let serial = serial(
        store,
        None,
        ids.clone(),
        now,
        &signing,
        &mut Lineage::default(),
        &mut |_, _| {},
    );
    let piped = pipeline::run(
        store,
        None,
        ids,
        now,
        &signing,
        &mut Lineage::default(),
        &mut |_, _| {},
    );
    [serial, piped]
}

fn init() -> Change {
    Change::Init(Init {
        goal: Some(GoalId::new("main").unwrap()),
        objective: Some("Ship".to_owned()),
    })
}

#[test]
fn a_tick_that_writes_over_an_evidence_file_is_refused_as_append_only() {
    // Its op is one a live command plans (apply cannot see the evidence
    // already written), and its tree is exactly what the op makes: only
    // the append-only rule refuses it.
    let (_dir, store, tip) = chain_of_changes(vec![
        init(),
        evidence("abababab", "first look"),
        evidence("cdcdcdcd", "second look"),
        evidence("abababab", "the first look, rewritten"),
    ]);
    for (how, checked) in ["one thread", "pipelined"]
        .iter()
        .zip(both_ways(&store, tip))
    {
        let Err(Unverified::Invalid(f)) = checked else {
            panic!("{how}: not a finding");
        };
        assert_eq!(
            (f.rule, f.tick),
            (Rule::AppendOnly, 4),
            "{how}: {}",
            f.message
        );
        assert!(
            f.message.contains("evidence/2026-11/ab/e-abababab.toml"),
            "{}",
            f.message
        );
    }
}

#[test]
fn a_chain_of_new_evidence_verifies_both_ways() {
    let (_dir, store, tip) = chain_of_changes(vec![
        init(),
        evidence("abababab", "first look"),
        evidence("abcdabcd", "second look, same folder"),
        evidence("cdcdcdcd", "third look"),
    ]);
    for (how, checked) in ["one thread", "pipelined"]
        .iter()
        .zip(both_ways(&store, tip))
    {
        let v = checked.unwrap_or_else(|e| panic!("{how}: {e:?}"));
        assert_eq!(v.tip.tick, 4, "{how}");
    }
}
