//! `loopx gc`: pack the repository's loose objects now, and prune the
//! unreachable ones (lost compare-and-swap races) older than a window.
//!
//! The window is never shorter than [`SAFE_MINIMUM`], whatever `--prune`
//! or gc.pruneExpire say: a tick writes its objects before its
//! compare-and-swap makes them reachable, and writers may go past a stuck
//! queue (src/queue.rs), so no lock protects those objects; their age does.

use anyhow::Result;
use serde::Serialize;

use crate::ctx::Ctx;
use crate::error::{Code, Exit, Refusal};
use crate::git::{self, ObjectCount};
use crate::time::Timestamp;

/// The youngest an unreachable object can be and still be pruned: far
/// longer than any tick takes from writing its objects to moving the ref.
pub const SAFE_MINIMUM: &str = "1.hour.ago";
/// [`SAFE_MINIMUM`] in seconds.
const SAFE_MINIMUM_SECS: i64 = 3600;

/// Pack loose objects and prune unreachable ones older than two weeks
///
/// Repacks what is reachable into one pack and removes the objects no ref,
/// reflog entry or index reaches that are older than the prune window: git
/// config gc.pruneExpire, else git's default of two weeks. Those are mostly
/// what writers that lost a race for the state ref left behind. Younger
/// unreachable objects are kept (a writer may be about to use them), and
/// never any younger than an hour, whatever the window says. Ticks also
/// pack in the background every N ticks (git config loopx.autoPack, default
/// 200; 0 turns it off), without pruning.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Prune unreachable objects older than DATE, as git reads it
    /// (`2.weeks.ago`, `2026-11-01`, `now`, or `never` to only repack);
    /// default git config gc.pruneExpire, else 2.weeks.ago. A date less
    /// than an hour ago (such as `now`) is raised to 1.hour.ago, so objects
    /// a concurrent tick has just written are never removed.
    #[arg(long, value_name = "DATE")]
    pub prune: Option<String>,
}

#[derive(Serialize)]
struct Wire {
    before: ObjectCount,
    after: ObjectCount,
    prune: Prune,
    /// Objects in the repository before minus after (each counted once).
    pruned: u64,
}

#[derive(Serialize)]
struct Prune {
    /// The window as given.
    expire: String,
    /// Where it came from: `option`, `config` or `default`.
    from: &'static str,
    /// Unreachable objects last modified before this went; `None` with
    /// `never`.
    #[serde(skip_serializing_if = "Option::is_none")]
    before: Option<Timestamp>,
    /// The window asked for, when it was younger than the safe minimum and
    /// `expire` was raised to it.
    #[serde(skip_serializing_if = "Option::is_none")]
    raised_from: Option<String>,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let store = ctx.store()?;
    let dir = store.common_dir();
    let (expire, from) = match (&args.prune, store.config("gc.pruneExpire")) {
        (Some(given), _) => (given.trim().to_owned(), "option"),
        (None, Some(config)) => (config.trim().to_owned(), "config"),
        (None, None) => (git::PRUNE_EXPIRE.to_owned(), "default"),
    };
    let cutoff = git::expiry_date(dir, &expire).map_err(|_| {
        let (what, fix) = match from {
            "option" => (
                format!("--prune {expire:?}"),
                "pass a date git understands, such as 2.weeks.ago, 2026-11-01, now or never",
            ),
            _ => (
                format!("git config gc.pruneExpire = {expire:?}"),
                "fix it (such as 2.weeks.ago, 2026-11-01, now or never), or pass --prune DATE",
            ),
        };
        Refusal::usage(
            Code::BadDate,
            format!("{what} is not a date git understands; nothing was changed"),
        )
        .with_hint(fix)
    })?;
    // Never younger than the safe minimum (by this machine's clock, as the
    // objects' file times are).
    let floor = Timestamp::system_now().unix() - SAFE_MINIMUM_SECS;
    let (expire, cutoff, raised_from) = match cutoff {
        Some(c) if c > floor => (
            SAFE_MINIMUM.to_owned(),
            git::expiry_date(dir, SAFE_MINIMUM)?,
            Some(expire),
        ),
        _ => (expire, cutoff, None),
    };
    let before = git::count_objects(dir)?;
    let total_before = git::object_total(dir)?;
    match cutoff {
        Some(_) => git::prune(dir, &expire)?,
        None => {
            git::output(dir, &git::REPACK)?;
        }
    }
    let after = git::count_objects(dir)?;
    let total_after = git::object_total(dir)?;
    let wire = Wire {
        before,
        after,
        prune: Prune {
            expire,
            from,
            before: cutoff.map(|secs| {
                if secs == i64::MAX {
                    Timestamp::system_now()
                } else {
                    Timestamp::from_unix(secs)
                }
            }),
            raised_from,
        },
        pruned: total_before.saturating_sub(total_after),
    };
    ctx.out.emit(&wire, || {
        let packed = format!(
            "Packed: {} loose objects before, {} after; {} pack{} holding {} objects.",
            before.loose,
            after.loose,
            after.packs,
            if after.packs == 1 { "" } else { "s" },
            after.in_pack
        );
        let raised = match &wire.prune.raised_from {
            Some(asked) => format!(
                "Kept unreachable objects younger than an hour ({asked} asked for less): a running tick may be about to use them.\n"
            ),
            None => String::new(),
        };
        let pruned = match wire.prune.before {
            Some(at) => format!(
                "Pruned {} unreachable object{} older than {} ({at}).",
                wire.pruned,
                if wire.pruned == 1 { "" } else { "s" },
                wire.prune.expire
            ),
            None => "Pruned nothing (the prune window is never).".to_owned(),
        };
        format!("{packed}\n{raised}{pruned}")
    })?;
    Ok(Exit::Ok)
}
