//! A turn's progress fingerprint, as `settle` and `refresh-state` measure it
//! (the definition and the stall rule are in `op::progress`): git for the
//! code under the agent, the history for the checks that passed.

use std::collections::BTreeSet;

use crate::model::run::CommandRun;
use crate::model::{Actor, AgentId, State, TodoId, TodoStatus};
use crate::op::progress::{self, Check, CodeState};
use crate::op::{Change, EvidenceAdd, Op, Settle};
use crate::repo::Repo;
use crate::store::Oid;
use crate::time::Timestamp;

/// How far back the turn's own evidence is looked for, in ticks.
const LOOK_BACK: usize = 256;

/// What the turn left that does not depend on the state: the code under the
/// agent and the distinct checks that passed in the turn.
pub struct Measured {
    code: CodeState,
    checks: BTreeSet<Check>,
}

/// When the turn began: ticks at or after `at` (after it, when not
/// `inclusive`) belong to it.
#[derive(Clone, Copy)]
pub struct Since {
    pub at: Timestamp,
    pub inclusive: bool,
}

/// Measures the turn of `agent` on `todo`: HEAD and the working tree's tree
/// (git), and the checks that passed: `own` (what this command ran) and the
/// agent's passing `evidence run` records on the todo in the ticks since the
/// turn began, read back from `tip`. None when git cannot say (the turn then
/// carries no fingerprint: it neither counts towards a stall nor resets one);
/// `warn` hears why, when git failed.
pub fn measure(
    repo: &Repo,
    tip: Oid,
    (agent, todo): (&AgentId, &TodoId),
    since: Option<Since>,
    own: &[&CommandRun],
    warn: &dyn Fn(String),
) -> Option<Measured> {
    let store = repo.store();
    let tree = match store.workdir() {
        // A bare repository has no working tree: the code is HEAD alone.
        None => None,
        Some(dir) => match crate::git::worktree_tree(dir) {
            Ok(t) => Some(t),
            Err(e) => {
                warn(format!(
                    "loopx: no progress fingerprint for this turn: {e:#}"
                ));
                return None;
            }
        },
    };
    let code = CodeState {
        head: store.head(),
        tree,
    };
    let mut checks: BTreeSet<Check> = own
        .iter()
        .filter(|r| r.passed())
        .map(|r| (r.argv.clone(), r.exit))
        .collect();
    if let Some(since) = since {
        for entry in store.history(tip).take(LOOK_BACK) {
            let Ok(entry) = entry else { break };
            let tick = crate::history::Tick::read(entry);
            let t = tick.time();
            if t < since.at || (!since.inclusive && t == since.at) {
                break;
            }
            if let Some(op) = tick.op() {
                passed_checks(op, agent, todo, &mut checks);
            }
        }
    }
    Some(Measured { code, checks })
}

/// The passing runs `op` recorded on `todo` when `agent` wrote it.
fn passed_checks(op: &Op, agent: &AgentId, todo: &TodoId, out: &mut BTreeSet<Check>) {
    if !matches!(&op.actor, Actor::Agent(a) if a == agent) {
        return;
    }
    let steps = match &op.change {
        Change::Settle(Settle { steps, .. }) => steps.as_slice(),
        one => std::slice::from_ref(one),
    };
    for step in steps {
        if let Change::EvidenceAdd(EvidenceAdd {
            todo: Some(t),
            run: Some(r),
            ..
        }) = step
            && t == todo
            && r.passed()
        {
            out.insert((r.argv.clone(), r.exit));
        }
    }
}

/// The fingerprint of the measured turn with the todo as `state` has it
/// (and `status` when the turn sets one).
pub fn fingerprint(
    m: &Measured,
    state: &State,
    todo: &TodoId,
    status: Option<TodoStatus>,
) -> Option<String> {
    let t = state.todos.get(todo)?;
    Some(progress::fingerprint(
        &m.code,
        status.unwrap_or(t.status),
        &t.after,
        &m.checks,
    ))
}
