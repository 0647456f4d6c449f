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

/// Measures the turn of `agent` on `todo`: the code under it (its claim's worktree, else its own files: `code`),
/// and the checks that passed: `own` (what this command ran) and the
/// agent's passing `evidence run` records on the todo in the ticks since the
/// turn began, read back from `tip`. None when git cannot say (the turn then
/// carries no fingerprint: it neither counts towards a stall nor resets one);
/// `warn` hears why, when git failed.
pub fn measure(
    repo: &Repo,
    (state, tip): (&State, Oid),
    (agent, todo): (&AgentId, &TodoId),
    since: Option<Since>,
    own: &[&CommandRun],
    warn: &dyn Fn(String),
) -> Option<Measured> {
    let store = repo.store();
    let code = match code(repo, state, (agent, todo)) {
        Ok(c) => c,
        Err(e) => {
            warn(format!(
                "loopx: no progress fingerprint for this turn: {e:#}"
            ));
            return None;
        }
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

/// The code under `agent`'s turn on `todo`, so that work on one goal never
/// reads as progress on another: the worktree its claim owns (HEAD and
/// tree there), else the todo's own files in the shared working tree (its
/// write scope, else its goal's: the blobs there, without HEAD, which
/// other goals' commits move), else HEAD and the whole working tree. A
/// bare repository has no working tree: the code is HEAD alone.
fn code(
    repo: &Repo,
    state: &State,
    (agent, todo): (&AgentId, &TodoId),
) -> anyhow::Result<CodeState> {
    let store = repo.store();
    if let Some(r) =
        crate::service::worktree::of(store.common_dir(), todo, agent).filter(|r| r.path.is_dir())
    {
        return Ok(CodeState {
            head: crate::git::head_of(&r.path),
            tree: Some(crate::git::worktree_tree(&r.path)?),
        });
    }
    let Some(dir) = store.workdir() else {
        return Ok(CodeState {
            head: store.head(),
            tree: None,
        });
    };
    let t = state.todos.get(todo);
    let scope: &[String] = match t {
        Some(t) if !t.scope.is_empty() => &t.scope,
        Some(t) => state
            .goals
            .get(&t.goal)
            .map(|g| g.scope.as_slice())
            .unwrap_or_default(),
        None => &[],
    };
    let tree = crate::git::worktree_tree(dir)?;
    if scope.is_empty() {
        return Ok(CodeState {
            head: store.head(),
            tree: Some(tree),
        });
    }
    let keep = |p: &str| scope.iter().any(|s| crate::model::glob::overlap(s, p));
    let lines = crate::git::tree_lines(dir, &tree, &keep)?;
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    for l in &lines {
        h.update(l.as_bytes());
        h.update(b"\n");
    }
    Ok(CodeState {
        head: None,
        tree: Some(format!("scoped {}", crate::model::id::hex(&h.finalize()))),
    })
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
