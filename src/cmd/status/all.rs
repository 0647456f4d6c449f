//! `loopx status --all`: every repository the person follows (the
//! portfolio, `service::portfolio`) in one view, in the terminal, as JSON
//! and as one page. Each repository is read as `loopx -C PATH status`
//! reads it (the same [`View`], board and [`Wire`]); across them, what
//! waits on the person comes first, with answer commands that run from
//! anywhere (`loopx -C PATH gate answer …`), then stuck work, spend
//! against budgets, failed notifications and the fleet of agents.
//!
//! A followed path that is missing, not a git repository, unreadable, of
//! another user or without a state is listed as such and never hides the
//! others. Clones of the same hub (the same remote URL, credentials taken
//! out) on the same state ref show once, the one at the highest tick,
//! naming every path and its tick ([`fold`]); a goal's clone of a split
//! state shows its goal, and folds into a followed clone of the shared
//! ref only when that one holds the goal's ref at the same commit.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Result;
use serde::Serialize;

use super::{Args, RECENT, View, Wire, html};
use crate::cmd::wire::{GateRef, esc};
use crate::ctx::Ctx;
use crate::error::{Code, Exit, refusal_of};
use crate::model::{AgentId, Gate, GateId, TodoId};
use crate::op::board::Board;
use crate::op::stuck::{self, Stuck};
use crate::output::Format;
use crate::time::{Span, Timestamp};

/// Why a followed path shows no board.
#[derive(Serialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "kebab-case")]
enum Problem {
    /// Nothing is at the path.
    Missing,
    /// A folder, but in no git repository.
    NotARepository,
    /// This user may not read it.
    Unreadable,
    /// A repository another user owns, which `safe.directory` does not
    /// name: refused as git refuses it.
    OtherUser,
    /// A git repository without a loopx state.
    NoState,
    /// Anything else that kept its state from being read.
    Unloadable,
}

impl Problem {
    fn word(self) -> &'static str {
        match self {
            Problem::Missing => "missing",
            Problem::NotARepository => "not a git repository",
            Problem::Unreadable => "unreadable",
            Problem::OtherUser => "another user's",
            Problem::NoState => "no loopx state",
            Problem::Unloadable => "cannot be read",
        }
    }
}

/// A followed path, opened once (a watch keeps it open).
struct Followed {
    /// As the portfolio holds it.
    path: PathBuf,
    ctx: Option<Ctx>,
    /// Its remote's URL, credentials taken out.
    url: Option<String>,
    state_ref: String,
    /// The goal of a clone whose state ref is a goal's (`loopx.ref`).
    goal: Option<String>,
    problem: Option<(Problem, String)>,
}

/// What one read of a followed repository gave.
struct Loaded {
    view: Option<View>,
    problem: Option<(Problem, String)>,
}

/// One entry shown: a followed repository, and the other followed clones
/// folded into it (indexes into the followed list).
struct Shown {
    at: usize,
    also: Vec<usize>,
}

pub(super) fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let followed: Vec<Followed> = crate::service::portfolio::list()?
        .into_iter()
        .map(open)
        .collect();
    if followed.is_empty() {
        ctx.out.hint(
            "you follow no repository yet: `loopx portfolio add PATH` adds one (your global git config keeps the list)",
        );
    }
    let Some(file) = &args.html else {
        let loaded = load(&followed, None);
        let shown = fold(&followed, &loaded);
        let boards = boards(&followed, &loaded);
        let wire = wire(&followed, &loaded, &shown, &boards);
        ctx.out.emit(&wire, || human(&wire, ctx.now))?;
        return Ok(Exit::Ok);
    };
    if !args.watch {
        let loaded = load(&followed, None);
        let frame = frame(ctx, &followed, &loaded, false);
        html::live::write_atomic(file, html::page(&frame, None).as_bytes())?;
        ctx.out.status(&format!("wrote {}", file.display()));
        return Ok(Exit::Ok);
    }
    // Watch, as the single repository's page does: the page once, then its
    // sidecar whenever a state ref moves; the clock runs on between writes.
    let start = Instant::now();
    let last = std::cell::RefCell::new(None);
    let tips = || -> Vec<Option<crate::store::Oid>> {
        followed
            .iter()
            .map(|f| {
                let repo = f.ctx.as_ref()?.repo().ok()?;
                crate::history::tip(repo).ok().map(|t| t.commit)
            })
            .collect()
    };
    html::live::follow(
        file,
        html::POLL,
        args.max_updates,
        || Ok(last.borrow().as_ref() != Some(&tips())),
        || {
            last.replace(Some(tips()));
            let elapsed = Span::seconds(start.elapsed().as_secs() as i64);
            let loaded = load(&followed, Some(elapsed));
            Ok(frame(ctx, &followed, &loaded, true))
        },
        |f, at| html::page(f, Some((file, at))),
        |_| {
            ctx.out.status(&format!(
                "wrote {} ({} repositories)",
                html::live::sidecar(file).display(),
                followed.len()
            ));
        },
    )?;
    Ok(Exit::Ok)
}

/// Opens a followed path as `loopx -C PATH` would, or says why it cannot.
fn open(path: PathBuf) -> Followed {
    let mut f = Followed {
        path,
        ctx: None,
        url: None,
        state_ref: String::new(),
        goal: None,
        problem: None,
    };
    let shown = f.path.display().to_string();
    let readable = std::fs::metadata(&f.path).and_then(|_| std::fs::read_dir(&f.path).map(drop));
    if let Err(e) = readable {
        f.problem = Some(match e.kind() {
            std::io::ErrorKind::NotFound => (Problem::Missing, format!("{shown} does not exist")),
            std::io::ErrorKind::NotADirectory => (
                Problem::NotARepository,
                format!("{shown} is a file, not a repository's folder"),
            ),
            _ => (Problem::Unreadable, format!("cannot read {shown}: {e}")),
        });
        return f;
    }
    let sub = match Ctx::with(Some(f.path.clone()), Format::Json, None) {
        Ok(c) => c,
        Err(e) => {
            f.problem = Some((Problem::Unloadable, format!("{e:#}")));
            return f;
        }
    };
    match sub.repo() {
        Err(e) => {
            let text = format!("{e:#}");
            let kind = match refusal_of(&e).map(|r| r.code) {
                Some(Code::UnsafeRepository) => Problem::OtherUser,
                _ if text.contains("ermission denied") => Problem::Unreadable,
                Some(Code::NotARepository) => Problem::NotARepository,
                _ => Problem::Unloadable,
            };
            f.problem = Some((kind, text));
        }
        Ok(repo) => {
            let store = repo.store();
            f.url = crate::git::remote_url(store.common_dir(), &repo.config().remote);
            f.state_ref = store.state_ref().to_owned();
            f.goal = f
                .state_ref
                .strip_prefix("refs/loopx/goals/")
                .filter(|_| crate::tx::goalref::is_goal_ref(&f.state_ref))
                .map(str::to_owned);
        }
    }
    f.ctx = Some(sub);
    f
}

/// Reads each followed repository's view; with `elapsed` (a watch), its
/// clock runs on from the context's by that much.
fn load(followed: &[Followed], elapsed: Option<Span>) -> Vec<Loaded> {
    followed
        .iter()
        .map(|f| {
            let Some(ctx) = f.ctx.as_ref().filter(|_| f.problem.is_none()) else {
                return Loaded {
                    view: None,
                    problem: f.problem.clone(),
                };
            };
            match View::read(ctx, None, RECENT, false) {
                Ok(mut view) => {
                    if let Some(e) = elapsed {
                        view.now = ctx.now.plus(e);
                    }
                    Loaded {
                        view: Some(view),
                        problem: None,
                    }
                }
                Err(e) => {
                    let kind = match refusal_of(&e).map(|r| r.code) {
                        Some(Code::NoState) => Problem::NoState,
                        _ => Problem::Unloadable,
                    };
                    Loaded {
                        view: None,
                        problem: Some((kind, format!("{e:#}"))),
                    }
                }
            }
        })
        .collect()
}

/// Which entries show. Clones of the same hub on the same ref show once:
/// the one at the highest tick, the others named beside it with their
/// ticks. A goal's clone of a split state folds into a followed clone of
/// the same hub's shared ref only when that clone's ref of the goal is at
/// the very commit the goal's clone is at, so nothing it holds is hidden.
fn fold(followed: &[Followed], loaded: &[Loaded]) -> Vec<Shown> {
    let url = |i: usize| {
        followed[i]
            .url
            .as_deref()
            .filter(|_| loaded[i].view.is_some())
    };
    let tick = |i: usize| loaded[i].view.as_ref().map_or(0, |v| v.snap.tip.tick);
    let mut shown: Vec<Shown> = Vec::new();
    for i in 0..followed.len() {
        let same = url(i).and_then(|u| {
            shown
                .iter_mut()
                .find(|s| url(s.at) == Some(u) && followed[s.at].state_ref == followed[i].state_ref)
        });
        match same {
            Some(s) if tick(i) > tick(s.at) => {
                s.also.push(s.at);
                s.at = i;
            }
            Some(s) => s.also.push(i),
            None => shown.push(Shown {
                at: i,
                also: Vec::new(),
            }),
        }
    }
    // Where a followed clone of the shared ref holds a goal's ref at the
    // commit a goal's clone is at.
    // (`goal_refs` lists them only when its shared state is split.)
    let holds = |at: usize, goal_ref: &str, commit: crate::store::Oid| {
        loaded[at].view.is_some()
            && followed[at]
                .ctx
                .as_ref()
                .and_then(|c| c.store().ok())
                .and_then(|s| crate::tx::goalref::goal_refs(s).ok())
                .is_some_and(|refs| refs.iter().any(|(n, c)| n == goal_ref && *c == commit))
    };
    let mut out: Vec<Shown> = Vec::new();
    let mut folded: Vec<(usize, Vec<usize>)> = Vec::new();
    for s in &shown {
        let f = &followed[s.at];
        let commit = loaded[s.at].view.as_ref().map(|v| v.snap.tip.commit);
        let into = match (&f.goal, commit) {
            (Some(_), Some(commit)) => shown.iter().find(|t| {
                t.at != s.at
                    && url(t.at).is_some()
                    && url(t.at) == url(s.at)
                    && followed[t.at].goal.is_none()
                    && holds(t.at, &f.state_ref, commit)
            }),
            _ => None,
        };
        match into {
            Some(t) => {
                let mut moved = vec![s.at];
                moved.extend(&s.also);
                folded.push((t.at, moved));
            }
            None => out.push(Shown {
                at: s.at,
                also: s.also.clone(),
            }),
        }
    }
    for (at, moved) in folded {
        if let Some(t) = out.iter_mut().find(|t| t.at == at) {
            t.also.extend(moved);
        }
    }
    out
}

type Derived<'v> = Option<(Board<'v>, Vec<Stuck<'v>>)>;

/// Each loaded view's board and stuck claims, as `status` derives them.
fn boards<'v>(followed: &'v [Followed], loaded: &'v [Loaded]) -> Vec<Derived<'v>> {
    followed
        .iter()
        .zip(loaded)
        .map(|(f, l)| {
            let (ctx, view) = (f.ctx.as_ref()?, l.view.as_ref()?);
            let board = view.board();
            let local = view.local(ctx);
            let stuck = stuck::claims(&view.snap.state, view.now, &local);
            Some((board, stuck))
        })
        .collect()
}

/// `loopx status --all --json`.
#[derive(Serialize)]
struct AllWire<'a> {
    /// Every followed repository, in the portfolio's order (clones of one
    /// hub and ref once).
    repositories: Vec<RepoWire<'a>>,
    /// Open gates across them, those waiting on a human first, each with
    /// answer commands that run from anywhere.
    waiting: Vec<Waiting<'a>>,
    /// Every active agent of every repository.
    fleet: Vec<FleetRow<'a>>,
}

#[derive(Serialize)]
struct RepoWire<'a> {
    path: String,
    /// The folder's name.
    name: String,
    /// Other followed clones of the same hub shown here.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    also: Vec<Also>,
    #[serde(skip_serializing_if = "Option::is_none")]
    url: Option<&'a str>,
    #[serde(rename = "ref", skip_serializing_if = "Option::is_none")]
    state_ref: Option<&'a str>,
    /// A goal's clone of a split state: its goal.
    #[serde(skip_serializing_if = "Option::is_none")]
    goal: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    problem: Option<Problem>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
    /// What `loopx -C PATH status --json` shows.
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<Wire<'a>>,
}

#[derive(Serialize)]
struct Also {
    path: String,
    #[serde(rename = "ref")]
    state_ref: String,
    /// Its tip's tick (left out when it has no state).
    #[serde(skip_serializing_if = "Option::is_none")]
    tick: Option<u64>,
}

#[derive(Serialize)]
struct Waiting<'a> {
    /// The repository's path.
    repository: String,
    #[serde(flatten)]
    gate: GateRef<'a>,
    answer_commands: Vec<String>,
}

#[derive(Serialize)]
struct FleetRow<'a> {
    agent: &'a AgentId,
    runtime: &'static str,
    /// The repository whose state names it.
    repository: String,
    /// Its newest tick among the last ones read, if there.
    #[serde(skip_serializing_if = "Option::is_none")]
    last_tick: Option<u64>,
    last_seen: Timestamp,
    quiet: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    parked_until: Option<Timestamp>,
    holds: Vec<&'a TodoId>,
}

/// The path an entry is reached by: where its state was read.
fn path_of(f: &Followed) -> &Path {
    match f.ctx.as_ref().and_then(|c| c.store().ok()) {
        Some(s) => s.root(),
        None => &f.path,
    }
}

/// Where a gate of `goal` shown in entry `s` is answered: in the clone of
/// that goal's ref folded into it (a split state's goal is written on its
/// own ref, which a clone of the shared ref does not write), else in the
/// entry's own folder.
fn answer_dir<'f>(followed: &'f [Followed], s: &Shown, goal: &str) -> &'f Path {
    std::iter::once(&s.at)
        .chain(&s.also)
        .map(|&i| &followed[i])
        .find(|f| f.goal.as_deref() == Some(goal))
        .map_or_else(|| path_of(&followed[s.at]), path_of)
}

fn name_of(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

fn wire<'a>(
    followed: &'a [Followed],
    loaded: &'a [Loaded],
    shown: &[Shown],
    boards: &'a [Derived<'a>],
) -> AllWire<'a> {
    let mut repositories = Vec::new();
    let mut waiting: Vec<(&Gate, Waiting)> = Vec::new();
    let mut fleet = Vec::new();
    for s in shown {
        let (f, l) = (&followed[s.at], &loaded[s.at]);
        let path = path_of(f);
        let status = match (&f.ctx, &l.view, &boards[s.at]) {
            (Some(ctx), Some(view), Some((board, stuck))) => {
                for g in board.gates.iter().copied() {
                    waiting.push((
                        g,
                        Waiting {
                            repository: path.display().to_string(),
                            gate: GateRef::of(g),
                            answer_commands: g
                                .options
                                .iter()
                                .map(|o| {
                                    let dir = answer_dir(followed, s, g.goal.as_str());
                                    crate::notify::answer_command_in(Some(dir), g, o)
                                })
                                .collect(),
                        },
                    ));
                }
                for a in &board.agents {
                    fleet.push(FleetRow {
                        agent: &a.agent.id,
                        runtime: a.agent.runtime.as_str(),
                        repository: path.display().to_string(),
                        last_tick: a.last_tick.map(|t| t.tick),
                        last_seen: a.last_seen,
                        quiet: a.quiet,
                        parked_until: a.agent.parked.as_ref().map(|p| p.until),
                        holds: a.holds.iter().map(|t| &t.id).collect(),
                    });
                }
                Some(Wire::of(ctx, view, board, stuck))
            }
            _ => None,
        };
        repositories.push(RepoWire {
            path: path.display().to_string(),
            name: name_of(path),
            also: s
                .also
                .iter()
                .map(|&i| Also {
                    path: path_of(&followed[i]).display().to_string(),
                    state_ref: followed[i].state_ref.clone(),
                    tick: loaded[i].view.as_ref().map(|v| v.snap.tip.tick),
                })
                .collect(),
            url: f.url.as_deref(),
            state_ref: (!f.state_ref.is_empty()).then_some(f.state_ref.as_str()),
            goal: f.goal.as_deref(),
            problem: l.problem.as_ref().map(|p| p.0),
            message: l.problem.as_ref().map(|p| p.1.as_str()),
            status,
        });
    }
    waiting.sort_by_key(|(g, w)| {
        (
            !g.kind.human_only(),
            g.opened_at,
            w.repository.clone(),
            g.id.clone(),
        )
    });
    AllWire {
        repositories,
        waiting: waiting.into_iter().map(|(_, w)| w).collect(),
        fleet,
    }
}

/// `loopx todo release …` as one that runs from anywhere.
fn anywhere(command: &str, path: &str) -> String {
    match command.strip_prefix("loopx ") {
        Some(rest) => format!("loopx -C {} {rest}", crate::notify::shell_word(path)),
        None => command.to_owned(),
    }
}

fn human(w: &AllWire, now: Timestamp) -> String {
    let mut s = String::new();
    let problems = w
        .repositories
        .iter()
        .filter(|r| r.problem.is_some())
        .count();
    let _ = write!(
        s,
        "loopx  {} repositor{}",
        w.repositories.len(),
        if w.repositories.len() == 1 {
            "y"
        } else {
            "ies"
        }
    );
    if problems > 0 {
        let _ = write!(s, ", {problems} not shown (below)");
    }
    s.push('\n');
    let name = |path: &str| {
        w.repositories
            .iter()
            .find(|r| r.path == path)
            .map_or_else(|| path.to_owned(), |r| r.name.clone())
    };
    let (human, other): (Vec<&Waiting>, Vec<&Waiting>) =
        w.waiting.iter().partition(|g| g.gate.human_only);
    for (title, list) in [("waiting on you:", human), ("open decisions:", other)] {
        if list.is_empty() {
            continue;
        }
        s.push_str(title);
        s.push('\n');
        for g in list {
            let _ = writeln!(
                s,
                "  {} · {}  {}",
                name(&g.repository),
                g.gate.goal,
                g.gate.line()
            );
            for c in &g.answer_commands {
                let _ = writeln!(s, "      {c}");
            }
        }
    }
    if w.waiting.iter().all(|g| !g.gate.human_only) {
        s.push_str("Nothing waits on you.\n");
    }
    let ok = || {
        w.repositories
            .iter()
            .filter_map(|r| Some((r, r.status.as_ref()?)))
    };
    let mut first = true;
    for (r, st) in ok() {
        for row in &st.stuck {
            if std::mem::take(&mut first) {
                s.push_str("stuck:\n");
            }
            let _ = writeln!(
                s,
                "  {}  {}  {}  {}: {}",
                r.name,
                row.todo,
                row.owner,
                crate::term::line(row.title),
                row.line
            );
            let _ = writeln!(s, "      {}", anywhere(&row.free_now, &r.path));
        }
    }
    let mut first = true;
    for (r, st) in ok() {
        for b in &st.budgets {
            if std::mem::take(&mut first) {
                s.push_str("budgets:\n");
            }
            let _ = writeln!(s, "  {}  {} {}", r.name, b.goal, b.spend.human());
        }
    }
    let mut first = true;
    for (r, st) in ok() {
        for f in &st.notify_failed {
            if std::mem::take(&mut first) {
                s.push_str("notifications failed (retried after the next tick or sync):\n");
            }
            let _ = writeln!(s, "  {}  gate {}: {}", r.name, f.gate, f.reason);
        }
    }
    if !w.fleet.is_empty() {
        s.push_str("fleet:\n");
        for a in &w.fleet {
            let tick = a.last_tick.map_or(String::new(), |t| format!("tick {t}, "));
            let mut flags = String::new();
            if a.quiet {
                flags.push_str(", quiet");
            }
            if let Some(p) = a.parked_until {
                let _ = write!(flags, ", parked until {p}");
            }
            let holds = if a.holds.is_empty() {
                String::new()
            } else {
                let ids: Vec<&str> = a.holds.iter().map(|t| t.as_str()).collect();
                format!(", holds {}", ids.join(" "))
            };
            let _ = writeln!(
                s,
                "  {}  {}  {}  {tick}last heard {} ago{flags}{holds}",
                a.agent,
                a.runtime,
                name(&a.repository),
                now.since(a.last_seen)
            );
        }
    }
    s.push_str("repositories:\n");
    for r in &w.repositories {
        let what = match (&r.status, r.problem) {
            (Some(st), _) => {
                let goal = r.goal.map_or(String::new(), |g| format!("goal {g}, "));
                format!("{goal}tick {}", st.tick)
            }
            (None, Some(p)) => p.word().to_owned(),
            (None, None) => String::new(),
        };
        let url = r.url.map_or(String::new(), |u| format!("  {u}"));
        let _ = writeln!(s, "  {}  {}  {what}{url}", r.name, r.path);
        if let (Some(m), Some(_)) = (r.message, r.problem) {
            let _ = writeln!(s, "      {}", crate::term::line(m));
        }
        for a in &r.also {
            let tick = a.tick.map_or(String::new(), |t| format!(", tick {t}"));
            let _ = writeln!(s, "      also at {} ({}{tick})", a.path, a.state_ref);
        }
    }
    if w.repositories.is_empty() {
        s.push_str("  none: `loopx portfolio add PATH` follows one\n");
    }
    s
}

/// The page of every followed repository, as a frame.
fn frame(ctx: &Ctx, followed: &[Followed], loaded: &[Loaded], watch: bool) -> html::live::Frame {
    let shown = fold(followed, loaded);
    let boards = boards(followed, loaded);
    let now = loaded
        .iter()
        .filter_map(|l| l.view.as_ref().map(|v| v.now))
        .max()
        .unwrap_or(ctx.now);
    page(followed, loaded, &shown, &boards, now, watch)
}

/// The heading of one repository's part of a section.
fn heading(h: &mut String, f: &Followed) {
    let path = path_of(f);
    let goal = f
        .goal
        .as_deref()
        .map_or(String::new(), |g| format!(" · goal {}", esc(g)));
    let _ = writeln!(
        h,
        "<h3 class=\"repo\" data-repo=\"{p}\">{n}{goal} <span class=\"mute\">{p}</span></h3>",
        n = esc(&name_of(path)),
        p = esc(&path.display().to_string()),
    );
}

/// The page: the single repository's sections, once per repository, in
/// the same order (what waits on you, failed notifications, stuck, money),
/// then the fleet and the repositories.
fn page(
    followed: &[Followed],
    loaded: &[Loaded],
    shown: &[Shown],
    boards: &[Derived],
    now: Timestamp,
    watch: bool,
) -> html::live::Frame {
    let n = shown.len();
    let mut head = String::with_capacity(1024);
    let _ = write!(
        head,
        "<h1>loopx · {n} repositor{}</h1>\n<p class=\"mute\">as of <time>{now}</time>",
        if n == 1 { "y" } else { "ies" }
    );
    if watch {
        head.push_str(" · follows every state ref; times count on between updates");
    }
    head.push_str("</p>\n");
    let mut h = String::with_capacity(64 * 1024);
    let live: Vec<(&Followed, &Loaded, &Board, &[Stuck])> = shown
        .iter()
        .filter_map(|s| {
            let (b, st) = boards[s.at].as_ref()?;
            Some((&followed[s.at], &loaded[s.at], b, st.as_slice()))
        })
        .collect();

    h.push_str("<section id=\"gates\">\n<h2>Waiting on you</h2>\n");
    let mut any = false;
    for human in [true, false] {
        let with: Vec<(&Shown, &Board)> = shown
            .iter()
            .filter_map(|s| Some((s, &boards[s.at].as_ref()?.0)))
            .filter(|(_, b)| b.gates.iter().any(|g| g.kind.human_only() == human))
            .collect();
        if with.is_empty() {
            continue;
        }
        if !human {
            h.push_str("<h3>Open decisions</h3>\n");
        }
        for (s, b) in with {
            heading(&mut h, &followed[s.at]);
            for g in b.gates.iter().filter(|g| g.kind.human_only() == human) {
                let dir = answer_dir(followed, s, g.goal.as_str());
                let Some(view) = &loaded[s.at].view else {
                    continue;
                };
                html::gate(&mut h, b, g, &view.snap.state, Some(dir));
            }
            any |= human;
        }
    }
    if !any {
        h.push_str("<p class=\"mute\">Nothing waits on a human.</p>\n");
    }
    h.push_str("</section>\n");

    let mut failed: Vec<(GateId, String)> = Vec::new();
    for (f, l, _, _) in &live {
        let name = name_of(path_of(f));
        if let Some(v) = &l.view {
            for (g, why) in &v.notify_failed {
                failed.push((g.clone(), format!("({name}) {why}")));
            }
        }
    }
    html::notify_failed(&mut h, &failed);

    h.push_str("<section id=\"stuck\">\n<h2>Stuck</h2>\n");
    let mut any = false;
    for (f, _, b, st) in &live {
        let items = html::stuck_items(b, st);
        if items.is_empty() {
            continue;
        }
        any = true;
        heading(&mut h, f);
        let _ = writeln!(h, "<ul class=\"stuck\">\n{}\n</ul>", items.join("\n"));
    }
    if !any {
        h.push_str("<p class=\"mute\">Nothing is stuck.</p>\n");
    }
    h.push_str("</section>\n");

    h.push_str("<section id=\"money\">\n<h2>Money</h2>\n");
    let mut any = false;
    for (f, l, b, _) in &live {
        let Some(view) = &l.view else { continue };
        let rows = html::money_rows(view, b);
        if rows.is_empty() {
            continue;
        }
        any = true;
        heading(&mut h, f);
        html::money_table(&mut h, &rows);
    }
    if !any {
        h.push_str("<p class=\"mute\">No spend recorded and no budget set.</p>\n");
    }
    h.push_str("</section>\n");

    fleet(&mut h, &live, now);
    repositories(&mut h, followed, loaded, shown);
    // What identifies the page's state: every shown repository's tick.
    let key = shown
        .iter()
        .map(|s| {
            loaded[s.at]
                .view
                .as_ref()
                .map_or("-".to_owned(), |v| v.snap.tip.commit.to_string())
        })
        .collect::<Vec<_>>()
        .join(",");
    html::live::Frame {
        key,
        title: format!("loopx · {n} repositories"),
        now: now.unix(),
        head,
        main: h,
    }
}

/// Every active agent of every repository: its runtime, its last tick,
/// when it was last heard from, what it holds, and the clone it is in.
fn fleet(h: &mut String, live: &[(&Followed, &Loaded, &Board, &[Stuck])], now: Timestamp) {
    h.push_str("<section id=\"fleet\">\n<h2>Fleet</h2>\n");
    let rows: usize = live.iter().map(|(_, _, b, _)| b.agents.len()).sum();
    if rows == 0 {
        h.push_str("<p class=\"mute\">No active agents.</p>\n</section>\n");
        return;
    }
    h.push_str("<div class=\"scroll\"><table class=\"stack\">\n<thead><tr><th scope=\"col\">Agent</th><th scope=\"col\">Runtime</th><th scope=\"col\">Last tick</th><th scope=\"col\">Last heard</th><th scope=\"col\">Holds</th><th scope=\"col\">Clone</th></tr></thead>\n<tbody>\n");
    for (f, _, b, _) in live {
        let path = path_of(f);
        for a in &b.agents {
            let tick = match a.last_tick {
                Some(t) => format!("{} <span class=\"mute\">{}</span>", t.tick, esc(&t.subject)),
                None => String::new(),
            };
            let mut heard = format!(
                "<time datetime=\"{at}\" data-ago=\"{}\" title=\"{at}\">{} ago</time>",
                a.last_seen.unix(),
                now.since(a.last_seen),
                at = a.last_seen
            );
            if a.quiet {
                heard.push_str(" <span class=\"tag\">quiet</span>");
            }
            if let Some(p) = &a.agent.parked {
                let _ = write!(
                    heard,
                    " <span class=\"mute\">parked until <time>{}</time></span>",
                    p.until
                );
            }
            let holds: Vec<String> = a
                .holds
                .iter()
                .map(|t| {
                    format!(
                        "<code class=\"id\">{}</code> {}",
                        esc(t.id.as_str()),
                        esc(&t.title)
                    )
                })
                .collect();
            let _ = writeln!(
                h,
                "<tr data-agent=\"{id}\"{quiet}><th scope=\"row\" class=\"nw\">{id}</th><td data-label=\"runtime\">{rt}</td><td data-label=\"last tick\">{tick}</td><td data-label=\"last heard\">{heard}</td><td data-label=\"holds\">{}</td><td data-label=\"clone\"><code>{p}</code></td></tr>",
                holds.join("<br>"),
                id = esc(a.agent.id.as_str()),
                rt = a.agent.runtime.as_str(),
                quiet = if a.quiet { " data-quiet=\"1\"" } else { "" },
                p = esc(&path.display().to_string()),
            );
        }
    }
    h.push_str("</tbody></table></div>\n</section>\n");
}

/// Every followed repository: its path, remote, state ref or goal, tick,
/// the clones folded into it, or what keeps it from showing.
fn repositories(h: &mut String, followed: &[Followed], loaded: &[Loaded], shown: &[Shown]) {
    h.push_str("<section id=\"repositories\">\n<h2>Repositories</h2>\n");
    if shown.is_empty() {
        h.push_str("<p class=\"mute\">You follow no repository: <code>loopx portfolio add PATH</code> adds one.</p>\n</section>\n");
        return;
    }
    h.push_str("<div class=\"scroll\"><table class=\"stack\">\n<thead><tr><th scope=\"col\">Repository</th><th scope=\"col\">Path</th><th scope=\"col\">Remote</th><th scope=\"col\">State</th></tr></thead>\n<tbody>\n");
    for s in shown {
        let (f, l) = (&followed[s.at], &loaded[s.at]);
        let path = path_of(f);
        let state = match (&l.view, &l.problem) {
            (Some(v), _) => {
                let goal = f
                    .goal
                    .as_deref()
                    .map_or(String::new(), |g| format!("goal {}, ", esc(g)));
                format!("{goal}tick {}", v.snap.tip.tick)
            }
            (None, Some((p, why))) => format!(
                "<span class=\"bad\">{}</span> <span class=\"mute\">{}</span>",
                p.word(),
                esc(why)
            ),
            (None, None) => String::new(),
        };
        let mut paths = format!("<code>{}</code>", esc(&path.display().to_string()));
        for &i in &s.also {
            let _ = write!(
                paths,
                "<br><span class=\"mute\">also</span> <code>{}</code> <span class=\"mute\">{}{}</span>",
                esc(&path_of(&followed[i]).display().to_string()),
                esc(&followed[i].state_ref),
                loaded[i]
                    .view
                    .as_ref()
                    .map_or(String::new(), |v| format!(", tick {}", v.snap.tip.tick))
            );
        }
        let _ = writeln!(
            h,
            "<tr data-repo=\"{p}\"{problem}><th scope=\"row\">{n}</th><td data-label=\"path\">{paths}</td><td data-label=\"remote\">{url}</td><td data-label=\"state\">{state}</td></tr>",
            p = esc(&path.display().to_string()),
            n = esc(&name_of(path)),
            url = esc(f.url.as_deref().unwrap_or("")),
            problem = match &l.problem {
                Some((p, _)) => format!(" data-problem=\"{}\"", problem_code(*p)),
                None => String::new(),
            },
        );
    }
    h.push_str("</tbody></table></div>\n</section>\n");
}

/// The problem as the JSON spells it.
fn problem_code(p: Problem) -> String {
    serde_json::to_value(p)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}
