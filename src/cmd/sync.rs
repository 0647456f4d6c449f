//! `loopx sync`: share the state through a git remote (DESIGN §5); the
//! algorithm lives in `crate::sync`.

use super::wire::{human, rejected_line};
use anyhow::Result;
use serde::Serialize;

use crate::ctx::Ctx;
use crate::error::{Code, Exit, Refusal};
use crate::sync;
use crate::tx::goalref;

/// Set for a `loopx sync` of a split state's ref that should sync only its
/// own ref (`bench/sync-capacity` measures a goal ref's own capacity so).
const ONE_REF: &str = "LOOPX_SYNC_ONE_REF";

/// A report of another ref of a split state, with the ref's name under
/// `ref`.
fn other_report(name: &str, report: &sync::Report) -> Result<serde_json::Value> {
    let mut doc = serde_json::to_value(report)?;
    doc["ref"] = serde_json::Value::String(name.to_owned());
    Ok(doc)
}

/// Sync the state with a git remote: fetch, replay local ticks, push
///
/// Fetches the remote's refs/loopx/state into refs/loopx/remotes/REMOTE/state.
/// Behind, it fast-forwards; ahead, it pushes; diverged, it replays the local
/// ticks' ops on top of the remote's, in order, through the same rules as a
/// live command, and pushes that (fast-forward only, never forced). An op that
/// no longer applies (a claim another machine won first, a stale epoch) is
/// recorded as sync-rejected evidence and reported; loopx exits 4 if one of
/// them was the acting agent's.
///
/// A remote whose history was rewritten since the last sync is reported and
/// left alone; --adopt-remote follows it and keeps the local state under
/// refs/loopx/backup/REMOTE/…. See docs/sync.md.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  loopx sync                      with git config loopx.remote, else origin
  loopx sync hub --setup          name the remote and sync with it
  loopx sync --dry-run            say what a sync would do")]
pub struct Args {
    /// The git remote [default: git config loopx.remote, else origin]
    remote: Option<String>,
    /// Add the fetch refspec so a plain `git fetch` brings the state too, then stop
    #[arg(long)]
    setup: bool,
    /// Follow a rewritten or unrelated remote history, keeping the local state under a backup ref
    #[arg(long, conflicts_with = "setup")]
    adopt_remote: bool,
    /// Put the remote back at its last valid tick, removing a forgery (a human act)
    ///
    /// Verifies the remote's ticks from the last one verified here, and if one
    /// is not a valid tick, pushes the tick before it over the remote's ref
    /// (with a lease on the bad tip, never forced blind), after listing what it
    /// removes. For hubs without `loopx hub install`.
    ///
    /// Only ticks every clone refuses are removed: one that is only in this
    /// machine's future, signed by a key not trusted here, or written by a
    /// newer loopx is reported and left. It asks first (or takes --yes);
    /// --dry-run only lists. A hub running the guard has the last word.
    #[arg(long, conflicts_with_all = ["setup", "adopt_remote"])]
    repair_remote: bool,
    /// With --repair-remote: list what it would remove, and change nothing
    #[arg(long, requires = "repair_remote")]
    dry_run: bool,
    /// With --repair-remote: remove without asking (after a --dry-run)
    #[arg(long, requires = "repair_remote", conflicts_with = "dry_run")]
    yes: bool,
    /// Write local ticks dated in this machine's future again at its time, keeping every op
    ///
    /// For a clone that made a tick while its clock (or LOOPX_NOW) was ahead:
    /// no hub takes that tick, nor any after it. Writes the ticks from the
    /// first future-dated one again (that one and any other future-dated op at
    /// this machine's time, the rest as they were), keeps the old tip under
    /// refs/loopx/backup/redate/…, and moves the local state. Then sync.
    #[arg(long, conflicts_with_all = ["setup", "adopt_remote", "repair_remote"])]
    redate: bool,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    if args.setup {
        return setup(ctx, args);
    }
    if args.repair_remote {
        return repair(ctx, args);
    }
    if args.redate {
        return redate(ctx);
    }
    // A state split into a ref per goal (format 6) syncs its refs in one
    // `loopx sync`, with one fetch and one push for all of them: a goal
    // ref's ticks pin the shared ref's, so the shared ref comes first; the
    // shared ref's sync takes every local goal ref too.
    let one = ctx.env.is_set(ONE_REF);
    let split = || crate::cmd::tx::load(ctx).is_ok_and(|s| s.state.meta.goal_refs);
    let on_goal = !one && goalref::is_goal_ref(ctx.state_ref());
    let repo = ctx.repo()?;
    let opts = sync::Options {
        remote: args.remote.clone(),
        adopt_remote: args.adopt_remote,
    };
    let progress = sync::Progress {
        ticks: &|what, done, total| ctx.out.progress(what, done, total),
        terminal: ctx.out.shows_progress(),
    };
    // The refs this sync takes besides its own, each with whether its
    // failure fails the sync. A clone's first sync of a goal ref takes the
    // shared ref its ticks would pin too (in the same fetch), reported
    // only if the goal ref turns out to be a split state's (a state of its
    // own says nothing).
    let mut extra: Vec<(String, bool)> = Vec::new();
    let mut fresh_goal = false;
    if on_goal && split() {
        extra.push((goalref::SHARED.to_owned(), true));
        // And every other goal ref this clone wrote and has not synced
        // (a goal moved onto a ref of its own here: the ref it left and
        // its new ref travel together, docs/scale.md).
        for (name, tip) in goalref::goal_refs(ctx.store()?)? {
            if name != ctx.state_ref()
                && sync::synced_tip(&repo.for_ref(&name), args.remote.as_deref())?
                    .is_none_or(|t| t.commit != tip)
            {
                // Optional: another goal's trouble does not fail this
                // goal's sync (that ref's own `loopx sync` reports it).
                extra.push((name, false));
            }
        }
    } else if on_goal && crate::cmd::tx::tip(ctx).ok().flatten().is_none() {
        extra.push((goalref::SHARED.to_owned(), false));
        fresh_goal = true;
    }
    let shared_split = !one && ctx.state_ref() == goalref::SHARED && split();
    if shared_split {
        for (name, _) in goalref::goal_refs(ctx.store()?)? {
            extra.push((name, true));
        }
    }
    let (report, others) = sync::run_with(repo, &extra, &opts, progress)?;
    let mut others: Vec<(String, sync::Report)> = if fresh_goal && !split() {
        Vec::new()
    } else {
        others
            .into_iter()
            .filter_map(|(name, r)| {
                r.map_err(|why| {
                    ctx.out.warn(&format!(
                        "{name} was not synced: {why} (a sync with git config `loopx.ref {name}` says more)"
                    ));
                })
                .ok()
                .map(|r| (name, r))
            })
            .collect()
    };
    // A state that turned out split only with what this sync pulled: its
    // other refs now.
    if on_goal && others.is_empty() && split() {
        let (shared, _) = sync::run_with(&repo.for_ref(goalref::SHARED), &[], &opts, progress)?;
        others.push((goalref::SHARED.to_owned(), shared));
    }
    if !one && !shared_split && ctx.state_ref() == goalref::SHARED && split() {
        for (name, _) in goalref::goal_refs(ctx.store()?)? {
            let (r, _) = sync::run_with(&repo.for_ref(&name), &[], &opts, progress)?;
            others.push((name, r));
        }
    }
    let rejected_ours = match ctx.actor() {
        Ok(actor) => {
            report.rejected_any_of(&actor) || others.iter().any(|(_, r)| r.rejected_any_of(&actor))
        }
        Err(_) => false,
    };
    let others: Vec<serde_json::Value> = others
        .iter()
        .map(|(name, r)| other_report(name, r))
        .collect::<Result<_>>()?;
    if others.is_empty() {
        ctx.out.emit(&report, || human(&report))?;
    } else {
        let mut doc = serde_json::to_value(&report)?;
        doc["refs"] = serde_json::Value::Array(others.clone());
        ctx.out.emit(&doc, || {
            let mut text = human(&report);
            for o in &others {
                text.push_str(&format!(
                    "\n{}: {} (pulled {}, pushed {}, tick {})",
                    o["ref"].as_str().unwrap_or_default(),
                    o["outcome"].as_str().unwrap_or_default(),
                    o["pulled"],
                    o["pushed"],
                    o["tick"]
                ));
            }
            text
        })?;
    }
    // Whose ops count as "ours": the acting agent's, or the human's.
    Ok(if rejected_ours {
        Exit::Conflict
    } else {
        Exit::Ok
    })
}

#[derive(Serialize)]
struct SetupWire<'a> {
    remote: &'a str,
    refspec: &'a str,
    added: bool,
}

fn setup(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let (names, refspec, added) = sync::setup(ctx.repo()?, args.remote.as_deref())?;
    let wire = SetupWire {
        remote: &names.remote,
        refspec: &refspec,
        added,
    };
    ctx.out.emit(&wire, || {
        let first = if added {
            format!("Added the fetch refspec {refspec} to remote {}.", names.remote)
        } else {
            format!("Remote {} already fetches {refspec}.", names.remote)
        };
        format!(
            "{first}\nA plain `git fetch {r}` now brings the loopx state too (into {t}).\nNo push refspec was added, so `git push` still pushes only what it did; `loopx sync {r}` pushes the state.",
            r = names.remote,
            t = names.tracking
        )
    })?;
    Ok(Exit::Ok)
}

fn redate(ctx: &Ctx) -> Result<Exit> {
    let r = sync::redate::run(ctx.repo()?)?;
    ctx.out.emit(&r, || match (&r.from, &r.backup) {
        (None, _) => "There is no loopx state here: nothing to redate.".to_owned(),
        (Some(_), None) => "No local tick is dated in this machine's future: nothing to redate.".to_owned(),
        (Some(from), Some(backup)) => {
            let mut s = format!(
                "Wrote {} tick{} again ({} redated to this machine's time); the old tip {} is kept at {backup}.",
                r.rewritten,
                if r.rewritten == 1 { "" } else { "s" },
                r.redated,
                &from[..from.len().min(8)],
            );
            for x in &r.rejected {
                s.push_str(&rejected_line(x));
            }
            s.push_str("\nRun `loopx sync` to share them.");
            s
        }
    })?;
    Ok(Exit::Ok)
}

fn repair(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let repo = ctx.repo()?;
    let actor = ctx.actor()?;
    // A repair is a human act: never written as "unknown human".
    if crate::ctx::is_unidentified(&actor) {
        return Err(crate::ctx::no_identity().into());
    }
    let plan = sync::repair::plan(repo, &actor, args.remote.as_deref())?;
    let r = if plan.report.removed.is_empty() || args.dry_run {
        plan.report
    } else {
        // Show what goes before it goes, and ask.
        for x in &plan.report.removed {
            ctx.out.status(&format!(
                "Would remove from {}: {} {} ({})",
                plan.report.remote,
                &x.commit[..x.commit.len().min(8)],
                x.subject,
                x.author
            ));
        }
        if !args.yes {
            confirm(ctx, &plan.report)?;
        }
        sync::repair::apply(repo, plan)?
    };
    ctx.out.emit(&r, || match (&r.from, &r.to, &r.finding) {
        (None, ..) => format!("{} has no loopx state: nothing to repair.", r.remote),
        (Some(_), Some(to), Some(f)) => format!(
            "{} {} commit{} from {} (the first: {} [{}]); it {} at {}.",
            if r.applied { "Removed" } else { "Would remove" },
            r.removed.len(),
            if r.removed.len() == 1 { "" } else { "s" },
            r.remote,
            &f.commit[..f.commit.len().min(8)],
            f.rule.name(),
            if r.applied {
                "is back"
            } else {
                "would be back"
            },
            &to[..to.len().min(8)]
        ),
        _ => format!("Every tick on {} is valid: nothing to repair.", r.remote),
    })?;
    Ok(Exit::Ok)
}

/// Asks on the terminal before ticks leave the hub; refuses without one.
fn confirm(ctx: &Ctx, r: &sync::repair::Repair) -> Result<()> {
    use std::io::{BufRead, IsTerminal};
    let n = r.removed.len();
    if !std::io::stdin().is_terminal() {
        return Err(Refusal::usage(
            Code::ConfirmRepair,
            format!(
                "putting {} back would remove {n} commit{} from it, and there is no terminal to ask",
                r.remote,
                if n == 1 { "" } else { "s" }
            ),
        )
        .with_hint(format!(
            "list them with `loopx sync {} --repair-remote --dry-run`; if each is a forgery, run it again with --yes",
            r.remote
        ))
        .into());
    }
    ctx.out.status(&format!(
        "Remove {n} commit{} from {}? Each is a tick every clone refuses. [y/N]",
        if n == 1 { "" } else { "s" },
        r.remote
    ));
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    if !matches!(line.trim(), "y" | "Y" | "yes") {
        return Err(Refusal::rule(
            Code::NotConfirmed,
            format!("nothing was removed from {}", r.remote),
        )
        .into());
    }
    Ok(())
}
