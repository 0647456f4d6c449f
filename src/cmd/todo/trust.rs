//! `loopx todo trust`: a human vouches for a todo's validation as it is
//! now, so machines that trust the human's key run it. Also the held
//! validation's gate: when a validation this machine does not trust blocks
//! an agent's `todo done` or `settle --done`, one human gate asks about it
//! (docs/gates.md, "A validation held for a human").

use anyhow::Result;
use serde::Serialize;

use super::TodoRef;
use crate::cmd::tx;
use crate::cmd::{TickWire, commit_change};
use crate::ctx::{Caller, Ctx};
use crate::error::{Code, Exit, Refusal};
use crate::model::{Blocks, GateId, GateKind, State, Todo, TodoId, id::RANDOM_HEX};
use crate::op::signer::validation_digest;
use crate::op::{Change, GateAnswer, GateOpen, TodoTrust};
use crate::trust::{self, AllowedSigners, validation::shell_words};

/// Trust a todo's validation command to run (a signed human act)
///
/// A validation from the shared state runs on a machine only if it was
/// written there, signed by a signer that machine trusts, or git config
/// `loopx.runValidations` is `all`. This records that you vouch for the
/// exact command shown, signed with your SSH key (`loopx signer setup` sets
/// it up; without a key this refuses, since an unsigned vouch runs nothing
/// anywhere). Any later change of the validation voids it. An open gate
/// that held the validation (opened by an agent's `todo done`) is answered
/// `run` in the same go.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The todo's id or a unique prefix
    id: String,
}

#[derive(Serialize)]
struct Wire<'a> {
    todo: TodoRef<'a>,
    argv: &'a [String],
    /// "signed by NAME (SHA256:…)", "signed by an untrusted key (…)" or
    /// "unsigned".
    signature: String,
    /// The held validation's gate this answered, if one was open.
    #[serde(skip_serializing_if = "Option::is_none")]
    answered: Option<GateId>,
    #[serde(flatten)]
    tick: TickWire,
}

/// The options of a held validation's gate.
pub const RUN: &str = "run";
pub const REFUSE: &str = "refuse";

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let snap = tx::load(ctx)?;
    let todo = snap.state.resolve_todo(&args.id)?;
    vouch(ctx, &todo, None)
}

/// Records the signed trust of `todo`'s validation as it is now, answers
/// its open held gate `run`, and reports. Refuses before writing anything
/// when this process cannot sign.
fn vouch(ctx: &Ctx, todo: &TodoId, note: Option<&str>) -> Result<Exit> {
    if *ctx.caller() != Caller::Human {
        return Err(Refusal::rule(
            Code::HumansOnly,
            "only a human may trust a validation, and this process is an agent",
        )
        .with_hint(format!(
            "ask a human to look at it with `loopx todo show {todo}` and trust it from their own shell"
        ))
        .into());
    }
    if crate::trust::sign::configured(ctx.repo()?).is_none() {
        return Err(Refusal::rule(
            Code::Unsigned,
            format!("this machine cannot sign, so trusting {todo}'s validation here would run it nowhere: nothing was trusted"),
        )
        .with_hint(
            "set up your signing key once with `loopx signer setup NAME` (docs/gates.md, \"Onboarding\"), then run `loopx todo trust` again",
        )
        .into());
    }
    let done = tx::start(ctx)?.run(|state| {
        let Some(v) = &state.todos.get(todo).and_then(|t| t.validate.as_ref()) else {
            return Err(Refusal::rule(
                Code::NoValidation,
                format!("{todo} has no validation command to trust"),
            )
            .into());
        };
        let digest = validation_digest(v);
        Ok(tx::op(
            ctx,
            Change::TodoTrust(TodoTrust {
                todo: todo.clone(),
                digest,
            }),
        )?)
    })?;
    let t = &done.state.todos[todo];
    let v = t.validate.as_ref().expect("trusted a validation");
    let gate = held_gate(todo, &validation_digest(v));
    let answered = match done.state.gates.get(&gate) {
        Some(g) if g.is_open() => {
            commit_change(
                ctx,
                Change::GateAnswer(GateAnswer {
                    gate: gate.clone(),
                    choice: RUN.to_owned(),
                    note: note.map(str::to_owned),
                }),
            )?;
            Some(gate)
        }
        _ => None,
    };
    // The machines that wait on it learn it now.
    if crate::cmd::syncs(ctx, false, false)? {
        crate::cmd::push_after(ctx, &done.op.id, |r| {
            Refusal::conflict(
                r.code,
                format!(
                    "the hub's state rejected the trust of {todo}'s validation: {}",
                    r.reason
                ),
            )
        })?;
    }
    let signers = AllowedSigners::load(ctx.repo()?)?;
    let signature = trust::describe(done.op.signature.as_deref(), &signers);
    let state = tx::load(ctx)?.state;
    let here = verdict(ctx, &state, &state.todos[todo])?;
    if let Some(Err(_)) = here {
        // Signed, but by a key this machine does not trust: it runs nowhere
        // that does not trust that key either.
        return Err(Refusal::rule(
            Code::UnknownSigner,
            format!(
                "recorded your vouch for {todo}'s validation (tick {}, {signature}), but this machine does not trust that key, so it does not run here",
                done.tip.tick
            ),
        )
        .with_hint("trust your own key here with `loopx signer setup NAME` (it announces and trusts it), then run `loopx todo trust` again")
        .into());
    }
    let argv = v.argv.as_slice();
    ctx.out.emit(
        &Wire {
            todo: TodoRef::of(t),
            argv,
            signature: signature.clone(),
            answered: answered.clone(),
            tick: TickWire::of(&done),
        },
        || {
            let gate = answered
                .as_ref()
                .map(|g| format!("; answered {g} {RUN}"))
                .unwrap_or_default();
            format!(
                "Trusted the validation of {todo} \"{}\": `{}` ({signature}){gate}.",
                t.title,
                shell_words(argv)
            )
        },
    )?;
    Ok(Exit::Ok)
}

/// The id of the gate that holds `todo`'s validation with this digest: the
/// same on every clone, and a new one once the validation changes.
pub fn held_gate(todo: &TodoId, digest: &str) -> GateId {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(format!("held validation:{todo}:{digest}").as_bytes());
    GateId::from_hex(&crate::model::id::hex(&d[..RANDOM_HEX / 2]))
}

/// The todo whose held validation `gate` asks about, and whether it asks
/// about that todo's validation as it is now.
pub fn held_by(state: &State, gate: &GateId) -> Option<(TodoId, bool)> {
    let g = state.gates.get(gate)?;
    let Blocks::Todo(t) = &g.blocks else {
        return None;
    };
    if g.kind != GateKind::Permission || g.options != [RUN, REFUSE] {
        return None;
    }
    let current = state
        .todos
        .get(t)
        .and_then(|t| t.validate.as_ref())
        .is_some_and(|v| held_gate(t, &validation_digest(v)) == *gate);
    Some((t.clone(), current))
}

/// `gate answer G run` on a held validation's gate: the signed trust and the
/// answer, as `todo trust` records them.
pub fn answer_run(ctx: &Ctx, todo: &TodoId, note: Option<&str>) -> Result<Exit> {
    vouch(ctx, todo, note)
}

/// Whether `todo`'s validation may run here (`trust::validation::verdict`),
/// with every signature checked over the op that wrote or trusted the
/// validation (`verify::vouched`).
pub fn verdict(
    ctx: &Ctx,
    state: &State,
    todo: &Todo,
) -> Result<Option<Result<crate::trust::validation::Trusted, Refusal>>> {
    let repo = ctx.repo()?;
    let signers = AllowedSigners::load(repo)?;
    crate::trust::validation::verdict(repo, state, todo, &|t| {
        crate::verify::vouched(repo, t, &signers)
    })
}

/// Lets `todo`'s validation run here, or refuses (exit 3). When an agent
/// is held by a validation this machine does not trust, one human gate on
/// the todo asks about it (its id derived from the todo and the
/// validation's digest, so every clone opens the same one; its text taken
/// from the todo), and the agent keeps its claim until a human answers.
pub fn allow_or_hold(ctx: &Ctx, state: &State, todo: &Todo) -> Result<()> {
    // Nothing runs on a tip that moved outside loopx until it verifies.
    if todo.validate.is_some() {
        crate::verify::current(ctx.repo()?)?;
    }
    if verdict(ctx, state, todo)?.is_none_or(|v| v.is_ok()) {
        return Ok(());
    }
    // A human may have vouched for it on another machine: take the hub's
    // ticks (pushing nothing) and decide on those.
    let fresh;
    let (state, todo) =
        if crate::cmd::syncs(ctx, false, false)? && crate::cmd::sync_remote(ctx, None).is_ok() {
            fresh = tx::load(ctx)?.state;
            // Only for the validation that is about to run, unchanged.
            match fresh.todos.get(&todo.id) {
                Some(t) if t.validate == todo.validate => (&fresh, t),
                _ => (state, todo),
            }
        } else {
            (state, todo)
        };
    let refusal = match verdict(ctx, state, todo)? {
        None | Some(Ok(_)) => return Ok(()),
        Some(Err(r)) => r,
    };
    let Some(v) = &todo.validate else {
        return Err(refusal.into());
    };
    let argv = shell_words(&v.argv);
    // A validation the tool guard denies waits on that gate, and a human
    // can vouch for it directly.
    if crate::hook::guard::check(&argv, state, None).is_some()
        || !matches!(ctx.caller(), Caller::Agent(_))
    {
        return Err(refusal.into());
    }
    let id = &todo.id;
    let gate = held_gate(id, &validation_digest(v));
    let keeps = match (ctx.caller(), todo.owner()) {
        (Caller::Agent(me), Some(owner)) if me == owner => format!("you keep {id}"),
        _ => format!("{id} stays as it is"),
    };
    let held = |what: String| {
        Refusal::rule(
            Code::UntrustedValidation,
            format!("{}; {what}", refusal.message),
        )
        .with_hint(format!(
            "nothing was run and nothing was marked done; {keeps} while a human decides (`loopx gate answer {gate} run` or `loopx todo trust {id}`, both signed human acts): end this turn (`loopx refresh-state --outcome blocked --todo {id} --next-action \"wait for gate {gate}\"`) or take other work with `loopx quota should-run`"
        ))
    };
    match state.gates.get(&gate) {
        Some(g) if g.is_open() => Err(held(format!(
            "it waits on gate {gate}, where a human decides whether it runs"
        ))
        .into()),
        Some(g) => {
            let choice = g.answer.as_ref().map_or("withdrawn", |a| a.choice.as_str());
            Err(held(format!(
                "gate {gate} about it was answered {choice}, but no signature this machine trusts vouches for it; a human here must trust the signer (`loopx signer setup`) or the validation (`loopx todo trust {id}`)"
            ))
            .into())
        }
        None => {
            let question = held_question(todo, &argv);
            commit_change(
                ctx,
                Change::GateOpen(GateOpen {
                    gate: gate.clone(),
                    goal: todo.goal.clone(),
                    question: question.clone(),
                    options: vec![RUN.to_owned(), REFUSE.to_owned()],
                    kind: GateKind::Permission,
                    blocks: Blocks::Todo(id.clone()),
                }),
            )?;
            ctx.out.status(&format!(
                "Opened gate {gate}: a human decides whether {id}'s validation runs on the team's machines."
            ));
            // The humans who can answer it are on other machines.
            if crate::cmd::syncs(ctx, false, false)?
                && let Err(e) = crate::cmd::sync_remote(ctx, None)
            {
                ctx.out.warn(&format!(
                    "gate {gate} is not on the hub yet: {e:#}; it goes with the next sync"
                ));
            }
            Err(held(format!(
                "no signer this machine trusts vouches for it, so gate {gate} now asks a human (`loopx gate answer {gate} run` trusts it everywhere that trusts them)"
            ))
            .into())
        }
    }
}

/// The held gate's question, from the todo's own record (never an agent's
/// words): the exact command, who wrote it and how it is signed.
fn held_question(todo: &Todo, argv: &str) -> String {
    let who = match &todo.validate_from {
        Some(f) => format!(
            "{} by {} at {} ({})",
            match f.how.as_str() {
                "trust" => "vouched for",
                "edit" => "set",
                _ => "written",
            },
            f.by.name(),
            f.at,
            if f.signature.is_some() {
                "signed by a key this machine does not trust"
            } else {
                "unsigned"
            }
        ),
        None => "who wrote it is not recorded".to_owned(),
    };
    crate::op::limits::fit(
        &format!(
            "Run {}'s validation `{argv}` on the team's machines? It was {who}.",
            todo.id
        ),
        500,
    )
}
