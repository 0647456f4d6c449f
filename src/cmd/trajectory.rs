//! `loopx trajectory GOAL`: a goal's decision graph over time, as one
//! self-contained HTML page and the same as JSON, redacted for sharing.
//!
//! Read from the history (the ticks that concern the goal) and the state
//! with its archive (titles, dependencies, gates). Nothing from outside the
//! goal enters it. Every free text goes through `Redactor`: the secret
//! rules of [`crate::redact`], then names replaced by roles (`agent-1`,
//! `human-1`), emails, SSH key fingerprints and home or temporary paths
//! removed; `--keep-names` keeps the names for an internal report.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{Context as _, Result};
use serde::Serialize;

use crate::cmd::wire::esc;
use crate::ctx::Ctx;
use crate::error::{Code, Exit, Refusal};
use crate::history::{self, Tick};
use crate::model::usage::Usd;
use crate::model::{Actor, Blocks, GoalId, Todo, TodoId};
use crate::op::Change;
use crate::time::{Timestamp, When};
use crate::tx;

/// Write a goal's decision graph over time as a shareable page and JSON
///
/// Todos and their dependencies, claims and handoffs between agents,
/// evidence (passing, failing, stale), gates with their questions and
/// answers, reopened and abandoned work, and spend, from the goal's ticks.
/// Redacted by default: free text through the secret redactor, agent and
/// human names replaced by roles, emails, SSH key fingerprints and machine
/// paths removed, commits by short ids; nothing from outside the goal.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  loopx trajectory web                      trajectory-web/trajectory.html and .json
  loopx trajectory web --since 7d --out /tmp/share")]
pub struct Args {
    /// The goal
    #[arg(value_name = "GOAL")]
    goal: String,
    /// Only ticks at or after this time: a duration back from now (7d) or
    /// an RFC 3339 time
    #[arg(long, value_name = "DURATION|TIME")]
    since: Option<When>,
    /// Write trajectory.html and trajectory.json into DIR [default:
    /// trajectory-GOAL]
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Keep agent and human names (an internal report; not for sharing)
    #[arg(long)]
    keep_names: bool,
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
    let mut red = Redactor::new(!args.keep_names);
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
            Change::Settle { steps, .. } => steps.iter().collect(),
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
            Change::Settle { steps, .. } => steps.iter().collect(),
            c => vec![c],
        };
        for c in &steps {
            let Some(todo) = c.todo() else {
                if let Change::UsageRecord { usage, .. } = c {
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
            match c {
                Change::TodoClaim { .. } => n.holders.push(by.clone()),
                Change::TodoHandoff { to, .. } => n.holders.push(red.agent(to)),
                Change::TodoReopen { .. } => n.reopened += 1,
                Change::TodoRelease { .. } => n.abandoned = true,
                Change::TodoDone { .. } => n.abandoned = false,
                Change::EvidenceAdd { run: Some(r), .. } if r.passed() => n.evidence_passed += 1,
                Change::EvidenceAdd { run: Some(_), .. } => n.evidence_failed += 1,
                _ => {}
            }
        }
        events.push(Event {
            tick: t.number().unwrap_or(0),
            commit: commit[..commit.len().min(10)].to_owned(),
            at: t.time(),
            by,
            kind: op.change.kind(),
            todo: op.change.todo().cloned(),
            text: red.text(&t.subject()),
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

/// Makes text fit to share: secrets redacted, names replaced by roles,
/// emails, SSH key fingerprints and machine paths removed.
struct Redactor {
    anonymize: bool,
    /// A name (agent id, human name, email) and the role that replaces it.
    roles: Vec<(String, String)>,
    agents: usize,
    humans: usize,
}

impl Redactor {
    fn new(anonymize: bool) -> Self {
        Redactor {
            anonymize,
            roles: Vec::new(),
            agents: 0,
            humans: 0,
        }
    }

    /// The role of an actor (its name with `--keep-names`).
    fn role(&mut self, a: &Actor) -> String {
        match a {
            Actor::Agent(id) => self.agent(id),
            Actor::Human { name, email } => {
                if !self.anonymize {
                    return name.clone();
                }
                if let Some((_, r)) = self.roles.iter().find(|(n, _)| n == name) {
                    return r.clone();
                }
                self.humans += 1;
                let r = format!("human-{}", self.humans);
                self.roles.push((name.clone(), r.clone()));
                // The email goes with every other email (scrub).
                let _ = email;
                r
            }
        }
    }

    fn agent(&mut self, id: &crate::model::AgentId) -> String {
        if !self.anonymize {
            return id.to_string();
        }
        if let Some((_, r)) = self.roles.iter().find(|(n, _)| n == id.as_str()) {
            return r.clone();
        }
        self.agents += 1;
        let r = format!("agent-{}", self.agents);
        self.roles.push((id.to_string(), r.clone()));
        r
    }

    fn text(&self, s: &str) -> String {
        let mut out = crate::redact::text(s).into_owned();
        if !self.anonymize {
            return out;
        }
        // Longest names first, so `agent-10` is not read as `agent-1`.
        let mut roles: Vec<&(String, String)> = self.roles.iter().collect();
        roles.sort_by_key(|(n, _)| std::cmp::Reverse(n.len()));
        for (name, role) in roles {
            if !name.is_empty() {
                out = replace_word(&out, name, role);
            }
        }
        scrub(&out)
    }
}

/// `name` replaced by `role` where it stands alone, not inside a longer id
/// or word (a letter, digit, `-` or `_` next to it continues it).
fn replace_word(s: &str, name: &str, role: &str) -> String {
    let part = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_');
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(name) {
        let before = out.chars().last().or_else(|| rest[..i].chars().last());
        let before = if i > 0 {
            rest[..i].chars().last()
        } else {
            before
        };
        let after = rest[i + name.len()..].chars().next();
        out.push_str(&rest[..i]);
        if part(before) || part(after) {
            out.push_str(name);
        } else {
            out.push_str(role);
        }
        rest = &rest[i + name.len()..];
    }
    out.push_str(rest);
    out
}

/// Emails, SSH key fingerprints and machine paths out of `s`, word by word
/// (a word keeps the punctuation around it).
fn scrub(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if word.is_empty() {
            return;
        }
        let trim: &[char] = &[
            '<', '>', '(', ')', '[', ']', '{', '}', ',', ';', '"', '\'', '`', '.', ':', '!', '?',
        ];
        let start = word.len() - word.trim_start_matches(trim).len();
        let end = word.trim_end_matches(trim).len().max(start);
        let (pre, core, post) = (&word[..start], &word[start..end], &word[end..]);
        let replaced = if is_email(core) {
            Some("[email]")
        } else if core.starts_with("SHA256:") || core.starts_with("MD5:") {
            Some("[key fingerprint]")
        } else if is_machine_path(core) {
            Some("[path]")
        } else {
            None
        };
        match replaced {
            Some(r) => {
                out.push_str(pre);
                out.push_str(r);
                out.push_str(post);
            }
            None => out.push_str(word),
        }
        word.clear();
    };
    for c in s.chars() {
        if c.is_whitespace() {
            flush(&mut word, &mut out);
            out.push(c);
        } else {
            word.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

fn is_email(s: &str) -> bool {
    let Some((user, host)) = s.split_once('@') else {
        return false;
    };
    !user.is_empty()
        && host.contains('.')
        && !host.starts_with('.')
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
}

fn is_machine_path(s: &str) -> bool {
    [
        "/home/",
        "/Users/",
        "/root/",
        "/tmp/",
        "/var/folders/",
        "~/",
    ]
    .iter()
    .any(|p| s.starts_with(p) || s.contains(&format!("={p}")))
        || (s.len() > 3 && s.as_bytes()[1] == b':' && s.as_bytes()[2] == b'\\')
}

const STYLE: &str = r#"
:root{color-scheme:light dark;--bg:#fff;--fg:#1b1b1b;--mute:#666;--line:#ccc;--ok:#1b7a3a;--bad:#b00020;--acc:#0b57d0;--card:#f6f7f9}
@media (prefers-color-scheme:dark){:root{--bg:#121417;--fg:#e6e6e6;--mute:#9aa0a6;--line:#444;--ok:#7bd88f;--bad:#ff8a80;--acc:#8ab4f8;--card:#1c1f24}}
body{margin:0 auto;max-width:90rem;padding:.75rem;font:15px/1.45 system-ui,sans-serif;background:var(--bg);color:var(--fg)}
h1{font-size:1.3rem}h2{font-size:1.1rem;border-bottom:1px solid var(--line)}.mute{color:var(--mute)}
.graph{overflow-x:auto}svg text{font:11px system-ui,sans-serif;fill:var(--fg)}svg .id{fill:var(--mute)}
svg rect{fill:var(--card);stroke:var(--line)}svg .done rect{stroke:var(--ok);stroke-width:2}svg .abandoned rect{stroke-dasharray:4 3}
svg .failed rect{stroke:var(--bad);stroke-width:2}svg line{stroke:var(--line)}svg .gate polygon{fill:var(--card);stroke:var(--acc);stroke-width:2}
svg line.gl{stroke:var(--acc);stroke-dasharray:3 3}
table{border-collapse:collapse;width:100%;font-size:13px}th,td{text-align:left;padding:.2rem .4rem;border-bottom:1px solid var(--line);vertical-align:top}
td.nw,th{white-space:nowrap}code{font:12px ui-monospace,monospace}
"#;

/// The page: the graph (todos by dependency depth, gates beside what they
/// hold), the gates with questions and answers, the todos, and the events.
fn render(w: &Wire) -> String {
    let mut h = String::with_capacity(64 * 1024);
    let _ = writeln!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>loopx trajectory: {goal}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>Trajectory of goal {goal}</h1>\n<p>{obj}</p>\n<p class=\"mute\">{ticks} ticks to <time>{until}</time>{red}; spent {usd} ({tokens} tokens).</p>",
        goal = esc(w.goal.as_str()),
        obj = esc(&w.objective),
        ticks = w.ticks,
        until = w.until,
        red = if w.redacted {
            ", redacted: names are roles, secrets, emails, key fingerprints and machine paths removed"
        } else {
            ", with names (not for sharing)"
        },
        usd = Usd(w.spend.micros.0),
        tokens = crate::model::usage::human_count(w.spend.tokens),
    );
    graph(&mut h, w);
    h.push_str("<h2>Gates</h2>\n<table><thead><tr><th>Gate</th><th>Kind</th><th>Holds</th><th>Question</th><th>Answer</th><th>Opened</th></tr></thead><tbody>\n");
    for g in &w.gates {
        let _ = writeln!(
            h,
            "<tr id=\"{id}\"><td class=\"nw\"><code>{id}</code></td><td>{kind}</td><td class=\"nw\">{blocks}</td><td>{q}</td><td>{a}</td><td class=\"nw\">{by} <time>{at}</time></td></tr>",
            id = esc(&g.id),
            kind = g.kind,
            blocks = esc(&g.blocks),
            q = esc(&g.question),
            a = esc(g.answer.as_deref().unwrap_or(g.status)),
            by = esc(&g.opened_by),
            at = g.opened_at,
        );
    }
    h.push_str("</tbody></table>\n<h2>Todos</h2>\n<table><thead><tr><th>Todo</th><th>Status</th><th>After</th><th>Held by</th><th>Evidence</th><th>Reopened</th></tr></thead><tbody>\n");
    for n in &w.todos {
        let after: Vec<String> = n.after.iter().map(|a| esc(a.as_str())).collect();
        let _ = writeln!(
            h,
            "<tr id=\"{id}\"><td><code>{id}</code> {title}</td><td>{status}{ab}</td><td>{after}</td><td>{holders}</td><td>{p} passed, {f} failed{stale}</td><td>{r}</td></tr>",
            id = esc(n.id.as_str()),
            title = esc(&n.title),
            status = esc(&n.status),
            ab = if n.abandoned { ", abandoned" } else { "" },
            after = after.join(" "),
            holders = esc(&n.holders.join(" → ")),
            p = n.evidence_passed,
            f = n.evidence_failed,
            stale = if n.evidence_stale { ", stale" } else { "" },
            r = n.reopened,
        );
    }
    h.push_str("</tbody></table>\n<h2>Events</h2>\n<table><thead><tr><th>Tick</th><th>Commit</th><th>When</th><th>Who</th><th>What</th></tr></thead><tbody>\n");
    for e in &w.events {
        let _ = writeln!(
            h,
            "<tr><td class=\"nw\">{}</td><td class=\"nw\"><code>{}</code></td><td class=\"nw\"><time>{}</time></td><td class=\"nw\">{}</td><td>{}</td></tr>",
            e.tick,
            esc(&e.commit),
            e.at,
            esc(&e.by),
            esc(&e.text)
        );
    }
    h.push_str("</tbody></table>\n</body>\n</html>\n");
    h
}

/// The decision graph as inline SVG: one column per dependency depth, a
/// box per todo (green edge done, red failing evidence, dashed abandoned),
/// a line per dependency, and a diamond per gate beside what it holds.
fn graph(h: &mut String, w: &Wire) {
    let ids: BTreeMap<&TodoId, &Node> = w.todos.iter().map(|n| (&n.id, n)).collect();
    let mut depth: BTreeMap<&TodoId, usize> = BTreeMap::new();
    fn depth_of<'a>(
        id: &'a TodoId,
        ids: &BTreeMap<&'a TodoId, &'a Node>,
        memo: &mut BTreeMap<&'a TodoId, usize>,
        guard: usize,
    ) -> usize {
        if let Some(d) = memo.get(id) {
            return *d;
        }
        let d = match ids.get(id) {
            Some(n) if guard < 64 => n
                .after
                .iter()
                .filter(|a| ids.contains_key(a))
                .map(|a| depth_of(a, ids, memo, guard + 1) + 1)
                .max()
                .unwrap_or(0),
            _ => 0,
        };
        memo.insert(id, d);
        d
    }
    for n in &w.todos {
        depth_of(&n.id, &ids, &mut depth, 0);
    }
    let (bw, bh, gx, gy) = (210.0, 40.0, 50.0, 14.0);
    let mut rows: BTreeMap<usize, usize> = BTreeMap::new();
    let mut pos: BTreeMap<&TodoId, (f64, f64)> = BTreeMap::new();
    for n in &w.todos {
        let d = depth[&n.id];
        let r = rows.entry(d).or_default();
        pos.insert(
            &n.id,
            (d as f64 * (bw + gx) + 10.0, *r as f64 * (bh + gy) + 10.0),
        );
        *r += 1;
    }
    let cols = rows.keys().max().map_or(1, |m| m + 1);
    let gate_x = cols as f64 * (bw + gx) + 10.0;
    let height =
        rows.values().max().copied().unwrap_or(0).max(w.gates.len()) as f64 * (bh + gy) + 20.0;
    let width = gate_x + bw + 20.0;
    let _ = writeln!(
        h,
        "<h2>Decision graph</h2>\n<div class=\"graph\"><svg id=\"graph\" viewBox=\"0 0 {width} {height}\" width=\"{width}\" height=\"{height}\" role=\"img\" aria-label=\"{} todos and {} gates\">",
        w.todos.len(),
        w.gates.len()
    );
    for n in &w.todos {
        let (x, y) = pos[&n.id];
        for a in &n.after {
            if let Some((ax, ay)) = pos.get(a) {
                let _ = write!(
                    h,
                    "<line x1=\"{}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\"/>",
                    ax + bw,
                    ay + bh / 2.0,
                    y + bh / 2.0
                );
            }
        }
    }
    for (i, g) in w.gates.iter().enumerate() {
        let (cx, cy) = (gate_x + 20.0, i as f64 * (bh + gy) + 10.0 + bh / 2.0);
        if let Some(t) = g.blocks.strip_prefix("todo:")
            && let Some((x, y)) = pos.iter().find(|(k, _)| k.as_str() == t).map(|(_, p)| *p)
        {
            let _ = write!(
                h,
                "<line class=\"gl\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{cy}\"/>",
                x + bw,
                y + bh / 2.0,
                cx - 16.0
            );
        }
        let _ = write!(
            h,
            "<g class=\"gate\" data-node=\"{id}\"><title>{id} {kind}: {q} → {a}</title><polygon points=\"{},{cy} {cx},{} {},{cy} {cx},{}\"/><text x=\"{}\" y=\"{}\">{id} {kind}</text><text x=\"{}\" y=\"{}\">{short}</text></g>",
            cx - 16.0,
            cy - 16.0,
            cx + 16.0,
            cy + 16.0,
            cx + 22.0,
            cy - 3.0,
            cx + 22.0,
            cy + 11.0,
            id = esc(&g.id),
            kind = g.kind,
            q = esc(&g.question),
            a = esc(g.answer.as_deref().unwrap_or(g.status)),
            short = esc(&shorten(g.answer.as_deref().unwrap_or(g.status), 26)),
        );
    }
    for n in &w.todos {
        let (x, y) = pos[&n.id];
        let mut class = String::from("todo");
        if n.status == "done" {
            class.push_str(" done");
        }
        if n.evidence_failed > 0 && n.status != "done" {
            class.push_str(" failed");
        }
        if n.abandoned {
            class.push_str(" abandoned");
        }
        let _ = write!(
            h,
            "<g class=\"{class}\" data-node=\"{id}\"><title>{id} {title} ({status}; held by {holders}; evidence {p} passed, {f} failed; reopened {r})</title><rect x=\"{x}\" y=\"{y}\" width=\"{bw}\" height=\"{bh}\" rx=\"4\"/><text class=\"id\" x=\"{}\" y=\"{}\">{id} · {status}</text><text x=\"{}\" y=\"{}\">{short}</text></g>",
            x + 6.0,
            y + 15.0,
            x + 6.0,
            y + 31.0,
            id = esc(n.id.as_str()),
            title = esc(&n.title),
            status = esc(&n.status),
            holders = esc(&n.holders.join(" → ")),
            p = n.evidence_passed,
            f = n.evidence_failed,
            r = n.reopened,
            short = esc(&shorten(&n.title, 32)),
        );
    }
    h.push_str("</svg></div>\n");
}

fn shorten(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        format!("{}…", s.chars().take(n - 1).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_text_loses_names_emails_fingerprints_and_paths() {
        let mut r = Redactor::new(true);
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
        let keep = Redactor::new(false);
        assert_eq!(keep.text("Grace Hopper"), "Grace Hopper");
    }
}
