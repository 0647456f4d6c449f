//! `loopx status`: one screen of what is happening.

use anyhow::Result;
use serde::Serialize;

use crate::cmd::tx;
use crate::cmd::wire::{BudgetWire, GateRef, StuckRow};
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::history::{self, Rev};
use crate::model::{AgentId, GoalId, TodoId};
use crate::op::board::{self, Board, Counts, TickLine};
use crate::op::stuck::{self, Stuck};
use crate::time::{Span, Timestamp};
use crate::trust::{self, AllowedSigners};

mod all;
mod html;

/// Show goals, who owns what, what is ready, and the last few ticks
///
/// With --at, the state as it was then: leases and readiness are judged at
/// that time, and the last ticks are those before it.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  loopx status                          gates waiting on you first, then goals and claims
  loopx status --at 120                 the board as it was at tick 120
  loopx status --at 2h                  the board as it was two hours ago
  loopx status --html board.html        one page to open in a browser
  loopx status --html board.html --watch  keep it current in place (board.html.live.js beside it)
  loopx status --all                    every repository you follow (loopx portfolio add PATH)
  loopx status --all --html all.html --watch  the same as one page, kept current")]
pub struct Args {
    /// Show the state at a tick number (bare digits), or at a time (the
    /// newest tick at or before it): a duration reads as that long ago (2h,
    /// 3d); or a date (2026-12-07, 2026-12-07 16:57; UTC), an RFC 3339 time
    /// or @UNIX-SECONDS. Commit id prefixes and ref names work too
    #[arg(long, value_name = "TICK|TIME")]
    at: Option<Rev>,
    /// Write the board as one self-contained HTML page to FILE instead
    /// (no external requests; open it in any browser); `-` writes it to
    /// stdout
    #[arg(long, value_name = "FILE")]
    html: Option<std::path::PathBuf>,
    /// With --html: keep running; write FILE once and, whenever the state
    /// ref moves, FILE.live.js beside it, which the open page loads again
    /// every second and shows in place (what was typed into its filter,
    /// its scroll and open sections stay; no server, no reload)
    #[arg(long, requires = "html", conflicts_with = "at")]
    watch: bool,
    /// With --watch: stop after writing the page this many times (for tests)
    #[arg(long, hide = true, requires = "watch", value_name = "N")]
    max_updates: Option<u64>,
    /// Every repository you follow (`loopx portfolio add PATH`), gates
    /// waiting on you first, with answer commands that run from anywhere;
    /// one that is missing or unreadable is shown as such
    #[arg(long, conflicts_with = "at")]
    all: bool,
}

/// The todo counts as one line, each live todo counted once: open todos
/// split into those an agent may claim now (`ready`) and the rest (`held
/// back`); a claimed todo whose lease ran out is said inside `claimed`.
pub fn counts_line(c: &Counts, agents: usize) -> String {
    let reclaimable = match c.reclaimable {
        0 => String::new(),
        n => format!(" ({n} expired, free to take)"),
    };
    format!(
        "todos: {} ready, {} held back, {} waiting, {} claimed{reclaimable}, {} blocked, {} deferred, {} done; {} agent{}\n",
        c.ready_open(),
        c.held,
        c.waiting,
        c.claimed,
        c.blocked,
        c.deferred,
        c.done,
        agents,
        if agents == 1 { "" } else { "s" }
    )
}

/// At most this many claims and ticks are listed, so the output stays
/// bounded however large the board grows.
const MAX_CLAIMS: usize = 10;
const RECENT: usize = 5;
const MAX_STUCK: usize = 5;

/// A goal an agent names that is out of its scope.
#[derive(Serialize)]
struct OutOfScope<'a> {
    agent: &'a AgentId,
    goal: GoalId,
    status: &'static str,
}

#[derive(Serialize)]
struct Wire<'a> {
    #[serde(rename = "ref")]
    state_ref: &'a str,
    tick: u64,
    commit: String,
    /// Open gates, those waiting on a human first.
    gates: Vec<GateRef<'a>>,
    /// With --at: the time the state is shown at, and the tip's tick.
    #[serde(skip_serializing_if = "Option::is_none")]
    as_of: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tip_tick: Option<u64>,
    goals: Vec<GoalRow<'a>>,
    agents: usize,
    /// Agents runtime sessions registered that hold no claim and did
    /// nothing for an hour (ended sessions, most likely), listed apart.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    idle_session_agents: Vec<&'a AgentId>,
    /// Goals agents name (`agent register --goal`) that dropped out of
    /// their scope: paused, done or gone.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    out_of_scope: Vec<OutOfScope<'a>>,
    counts: Counts,
    claims: Vec<ClaimRow<'a>>,
    claims_total: usize,
    /// Claims whose lease has not run out but whose holder is gone or
    /// silent (`op::stuck`), the soonest freed first; at most `MAX_STUCK`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    stuck: Vec<StuckRow<'a>>,
    /// How many claims are stuck, when more than those listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    stuck_total: Option<usize>,
    recent: Vec<TickRow>,
    /// Slots used per active agent on each active goal.
    quota: Vec<QuotaRow<'a>>,
    /// Spend against each budget of an active goal.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    budgets: Vec<BudgetRow<'a>>,
    /// Gates whose `loopx.notify` command failed on this clone.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    notify_failed: Vec<NotifyFailed>,
    /// Claims' worktrees on this clone left behind: their claim was
    /// stolen, released or done while work remained, or their folder is
    /// gone. loopx never removes them by itself.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    left_worktrees: Vec<crate::service::worktree::Left>,
}

#[derive(Serialize)]
struct BudgetRow<'a> {
    goal: &'a GoalId,
    #[serde(flatten)]
    spend: BudgetWire,
}

#[derive(Serialize)]
struct NotifyFailed {
    gate: crate::model::GateId,
    reason: String,
}

#[derive(Serialize)]
struct QuotaRow<'a> {
    agent: &'a AgentId,
    goal: &'a GoalId,
    used: u32,
    slots: u32,
    window: String,
}

#[derive(Serialize)]
struct GoalRow<'a> {
    id: &'a GoalId,
    status: &'static str,
    objective: &'a str,
}

#[derive(Serialize)]
struct ClaimRow<'a> {
    todo: &'a TodoId,
    title: &'a str,
    owner: &'a AgentId,
    lease_until: Timestamp,
    expired: bool,
    /// The claim is stuck (listed under `stuck`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stuck: bool,
}

#[derive(Serialize)]
struct TickRow {
    tick: u64,
    at: String,
    subject: String,
    /// "signed by NAME (SHA256:…)", or "unsigned" for a human act that needed a signature.
    #[serde(skip_serializing_if = "Option::is_none")]
    signature: Option<String>,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    if args.all {
        return all::run(ctx, args);
    }
    if let Some(file) = &args.html {
        return html::run(ctx, args, file);
    }
    let view = match &args.at {
        None => View::read_counts(ctx, RECENT)?,
        Some(at) => View::read(ctx, Some(at), RECENT, false)?,
    };
    if !view.signers.enforced() {
        unsigned_hint_once(ctx);
    }
    let board = view.board();
    let local = view.local(ctx);
    let stuck = stuck::claims(&view.snap.state, view.now, &local);
    let wire = Wire::of(ctx, &view, &board, &stuck);
    ctx.out.emit(&wire, || human(&wire, board.now))?;
    Ok(Exit::Ok)
}

/// The state a status shows, the time it is judged at and the last ticks:
/// what [`board::derive`] needs, read once.
pub(crate) struct View {
    pub snap: tx::Snapshot,
    pub now: Timestamp,
    pub tip_tick: Option<u64>,
    pub at: bool,
    pub ticks: Vec<TickLine>,
    /// With `hours`: the times of the ticks of the last day (at most
    /// [`DAY_CAP`] beyond the recent ones).
    pub day: Vec<Timestamp>,
    pub signers: AllowedSigners,
    /// The board's counts of every live todo, when `snap` holds only the
    /// claimed todos (the state cache's head, [`View::read_counts`]).
    counts: Option<Counts>,
    /// Open gates whose `loopx.notify` command failed on this clone, with
    /// the reason.
    pub notify_failed: Vec<(crate::model::GateId, String)>,
}

/// How many ticks of the last day the hourly chart reads at most.
pub(crate) const DAY_CAP: usize = 20_000;

impl View {
    /// [`View::read`] of the tip for the default `status`, which shows the
    /// board's counts, its claims, gates, agents and quota but no card:
    /// from the state cache's head alone when it holds counts that hold
    /// now ([`crate::cache::Claims::counts_at`]), else every todo.
    pub fn read_counts(ctx: &Ctx, recent: usize) -> Result<View> {
        let claims = tx::load_claims(ctx)?;
        let counts = (!claims.complete && !tx::goalref::is_shared_state(&claims.state))
            .then(|| claims.counts_at(ctx.now))
            .flatten();
        let Some(counts) = counts else {
            return View::read(ctx, None, recent, false);
        };
        let snap = tx::Snapshot {
            tip: claims.tip,
            state: claims.state,
        };
        let mut view = View::walk(ctx, snap, ctx.now, None, None, recent, false)?;
        view.counts = Some(counts);
        Ok(view)
    }

    /// Reads the state (at `at`, or the tip) and its last `recent` ticks.
    pub fn read(ctx: &Ctx, at: Option<&Rev>, recent: usize, hours: bool) -> Result<View> {
        let (snap, now, tip_tick) = match at {
            None => {
                // The shared ref of a split state shows every goal ref too.
                let mut snap = tx::load(ctx)?;
                snap.state = tx::goalref::union(ctx.store()?, snap.state)?;
                (snap, ctx.now, None)
            }
            Some(rev) => {
                let tip = history::tip(ctx.repo()?)?;
                let entry = history::resolve(ctx.repo()?, rev, ctx.now)?;
                let at = rev
                    .time(ctx.now)
                    .unwrap_or_else(|| Timestamp::from_unix(entry.time));
                (history::load(ctx.repo()?, &entry)?, at, Some(tip.tick))
            }
        };
        View::walk(ctx, snap, now, tip_tick, at, recent, hours)
    }

    /// The view of `snap` at `now`, with its last ticks read.
    fn walk(
        ctx: &Ctx,
        snap: tx::Snapshot,
        now: Timestamp,
        tip_tick: Option<u64>,
        at: Option<&Rev>,
        recent: usize,
        hours: bool,
    ) -> Result<View> {
        let signers = AllowedSigners::load(ctx.repo()?)?;
        let mut ticks = Vec::new();
        let mut day = Vec::new();
        let since = now.minus(Span::hours(24)).unix();
        let walked: Box<dyn Iterator<Item = Result<crate::store::Entry>>> = if at.is_none() {
            Box::new(history::walk_view(ctx.repo()?, snap.tip.commit)?)
        } else {
            Box::new(history::walk(ctx.repo()?, snap.tip.commit)?)
        };
        for e in walked {
            let e = e?;
            if ticks.len() < recent {
                ticks.push(tick_line(e, &signers, &snap.state));
            } else if hours && e.time >= since && day.len() < DAY_CAP {
                day.push(Timestamp::from_unix(e.time));
            } else {
                break;
            }
        }
        day.extend(ticks.iter().map(|t| t.at));
        let notify_failed = ctx
            .repo()
            .map(|r| crate::notify::failed(r, &snap.state))
            .unwrap_or_default();
        Ok(View {
            notify_failed,
            snap,
            now,
            tip_tick,
            at: at.is_some(),
            ticks,
            day,
            signers,
            counts: None,
        })
    }

    /// What this clone knows beyond the state, to judge stuck claims by:
    /// the sessions here and the last sync (`cmd::stuck_local`); for a
    /// past state (`--at`), silence up to that time only.
    pub fn local(&self, ctx: &Ctx) -> stuck::Local {
        if self.at {
            stuck::Local {
                gone: Default::default(),
                seen_until: Some(self.now),
            }
        } else {
            crate::cmd::stuck_local(ctx)
        }
    }

    pub fn board(&self) -> Board<'_> {
        let mut b = board::derive(&self.snap.state, self.now, &self.ticks);
        if let Some(c) = &self.counts {
            // Only the claimed todos were read: the counts are the head's,
            // and no goal's cards are shown rather than some.
            b.counts = c.clone();
            b.goals.clear();
        }
        b
    }
}

/// One history entry as the board shows it.
pub(crate) fn tick_line(
    e: crate::store::Entry,
    signers: &AllowedSigners,
    state: &crate::model::State,
) -> TickLine {
    let subject = e.message.lines().next().unwrap_or_default().to_owned();
    let at = Timestamp::from_unix(e.time);
    let t = history::Tick::read(e);
    TickLine {
        tick: t.number().unwrap_or(0),
        at,
        actor: t.actor_name().to_owned(),
        kind: t.kind().to_owned(),
        failed: t.op().is_some_and(|op| board::failed_check(&op.change)),
        signature: t
            .op()
            .and_then(|op| trust::history_note(op, signers, state)),
        subject,
    }
}

impl<'a> Wire<'a> {
    fn of(ctx: &'a Ctx, view: &'a View, b: &Board<'a>, stuck: &[Stuck<'a>]) -> Wire<'a> {
        let state = &view.snap.state;
        let mut claims: Vec<ClaimRow> = b
            .claims
            .iter()
            .map(|c| ClaimRow {
                todo: &c.todo.id,
                title: &c.todo.title,
                owner: c.owner,
                lease_until: c.lease_until,
                expired: c.expired,
                stuck: stuck.iter().any(|s| s.todo.id == c.todo.id),
            })
            .collect();
        let claims_total = claims.len();
        claims.truncate(MAX_CLAIMS);
        Wire {
            gates: b
                .gates
                .iter()
                .map(|g| GateRef::with_raise(g, state, view.now))
                .collect(),
            state_ref: ctx.state_ref(),
            tick: view.snap.tip.tick,
            commit: view.snap.tip.commit.to_string(),
            as_of: view.at.then_some(view.now),
            tip_tick: view.tip_tick,
            goals: state
                .goals
                .values()
                .map(|g| GoalRow {
                    id: &g.id,
                    status: g.status.as_str(),
                    objective: &g.objective,
                })
                .collect(),
            agents: b.agents.len(),
            idle_session_agents: b
                .agents
                .iter()
                .filter(|a| a.idle_session(b.now))
                .map(|a| &a.agent.id)
                .collect(),
            out_of_scope: state
                .agents
                .values()
                .flat_map(|a| {
                    state.out_of_scope(&a.id).into_iter().map(|g| OutOfScope {
                        agent: &a.id,
                        status: state.goals.get(&g).map_or("gone", |x| x.status.as_str()),
                        goal: g,
                    })
                })
                .collect(),
            counts: b.counts.clone(),
            claims,
            claims_total,
            stuck: stuck.iter().take(MAX_STUCK).map(StuckRow::of).collect(),
            stuck_total: (stuck.len() > MAX_STUCK).then_some(stuck.len()),
            quota: b
                .quota
                .iter()
                .map(|q| QuotaRow {
                    agent: q.agent,
                    goal: &q.goal.id,
                    used: q.slots.used,
                    slots: q.slots.slots,
                    window: q.slots.window.to_string(),
                })
                .collect(),
            budgets: b
                .budgets
                .iter()
                .map(|(goal, st)| BudgetRow {
                    goal,
                    spend: BudgetWire::of(goal, st),
                })
                .collect(),
            notify_failed: view
                .notify_failed
                .iter()
                .map(|(gate, reason)| NotifyFailed {
                    gate: gate.clone(),
                    reason: reason.clone(),
                })
                .collect(),
            left_worktrees: match (view.at, ctx.store()) {
                (false, Ok(store)) => crate::service::worktree::left(store.common_dir(), |t, a| {
                    state.todos.get(t).and_then(|t| t.owner()) == Some(a)
                }),
                _ => Vec::new(),
            },
            recent: b
                .ticks
                .iter()
                .map(|t| TickRow {
                    tick: t.tick,
                    at: t.at.to_string(),
                    subject: t.subject.clone(),
                    signature: t.signature.clone(),
                })
                .collect(),
        }
    }
}

fn human(w: &Wire, now: Timestamp) -> String {
    let mut s = format!("loopx  {}  tick {}", w.state_ref, w.tick);
    if let (Some(at), Some(tip)) = (w.as_of, w.tip_tick) {
        s.push_str(&format!(", as of {at} (the tip is tick {tip})"));
    }
    s.push('\n');
    let (human, other): (Vec<&GateRef>, Vec<&GateRef>) = w.gates.iter().partition(|g| g.human_only);
    let gate = |s: &mut String, g: &GateRef| {
        s.push_str(&format!("  {}\n", g.line()));
        match &g.raise {
            Some(r) if g.raised => {
                s.push_str(&format!("    the budget was raised: {r}\n"));
            }
            Some(r) => s.push_str(&format!("    or raise the budget: {r}\n")),
            None => {}
        }
    };
    if !human.is_empty() {
        s.push_str("waiting on a human:\n");
        for g in human {
            gate(&mut s, g);
        }
    }
    if !other.is_empty() {
        s.push_str("open decisions:\n");
        for g in other {
            gate(&mut s, g);
        }
    }
    for l in &w.left_worktrees {
        let r = &l.record;
        let why = if l.missing {
            "its folder is gone; the next claim or done prunes it"
        } else {
            "review or merge it, then `git worktree remove` it"
        };
        s.push_str(&format!(
            "worktree left: {} (branch {}, {} of {}): {why}\n",
            r.path.display(),
            r.branch,
            r.agent,
            r.todo
        ));
    }
    for f in &w.notify_failed {
        s.push_str(&format!(
            "notification failed for {}: {} (retried after the next tick or sync)\n",
            f.gate, f.reason
        ));
    }
    if w.goals.is_empty() {
        s.push_str("No goals yet: add one with `loopx goal add ID --objective TEXT`.\n");
    }
    for g in &w.goals {
        s.push_str(&format!("goal {} ({}): {}\n", g.id, g.status, g.objective));
    }
    s.push_str(&counts_line(&w.counts, w.agents));
    if !w.claims.is_empty() {
        s.push_str("claims:\n");
        for r in &w.claims {
            let left = match (r.expired, r.stuck) {
                (true, _) => "lease expired".to_owned(),
                (false, false) => format!("{} left", r.lease_until.since(now)),
                (false, true) => format!("{} left, stuck", r.lease_until.since(now)),
            };
            s.push_str(&format!(
                "  {}  {}  {}  ({left})\n",
                r.owner,
                r.todo,
                crate::term::line(r.title)
            ));
        }
        if w.claims_total > w.claims.len() {
            s.push_str(&format!(
                "  … and {} more\n",
                w.claims_total - w.claims.len()
            ));
        }
    }
    if !w.stuck.is_empty() {
        s.push_str("stuck:\n");
        for r in &w.stuck {
            s.push_str(&format!(
                "  {}  {}  {}: {}\n",
                r.todo,
                r.owner,
                crate::term::line(r.title),
                r.line
            ));
        }
        if let Some(n) = w.stuck_total {
            s.push_str(&format!("  … and {} more\n", n - w.stuck.len()));
        }
    }
    let goals: Vec<&GoalId> = {
        let mut g: Vec<&GoalId> = w.quota.iter().map(|q| q.goal).collect();
        g.dedup();
        g
    };
    for goal in goals {
        let rows: Vec<&QuotaRow> = w
            .quota
            .iter()
            .filter(|q| q.goal == goal && !w.idle_session_agents.contains(&q.agent))
            .collect();
        if let Some(first) = rows.first() {
            let used: Vec<String> = rows
                .iter()
                .map(|q| format!("{} {}/{}", q.agent, q.used, q.slots))
                .collect();
            s.push_str(&format!(
                "quota {goal} per {}: {}\n",
                first.window,
                used.join(", ")
            ));
        }
    }
    for b in &w.budgets {
        s.push_str(&format!("budget {} {}\n", b.goal, b.spend.human()));
    }
    if !w.idle_session_agents.is_empty() {
        let n = w.idle_session_agents.len();
        let shown: Vec<String> = w
            .idle_session_agents
            .iter()
            .take(3)
            .map(ToString::to_string)
            .collect();
        let more = if n > 3 {
            format!(" and {} more", n - 3)
        } else {
            String::new()
        };
        s.push_str(&format!(
            "idle session agents (no claim, nothing for an hour): {}{more}\n",
            shown.join(", ")
        ));
    }
    for o in &w.out_of_scope {
        s.push_str(&format!(
            "{}: {} is {}, out of its goals\n",
            o.agent, o.goal, o.status
        ));
    }
    s.push_str("recent:\n");
    for r in &w.recent {
        match &r.signature {
            Some(note) => s.push_str(&format!(
                "  {:>4}  {}  {}  [{note}]\n",
                r.tick, r.at, r.subject
            )),
            None => s.push_str(&format!("  {:>4}  {}  {}\n", r.tick, r.at, r.subject)),
        }
    }
    s
}

/// Says once per clone that human acts are not signed here, and how to
/// turn signing on.
fn unsigned_hint_once(ctx: &Ctx) {
    let Ok(store) = ctx.store() else { return };
    let marker = store.common_dir().join("loopx").join("unsigned-hint-shown");
    if marker.exists() {
        return;
    }
    ctx.out.hint(
        "human acts here are unsigned: this machine trusts no signer, so anything that runs as you can answer a gate; to require signatures, `loopx signer announce NAME --key ~/.ssh/id_ed25519.pub`, then `loopx signer trust NAME`, and sign with `git config gpg.format ssh` and `git config user.signingKey ~/.ssh/id_ed25519.pub` (docs/gates.md)",
    );
    let _ = std::fs::create_dir_all(marker.parent().expect("has a parent"))
        .and_then(|()| std::fs::write(&marker, b"shown\n"));
}
