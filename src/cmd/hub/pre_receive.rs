//! `loopx hub pre-receive`: the check the hook of `loopx hub install` runs.
//! Reads git's `<old> <new> <ref>` lines from stdin; refuses (exit 3, with
//! the reason on stderr, which the pushing user sees) any update of
//! `refs/loopx/*` that deletes a ref, is not a fast-forward, or brings a
//! commit that is not a valid tick; a new goal ref that is not the
//! goal-ref half of a split whose other half the hub holds; and any
//! creation or update of a replacement ref (`refs/replace/*`). Pushed
//! objects are read from git's quarantine (`GIT_OBJECT_DIRECTORY`,
//! `GIT_ALTERNATE_OBJECT_DIRECTORIES`).

use std::io::Read;
use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::ctx::Ctx;
use crate::error::{Code, Exit, Refusal};
use crate::store::Store;
use crate::tx::goalref;
use crate::verify::{self, Update};

/// Check the ref updates of a push (run by the hook `hub install` writes)
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(ctx: &Ctx, _args: &Args) -> Result<Exit> {
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .context("reading the pushed ref updates")?;
    let mut store = Store::discover(&ctx.cwd)?;
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(d) = ctx.env.get("GIT_OBJECT_DIRECTORY") {
        dirs.push(PathBuf::from(d));
    }
    if let Some(list) = ctx.env.get("GIT_ALTERNATE_OBJECT_DIRECTORIES") {
        dirs.extend(
            list.split(':')
                .filter(|d| !d.is_empty())
                .map(|d| PathBuf::from(d.trim_matches('"'))),
        );
    }
    let _objects = if dirs.is_empty() {
        None
    } else {
        Some(store.with_object_dirs(&dirs)?)
    };
    let updates: Vec<(&str, &str, &str)> = input
        .lines()
        .filter_map(|line| {
            let mut parts = line.split_whitespace();
            Some((parts.next()?, parts.next()?, parts.next()?))
        })
        .collect();
    // Pins count only on this hub's own shared ref: not on a shared tip
    // this push brings (git may take a goal ref of a plain push and still
    // refuse its shared ref), nor on any other ref a pusher may write.
    goalref::hub_guard();
    for (old, new, name) in updates {
        if name.starts_with("refs/replace/") && new.bytes().any(|b| b != b'0') {
            return Err(replace_ref(name).into());
        }
        if !name.starts_with("refs/loopx/") {
            continue;
        }
        check(ctx, &store, old, new, name)?;
    }
    Ok(Exit::Ok)
}

/// A replacement object would make git (and an older loopx) read another
/// commit in place of the one an id names: the history a tick signs and
/// `verify` checks would no longer be what other tools see, and a
/// self-referencing one turns it into a cycle. loopx never follows them;
/// the hub takes none (deleting one stays allowed).
fn replace_ref(name: &str) -> Refusal {
    Refusal::rule(
        Code::HubReplaceRef,
        format!("loopx hub: refusing {name}: this hub takes no replacement refs (refs/replace/*)"),
    )
    .with_hint("history here is read exactly as written; push the commits themselves instead of a replacement, or ask a hub admin")
}

/// Refuses one update of a `refs/loopx/*` ref, or lets it through.
fn check(ctx: &Ctx, store: &Store, old: &str, new: &str, name: &str) -> Result<()> {
    let refusal = match verify::update(
        store,
        name,
        old,
        new,
        crate::time::Timestamp::system_now(),
        ctx.repo()?.signing()?,
    ) {
        Ok(()) => return Ok(()),
        Err(Update::Failed(e)) => return Err(e),
        Err(Update::Deletion) => Refusal::rule(
            Code::HubDelete,
            "loopx state refs are never deleted on this hub",
        )
        .with_hint("the state's history is the team's evidence trail; a hub admin can remove the hook to delete it"),
        Err(Update::Rewrite { old, new }) => Refusal::rule(
            Code::HubNonFastForward,
            format!(
                "{} does not build on the hub's {} (not a fast-forward)",
                new.short(8),
                old.short(8)
            ),
        )
        .with_hint("run `loopx sync`, which replays local ticks onto the hub's; this hub never takes a rewrite of its history"),
        Err(Update::StrayGoalRef(why)) => Refusal::rule(
            Code::HubGoalRef,
            format!("it is not the goal-ref half of a split: {why}"),
        )
        .with_hint("a guarded hub takes a new goal ref only from `loopx goal split`, pushed by `loopx sync` after the split's other half; keep a state of its own on a ref outside refs/loopx/goals/"),
        Err(Update::Invalid(f)) => f.refusal(
            "nothing was changed on the hub. Move your state ref back to the hub's tip (`loopx sync` tells you how) and redo the change with loopx commands",
        ),
    };
    let mut r = refusal;
    r.message = format!("loopx hub: refusing {name}: {}", r.message);
    Err(r.into())
}
