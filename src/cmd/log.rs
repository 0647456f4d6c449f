//! `loopx log`: the ticks of the state ref, newest first, one line each
//! (with `-p`, each changed file's diff), streamed as they are read: `-n 50`
//! reads 50 commits however long the history is.

use std::collections::HashMap;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::cmd::tx;
use crate::cmd::wire::paint_diff;
use crate::ctx::Ctx;
use crate::error::{Code, Exit, Refusal};
use crate::history::{self, FileDiff, Tick};
use crate::model::id::RANDOM_HEX;
use crate::model::{AgentId, GoalId, TodoId, files};
use crate::op::{Change, GoalAdd, GoalSet, Init, TodoAdd};
use crate::time::{Timestamp, When};

/// Show the ticks, newest first: who did what, and when
///
/// One line per tick: tick number, time, actor, operation and subject. The
/// filters combine. The global --agent flag, given here, shows only that
/// agent's ticks (LOOPX_AGENT does not filter). With --format json, one JSON
/// record per line.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  loopx log -n 20                       the last twenty ticks
  loopx log --since 2h --goal web       the last two hours of one goal
  loopx log --todo t-7093 -p            one todo's ticks, with their diffs
  loopx --json log --op gate            one JSON record per line (NDJSON)")]
pub struct Args {
    /// Only ticks about this goal, its todos included
    #[arg(long, value_name = "G")]
    goal: Option<String>,
    /// Only ticks about this todo (its id or a unique prefix)
    #[arg(long, value_name = "T")]
    todo: Option<String>,
    /// Only this operation (todo.claim), or a group of them (todo)
    #[arg(long = "op", value_name = "KIND")]
    op: Option<String>,
    /// Only ticks at or after this time: a duration reads as that long ago
    /// (2h, 3d); or a date (2026-12-07, 2026-12-07 16:57; UTC), an RFC 3339
    /// time or @UNIX-SECONDS
    #[arg(long, value_name = "DURATION|TIME")]
    since: Option<When>,
    /// Show at most N ticks
    #[arg(short = 'n', long = "max-count", value_name = "N")]
    max_count: Option<usize>,
    /// Also show the diff of each changed file
    #[arg(short = 'p', long = "patch")]
    patch: bool,
}

/// `--since` stops the walk after this many ticks in a row older than the
/// time (as `git log --since` does), so a few ticks whose times are out of
/// order, as sync's replays can leave, are still found.
const SINCE_SLOP: usize = 5;

/// One tick, as a JSON line.
#[derive(Serialize)]
struct Record<'a> {
    /// `None` for a commit that is not a loopx tick.
    tick: Option<u64>,
    commit: String,
    time: Timestamp,
    /// The actor as the state records it: `agent:<id>` or `human:<name> <<email>>`.
    actor: Option<String>,
    /// `None` for a commit that is not a tick this loopx can read.
    op: Option<&'a str>,
    subject: String,
    /// For a commit whose op is `None`: who committed it, and why it does
    /// not read as a tick.
    #[serde(skip_serializing_if = "Option::is_none")]
    author: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    not_a_tick: Option<&'a str>,
    /// "signed by NAME (SHA256:…)", "signed by an untrusted key (…)", or
    /// "unsigned" for a human act that needed a signature; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    signature: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    files: Option<Vec<FileDiff>>,
}

/// What the filters ask for, resolved once.
struct Filter {
    goal: Option<GoalId>,
    agent: Option<AgentId>,
    todo: Option<TodoId>,
    op: Option<String>,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let tip = history::tip(ctx.repo()?)?;
    // Where a named goal or agent is looked up: the tip's tree, and on a
    // split state's shared ref every goal ref's too (the walk reads them
    // all).
    let trees = {
        let store = ctx.store()?;
        crate::tx::goalref::view_tips(store, tip.commit)?
            .into_iter()
            .map(|c| Ok(store.tip_at(c)?.tree))
            .collect::<Result<Vec<_>>>()?
    };
    let filter = Filter {
        goal: args
            .goal
            .as_deref()
            .map(|g| existing_goal(ctx, &trees, g))
            .transpose()?,
        agent: ctx
            .agent_flag()
            .map(|a| existing_agent(ctx, &trees, a))
            .transpose()?,
        todo: args.todo.as_deref().map(|t| todo_id(ctx, t)).transpose()?,
        op: args.op.as_deref().map(op_kind).transpose()?,
    };
    let mut goals: HashMap<TodoId, Option<GoalId>> = HashMap::new();
    if args.max_count == Some(0) {
        return Ok(Exit::Ok);
    }
    let signers = crate::trust::AllowedSigners::load(ctx.repo()?)?;
    // Whether an unsigned act needed a signature is judged on the tip's
    // state (its policy, its gates' kinds).
    let judged = crate::cmd::tx::load(ctx)
        .map(|s| s.state)
        .unwrap_or_default();
    let since = args.since.map(|w| w.back_from(ctx.now));
    let widths = Widths::of(tip.tick);
    let mut stream = ctx.out.stream();
    let mut shown = 0usize;
    let mut older = 0usize;
    for entry in history::walk_view(ctx.repo()?, tip.commit)? {
        let tick = Tick::read(entry?);
        if let Some(since) = since
            && tick.time() < since
        {
            older += 1;
            if older >= SINCE_SLOP {
                break;
            }
            continue;
        }
        older = 0;
        if !matches(ctx, &filter, &tick, &mut goals)? {
            continue;
        }
        let files = if args.patch {
            Some(history::file_diffs(&history::changed_files(
                ctx.repo()?,
                &tick.entry,
            )?))
        } else {
            None
        };
        let record = Record {
            tick: tick.number(),
            commit: tick.entry.commit.to_string(),
            time: tick.time(),
            actor: tick.op().map(|op| op.actor.to_string()),
            op: tick.op().map(|op| op.change.kind()),
            subject: tick.subject(),
            author: tick.op().is_none().then(|| tick.author()),
            not_a_tick: tick.parsed.as_ref().err().map(String::as_str),
            signature: tick
                .op()
                .and_then(|op| crate::trust::history_note(op, &signers, &judged)),
            files,
        };
        let first = shown == 0;
        stream.emit_painted(&record, |p| {
            let mut s = String::new();
            if args.patch && !first {
                s.push('\n');
            }
            s.push_str(&line(&tick, &widths));
            if let Some(note) = &record.signature {
                s.push_str(&format!("  [{note}]"));
            }
            s.push('\n');
            p.push(&s);
            for f in record.files.iter().flatten() {
                paint_diff(p, f);
            }
        })?;
        shown += 1;
        if args.max_count.is_some_and(|n| shown >= n) {
            break;
        }
    }
    stream.finish()?;
    Ok(Exit::Ok)
}

/// The widths of `log`'s columns, known before the first line is written
/// (the log streams): the tip's tick number, [`ACTOR`] characters of an
/// actor, and the longest op kind (or the mark of a commit that is not a
/// tick). A longer actor is cut in the middle ([`fit`]), so the columns
/// after it never shift.
struct Widths {
    number: usize,
    kind: usize,
}

/// An actor's column: longer names are cut in the middle with `…`.
const ACTOR: usize = 16;

impl Widths {
    fn of(tip_tick: u64) -> Self {
        Widths {
            number: tip_tick.to_string().len().max(4),
            kind: Change::KINDS
                .iter()
                .chain(&[history::NOT_A_TICK, history::UNREADABLE])
                .map(|k| k.chars().count())
                .max()
                .unwrap_or(14),
        }
    }
}

/// `s` in exactly `width` characters: padded, or cut in the middle with
/// `…`, keeping its start and its end (a session's agent id differs in its
/// last characters: `claude-…634098a0`).
fn fit(s: &str, width: usize) -> String {
    let n = s.chars().count();
    if n <= width {
        return format!("{s:<width$}");
    }
    let head = width.saturating_sub(1) / 2;
    let tail = width.saturating_sub(1) - head;
    let mut cut: String = s.chars().take(head).collect();
    cut.push('…');
    cut.extend(s.chars().skip(n - tail));
    cut
}

/// `  12  2026-11-30T09:06:00Z  agent-a           todo.claim       claim t-… "…"`
fn line(tick: &Tick, w: &Widths) -> String {
    let number = tick
        .number()
        .map_or_else(|| "-".to_owned(), |n| n.to_string());
    format!(
        "{number:>n$}  {}  {}  {}  {}",
        tick.time(),
        fit(tick.actor_name(), ACTOR),
        fit(tick.kind(), w.kind),
        tick.subject(),
        n = w.number,
    )
    .trim_end()
    .to_owned()
}

fn matches(
    ctx: &Ctx,
    filter: &Filter,
    tick: &Tick,
    goals: &mut HashMap<TodoId, Option<GoalId>>,
) -> Result<bool> {
    let any = filter.goal.is_some()
        || filter.agent.is_some()
        || filter.todo.is_some()
        || filter.op.is_some();
    let Some(op) = tick.op() else {
        // A commit that is not a tick is about nothing a filter names.
        return Ok(!any);
    };
    if let Some(kind) = &filter.op
        && !kind_matches(kind, op.change.kind())
    {
        return Ok(false);
    }
    if let Some(agent) = &filter.agent
        && op.actor.agent() != Some(agent)
    {
        return Ok(false);
    }
    if let Some(todo) = &filter.todo
        && op.change.todo() != Some(todo)
    {
        return Ok(false);
    }
    if let Some(goal) = &filter.goal {
        let about = match &op.change {
            Change::Init(Init { goal, .. }) => goal.clone(),
            Change::GoalAdd(GoalAdd { goal, .. }) | Change::GoalSet(GoalSet { goal, .. }) => {
                Some(goal.clone())
            }
            Change::TodoAdd(TodoAdd { todo, goal, .. }) => {
                goals.insert(todo.clone(), Some(goal.clone()));
                Some(goal.clone())
            }
            Change::AgentRegister(_) => None,
            other => match other.todo() {
                Some(todo) => goal_of(ctx, tick, todo, goals)?,
                None => None,
            },
        };
        if about.as_ref() != Some(goal) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `todo.claim` matches itself; `todo` matches every `todo.*`.
fn kind_matches(wanted: &str, kind: &str) -> bool {
    kind == wanted
        || kind
            .strip_prefix(wanted)
            .is_some_and(|rest| rest.starts_with('.'))
}

fn op_kind(typed: &str) -> Result<String, Refusal> {
    if Change::KINDS.iter().any(|k| kind_matches(typed, k)) {
        return Ok(typed.to_owned());
    }
    Err(Refusal::usage(
        Code::UnknownOp,
        format!("{typed:?} is not an operation loopx knows"),
    )
    .with_hint(format!(
        "use a group ({}) or a kind such as todo.claim; `loopx log --help` explains",
        groups().join(", ")
    )))
}

/// The op groups: the part of each kind before the dot.
fn groups() -> Vec<&'static str> {
    let mut g: Vec<&str> = Vec::new();
    for k in Change::KINDS {
        let group = k.split('.').next().unwrap_or(k);
        if !g.contains(&group) {
            g.push(group);
        }
    }
    g
}

/// The goal of a todo: it never changes, so it is read once, from the
/// todo's file in the tick's tree (or its parent's, if the tick removed it).
fn goal_of(
    ctx: &Ctx,
    tick: &Tick,
    todo: &TodoId,
    goals: &mut HashMap<TodoId, Option<GoalId>>,
) -> Result<Option<GoalId>> {
    if let Some(goal) = goals.get(todo) {
        return Ok(goal.clone());
    }
    #[derive(Deserialize)]
    struct GoalOf {
        goal: GoalId,
    }
    let path = files::todo_path(todo);
    let mut bytes = history::file_at(ctx.repo()?, tick.entry.tree, &path)?;
    if bytes.is_none()
        && let Some(parent) = tick.entry.parent
    {
        bytes = history::file_at(
            ctx.repo()?,
            history::entry(ctx.repo()?, parent)?.tree,
            &path,
        )?;
    }
    let goal = bytes
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|text| toml::from_str::<GoalOf>(&text).ok())
        .map(|g| g.goal);
    goals.insert(todo.clone(), goal.clone());
    Ok(goal)
}

/// Whether any of `trees` holds the file at `path`.
fn in_any(ctx: &Ctx, trees: &[crate::store::Oid], path: &str) -> Result<bool> {
    for tree in trees {
        if history::file_at(ctx.repo()?, *tree, path)?.is_some() {
            return Ok(true);
        }
    }
    Ok(false)
}

fn existing_goal(ctx: &Ctx, trees: &[crate::store::Oid], typed: &str) -> Result<GoalId> {
    let id = GoalId::new(typed).map_err(|e| Refusal::usage(Code::BadId, e))?;
    if !in_any(ctx, trees, &files::goal_path(&id))? {
        return Err(crate::model::unknown_goal(&id).into());
    }
    Ok(id)
}

fn existing_agent(ctx: &Ctx, trees: &[crate::store::Oid], id: &AgentId) -> Result<AgentId> {
    if !in_any(ctx, trees, &files::agent_path(id))? {
        return Err(
            Refusal::error(Code::UnknownAgent, format!("there is no agent {id}"))
                .with_hint("`loopx agent list` shows the registered agents")
                .into(),
        );
    }
    Ok(id.clone())
}

/// A todo of the current state, by id or unique prefix; a complete id that
/// is no longer in the live state is taken as it is.
fn todo_id(ctx: &Ctx, typed: &str) -> Result<TodoId> {
    let snap = tx::load(ctx)?;
    match snap.state.resolve_todo(typed) {
        Ok(id) => Ok(id),
        Err(e) => match TodoId::new(typed.trim()) {
            Ok(id) if id.hex().len() == RANDOM_HEX => Ok(id),
            _ => Err(e.into()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::kind_matches;

    #[test]
    fn log_columns_keep_their_width() {
        use super::fit;
        assert_eq!(fit("agent-a", 10), "agent-a   ");
        assert_eq!(fit("claude-code-634098a0", 16), "claude-…634098a0");
        assert_eq!(fit("claude-code-session-7f3a", 10).chars().count(), 10);
        assert_eq!(fit("Zoë Ångström-Ñuñez", 8), "Zoë…uñez");
        let w = super::Widths::of(12);
        assert_eq!(w.number, 4);
        assert_eq!(super::Widths::of(123_456).number, 6);
        assert!(crate::op::Change::KINDS.iter().all(|k| k.len() <= w.kind));
    }

    #[test]
    fn op_groups_match_their_kinds() {
        assert!(kind_matches("todo.claim", "todo.claim"));
        assert!(kind_matches("todo", "todo.claim"));
        assert!(!kind_matches("todo", "goal.add"));
        assert!(!kind_matches("todo.c", "todo.claim"));
        assert!(!kind_matches("init", "goal.add"));
    }
}
