//! Who may write each kind of op: declared beside the kind in the op table
//! (`change.rs`), decided here, and asked by `op::dispatch` for every
//! op and every step of a `settle`, so the writer, sync's replay, `verify`
//! and the hub guard judge it alike; the signature rules (`trust`) ask the
//! same function which acts are a human's. There is no other list.

use crate::error::{Code, Hint, N, Next, Refusal};
use crate::model::{Actor, State};
use crate::op::{
    AgentRegister, AgentRetire, Change, GateAnswer, GateWithdraw, Init, Op, QuotaPark, Settle,
    TodoRelease,
};

/// Who may write an op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Who {
    /// Only a human: an agent is refused (`humans-only`), and where a
    /// signing policy or this machine asks for signatures it is signed.
    Human,
    /// Only a registered agent (`agents-only`).
    Agent,
    Either,
}

/// What the op table declares for a kind: a fixed [`Who`] with the act in
/// words (for the refusal: "only a human may add a goal"), or a rule over
/// the state and the op for the kinds whose authority depends on them.
#[derive(Clone, Copy)]
pub enum Authority {
    Human(&'static str),
    Agent(&'static str),
    Either,
    Rule(fn(&State, &Op) -> Who),
}

/// Who may write `op` on `state`.
pub fn who(state: &State, op: &Op) -> Who {
    match op.change.authority() {
        Authority::Human(_) => Who::Human,
        Authority::Agent(_) => Who::Agent,
        Authority::Either => Who::Either,
        Authority::Rule(rule) => rule(state, op),
    }
}

/// `gate.answer` and `gate.withdraw`: a human for the human-only kinds
/// (`permission`, `publish`, `production`, `spend`).
pub(super) fn closes_gate(state: &State, op: &Op) -> Who {
    let (Change::GateAnswer(GateAnswer { gate, .. }) | Change::GateWithdraw(GateWithdraw { gate })) =
        &op.change
    else {
        return Who::Either;
    };
    if state.gates.get(gate).is_some_and(|g| g.kind.human_only()) {
        Who::Human
    } else {
        Who::Either
    }
}

/// `init`: a human's when it adds a goal (as `goal.add`).
pub(super) fn inits(_: &State, op: &Op) -> Who {
    match &op.change {
        Change::Init(Init { goal: Some(_), .. }) => Who::Human,
        _ => Who::Either,
    }
}

/// `todo.release`: a human forces a claim off its owner; an agent releases
/// its own.
pub(super) fn releases(_: &State, op: &Op) -> Who {
    match &op.change {
        Change::TodoRelease(TodoRelease { force: true, .. }) => Who::Human,
        _ => Who::Either,
    }
}

/// `agent.register` and `quota.park`: an agent registers or parks only
/// itself; doing so for another agent is a human's (a human registers and
/// parks any agent, as any other act of theirs). Naming the goals an
/// agent may work on (format 7) is a human's act, for itself too.
pub(super) fn on_itself(_: &State, op: &Op) -> Who {
    if let Change::AgentRegister(AgentRegister { goals: Some(_), .. }) = &op.change {
        return Who::Human;
    }
    let (Change::AgentRegister(AgentRegister { agent: target, .. })
    | Change::QuotaPark(QuotaPark { agent: target, .. })) = &op.change
    else {
        return Who::Either;
    };
    match op.actor.agent() {
        Some(me) if me != target => Who::Human,
        _ => Who::Either,
    }
}

/// `agent.retire`: an agent retires itself; retiring another agent is a
/// human's act.
pub(super) fn retires(_: &State, op: &Op) -> Who {
    match &op.change {
        Change::AgentRetire(AgentRetire { agent }) if op.actor.agent() != Some(agent) => Who::Human,
        _ => Who::Either,
    }
}

/// `turn.settle`: a human's when any step is; otherwise its steps decide,
/// each judged as it applies (an agent-only step refuses a human there).
pub(super) fn settles(state: &State, op: &Op) -> Who {
    let Change::Settle(Settle { steps, .. }) = &op.change else {
        return Who::Either;
    };
    let step = |c: &Change| Op {
        change: c.clone(),
        ..op.clone()
    };
    if steps.iter().any(|c| who(state, &step(c)) == Who::Human) {
        Who::Human
    } else {
        Who::Either
    }
}

/// Refuses `op` when its actor may not write it on `state`.
pub(super) fn check(state: &State, op: &Op) -> Result<(), Refusal> {
    match (who(state, op), &op.actor) {
        (Who::Human, Actor::Agent(id)) => Err(humans_only(state, op, id.as_str())),
        (Who::Agent, Actor::Human { .. }) => Err(agents_only(op)),
        _ => Ok(()),
    }
}

/// The refusal of an agent writing a human's op, in the words of the act.
fn humans_only(state: &State, op: &Op, id: &str) -> Refusal {
    let ask =
        "ask a human to run it, from a shell with no --agent, LOOPX_AGENT or agent-runtime session";
    match &op.change {
        Change::GateAnswer(GateAnswer { gate, .. })
        | Change::GateWithdraw(GateWithdraw { gate }) => {
            let verb = if matches!(op.change, Change::GateAnswer(_)) {
                "answer"
            } else {
                "withdraw"
            };
            let kind = state
                .gates
                .get(gate)
                .map_or("human-only", |g| g.kind.as_str());
            Refusal::rule(
                Code::HumansOnly,
                format!(
                    "{gate} is a {kind} gate: only a human may {verb} it, and {id} is an agent"
                ),
            )
            .with_hint(Hint::new(
                format!("ask a human to run {N} from their own shell"),
                [Next::CloseGate(verb.to_owned(), gate.to_string())],
            ))
        }
        Change::AgentRegister(AgentRegister {
            agent,
            goals: Some(_),
            ..
        }) => Refusal::rule(
            Code::HumansOnly,
            format!("only a human may name the goals agent {agent} works on, and {id} is an agent"),
        )
        .with_hint(format!("{ask}; without --goal, {id} may register itself")),
        Change::AgentRegister(AgentRegister { agent, .. }) => Refusal::rule(
            Code::RegisterSelfOnly,
            format!("agent {id} may register only itself, not {agent}"),
        )
        .with_hint("a human registers other agents"),
        Change::AgentRetire(AgentRetire { agent }) => Refusal::rule(
            Code::RetireSelfOnly,
            format!("agent {id} may retire only itself, not {agent}"),
        )
        .with_hint("a human retires other agents"),
        Change::QuotaPark(QuotaPark { agent, .. }) => Refusal::rule(
            Code::ParkSelfOnly,
            format!("{id} may park only itself, not {agent}"),
        ),
        Change::Init(_) => Refusal::rule(
            Code::HumansOnly,
            format!("only a human may add a goal; {id} is an agent"),
        )
        .with_hint(ask),
        Change::TodoRelease(_) => Refusal::rule(
            Code::HumansOnly,
            format!("only a human may force a claim off its owner; {id} is an agent"),
        )
        .with_hint(ask),
        Change::Settle(Settle { steps, .. }) => {
            // The first step a human must write says why.
            steps
                .iter()
                .map(|c| Op {
                    change: c.clone(),
                    ..op.clone()
                })
                .find(|s| who(state, s) == Who::Human)
                .map_or_else(
                    || {
                        Refusal::rule(
                            Code::HumansOnly,
                            format!("only a human may settle this; {id} is an agent"),
                        )
                    },
                    |s| humans_only(state, &s, id),
                )
        }
        c => {
            let act = match c.authority() {
                Authority::Human(act) => act,
                _ => c.kind(),
            };
            Refusal::rule(
                Code::HumansOnly,
                format!("only a human may {act}; {id} is an agent"),
            )
            .with_hint(ask)
        }
    }
}

/// The refusal of a human writing an agent's op.
fn agents_only(op: &Op) -> Refusal {
    let act = match op.change.authority() {
        Authority::Agent(act) => act,
        _ => op.change.kind(),
    };
    Refusal::rule(
        Code::AgentsOnly,
        format!("only a registered agent may {act}: claims belong to registered agents"),
    )
    .with_hint(Hint::new(
        format!("pass --agent ID (or set LOOPX_AGENT) for an agent registered with {N}"),
        [Next::RegisterAgent(None)],
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::test_support::{agent, every_change, human, op};

    /// The table, read back: who may write one op of every kind (the
    /// samples force a release and retire another agent; a gate the state
    /// does not hold is any actor's until `apply` refuses it).
    #[test]
    fn every_kind_declares_who_may_write_it() {
        let s = State::default();
        let got: String = every_change()
            .into_iter()
            .map(|c| {
                let by_human = who(&s, &op(human(), "2026-01-01T09:00:00Z", c.clone()));
                let by_agent = who(&s, &op(agent("agent-a"), "2026-01-01T09:00:00Z", c.clone()));
                format!("{} {by_human:?} {by_agent:?}\n", c.kind())
            })
            .collect();
        let want = "\
init Human Human
goal.add Human Human
goal.set Human Human
agent.register Either Either
todo.add Either Either
todo.claim Agent Agent
todo.renew Agent Agent
todo.handoff Agent Agent
todo.release Human Human
todo.update Either Either
todo.done Either Either
todo.edit Either Either
todo.trust Human Human
signer.announce Human Human
todo.reopen Either Either
todo.archive Either Either
agent.retire Human Human
gate.open Either Either
gate.answer Either Either
gate.withdraw Either Either
gate.notified Either Either
evidence.add Either Either
turn.refresh Agent Agent
quota.spend Agent Agent
quota.void Human Human
usage.record Agent Agent
quota.park Either Either
quota.resume Human Human
signer.require Human Human
machine.propose Either Either
machine.admit Human Human
machine.revoke Human Human
goal.split Human Human
settings.set Human Human
signer.approve Human Human
signer.reclaim Human Human
turn.settle Either Either
";
        assert_eq!(got, want);
    }

    /// `apply` asks the table first, for every kind: an agent writing a
    /// human's kind and a human writing an agent's are refused before any
    /// other rule, whatever the state holds.
    #[test]
    fn apply_refuses_every_kind_to_the_wrong_actor() {
        for c in every_change() {
            for actor in [human(), agent("agent-a")] {
                let o = op(actor.clone(), "2026-01-01T09:00:00Z", c.clone());
                let mut s = State::default();
                let wrong = matches!(
                    (who(&s, &o), &actor),
                    (Who::Human, Actor::Agent(_)) | (Who::Agent, Actor::Human { .. })
                );
                let r = crate::op::apply(&mut s, &o);
                if wrong {
                    let code = r.expect_err(c.kind()).code;
                    assert!(
                        matches!(
                            code,
                            Code::HumansOnly
                                | Code::AgentsOnly
                                | Code::RegisterSelfOnly
                                | Code::RetireSelfOnly
                                | Code::ParkSelfOnly
                        ),
                        "{}: {code:?}",
                        c.kind()
                    );
                    assert_eq!(s, State::default(), "{}", c.kind());
                } else if let Err(e) = r {
                    assert!(
                        !matches!(e.code, Code::HumansOnly | Code::AgentsOnly),
                        "{} by {}: {}",
                        c.kind(),
                        actor.name(),
                        e.message
                    );
                }
            }
        }
    }

    #[test]
    fn a_human_only_gate_is_a_humans_to_close() {
        let mut s = crate::op::test_support::board();
        let open = every_change()
            .into_iter()
            .find(|c| c.kind() == "gate.open")
            .expect("a gate.open");
        let Change::GateOpen(g) = &open else {
            unreachable!()
        };
        assert!(g.kind.human_only());
        let gate = g.gate.clone();
        crate::op::apply(&mut s, &op(human(), "2026-01-01T09:00:00Z", open.clone()))
            .expect("opened");
        let answer = Change::GateAnswer(GateAnswer {
            gate,
            choice: "approve".to_owned(),
            note: None,
        });
        let o = op(agent("agent-a"), "2026-01-01T09:01:00Z", answer);
        assert_eq!(who(&s, &o), Who::Human);
        let r = check(&s, &o).unwrap_err();
        assert_eq!(r.code, Code::HumansOnly);
        assert!(r.message.contains("is a publish gate"), "{}", r.message);
    }
}
