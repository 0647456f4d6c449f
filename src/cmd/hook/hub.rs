//! The hook and the team's hub, and git's own hooks: the bounded sync at a
//! session's start and end, and the note git's pre-push and post-merge
//! give when the local state differs from a remote's copy.

use anyhow::{Context, Result};

use crate::ctx::{Ctx, Env, Global};
use crate::hook::{Answer, Event};

/// How long the SessionStart hook's sync with the hub may take: well below
/// the time any runtime gives a hook (OpenCode's plugin stops one at 15 s).
pub(super) const START_SYNC: crate::time::Span = crate::time::Span::seconds(3);
/// The same at SessionEnd (Codex cuts that hook to 3 s).
pub(super) const END_SYNC: crate::time::Span = crate::time::Span::seconds(2);

/// What a hook's sync with the hub did.
pub(super) enum Synced {
    /// The clone has no hub (or opted out with loopx.claimSync false).
    Alone,
    Online,
    /// It did not finish in time, or failed: why, and the state's age.
    Offline(String),
}

/// Syncs with the hub, when the clone has one, in a child `loopx sync` that
/// is ended (with every git process it started) after `limit`. Killing
/// it is safe: the hub's ref moves only by a whole push, the local one only
/// by compare-and-swap.
pub(super) fn sync(ctx: &Ctx, limit: crate::time::Span) -> Synced {
    if !crate::cmd::syncs(ctx, false, false).unwrap_or(false) {
        return Synced::Alone;
    }
    let (Ok(exe), Ok(store)) = (std::env::current_exe(), ctx.store()) else {
        return Synced::Alone;
    };
    let root = store.root().to_path_buf();
    let argv: Vec<String> = vec![
        exe.display().to_string(),
        "-C".to_owned(),
        root.display().to_string(),
        "sync".to_owned(),
    ];
    let run = crate::run::run(&argv, &root, limit);
    // Exit 4: the hub rejected one of this agent's ticks, and sync recorded
    // it: the state is the hub's all the same.
    if matches!(run.exit, Some(0 | 4)) {
        return Synced::Online;
    }
    let why = if run.timed_out {
        format!("the hub did not answer within {limit}")
    } else {
        // The error's line, not its hint.
        let lines = run.last_lines(8);
        lines
            .iter()
            .find_map(|l| l.strip_prefix("error: "))
            .or(lines.last().copied())
            .map_or_else(|| "the sync with the hub failed".to_owned(), str::to_owned)
    };
    Synced::Offline(format!("offline: {why}; {}", state_age(ctx)))
}

/// "state as of <when it last synced with the hub>".
fn state_age(ctx: &Ctx) -> String {
    let synced = ctx
        .repo()
        .ok()
        .and_then(|r| crate::sync::names(r, None).ok())
        .and_then(|n| ctx.store().ok()?.resolve(&n.synced).ok().flatten())
        .and_then(|t| crate::history::entry(ctx.repo().ok()?, t.commit).ok());
    match synced {
        Some(e) => format!(
            "state as of {} (the last sync); claims fail until the hub answers",
            crate::history::Tick::read(e).time()
        ),
        None => {
            "this clone never synced with its hub; claims fail until the hub answers".to_owned()
        }
    }
}

/// git's pre-push and post-merge: a note when the local state differs from
/// a remote's last fetched copy. Reads only; nothing while loopx's own sync
/// runs git.
pub(super) fn git_event(
    global: &Global,
    env: &Env,
    event: Event,
    rest: &[String],
) -> Result<Answer> {
    if env.get("LOOPX_IN_SYNC").is_some() {
        return Ok(Answer::Nothing);
    }
    let dir = match &global.dir {
        Some(d) => d.clone(),
        None => std::env::current_dir().context("reading the current directory")?,
    };
    let Ok(store) = crate::store::Store::discover(&dir) else {
        return Ok(Answer::Nothing);
    };
    let Some(tip) = store.tip()? else {
        return Ok(Answer::Nothing);
    };
    let refs = crate::git::output(
        store.common_dir(),
        &[
            "for-each-ref",
            "--format=%(refname) %(objectname)",
            "refs/loopx/remotes/",
        ],
    )?;
    let tip = tip.commit.to_string();
    let only = match event {
        Event::PrePush => rest.first().map(String::as_str),
        _ => None,
    };
    let differs: Vec<&str> = refs
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter_map(|(name, oid)| {
            let remote = name
                .strip_prefix("refs/loopx/remotes/")?
                .strip_suffix("/state")?;
            (oid != tip && only.is_none_or(|o| o == remote)).then_some(remote)
        })
        .collect();
    if differs.is_empty() {
        return Ok(Answer::Nothing);
    }
    Ok(Answer::Note(
        differs
            .iter()
            .map(|r| {
                format!(
                    "loopx: the loopx state differs from {r}'s last fetched copy; `loopx sync {r}` reconciles them (a plain git push does not carry it)."
                )
            })
            .collect::<Vec<_>>()
            .join("\n"),
    ))
}
