//! `loopx settle`: end a whole turn in one command and one tick.

use anyhow::Result;
use serde::Serialize;

use super::TickWire;
use super::fresh_id;
use crate::cmd::tx;
use crate::ctx::Ctx;
use crate::error::{Code, Exit, Refusal};
use crate::model::{EvidenceKind, Outcome, TodoStatus, run::CommandRun};
use crate::op::brief::{self, Brief};
use crate::op::{
    self, Change, EvidenceAdd, QuotaSpend, RefreshState, Settle, TodoDone, TodoUpdate, UsageRecord,
};
use crate::service::evidence::code_now;
use crate::service::progress;
use crate::service::turn::{own_token, parse_token};
use crate::time::Span;

/// End a turn in one tick: run the check, update the todo, refresh, spend
///
/// 1. runs the command after `--` (recorded as `evidence run`);
/// 2. with --done, runs the todo's validation (in the claim's own worktree
///    when it has one, which must hold no file not committed: else nothing
///    runs and this exits 3; once done, the worktree goes, its branch stays);
/// 3. if both pass, writes one tick holding the todo's update, the evidence,
///    the refresh and the spend, and prints the brief;
/// 4. if either fails, writes one tick holding only the evidence and exits 3:
///    nothing is spent and the todo is not done.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  loopx settle --turn \"$TOKEN\" --todo t-3fa9c2d1 --outcome advanced -- cargo test
  loopx settle --turn \"$TOKEN\" --todo t-3fa9c2d1 --outcome advanced --done
  loopx settle --turn \"$TOKEN\" --todo t-3fa9c2d1 --outcome blocked --next-action 'needs a key'")]
pub struct Args {
    /// The turn token from `quota should-run`
    #[arg(long, value_name = "TOKEN")]
    turn: String,
    /// The todo the turn worked on
    #[arg(long, value_name = "T")]
    todo: String,
    /// advanced, unchanged or blocked
    #[arg(long, value_name = "O")]
    outcome: Outcome,
    /// Mark the todo done (its validation runs first)
    #[arg(long, conflicts_with = "status")]
    done: bool,
    /// Set the todo's status: open, blocked or deferred
    #[arg(long, value_name = "S")]
    status: Option<TodoStatus>,
    /// A note on the todo
    #[arg(long, value_name = "TEXT")]
    note: Option<String>,
    /// What the next turn should do first
    #[arg(long, value_name = "TEXT")]
    next_action: Option<String>,
    /// How long the command may run
    #[arg(long, value_name = "DURATION", default_value = "10m")]
    timeout: Span,
    /// Sync with the remote before and after (git config loopx.remote, else
    /// origin); exits 4 if the remote's state rejected this turn's tick.
    /// Once the clone has a hub, the tick is pushed after by default
    #[arg(long, overrides_with = "no_sync")]
    sync: bool,
    /// Keep the tick here until the next sync (offline work)
    #[arg(long, overrides_with = "sync")]
    no_sync: bool,
    #[command(flatten)]
    usage: crate::service::usage::UsageArgs,
    /// The check to run and record, and its arguments
    #[arg(last = true, value_name = "CMD")]
    command: Vec<String>,
}

#[derive(Serialize)]
struct Wire<'a> {
    settled: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    check: Option<&'a CommandRun>,
    #[serde(skip_serializing_if = "Option::is_none")]
    validation: Option<&'a CommandRun>,
    #[serde(skip_serializing_if = "Option::is_none")]
    brief: Option<Brief>,
    #[serde(flatten)]
    tick: TickWire,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let token = parse_token(&args.turn)?;
    own_token(&ctx.actor()?, &token)?;
    let usage = super::read_usage(ctx, &args.usage)?;
    if args.sync {
        let report = crate::cmd::sync_remote(ctx, None)?;
        ctx.out.status(&crate::cmd::wire::human(&report));
    }
    let snap = tx::load(ctx)?;
    let todo = snap.state.resolve_todo(&args.todo)?;
    let goal = snap.state.todos[&todo].goal.clone();
    if goal != token.goal {
        return Err(Refusal::usage(
            Code::WrongGoal,
            format!(
                "{todo} belongs to goal {goal}, but the turn is for goal {}",
                token.goal
            ),
        )
        .into());
    }
    let since = snap
        .state
        .agents
        .get(&token.agent)
        .and_then(|a| a.last_turn.as_ref())
        .map(|t| t.at);
    let code = code_now(ctx.store().ok());
    let evidence = |run: &CommandRun, what: &str| {
        Change::EvidenceAdd(EvidenceAdd {
            todo: Some(todo.clone()),
            code: Some(code.clone()),
            run: Some(run.clone()),
            ..EvidenceAdd::new(
                fresh_id(ctx, &format!("{what}\n{}", run.argv.join(" "))),
                goal.clone(),
                EvidenceKind::Test,
                crate::op::limits::fit(&format!("{what}: {}", run.argv.join(" ")), 200),
            )
        })
    };
    // The tick's steps, given the check's and the validation's results.
    let plan = |state: &crate::model::State,
                check: Option<&CommandRun>,
                validation: Option<&CommandRun>,
                measured: Option<&progress::Measured>|
     -> Result<Vec<Change>> {
        let mut steps: Vec<Change> = check
            .map(|c| evidence(c, "settle check"))
            .into_iter()
            .chain(validation.map(|v| evidence(v, "validation")))
            .collect();
        // The turn's usage counts whether or not its checks passed.
        steps.extend(usage.clone().map(|usage| {
            Change::UsageRecord(UsageRecord {
                goal: goal.clone(),
                turn: token.turn.clone(),
                usage,
            })
        }));
        if check.is_some_and(|c| !c.passed()) || validation.is_some_and(|v| !v.passed()) {
            return Ok(steps);
        }
        let t = state.todos.get(&todo).ok_or_else(|| {
            Refusal::error(Code::UnknownTodo, format!("{todo} is no longer live"))
        })?;
        let owner = t.owner() == Some(&token.agent);
        let mut writeback = check.is_some();
        if args.done {
            writeback = true;
            steps.push(Change::TodoDone(TodoDone {
                todo: todo.clone(),
                epoch: t.epoch,
                note: args.note.clone(),
                validation: validation.cloned(),
            }));
        } else if args.status.is_some() || args.note.is_some() {
            writeback |= owner;
            steps.push(Change::TodoUpdate(TodoUpdate {
                todo: todo.clone(),
                epoch: t.epoch,
                status: args.status,
                note: args.note.clone(),
            }));
        }
        writeback |= args.outcome != Outcome::Unchanged;
        writeback |= state
            .agents
            .get(&token.agent)
            .and_then(|a| a.last_writeback)
            .is_some_and(|w| w >= token.issued);
        steps.push(Change::RefreshState(RefreshState {
            goal: goal.clone(),
            outcome: args.outcome,
            turn: Some(token.turn.clone()),
            todo: Some(todo.clone()),
            next_action: args.next_action.clone(),
            progress: measured.and_then(|m| {
                let status = if args.done {
                    Some(TodoStatus::Done)
                } else {
                    args.status
                };
                progress::fingerprint(m, state, &todo, status)
            }),
        }));
        // A quiet turn (unchanged, nothing written back) records its
        // outcome and spends nothing.
        if writeback {
            steps.push(Change::QuotaSpend(QuotaSpend {
                goal: goal.clone(),
                turn: token.turn.clone(),
                issued: token.issued,
            }));
        }
        Ok(steps)
    };
    // Every rule is checked before anything runs: a settle that would be
    // refused anyway (not your claim, a gate, a spent token) runs nothing.
    let validate = snap.state.todos[&todo]
        .validate
        .clone()
        .filter(|_| args.done);
    let assumed_check =
        (!args.command.is_empty()).then(|| CommandRun::assumed_passing(&args.command));
    let assumed_validation = validate
        .as_ref()
        .map(|v| CommandRun::assumed_passing(&v.argv));
    let probe = Change::Settle(Settle {
        turn: token.turn.clone(),
        steps: plan(
            &snap.state,
            assumed_check.as_ref(),
            assumed_validation.as_ref(),
            None,
        )?,
    });
    let probe = tx::op(ctx, probe)?;
    // With nothing to run first, the tick itself checks the same rules
    // against the same state: no separate trial (at 10,000 todos the
    // refresh's digest reads every todo of the goal).
    if assumed_check.is_some() || assumed_validation.is_some() {
        op::apply(&mut snap.state.clone(), &probe)?;
    }
    // Code from the shared state runs only when this machine trusts it.
    if validate.is_some() {
        super::todo::trust::allow_or_hold(ctx, &snap.state, &snap.state.todos[&todo])?;
    }
    // The claim's own worktree: with --done, all its work committed first.
    let own = match args.done {
        true => crate::cmd::claim_worktree(ctx, &snap.state.todos[&todo])?,
        false => None,
    };
    let validate_in = match &own {
        Some(r) if r.path.is_dir() => r.path.clone(),
        _ => ctx.store()?.root().to_path_buf(),
    };
    // The side effects run once, before the tick.
    let check = (!args.command.is_empty())
        .then(|| crate::cmd::run_command(ctx, &args.command, &ctx.cwd, args.timeout));
    let validation = match &validate {
        Some(v) if check.as_ref().is_none_or(CommandRun::passed) => {
            ctx.out
                .status(&format!("Validating {todo}: {}", v.argv.join(" ")));
            Some(crate::cmd::run_command(
                ctx,
                &v.argv,
                &validate_in,
                v.timeout,
            ))
        }
        _ => None,
    };
    let failed = check.as_ref().is_some_and(|c| !c.passed())
        || validation.as_ref().is_some_and(|v| !v.passed());
    // The turn's progress fingerprint (stall detection), measured once.
    let measured = (!failed)
        .then(|| {
            let own: Vec<&CommandRun> = check.iter().chain(validation.iter()).collect();
            let since = progress::Since {
                at: token.issued,
                inclusive: true,
            };
            progress::measure(
                ctx.repo().ok()?,
                (&snap.state, snap.tip.commit),
                (&token.agent, &todo),
                Some(since),
                &own,
                &|w| ctx.out.status(&w),
            )
        })
        .flatten();
    // The tick starts from the state read above (read once, not twice).
    let done = tx::start(ctx)?.from(snap).run(|state| {
        Ok(tx::op(
            ctx,
            Change::Settle(Settle {
                turn: token.turn.clone(),
                steps: plan(
                    state,
                    check.as_ref(),
                    validation.as_ref(),
                    measured.as_ref(),
                )?,
            }),
        )?)
    })?;
    // Done: the worktree goes, its branch stays for review.
    if !failed
        && let Some(r) = &own
        && done
            .state
            .todos
            .get(&todo)
            .is_none_or(|t| t.status == TodoStatus::Done)
    {
        crate::cmd::close_worktree(ctx, r);
    }
    let brief = (!failed).then(|| {
        let list = tx::ready_list(ctx, &done.tip, &token.agent, &goal);
        brief::build(
            &done.state,
            &token.agent,
            &done.state.goals[&goal],
            ctx.now,
            since,
            list.as_ref(),
        )
    });
    let wire = Wire {
        settled: !failed,
        check: check.as_ref(),
        validation: validation.as_ref(),
        brief,
        tick: TickWire::of(&done),
    };
    ctx.out.emit(&wire, || {
        let mut s = String::new();
        for (what, r) in [("check", &check), ("validation", &validation)] {
            if let Some(r) = r {
                let verdict = if r.passed() { "passed" } else { "FAILED" };
                s.push_str(&format!("{what} {verdict}: `{}` ({})\n", r.argv.join(" "), r.outcome()));
                if !r.passed() {
                    for line in r.last_lines(5) {
                        s.push_str(&format!("  {line}\n"));
                    }
                }
            }
        }
        match &wire.brief {
            Some(b) => {
                s.push_str(&format!("Settled turn {}: {}.\n", token.turn, settled_summary(&done.effect)));
                s.push_str(&b.human());
            }
            None => s.push_str(&format!(
                "Not settled: the evidence is recorded (tick {}); nothing was spent and {todo} is not done.\n",
                done.tip.tick
            )),
        }
        s
    })?;
    if args.sync || crate::cmd::syncs(ctx, false, args.no_sync)? {
        crate::cmd::push_after(ctx, &done.op.id, |r| {
            Refusal::conflict(
                Code::SettleRejected,
                format!("the remote's state rejected this turn's tick: {}", r.reason),
            )
            .with_hint(
                "the evidence of the rejection is recorded; ask `loopx quota should-run` again",
            )
        })?;
    }
    Ok(if failed { Exit::Refused } else { Exit::Ok })
}

/// The summary of a settle's steps, for the human line.
fn settled_summary(effect: &crate::op::Effect) -> &str {
    match &effect.what {
        crate::op::Happened::Settled { summary, .. } => summary,
        _ => &effect.subject,
    }
}
