//! `loopx show`: one tick in full: its operation with the arguments, the
//! actor, the time, the trailers, and the diff of each file it changed.

use std::collections::BTreeMap;

use anyhow::Result;
use serde::Serialize;

use crate::cmd::wire::paint_diff;
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::history::{self, FileDiff, Rev, Tick};
use crate::op::message::Parsed;
use crate::op::{Change, Op};
use crate::term::Painted;
use crate::time::Timestamp;

/// Show one tick: its operation, actor, time, trailers and file diffs
///
/// TICK is a tick number (bare digits), a commit id prefix (at least 4 hex
/// digits), a full ref name (refs/loopx/state) or a time, the newest tick at
/// or before it: a duration reads as that long ago (2h), or a date
/// (2026-12-07, 2026-12-07 16:57; UTC), an RFC 3339 time or @UNIX-SECONDS.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The tick to show
    #[arg(value_name = "TICK")]
    tick: Rev,
}

#[derive(Serialize)]
struct Wire<'a> {
    /// `None` for a commit that is not a loopx tick.
    tick: Option<u64>,
    commit: String,
    parent: Option<String>,
    time: Timestamp,
    actor: Option<String>,
    op: Option<&'static str>,
    op_id: Option<String>,
    subject: String,
    /// The op's change as recorded, `kind` included.
    change: Option<&'a Change>,
    trailers: BTreeMap<&'a str, &'a str>,
    /// "signed by NAME (SHA256:…)", "signed by an untrusted key (…)", or
    /// "unsigned" for a human act that needed a signature; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    signature: Option<String>,
    /// For a commit that is not a loopx tick: who made it, its whole
    /// message, and why it is not a tick.
    #[serde(skip_serializing_if = "Option::is_none")]
    author: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    not_a_tick: Option<&'a str>,
    files: Vec<FileDiff>,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let entry = history::resolve(ctx.repo()?, &args.tick, ctx.now)?;
    let tick = Tick::read(entry);
    let files = history::file_diffs(&history::changed_files(ctx.repo()?, &tick.entry)?);
    let op = tick.op();
    let signers = crate::trust::AllowedSigners::load(ctx.repo()?)?;
    // Whether an unsigned act needed a signature is judged on the tip's
    // state (its policy, its gates' kinds).
    let judged = crate::cmd::tx::load(ctx)
        .map(|s| s.state)
        .unwrap_or_default();
    let wire = Wire {
        signature: op.and_then(|op| crate::trust::history_note(op, &signers, &judged)),
        tick: tick.number(),
        commit: tick.entry.commit.to_string(),
        parent: tick.entry.parent.map(|p| p.to_string()),
        time: tick.time(),
        actor: op.map(|op| op.actor.to_string()),
        op: op.map(|op| op.change.kind()),
        op_id: op.map(|op| op.id.to_string()),
        subject: tick.subject(),
        change: op.map(|op| &op.change),
        trailers: tick
            .parsed
            .as_ref()
            .map(|p| {
                p.trailers
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect()
            })
            .unwrap_or_default(),
        author: op.is_none().then(|| tick.author()),
        message: op.is_none().then_some(tick.entry.message.as_str()),
        not_a_tick: tick.parsed.as_ref().err().map(String::as_str),
        files,
    };
    ctx.out.emit_painted(&wire, |p| human(&tick, &wire, p))?;
    Ok(Exit::Ok)
}

fn human(tick: &Tick, w: &Wire, p: &mut Painted) {
    let mut s = match (&tick.parsed, tick.op()) {
        (Ok(p), Some(op)) => head(p, op, w),
        _ => {
            let mut s = match tick.number() {
                Some(n) => format!("tick {n} {}: {}\n", tick.kind(), w.subject),
                None => format!("{}: {}\n", tick.kind(), w.subject),
            };
            s.push_str(&format!("commit:    {}\n", w.commit));
            s.push_str(&format!("time:      {}\n", w.time));
            s.push_str(&format!("author:    {}\n", tick.author()));
            if let Some(why) = w.not_a_tick {
                s.push_str(&format!("why:       {why}\n"));
            }
            s.push_str("message:\n");
            for l in tick.entry.message.trim_end().lines() {
                s.push_str(format!("  {l}").trim_end());
                s.push('\n');
            }
            s
        }
    };
    if !w.files.is_empty() {
        s.push('\n');
    }
    p.push(&s);
    for f in &w.files {
        paint_diff(p, f);
    }
}

fn head(p: &Parsed, op: &Op, w: &Wire) -> String {
    let mut s = format!("tick {}: {}\n", p.tick, w.subject);
    s.push_str(&format!("commit:    {}\n", w.commit));
    s.push_str(&format!("time:      {}\n", op.at));
    s.push_str(&format!("actor:     {}\n", op.actor));
    s.push_str(&format!("op:        {} ({})\n", op.change.kind(), op.id));
    if let Some(note) = &w.signature {
        s.push_str(&format!("signature: {note}\n"));
    }
    let args = arguments(&op.change);
    if !args.is_empty() {
        s.push_str("arguments:\n");
        for a in args {
            s.push_str(&format!("  {a}\n"));
        }
    }
    s.push_str("trailers:\n");
    for (k, v) in &p.trailers {
        s.push_str(&format!("  {k}: {v}\n"));
    }
    s
}

/// The change's arguments as the TOML lines of the commit message, without
/// the `op` line the op line already shows.
fn arguments(change: &Change) -> Vec<String> {
    let text = toml::to_string(change).unwrap_or_default();
    let mut first_op = true;
    text.lines()
        .filter(|l| {
            // The first `op = ` line is the op shown above; a settle's steps
            // keep theirs.
            if first_op && l.starts_with("op = ") {
                first_op = false;
                return false;
            }
            !l.trim().is_empty()
        })
        .map(str::to_owned)
        .collect()
}
