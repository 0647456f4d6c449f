//! `loopx digest`: what happened while you were away, from the history alone.

use std::collections::BTreeMap;

use anyhow::Result;
use serde::Serialize;

use crate::cmd::tx;
use crate::cmd::wire::StuckRow;
use crate::ctx::Ctx;
use crate::error::{Code, Exit, Refusal};
use crate::history::{self, Tick};
use crate::model::{AgentStatus, EvidenceKind, GoalId, TodoId};
use crate::op::{
    Change, EvidenceAdd, GateAnswer, GateOpen, Settle, TodoClaim, TodoDone, TodoRelease,
    UsageRecord, board,
};
use crate::time::{Span, Timestamp, When};

/// What happened since a time: todos done, claims freed, gates opened and
/// answered, failed checks, quiet agents, slots spent, sync rejections
///
/// First what needs you now (open gates waiting on a human, with the
/// commands that answer them), the leases that ran out and the claims
/// that are stuck (their holder's session gone, or no tick by it for the
/// team's stuck_after), each with when its lease frees it and the command
/// that frees it now; then what happened, read from the history: claims
/// taken over or released by force, gates opened (by `gate open`, or by
/// `settle` and usage records: stall and budget gates), dollars spent per
/// agent. At most 40 lines on screen ("and N more" beyond). An agent is
/// quiet when it is active and has written no tick in the last hour (or
/// the last quarter of a shorter window).
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  loopx digest --since 12h              what happened overnight
  loopx digest --since 1d --goal web --markdown  paste it into a chat")]
pub struct Args {
    /// Since when: a duration reads as that long ago (12h, 1d); or a date
    /// (2026-12-07, 2026-12-07 16:57; UTC), an RFC 3339 time or
    /// @UNIX-SECONDS
    #[arg(long, value_name = "DURATION|TIME")]
    since: When,
    /// Only what concerns this goal
    #[arg(long, value_name = "G")]
    goal: Option<String>,
    /// Markdown, to paste into a chat or an issue
    #[arg(long)]
    markdown: bool,
}

/// At most this many lines on screen or in Markdown.
const MAX_LINES: usize = 40;

/// The history walk stops after this many ticks in a row older than
/// `--since` (as `log --since` does), so a few ticks with skewed times do
/// not end it early.
const OLDER_IN_A_ROW: usize = 20;

#[derive(Serialize, Default)]
struct Wire<'a> {
    since: String,
    until: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    goal: Option<GoalId>,
    ticks: usize,
    /// Open gates waiting on a human, oldest first (the state now).
    needs_you: Vec<Waiting>,
    /// Claims whose lease has run out (the state now).
    expired_leases: Vec<Expired>,
    /// Claims whose lease has not run out but whose holder is gone or
    /// silent (the state now, as this clone sees it).
    stuck: Vec<StuckRow<'a>>,
    done: Vec<Item>,
    /// Claims taken over (an expired lease stolen) or released by force.
    freed: Vec<Item>,
    gates_opened: Vec<Item>,
    gates_answered: Vec<Item>,
    failed: Vec<Item>,
    quiet: Vec<Quiet>,
    slots: BTreeMap<String, u32>,
    /// Dollars (and tokens) the usage records of the window add up to, per
    /// agent.
    spent: BTreeMap<String, Spend>,
    sync_rejected: Vec<Item>,
}

#[derive(Serialize)]
struct Waiting {
    gate: crate::model::GateId,
    goal: GoalId,
    kind: &'static str,
    question: String,
    opened_at: Timestamp,
    /// One `loopx gate answer` command per option.
    answer: Vec<String>,
}

#[derive(Serialize)]
struct Expired {
    todo: TodoId,
    title: String,
    owner: String,
    lease_until: Timestamp,
}

#[derive(Serialize, Default)]
struct Spend {
    usd: f64,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    estimated: bool,
    tokens: u64,
    /// Usage records with tokens that nothing could price: `usd` leaves
    /// them out.
    #[serde(skip_serializing_if = "is_zero")]
    unpriced_turns: u64,
    /// Their models, each once.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    unpriced_models: Vec<String>,
    #[serde(skip)]
    sum: crate::model::usage::Spent,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One event: the tick, its time, who, and the line a person reads.
#[derive(Serialize, Clone)]
struct Item {
    tick: u64,
    at: Timestamp,
    by: String,
    text: String,
}

#[derive(Serialize)]
struct Quiet {
    agent: String,
    /// Its newest tick in the window; absent when it wrote none.
    #[serde(skip_serializing_if = "Option::is_none")]
    last_tick_at: Option<Timestamp>,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let now = ctx.now;
    let since = args.since.back_from(now);
    let mut snap = tx::load(ctx)?;
    // The shared ref of a split state reads every goal ref too.
    snap.state = tx::goalref::union(ctx.store()?, snap.state)?;
    let state = &snap.state;
    let goal = match &args.goal {
        None => None,
        Some(typed) => {
            let id = GoalId::new(typed).map_err(|e| Refusal::usage(Code::BadId, e))?;
            if !state.goals.contains_key(&id) {
                return Err(crate::model::unknown_goal(&id).into());
            }
            Some(id)
        }
    };
    let mut w = Wire {
        since: since.to_string(),
        until: now.to_string(),
        goal: goal.clone(),
        ..Wire::default()
    };
    // Done todos may have been archived since: their titles and goals live there.
    let archive = tx::load_archive(ctx, &snap)?;
    let find = |t: &TodoId| state.todos.get(t).or_else(|| archive.get(t));
    let mut last_seen: BTreeMap<String, Timestamp> = BTreeMap::new();
    // Each tick in the window: when, by whom, its number; a gate opened as
    // the effect of an op (settle's stall gate, a usage record's budget
    // gate) is found by these.
    let mut window: Vec<(Timestamp, String, u64)> = Vec::new();
    let mut older = 0;
    for e in history::walk_view(ctx.repo()?, snap.tip.commit)? {
        let t = Tick::read(e?);
        let at = t.time();
        if at < since {
            older += 1;
            if older >= OLDER_IN_A_ROW {
                break;
            }
            continue;
        }
        older = 0;
        let Some(op) = t.op() else { continue };
        let by = op.actor.name().to_owned();
        last_seen.entry(by.clone()).or_insert(at);
        let steps: Vec<&Change> = match &op.change {
            Change::Settle(Settle { steps, .. }) => steps.iter().collect(),
            c => vec![c],
        };
        if let Some(g) = &goal
            && !steps
                .iter()
                .any(|c| c.goal_in(state, &find).as_ref() == Some(g))
        {
            continue;
        }
        w.ticks += 1;
        let tick = t.number().unwrap_or(0);
        window.push((at, by.clone(), tick));
        let item = |text: String| Item {
            tick,
            at,
            by: by.clone(),
            text,
        };
        if steps.iter().any(|c| board::failed_check(c)) {
            w.failed.push(item(t.subject()));
        }
        for c in steps {
            match c {
                Change::TodoClaim(TodoClaim { todo, .. })
                | Change::TodoRelease(TodoRelease {
                    todo, force: true, ..
                }) => {
                    let Some(x) = find(todo) else { continue };
                    let Some(from) = crate::op::todo::lost_by(x, at, &op.actor) else {
                        continue;
                    };
                    let how = match c {
                        Change::TodoClaim(_) => format!("taken over from {from}"),
                        _ => format!("released from {from} by force"),
                    };
                    w.freed.push(item(format!("{todo} \"{}\" {how}", x.title)));
                }
                Change::TodoDone(TodoDone {
                    todo, validation, ..
                }) => {
                    let title = find(todo)
                        .map(|x| format!(" \"{}\"", x.title))
                        .unwrap_or_default();
                    let check = match validation {
                        Some(r) if r.passed() => ", validation passed",
                        Some(_) => ", validation failed",
                        None => "",
                    };
                    // The evidence the completion rests on: its own
                    // validation, else the last record before it. A record
                    // made later (sync's record of another agent's lost
                    // claim on the todo, say) says nothing of this done.
                    let ev = find(todo)
                        .and_then(|x| x.last_evidence.as_ref())
                        .filter(|e| validation.is_none() && e.at <= at)
                        .map(|e| {
                            format!(
                                ", last evidence {} {}",
                                e.id,
                                if e.passed { "passed" } else { "failed" }
                            )
                        })
                        .unwrap_or_default();
                    w.done.push(item(format!("{todo}{title}{check}{ev}")));
                }
                Change::GateOpen(GateOpen {
                    gate,
                    question,
                    kind,
                    ..
                }) => w
                    .gates_opened
                    .push(item(format!("{gate} {} \"{question}\"", kind.as_str()))),
                Change::GateAnswer(GateAnswer { gate, choice, .. }) => {
                    let q = state
                        .gates
                        .get(gate)
                        .map(|g| format!(" \"{}\"", g.question))
                        .unwrap_or_default();
                    w.gates_answered.push(item(format!("{gate}{q}: {choice}")));
                }
                Change::QuotaSpend(_) => *w.slots.entry(by.clone()).or_default() += 1,
                Change::UsageRecord(UsageRecord { usage, .. }) => {
                    let s = w.spent.entry(by.clone()).or_default();
                    s.sum.add(usage);
                    s.usd = s.sum.usd.dollars();
                    s.estimated = s.sum.estimated;
                    s.tokens = s.sum.tokens;
                    s.unpriced_turns = s.sum.unpriced;
                    s.unpriced_models = s.sum.unpriced_models.clone();
                }
                Change::EvidenceAdd(EvidenceAdd {
                    kind: EvidenceKind::SyncRejected,
                    summary,
                    ..
                }) => w.sync_rejected.push(item(summary.clone())),
                _ => {}
            }
        }
    }
    // Gates no `gate open` in the window opened: those an op opened as its
    // effect (settle's stall gate, a usage record's budget gate).
    let listed: Vec<String> = w
        .gates_opened
        .iter()
        .filter_map(|i| i.text.split(' ').next().map(str::to_owned))
        .collect();
    let mut effects: Vec<Item> = Vec::new();
    for g in state.gates.values() {
        if g.opened_at < since
            || listed.iter().any(|l| l == g.id.as_str())
            || goal.as_ref().is_some_and(|x| *x != g.goal)
        {
            continue;
        }
        let by = g.opened_by.name().to_owned();
        let Some((_, _, tick)) = window
            .iter()
            .find(|(at, who, _)| *at == g.opened_at && *who == by)
        else {
            continue;
        };
        effects.push(Item {
            tick: *tick,
            at: g.opened_at,
            by,
            text: format!("{} {} \"{}\"", g.id, g.kind.as_str(), g.question),
        });
    }
    w.gates_opened.extend(effects);
    w.gates_opened
        .sort_by_key(|i| std::cmp::Reverse((i.tick, i.at)));
    // What needs a person now, from the state as it is.
    let mut waiting: Vec<&crate::model::Gate> = state
        .gates
        .values()
        .filter(|g| g.is_open() && g.kind.human_only())
        .filter(|g| goal.as_ref().is_none_or(|x| *x == g.goal))
        .collect();
    waiting.sort_by_key(|g| (g.opened_at, g.id.clone()));
    w.needs_you = waiting
        .into_iter()
        .map(|g| Waiting {
            gate: g.id.clone(),
            goal: g.goal.clone(),
            kind: g.kind.as_str(),
            question: g.question.clone(),
            opened_at: g.opened_at,
            answer: g
                .options
                .iter()
                .map(|o| crate::notify::answer_command(g, o))
                .collect(),
        })
        .collect();
    let skew = state.meta.settings.clock_skew;
    for t in state.todos.values() {
        let Some(c) = &t.claim else { continue };
        if t.live_claim(now, skew).is_some() || goal.as_ref().is_some_and(|x| *x != t.goal) {
            continue;
        }
        w.expired_leases.push(Expired {
            todo: t.id.clone(),
            title: t.title.clone(),
            owner: c.owner.to_string(),
            lease_until: c.lease_until,
        });
    }
    w.expired_leases.sort_by_key(|e| e.lease_until);
    let local = crate::cmd::stuck_local(ctx);
    w.stuck = crate::op::stuck::claims(state, now, &local)
        .iter()
        .filter(|s| goal.as_ref().is_none_or(|g| *g == s.todo.goal))
        .map(StuckRow::of)
        .collect();
    let quiet_after = Span::hours(1).min(Span::seconds(now.since(since).as_secs() / 4));
    for a in state.agents.values() {
        if a.status != AgentStatus::Active {
            continue;
        }
        if let Some(g) = &goal
            && !state
                .todos
                .values()
                .any(|t| &t.goal == g && t.owner() == Some(&a.id))
            && a.last_turn.as_ref().is_none_or(|l| &l.goal != g)
        {
            continue;
        }
        let seen = last_seen.get(a.id.as_str()).copied();
        if seen.is_none_or(|s| now.since(s) > quiet_after) {
            w.quiet.push(Quiet {
                agent: a.id.to_string(),
                last_tick_at: seen,
            });
        }
    }
    // Oldest first reads like a story.
    for v in [
        &mut w.done,
        &mut w.freed,
        &mut w.gates_opened,
        &mut w.gates_answered,
        &mut w.failed,
        &mut w.sync_rejected,
    ] {
        v.reverse();
    }
    ctx.out.emit(&w, || render(&w, args.markdown))?;
    Ok(Exit::Ok)
}

/// The screen (or Markdown): a title, then one block per non-empty section,
/// at most [`MAX_LINES`] lines in all. Sections share the lines in turn,
/// one item each, and one that does not fit ends with "and N more".
fn render(w: &Wire<'_>, markdown: bool) -> String {
    let (h, bullet) = if markdown { ("### ", "- ") } else { ("", "  ") };
    let scope = w
        .goal
        .as_ref()
        .map(|g| format!(" on goal {g}"))
        .unwrap_or_default();
    let title = if markdown {
        format!("## loopx digest{scope}: {} to {}", w.since, w.until)
    } else {
        format!(
            "loopx digest{scope}: {} to {} ({} ticks)",
            w.since, w.until, w.ticks
        )
    };
    let line = |i: &Item| format!("{bullet}{}  {}  {}", i.at, i.by, i.text);
    let mut sections: Vec<(String, Vec<String>)> = vec![
        (
            "Needs you now".into(),
            w.needs_you
                .iter()
                .map(|g| {
                    format!(
                        "{bullet}{} {} on {}, open since {}: \"{}\"; answer with `{}`",
                        g.gate,
                        g.kind,
                        g.goal,
                        g.opened_at,
                        g.question,
                        g.answer.join("` or `")
                    )
                })
                .collect(),
        ),
        (
            "Expired leases".into(),
            w.expired_leases
                .iter()
                .map(|e| {
                    format!(
                        "{bullet}{} \"{}\"  {}'s lease ran out at {}",
                        e.todo, e.title, e.owner, e.lease_until
                    )
                })
                .collect(),
        ),
        (
            "Stuck claims".into(),
            w.stuck
                .iter()
                .map(|s| format!("{bullet}{} \"{}\"  {}", s.todo, s.title, s.line))
                .collect(),
        ),
        ("Done".into(), w.done.iter().map(line).collect()),
        ("Claims freed".into(), w.freed.iter().map(line).collect()),
        (
            "Gates opened".into(),
            w.gates_opened.iter().map(line).collect(),
        ),
        (
            "Gates answered".into(),
            w.gates_answered.iter().map(line).collect(),
        ),
        ("Failed checks".into(), w.failed.iter().map(line).collect()),
        (
            "Quiet agents".into(),
            w.quiet
                .iter()
                .map(|q| match q.last_tick_at {
                    Some(t) => format!("{bullet}{}  last tick {t}", q.agent),
                    None => format!("{bullet}{}  no tick in the window", q.agent),
                })
                .collect(),
        ),
        (
            "Slots spent".into(),
            w.slots
                .iter()
                .map(|(a, n)| format!("{bullet}{a}  {n}"))
                .collect(),
        ),
        (
            "Dollars spent".into(),
            w.spent
                .iter()
                .map(|(a, s)| {
                    // Tokens nothing priced are no "$0.00": they say so.
                    let dollars = match (s.sum.unpriced_note(), s.sum.usd.0) {
                        (Some(n), 0) => n["plus ".len()..].to_owned(),
                        (Some(n), _) => format!(
                            "{}{} {n}",
                            s.sum.usd,
                            if s.estimated { " (est.)" } else { "" }
                        ),
                        (None, _) => {
                            format!("{}{}", s.sum.usd, if s.estimated { " (est.)" } else { "" })
                        }
                    };
                    format!(
                        "{bullet}{a}  {dollars}, {} tokens",
                        crate::model::usage::human_count(s.tokens)
                    )
                })
                .collect(),
        ),
        (
            "Sync rejections".into(),
            w.sync_rejected.iter().map(line).collect(),
        ),
    ];
    sections.retain(|(_, items)| !items.is_empty());
    let mut out = vec![title];
    if sections.is_empty() {
        out.push("Nothing happened.".into());
        return out.join("\n") + "\n";
    }
    let fixed = out.len() + sections.len() * if markdown { 2 } else { 1 };
    let mut budget = MAX_LINES.saturating_sub(fixed);
    let mut shown = vec![0usize; sections.len()];
    while budget > 0 {
        let mut gave = false;
        for (i, (_, items)) in sections.iter().enumerate() {
            if budget > 0 && shown[i] < items.len() {
                shown[i] += 1;
                budget -= 1;
                gave = true;
            }
        }
        if !gave {
            break;
        }
    }
    for (i, (name, items)) in sections.iter().enumerate() {
        if markdown {
            out.push(String::new());
        }
        out.push(format!("{h}{name} ({})", items.len()));
        // A section cut short gives its last line to "and N more".
        let cut = shown[i] < items.len();
        let n = if cut {
            shown[i].saturating_sub(1)
        } else {
            shown[i]
        };
        out.extend(items[..n].iter().cloned());
        if cut {
            out.push(format!("{bullet}… and {} more", items.len() - n));
        }
    }
    out.join("\n") + "\n"
}
