//! `loopx trajectory GOAL`: a goal's decision graph over time, as one
//! self-contained HTML page and the same as JSON, redacted for sharing.
//!
//! Read from the history (the ticks that concern the goal) and the state
//! with its archive (titles, dependencies, gates). Nothing from outside the
//! goal enters it. Every text is built from the ops' full fields (never a
//! commit subject, which was cut when the tick was written) and goes
//! through `Redactor` whole, then is shortened: the secret rules of
//! [`crate::redact`], names replaced by roles (`agent-1`, `human-1`), the
//! names the person lists removed, and personal data by shape
//! ([`crate::redact::personal`]). The page and the JSON say what was
//! removed and what no rule removes; `--keep-names` keeps the names for an
//! internal report.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{Context as _, Result};
use serde::Serialize;

use crate::cmd::tx;
use crate::cmd::wire::esc;
use crate::ctx::Ctx;
use crate::error::{Code, Exit, Refusal};
use crate::history::{self, Tick};
use crate::model::run::CommandRun;
use crate::model::usage::Usd;
use crate::model::{Actor, Blocks, GoalId, Todo, TodoId};
use crate::op::{Change, EvidenceAdd, Settle, TodoDone, TodoHandoff, UsageRecord};
use crate::time::{Timestamp, When};

mod render;
mod roles;
mod what;
use render::{render, shorten};
use roles::Redactor;
use what::what;

/// How long an event's text may be on the page and in the JSON, after
/// redaction.
const EVENT_TEXT: usize = 140;

/// Write a goal's decision graph over time as a shareable page and JSON
///
/// Todos and their dependencies, claims and handoffs between agents,
/// evidence (passing, failing, stale), gates with their questions and
/// answers, reopened and abandoned work, and spend, from the goal's ticks.
/// Redacted by default: secrets, emails, phone numbers, IBANs, password-like
/// values, SSH key fingerprints and machine paths removed, agent and human
/// names replaced by roles, listed names removed; commits by short ids;
/// nothing from outside the goal. The page says what was removed and ends
/// with the review a person still owes before sharing.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  loopx trajectory web                      trajectory-web/trajectory.html and .json
  loopx trajectory web --since 7d --out /tmp/share
  loopx trajectory web --redact-name \"Maria Gonzalez\" --redact-names names.txt")]
pub struct Args {
    /// The goal
    #[arg(value_name = "GOAL")]
    goal: String,
    /// Only ticks at or after this time: a duration reads as that long ago
    /// (7d); or a date (2026-12-07, 2026-12-07 16:57; UTC), an RFC 3339 time
    /// or @UNIX-SECONDS
    #[arg(long, value_name = "DURATION|TIME")]
    since: Option<When>,
    /// Write trajectory.html and trajectory.json into DIR [default:
    /// trajectory-GOAL]
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Keep agent and human names (an internal report; not for sharing)
    #[arg(long)]
    keep_names: bool,
    /// Also remove this name wherever it stands as whole words, in any case
    /// (repeatable); each capitalised part of it goes too
    #[arg(long, value_name = "NAME")]
    redact_name: Vec<String>,
    /// Also remove the names in FILE, one a line (`#` starts a comment)
    #[arg(long, value_name = "FILE")]
    redact_names: Option<PathBuf>,
}

#[derive(Serialize)]
struct Wire {
    goal: GoalId,
    objective: String,
    redacted: bool,
    since: Option<Timestamp>,
    until: Timestamp,
    ticks: usize,
    todos: Vec<Node>,
    gates: Vec<GateNode>,
    events: Vec<Event>,
    spend: Spend,
    /// What was removed and what was not.
    redaction: roles::Redaction,
    #[serde(skip_serializing_if = "Option::is_none")]
    html: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    json: Option<String>,
}

#[derive(Serialize)]
struct Node {
    id: TodoId,
    title: String,
    created_at: Timestamp,
    status: String,
    after: Vec<TodoId>,
    /// Who held it, in order (a handoff or a new claim adds one).
    holders: Vec<String>,
    evidence_passed: u32,
    evidence_failed: u32,
    /// The last evidence was recorded before the current claim began.
    evidence_stale: bool,
    reopened: u32,
    /// Released or deferred without being done.
    abandoned: bool,
}

#[derive(Serialize)]
struct GateNode {
    id: String,
    kind: &'static str,
    question: String,
    options: Vec<String>,
    /// `todo:ID`, `agent:ROLE` or `goal`.
    blocks: String,
    opened_by: String,
    opened_at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    answer: Option<String>,
    status: &'static str,
}

#[derive(Serialize)]
struct Event {
    tick: u64,
    commit: String,
    at: Timestamp,
    by: String,
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    todo: Option<TodoId>,
    text: String,
}

#[derive(Serialize, Default)]
struct Spend {
    usd: f64,
    tokens: u64,
    by: BTreeMap<String, f64>,
    #[serde(skip)]
    micros: Usd,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let snap = tx::load(ctx)?;
    let state = &snap.state;
    let goal = GoalId::new(&args.goal).map_err(|e| Refusal::usage(Code::BadId, e))?;
    let Some(g) = state.goals.get(&goal) else {
        return Err(crate::model::unknown_goal(&goal).into());
    };
    let since = args.since.map(|w| w.back_from(ctx.now));
    let archive = tx::load_archive(ctx, &snap)?;
    let find = |t: &TodoId| state.todos.get(t).or_else(|| archive.get(t));
    let mut red = Redactor::new(!args.keep_names, listed_names(args)?);
    // The goal's ticks, oldest first.
    let mut ticks = Vec::new();
    for e in history::walk(ctx.repo()?, snap.tip.commit)? {
        let e = e?;
        let commit = e.commit.to_string();
        let t = Tick::read(e);
        if since.is_some_and(|s| t.time() < s) {
            break;
        }
        let Some(op) = t.op() else { continue };
        let steps: Vec<&Change> = match &op.change {
            Change::Settle(Settle { steps, .. }) => steps.iter().collect(),
            c => vec![c],
        };
        if !steps
            .iter()
            .any(|c| c.goal_in(state, &find).as_ref() == Some(&goal))
        {
            continue;
        }
        ticks.push((t, commit));
    }
    ticks.reverse();
    let mut nodes: BTreeMap<TodoId, Node> = BTreeMap::new();
    let mut spend = Spend::default();
    let mut events = Vec::new();
    let todos: Vec<&Todo> = state
        .todos
        .values()
        .chain(archive.values())
        .filter(|t| t.goal == goal)
        .collect();
    // Roles in order of first appearance.
    for (t, _) in &ticks {
        if let Some(op) = t.op() {
            red.role(&op.actor);
        }
    }
    for t in &todos {
        red.role(&t.created_by);
    }
    for (t, commit) in &ticks {
        let op = t.op().expect("kept ticks have ops");
        let by = red.role(&op.actor);
        let steps: Vec<&Change> = match &op.change {
            Change::Settle(Settle { steps, .. }) => steps.iter().collect(),
            c => vec![c],
        };
        // A validation `settle` ran is also its evidence in the same tick:
        // counted once.
        let recorded: Vec<&CommandRun> = steps
            .iter()
            .filter_map(|c| match c {
                Change::EvidenceAdd(EvidenceAdd { run: Some(r), .. }) => Some(r),
                _ => None,
            })
            .collect();
        for c in &steps {
            let Some(todo) = c.todo() else {
                if let Change::UsageRecord(UsageRecord { usage, .. }) = c {
                    let cost = usage.cost_usd.unwrap_or_default();
                    spend.micros = spend.micros.saturating_add(cost);
                    spend.tokens += usage.input_tokens + usage.output_tokens;
                    *spend.by.entry(by.clone()).or_default() += cost.dollars();
                }
                continue;
            };
            let Some(x) = find(todo).filter(|x| x.goal == goal) else {
                continue;
            };
            let n = nodes
                .entry(todo.clone())
                .or_insert_with(|| node(x, &mut red));
            let ran = match c {
                Change::EvidenceAdd(EvidenceAdd { run: Some(r), .. }) => Some(r),
                Change::TodoDone(TodoDone {
                    validation: Some(r),
                    ..
                }) if !recorded.contains(&r) => Some(r),
                _ => None,
            };
            match ran {
                Some(r) if r.passed() => n.evidence_passed += 1,
                Some(_) => n.evidence_failed += 1,
                None => {}
            }
            match c {
                Change::TodoClaim(_) => n.holders.push(by.clone()),
                Change::TodoHandoff(TodoHandoff { to, .. }) => n.holders.push(red.agent(to)),
                Change::TodoReopen(_) => n.reopened += 1,
                Change::TodoRelease(_) => n.abandoned = true,
                Change::TodoDone(_) => n.abandoned = false,
                _ => {}
            }
        }
        let text = steps
            .iter()
            .map(|c| what(c, &find, &mut red))
            .collect::<Vec<_>>()
            .join("; ");
        events.push(Event {
            tick: t.number().unwrap_or(0),
            commit: commit[..commit.len().min(10)].to_owned(),
            at: t.time(),
            by,
            kind: op.change.kind(),
            todo: op.change.todo().cloned(),
            text: shorten(&red.text(&text), EVENT_TEXT),
        });
    }
    for t in &todos {
        nodes
            .entry(t.id.clone())
            .or_insert_with(|| node(t, &mut red));
        let n = nodes.get_mut(&t.id).expect("inserted");
        n.status = t.status.as_str().to_owned();
        n.evidence_stale = match (&t.last_evidence, &t.claim) {
            (Some(e), Some(c)) => c.since > e.at,
            _ => false,
        };
        if t.status == crate::model::TodoStatus::Deferred {
            n.abandoned = true;
        }
        if t.status == crate::model::TodoStatus::Done {
            n.abandoned = false;
        }
    }
    spend.usd = spend.micros.dollars();
    let gates: Vec<GateNode> = state
        .gates
        .values()
        .filter(|x| x.goal == goal)
        .filter(|x| since.is_none_or(|s| x.opened_at >= s))
        .map(|x| GateNode {
            id: x.id.to_string(),
            kind: x.kind.as_str(),
            question: red.text(&x.question),
            options: x.options.iter().map(|o| red.text(o)).collect(),
            blocks: match &x.blocks {
                Blocks::Goal => "goal".to_owned(),
                Blocks::Todo(t) => format!("todo:{t}"),
                Blocks::Agent(a) => format!("agent:{}", red.agent(a)),
            },
            opened_by: red.role(&x.opened_by),
            opened_at: x.opened_at,
            answer: x.answer.as_ref().map(|a| {
                let who = red.role(&a.by);
                let note = a
                    .note
                    .as_deref()
                    .map(|n| format!(" ({})", red.text(n)))
                    .unwrap_or_default();
                format!("{} by {who}{note}", red.text(&a.choice))
            }),
            status: if x.is_open() {
                "open"
            } else if x.answer.is_some() {
                "answered"
            } else {
                "withdrawn"
            },
        })
        .collect();
    let dir = args
        .out
        .clone()
        .unwrap_or_else(|| ctx.cwd.join(format!("trajectory-{goal}")));
    let mut wire = Wire {
        goal: goal.clone(),
        objective: red.text(&g.objective),
        redacted: !args.keep_names,
        since,
        until: ctx.now,
        ticks: ticks.len(),
        todos: {
            // Oldest first: the graph reads over time, top to bottom.
            let mut v: Vec<Node> = nodes.into_values().collect();
            v.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
            v
        },
        gates,
        events,
        spend,
        redaction: red.report(),
        html: None,
        json: None,
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let json_path = dir.join("trajectory.json");
    let html_path = dir.join("trajectory.html");
    std::fs::write(&json_path, serde_json::to_string_pretty(&wire)? + "\n")
        .with_context(|| format!("writing {}", json_path.display()))?;
    std::fs::write(&html_path, render(&wire))
        .with_context(|| format!("writing {}", html_path.display()))?;
    wire.html = Some(html_path.display().to_string());
    wire.json = Some(json_path.display().to_string());
    #[derive(Serialize)]
    struct Out<'a> {
        goal: &'a GoalId,
        ticks: usize,
        todos: usize,
        gates: usize,
        html: &'a str,
        json: &'a str,
    }
    ctx.out.emit(
        &Out {
            goal: &wire.goal,
            ticks: wire.ticks,
            todos: wire.todos.len(),
            gates: wire.gates.len(),
            html: wire.html.as_deref().unwrap_or_default(),
            json: wire.json.as_deref().unwrap_or_default(),
        },
        || {
            format!(
                "Wrote the trajectory of goal {} ({} ticks, {} todos, {} gates{}) to {} and {}.",
                wire.goal,
                wire.ticks,
                wire.todos.len(),
                wire.gates.len(),
                if wire.redacted {
                    ", redacted"
                } else {
                    ", names kept: not for sharing"
                },
                wire.html.as_deref().unwrap_or_default(),
                wire.json.as_deref().unwrap_or_default()
            )
        },
    )?;
    Ok(Exit::Ok)
}

/// The names to remove: `--redact-name`s, then `--redact-names FILE`'s
/// lines (blank lines and `#` comments skipped).
fn listed_names(args: &Args) -> Result<Vec<String>> {
    let mut names: Vec<String> = args
        .redact_name
        .iter()
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty())
        .collect();
    if let Some(f) = &args.redact_names {
        let text = std::fs::read_to_string(f).map_err(|e| {
            Refusal::usage(
                Code::BadPath,
                format!("cannot read the names to redact from {}: {e}", f.display()),
            )
            .with_hint("give a text file with one name a line")
        })?;
        names.extend(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(str::to_owned),
        );
    }
    // Longer names first, so a name is removed whole before its parts.
    names.sort_by_key(|n| std::cmp::Reverse(n.chars().count()));
    names.dedup();
    Ok(names)
}

fn node(t: &Todo, red: &mut Redactor) -> Node {
    Node {
        id: t.id.clone(),
        title: red.text(&t.title),
        created_at: t.created_at,
        status: t.status.as_str().to_owned(),
        after: t.after.clone(),
        holders: Vec::new(),
        evidence_passed: 0,
        evidence_failed: 0,
        evidence_stale: false,
        reopened: 0,
        abandoned: false,
    }
}

#[cfg(test)]
mod tests {
    use super::roles::replace_word;
    use super::*;

    #[test]
    fn shared_text_loses_names_emails_fingerprints_and_paths() {
        let mut r = Redactor::new(true, Vec::new());
        let ada = Actor::Human {
            name: "Grace Hopper".into(),
            email: "grace@navy.mil".into(),
        };
        assert_eq!(r.role(&ada), "human-1");
        let a = crate::model::AgentId::new("agent-1x").unwrap();
        assert_eq!(r.agent(&a), "agent-1");
        let t = r.text(
            "Grace Hopper (grace@navy.mil) asked agent-1x; key SHA256:Zm9vYmFyYmF6cXV4, log in /home/grace/work/x.log, see <ops@example.com>.",
        );
        assert_eq!(
            t,
            "human-1 ([email]) asked agent-1; key [key fingerprint], log in [path], see <[email]>."
        );
        let t = r.text("token ghp_0123456789abcdefghijklmnopqrstuvwxyzAB");
        assert!(!t.contains("ghp_0123"), "{t}");
        assert_eq!(replace_word("a-b a_b x a-b", "a-b", "R"), "R a_b x R");
        assert_eq!(
            replace_word("agent-10 agent-1", "agent-1", "R"),
            "agent-10 R"
        );
        let mut keep = Redactor::new(false, Vec::new());
        assert_eq!(keep.text("Grace Hopper"), "Grace Hopper");
    }

    /// Texts that never went through the writer's redaction (an older
    /// binary's ticks, a hand-made state) still lose every secret shape,
    /// and the count says how many.
    #[test]
    fn every_secret_shape_goes_and_is_counted() {
        let mut r = Redactor::new(true, vec!["Maria Gonzalez".to_owned()]);
        let all = crate::redact::samples::every_shape();
        for (text, secret) in &all {
            let out = r.text(text);
            assert!(!out.contains(secret.as_str()), "{text:?} → {out:?}");
        }
        assert!(r.secrets >= all.len(), "{} of {}", r.secrets, all.len());
        let out = r.text("Maria Gonzalez asked maria; Maria's call at +1 555 010 9999");
        assert_eq!(out, "[name] asked [name]; [name]'s call at [phone]");
        assert_eq!(r.names, 3);
    }
}
