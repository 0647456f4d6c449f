//! `loopx todo done`: run the todo's validation once, then mark it complete.

use anyhow::Result;
use serde::Serialize;

use super::TodoRef;
use crate::cmd::TickWire;
use crate::cmd::fresh_id;
use crate::cmd::tx;
use crate::ctx::Ctx;
use crate::error::{Exit, Refusal};
use crate::model::EvidenceKind;
use crate::model::run::CommandRun;
use crate::op::{self, Change, EvidenceAdd, TodoDone};
use crate::service::evidence::code_now;
use crate::service::worktree::Closed;

/// Mark a todo done (its owner, or anyone if it is unclaimed)
///
/// If the todo has a validation command, it runs first (once, before the
/// tick); if it fails, nothing is marked done and this exits 3. Once the
/// clone has a hub (`loopx sync --setup`), the completion is pushed right
/// away; --no-sync keeps it here until the next sync.
///
/// When the claim owns a linked worktree (`todo claim --worktree`), the
/// validation runs there, and every file in it must be committed first:
/// otherwise nothing is marked done, and the files are listed. Once done,
/// the worktree is removed and its branch kept for review.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    held: super::Held,
    /// What was done, for the record
    #[arg(long, value_name = "TEXT")]
    note: Option<String>,
    /// Push the completion to the hub [default: once the clone has a hub]
    #[arg(long, overrides_with = "no_sync")]
    sync: bool,
    /// Keep the completion here until the next sync (offline work)
    #[arg(long, overrides_with = "sync")]
    no_sync: bool,
}

#[derive(Serialize)]
struct Wire<'a> {
    todo: TodoRef<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    validation: Option<&'a CommandRun>,
    #[serde(flatten)]
    tick: TickWire,
    /// The claim's worktree, removed (its branch kept).
    #[serde(skip_serializing_if = "Option::is_none")]
    worktree: Option<&'a Closed>,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let snap = tx::load(ctx)?;
    let id = snap.state.resolve_todo(&args.held.id)?;
    let todo = &snap.state.todos[&id];
    // Every rule but the validation's own result is checked first, so a
    // completion that would be refused anyway runs nothing.
    let probe = Change::TodoDone(TodoDone {
        todo: id.clone(),
        epoch: args.held.epoch_in(&snap.state, &id),
        note: args.note.clone(),
        validation: todo
            .validate
            .as_ref()
            .map(|v| CommandRun::assumed_passing(&v.argv)),
    });
    op::apply(&mut snap.state.clone(), &tx::op(ctx, probe)?)?;
    // Code from the shared state runs only when this machine trusts it.
    super::trust::allow_or_hold(ctx, &snap.state, todo)?;
    // The claim's own worktree: all its work committed, or nothing is done.
    let own = crate::cmd::claim_worktree(ctx, todo)?;
    // The validation runs once, before the tick; retries reuse its result.
    let root = match &own {
        Some(r) if r.path.is_dir() => r.path.as_path(),
        _ => ctx.store()?.root(),
    };
    let validation = todo.validate.as_ref().map(|v| {
        ctx.out
            .status(&format!("Validating {id}: {}", v.argv.join(" ")));
        crate::cmd::run_command(ctx, &v.argv, root, v.timeout)
    });
    if let Some(run) = validation.as_ref().filter(|r| !r.passed()) {
        // A failed validation is evidence, not a completion.
        let goal = todo.goal.clone();
        let record = tx::start(ctx)?.run(|_| {
            Ok(tx::op(
                ctx,
                Change::EvidenceAdd(EvidenceAdd {
                    todo: Some(id.clone()),
                    code: Some(code_now(ctx.store().ok())),
                    run: Some(run.clone()),
                    ..EvidenceAdd::new(
                        fresh_id(ctx, &format!("validation\n{id}")),
                        goal.clone(),
                        EvidenceKind::Test,
                        crate::op::limits::fit(&format!("validation: {}", run.argv.join(" ")), 200),
                    )
                }),
            )?)
        })?;
        return Err(crate::op::todo::validation_failed(&id, run)
        .with_hint(format!(
            "nothing was marked done; the failure is recorded as evidence (tick {}); fix what it reports and run `loopx todo done` again",
            record.tip.tick
        ))
        .into());
    }
    let done = tx::start(ctx)?.run(|state| {
        let todo = state.resolve_todo(id.as_str())?;
        let epoch = args.held.epoch_in(state, &todo);
        Ok(tx::op(
            ctx,
            Change::TodoDone(TodoDone {
                todo,
                epoch,
                note: args.note.clone(),
                validation: validation.clone(),
            }),
        )?)
    })?;
    let t = &done.state.todos[&id];
    let closed = own.and_then(|r| crate::cmd::close_worktree(ctx, &r));
    ctx.out.emit(
        &Wire {
            todo: TodoRef::of(t),
            validation: validation.as_ref(),
            tick: TickWire::of(&done),
            worktree: closed.as_ref(),
        },
        || match &validation {
            Some(v) => format!(
                "Done {id} \"{}\" (validation passed in {} ms).",
                t.title, v.duration_ms
            ),
            None => format!("Done {id} \"{}\".", t.title),
        },
    )?;
    if crate::cmd::syncs(ctx, args.sync, args.no_sync)? {
        crate::cmd::push_after(ctx, &done.op.id, |r| {
            Refusal::conflict(
                r.code,
                format!("the hub's state rejected the completion of {id}: {}", r.reason),
            )
            .with_hint("the rejection is recorded as evidence; ask `loopx quota should-run` what to do next")
        })?;
    }
    Ok(Exit::Ok)
}
