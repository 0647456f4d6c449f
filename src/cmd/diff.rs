//! `loopx diff`: what changed between two states, as a semantic summary
//! (todos added, claimed, released, done …) and, with `-p`, file diffs.

use anyhow::Result;
use serde::Serialize;

use crate::cmd::wire::paint_diff;
use crate::ctx::Ctx;
use crate::diff::{self, Item};
use crate::error::Exit;
use crate::history::{self, FileDiff, Rev, Tick};
use crate::store::Entry;
use crate::time::Timestamp;

/// Summarize what changed between two states
///
/// A and B are tick numbers (bare digits), commit id prefixes, full ref
/// names or times (a duration reads as that long ago: 2h; a date such as
/// 2026-12-07 or 2026-12-07 16:57, UTC; RFC 3339; @UNIX-SECONDS); B
/// defaults to the tip. The summary compares the
/// two states: todos added, claimed, released, renewed, stolen, done,
/// reopened or updated; goals added or changed; agents registered.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The state to compare from
    #[arg(value_name = "A")]
    from: Rev,
    /// The state to compare to [default: the tip]
    #[arg(value_name = "B")]
    to: Option<Rev>,
    /// Also show the diff of each changed file
    #[arg(short = 'p', long = "patch")]
    patch: bool,
}

#[derive(Serialize)]
struct Wire {
    from: End,
    to: End,
    changes: Vec<Item>,
    #[serde(skip_serializing_if = "Option::is_none")]
    files: Option<Vec<FileDiff>>,
}

/// One side of the comparison.
#[derive(Serialize)]
struct End {
    /// `None` for a commit that is not a loopx tick.
    tick: Option<u64>,
    commit: String,
    time: Timestamp,
}

impl End {
    fn of(entry: &Entry) -> Self {
        let tick = Tick::read(entry.clone());
        End {
            tick: tick.number(),
            commit: entry.commit.to_string(),
            time: tick.time(),
        }
    }

    fn label(&self) -> String {
        match self.tick {
            Some(n) => format!("tick {n} ({})", self.time),
            None => format!(
                "commit {} ({})",
                &self.commit[..12.min(self.commit.len())],
                self.time
            ),
        }
    }
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let a = history::resolve(ctx.repo()?, &args.from, ctx.now)?;
    let b = match &args.to {
        Some(rev) => history::resolve(ctx.repo()?, rev, ctx.now)?,
        None => history::tip_entry(ctx.repo()?)?,
    };
    let state_a = history::load(ctx.repo()?, &a)?.state;
    let state_b = history::load(ctx.repo()?, &b)?.state;
    let files = if args.patch {
        Some(history::file_diffs(&history::diff_trees(
            ctx.repo()?,
            Some(a.tree),
            b.tree,
        )?))
    } else {
        None
    };
    let wire = Wire {
        from: End::of(&a),
        to: End::of(&b),
        changes: diff::summary(&state_a, &state_b),
        files,
    };
    ctx.out.emit_painted(&wire, |p| {
        let mut s = format!("{} → {}\n", wire.from.label(), wire.to.label());
        if wire.changes.is_empty() {
            s.push_str("No changes.\n");
        }
        for item in &wire.changes {
            s.push_str(&item.human());
            s.push('\n');
        }
        let files = wire.files.as_deref().unwrap_or_default();
        if !files.is_empty() {
            s.push('\n');
        }
        p.push(&s);
        for f in files {
            paint_diff(p, f);
        }
    })?;
    Ok(Exit::Ok)
}
