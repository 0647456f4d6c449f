//! One file per command: each holds its clap `Args` and a `run` that returns
//! the exit status. Verb groups (`goal`, `agent`, `todo`) are directories.
//! This module dispatches and holds the small helpers commands share.

pub mod agent;
pub mod completions;
pub mod demo;
pub mod diff;
pub mod digest;
pub mod doctor;
pub mod evidence;
pub mod gate;
pub mod gc;
pub mod goal;
pub mod hook;
pub mod hooks;
pub mod hub;
pub mod init;
pub mod log;
pub mod machine;
pub mod man;
pub mod mcp;
pub mod notify_run;
pub mod portfolio;
pub mod quota;
pub mod refresh_state;
pub mod settings;
pub mod settle;
pub mod show;
pub mod signer;
pub mod ssh_keep;
pub mod status;
pub mod sync;
pub mod todo;
pub mod trajectory;
pub mod tx;
pub mod verify;
pub mod wire;

use anyhow::Result;
use serde::Serialize;

use crate::cmd::tx::Committed;
use crate::ctx::Ctx;
use crate::error::{Code, Exit, Refusal};
use crate::model::{GoalId, State};

/// Every command; `cli` parses into this and [`run`] dispatches it.
/// `defer`: each command's arguments (and its subcommands') are defined
/// only when the command line enters it, so a run pays for one command's
/// definition, not all of them (help, completions, man pages and the docs
/// build the whole tree). So `loopx --help` sees only what is written on
/// the variant: each one's `///` line is its summary there, the same as the
/// first line of the command's own help (`cli`'s tests compare them).
#[derive(clap::Subcommand, Debug)]
#[command(defer = true)]
pub enum Command {
    /// Show what loopx is for: two machines, two agents and a human, for real
    Demo(demo::Args),
    /// Create the loopx state in this repository
    Init(init::Args),
    /// Show goals, who owns what, what is ready, and the last few ticks
    Status(status::Args),
    /// What happened since a time: todos done, claims freed, gates opened and
    /// answered, failed checks, quiet agents, slots spent, sync rejections
    Digest(digest::Args),
    /// Show the ticks, newest first: who did what, and when
    Log(log::Args),
    /// Show one tick: its operation, actor, time, trailers and file diffs
    Show(show::Args),
    /// Summarize what changed between two states
    Diff(diff::Args),
    /// Write a goal's decision graph over time as a shareable page and JSON
    Trajectory(trajectory::Args),
    /// Follow repositories for `status --all`: add, list, remove
    #[command(subcommand)]
    Portfolio(portfolio::Command),
    /// Add, list, show and change goals
    #[command(subcommand)]
    Goal(goal::Command),
    /// Register and list agents
    #[command(subcommand)]
    Agent(agent::Command),
    /// Add, claim, update and finish todos
    #[command(subcommand)]
    Todo(todo::Command),
    /// Open, answer and list gates: questions that block a scope
    #[command(subcommand)]
    Gate(gate::Command),
    /// Announce, list and trust the SSH keys that sign human acts
    #[command(subcommand)]
    Signer(signer::Command),
    /// Set up, list, admit and revoke the machine keys that sign agent ticks
    #[command(subcommand)]
    Machine(machine::Command),
    /// Set and show the team's shared settings: lease, clock skew, stuck time, prices
    #[command(subcommand)]
    Settings(settings::Command),
    /// Record and list evidence of what was tried
    #[command(subcommand)]
    Evidence(evidence::Command),
    /// The turn's gate: should this agent run now, and the slots turns spend
    #[command(subcommand)]
    Quota(quota::Command),
    /// Record how your turn ended, and print the brief for the next one
    RefreshState(refresh_state::Args),
    /// End a turn in one tick: run the check, update the todo, refresh, spend
    Settle(settle::Args),
    /// Sync the state with a git remote: fetch, replay local ticks, push
    Sync(sync::Args),
    /// Check that every tick re-applies to exactly its tree
    Verify(verify::Args),
    /// Check the state: every file parses, references resolve, no stale locks
    Doctor(doctor::Args),
    /// Pack loose objects and prune unreachable ones older than two weeks
    Gc(gc::Args),
    /// Answer an agent runtime's hook: read its JSON on stdin, reply in its own JSON
    Hook(hook::Args),
    /// Install, remove and check the hooks that wire agent runtimes and git to loopx
    #[command(subcommand)]
    Hooks(hooks::Command),
    /// Serve the turn as MCP tools over stdio (newline-delimited JSON-RPC)
    Mcp(mcp::Args),
    /// Print the completion script for a shell
    Completions(completions::Args),
    /// Write the man pages: loopx(1), and loopx-todo-claim(1) and so on with --dir
    Man(man::Args),
    /// Guard a bare hub repository: refuse pushes that forge or rewrite the state
    #[command(subcommand)]
    Hub(hub::Command),
    /// Send the notifications that are due (started by loopx itself)
    #[command(hide = true, name = "notify-run")]
    NotifyRun(notify_run::Args),
    /// Keep an ssh session to a hub open for sync (started by loopx itself)
    #[command(hide = true, name = "ssh-keep")]
    SshKeep(ssh_keep::Args),
}

/// Parses a whole command line (`loopx [global flags] COMMAND …`) with the
/// global flags and the command tree `cli::Cli` is made of, for a front end
/// that checks one before running it in a child (`loopx mcp`): it lives here,
/// not in `cli`, so the layers below the command line need not reach up.
pub fn parse(words: &[String]) -> Result<(), clap::Error> {
    use clap::{Args, Subcommand};
    let line = crate::ctx::Global::augment_args(clap::Command::new("loopx"));
    Command::augment_subcommands(line.subcommand_required(true))
        .try_get_matches_from(words)
        .map(drop)
}

/// Syncs with `remote` (None: the default remote), reporting progress
/// on stderr: for the commands that sync around their own work.
pub fn sync_remote(ctx: &Ctx, remote: Option<&str>) -> Result<crate::sync::Report> {
    crate::sync::run(
        ctx.repo()?,
        &crate::sync::Options::with(remote),
        crate::sync::Progress {
            ticks: &|what, done, total| ctx.out.progress(what, done, total),
            terminal: ctx.out.shows_progress(),
        },
    )
}

/// Runs one command. `hook` never gets here: it always exits 0 and builds
/// its context itself (see [`hook::main`]). When `loopx.notify` is set and
/// the command moved the state ref, gates waiting on a human are notified
/// afterwards ([`crate::notify`]).
pub fn run(ctx: &Ctx, command: &Command) -> Result<Exit> {
    let before = match command {
        Command::Demo(_)
        | Command::Init(_)
        | Command::Portfolio(_)
        | Command::Mcp(_)
        | Command::NotifyRun(_)
        | Command::SshKeep(_) => None,
        // Moves no ref, so it has nothing to notify about, and answers
        // without opening the repository (`crate::fast`): `loopx.notify`
        // decides trust and is never read from a cache.
        Command::Quota(quota::Command::ShouldRun(a)) if !a.syncs() => None,
        _ => ctx.repo().ok().and_then(crate::notify::before),
    };
    let result = dispatch(ctx, command);
    if before.is_some()
        && let Ok(repo) = ctx.repo()
        && crate::notify::after(repo, before, ctx.now, || {
            crate::cmd::tx::load(ctx).ok().map(|s| s.state)
        })
    {
        notify_run::start(ctx);
    }
    result
}

fn dispatch(ctx: &Ctx, command: &Command) -> Result<Exit> {
    match command {
        Command::Demo(args) => demo::run(ctx, args),
        Command::Init(args) => init::run(ctx, args),
        Command::Status(args) => status::run(ctx, args),
        Command::Digest(args) => digest::run(ctx, args),
        Command::Log(args) => log::run(ctx, args),
        Command::Show(args) => show::run(ctx, args),
        Command::Diff(args) => diff::run(ctx, args),
        Command::Trajectory(args) => trajectory::run(ctx, args),
        Command::Portfolio(c) => portfolio::run(ctx, c),
        Command::Goal(c) => goal::run(ctx, c),
        Command::Agent(c) => agent::run(ctx, c),
        Command::Todo(c) => todo::run(ctx, c),
        Command::Gate(c) => gate::run(ctx, c),
        Command::Signer(c) => signer::run(ctx, c),
        Command::Settings(c) => settings::run(ctx, c),
        Command::Machine(c) => machine::run(ctx, c),
        Command::Evidence(c) => evidence::run(ctx, c),
        Command::Quota(c) => quota::run(ctx, c),
        Command::RefreshState(args) => refresh_state::run(ctx, args),
        Command::Settle(args) => settle::run(ctx, args),
        Command::Sync(args) => sync::run(ctx, args),
        Command::Verify(args) => verify::run(ctx, args),
        Command::Hub(c) => hub::run(ctx, c),
        Command::Doctor(args) => doctor::run(ctx, args),
        Command::Gc(args) => gc::run(ctx, args),
        Command::Hooks(c) => hooks::run(ctx, c),
        Command::Mcp(args) => mcp::run(ctx, args),
        Command::NotifyRun(args) => notify_run::run(ctx, args),
        Command::Completions(_) | Command::Man(_) => Err(anyhow::anyhow!(
            "loopx completions and man run from the command line's definition, in lib::main_from"
        )),
        Command::Hook(_) => Err(anyhow::anyhow!(
            "loopx hook runs through hook::main, which always exits 0"
        )),
        Command::SshKeep(_) => Err(anyhow::anyhow!(
            "loopx ssh-keep runs through ssh_keep::main, before a context is made"
        )),
    }
}

/// Runs a command loopx was asked to run (a validation, `evidence run`,
/// `settle`'s check). Under a fixed clock (`LOOPX_NOW`) its duration is
/// recorded as 0 ms, like every other time, so the history a script makes
/// is reproducible.
pub fn run_command(
    ctx: &Ctx,
    argv: &[String],
    dir: &std::path::Path,
    timeout: crate::time::Span,
) -> crate::model::run::CommandRun {
    let mut record = crate::run::run(argv, dir, timeout);
    if ctx.env.get("LOOPX_NOW").is_some() {
        record.duration_ms = 0;
    }
    record
}

/// The fields every tick's JSON output carries.
#[derive(Serialize)]
pub struct TickWire {
    pub tick: u64,
    pub commit: String,
    pub op: &'static str,
    pub subject: String,
}

impl TickWire {
    pub fn of(done: &Committed) -> Self {
        TickWire {
            tick: done.tip.tick,
            commit: done.tip.commit.to_string(),
            op: done.op.change.kind(),
            subject: done.effect.subject.clone(),
        }
    }
}

/// Commits one tick that makes `change` (retried on a race, like
/// [`crate::cmd::tx::start`]), for the commands whose change does not depend on
/// the state it lands on.
pub fn commit_change(ctx: &Ctx, change: crate::op::Change) -> Result<Committed> {
    tx::start(ctx)?.run(|_| Ok(tx::op(ctx, change.clone())?))
}

/// What this clone knows beyond the state, for judging stuck claims
/// (`op::stuck`): the agents whose sessions here are all over (the hooks'
/// session files), and up to when it has seen other clones' ticks: the
/// end of its last sync with its default remote, else now for a clone
/// that never synced (None for one whose sync recorded no time).
pub fn stuck_local(ctx: &Ctx) -> crate::op::stuck::Local {
    let Ok(repo) = ctx.repo() else {
        return crate::op::stuck::Local::default();
    };
    let gone = crate::hook::sessions::gone_agents(repo.store().common_dir());
    // A clone that synced before it recorded the time judges nothing by
    // silence until its next sync; one that never synced sees every tick
    // there is, here.
    let seen_until = match crate::sync::synced_at::last(repo, None) {
        Some(at) => Some(crate::time::Timestamp::from_unix(at)),
        None => match crate::sync::synced_tip(repo, None) {
            Ok(Some(_)) => None,
            _ => Some(ctx.now),
        },
    };
    crate::op::stuck::Local { gone, seen_until }
}

/// The goal a command acts on: `--goal`, else git config `loopx.goal`, else
/// for an agent the goal of its pick across the goals it may work on
/// ([`agent_goal`]), else the only active goal (`ambiguous-goal` for a
/// human when several are active).
pub fn pick_goal(ctx: &Ctx, state: &State, flag: Option<&str>) -> Result<GoalId, Refusal> {
    if let Some(g) = named_goal(ctx, state, flag)? {
        return Ok(g);
    }
    if let crate::model::Caller::Agent(agent) = ctx.caller()
        && state.agents.contains_key(agent)
    {
        return agent_goal(state, agent, ctx.now).map(|g| g.id.clone());
    }
    state
        .default_goal()
        .map(|g| g.id.clone())
        .map_err(|r| split_hint(ctx, state, r))
}

/// The goal `--goal` or git config `loopx.goal` names, if either does.
pub fn named_goal(ctx: &Ctx, state: &State, flag: Option<&str>) -> Result<Option<GoalId>, Refusal> {
    if let Some(g) = flag {
        return state
            .goal(g)
            .map(|g| Some(g.id.clone()))
            .map_err(|r| split_hint(ctx, state, r));
    }
    if let Some(g) = ctx.settings().ok().and_then(|c| c.goal) {
        return state
            .goal(&g)
            .map(|g| Some(g.id.clone()))
            .map_err(|r| r.with_hint("git config loopx.goal names it; fix or unset that setting"));
    }
    Ok(None)
}

/// The goals an agent's should-run, brief and hooks work over: the one
/// `--goal` or `loopx.goal` names, else its [`State::scope`], else (none
/// active in it) the first goal its record names or the only goal, so the
/// answer can say that it is paused or done.
pub fn agent_goals<'s>(
    ctx: &Ctx,
    state: &'s State,
    agent: &crate::model::AgentId,
    flag: Option<&str>,
) -> Result<Vec<&'s crate::model::Goal>, Refusal> {
    if let Some(g) = named_goal(ctx, state, flag)? {
        return Ok(vec![&state.goals[&g]]);
    }
    let scope = state.scope(agent);
    if !scope.is_empty() {
        return Ok(scope);
    }
    fallback_goal(state, agent)
        .map(|g| vec![g])
        .map_err(|r| split_hint(ctx, state, r))
}

/// The goal an agent works on when it names none: the goal of its
/// should-run pick across its [`State::scope`] (`op::turn::decide_across`,
/// which follows `claim --next`).
pub fn agent_goal<'s>(
    state: &'s State,
    agent: &crate::model::AgentId,
    now: crate::time::Timestamp,
) -> Result<&'s crate::model::Goal, Refusal> {
    match state.scope(agent).as_slice() {
        [] => fallback_goal(state, agent),
        [one] => Ok(one),
        many => Ok(crate::op::turn::decide_across(state, agent, many, now).0),
    }
}

/// An agent's goal when none in its scope is active: the first its record
/// names, else [`State::default_goal`].
fn fallback_goal<'s>(
    state: &'s State,
    agent: &crate::model::AgentId,
) -> Result<&'s crate::model::Goal, Refusal> {
    let named = state
        .agents
        .get(agent)
        .map(|a| a.goals.as_slice())
        .unwrap_or_default();
    match named.iter().find_map(|g| state.goals.get(g)) {
        Some(g) => Ok(g),
        None => state.default_goal(),
    }
}

/// On the shared ref of a split state (`goal split`: no goal lives there,
/// each has its own ref), a refusal about goals names the fix: point
/// `loopx.ref` at a goal's ref.
pub fn split_hint(ctx: &Ctx, state: &State, r: Refusal) -> Refusal {
    match split_refs(ctx, state) {
        Some(refs) if !refs.is_empty() => r.with_hint(split_fix(&refs)),
        _ => r,
    }
}

/// The goal refs of a split state, when this clone reads its shared ref
/// (one holding no goal, whose split names goal refs); None otherwise.
pub fn split_refs(ctx: &Ctx, state: &State) -> Option<Vec<(GoalId, String)>> {
    if !tx::goalref::is_shared_state(state) {
        return None;
    }
    let refs = tx::goalref::goal_refs(ctx.store().ok()?).ok()?;
    let refs: Vec<(GoalId, String)> = refs
        .into_iter()
        .filter_map(|(name, _)| {
            let g = GoalId::new(name.strip_prefix(tx::goalref::GOALS)?).ok()?;
            Some((g, name))
        })
        .collect();
    (!refs.is_empty()).then_some(refs)
}

/// The hint that tells a clone on a split state's shared ref how to work
/// a goal: `git config loopx.ref refs/loopx/goals/<goal>`.
pub fn split_fix(refs: &[(GoalId, String)]) -> String {
    let first = &refs[0];
    let goals: Vec<&str> = refs.iter().map(|(g, _)| g.as_str()).collect();
    format!(
        "this clone reads the shared ref of a split state, where no goal lives; each goal ({}) has its own ref: work one with `git config loopx.ref {}`",
        goals.join(", "),
        first.1
    )
}

/// A fresh evidence id. Records are not loaded with the state, so this
/// relies on 32 random bits (or the seed) rather than a lookup.
pub fn fresh_id(ctx: &Ctx, context: &str) -> crate::model::EvidenceId {
    crate::model::EvidenceId::from_hex(
        &ctx.ids
            .hex(crate::model::id::RANDOM_HEX, context.as_bytes()),
    )
}

/// The turn's usage the `--usage` flags give (`settle`, `quota
/// spend-slot`), priced from git config or the shipped table; a line on
/// stderr for each model nothing prices.
pub fn read_usage(
    ctx: &Ctx,
    args: &crate::service::usage::UsageArgs,
) -> Result<Option<crate::model::usage::Usage>> {
    // The team's prices are read from the state only when a model needs
    // pricing.
    let team = std::cell::OnceCell::new();
    let price_of = |m: &str| {
        let team = team.get_or_init(|| {
            tx::load(ctx)
                .map(|s| s.state.meta.settings.prices.clone())
                .unwrap_or_default()
        });
        crate::price::team(team, m)
            .or_else(|| ctx.store().ok().and_then(|s| crate::config::price(s, m)))
    };
    let read = crate::service::usage::read(&ctx.cwd, &price_of, args)?;
    Ok(read.map(|(usage, notes)| {
        for n in notes {
            ctx.out.status(&n);
        }
        usage
    }))
}

/// Parses a slug id given on the command line.
pub fn slug<T>(kind: &str, s: &str, new: impl Fn(&str) -> Result<T, String>) -> Result<T, Refusal> {
    new(s)
        .map_err(|e| Refusal::usage(Code::BadId, e).with_hint(format!("choose another {kind} id")))
}

/// Whether a command syncs with the team's hub around its own work: `--sync`
/// forces it, `--no-sync` opts out (offline work), else git config
/// `loopx.claimSync` decides, else whether this clone has a hub (`loopx sync
/// --setup`, DESIGN §5): multi-machine is the default once it has one.
pub fn syncs(ctx: &Ctx, sync: bool, no_sync: bool) -> Result<bool> {
    if sync || no_sync {
        return Ok(sync);
    }
    Ok(match ctx.settings()?.claim_sync {
        Some(on) => on,
        None => ctx.repo().ok().and_then(crate::sync::hub).is_some(),
    })
}

/// Pushes what a command just wrote (`todo done`, `settle`): one sync after
/// the tick. The tick stays recorded here whatever happens; an unreachable
/// hub is a warning (the tick goes with the next sync), and a remote state
/// that rejected the op is the refusal `rejected` builds from its reason.
pub fn push_after(
    ctx: &Ctx,
    op: &crate::model::OpId,
    rejected: impl FnOnce(&crate::sync::Rejected) -> Refusal,
) -> Result<Option<crate::sync::Report>> {
    match crate::cmd::sync_remote(ctx, None) {
        Ok(report) => {
            ctx.out.status(&wire::human(&report));
            if let Some(r) = report.rejection_of(op) {
                return Err(rejected(r).into());
            }
            Ok(Some(report))
        }
        Err(e) => {
            ctx.out.warn(&format!(
                "recorded here, but not on the hub yet: {e:#}; it goes with the next `loopx sync` (or claim)"
            ));
            Ok(None)
        }
    }
}

/// The linked worktree the claim of `todo` owns on this clone (its
/// holder's, else the acting agent's), checked before `todo done` or
/// `settle --done`: a `uncommitted-work` refusal listing the files not
/// committed in it, so nothing is marked done while work could be lost.
pub fn claim_worktree(
    ctx: &Ctx,
    todo: &crate::model::Todo,
) -> Result<Option<crate::service::worktree::Record>> {
    use crate::service::worktree;
    let agent = match todo.owner() {
        Some(a) => a.clone(),
        None => match ctx.actor().ok().and_then(|a| a.agent().cloned()) {
            Some(a) => a,
            None => return Ok(None),
        },
    };
    let Some(r) = worktree::of(ctx.store()?.common_dir(), &todo.id, &agent) else {
        return Ok(None);
    };
    let files = worktree::uncommitted(ctx.repo()?, &r)?;
    if files.is_empty() {
        return Ok(Some(r));
    }
    const SHOWN: usize = 20;
    let mut list = files
        .iter()
        .take(SHOWN)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if files.len() > SHOWN {
        list.push_str(&format!(" and {} more", files.len() - SHOWN));
    }
    let path = r.path.display();
    Err(Refusal::new(
        Exit::Refused,
        Code::UncommittedWork,
        format!(
            "{} has work not committed in its worktree {path}: {list}",
            todo.id
        ),
    )
    .with_hint(format!(
        "nothing was marked done; commit it on branch {} (`git -C {path} add -A && git -C {path} commit`), or move it elsewhere, then run it again",
        r.branch
    ))
    .into())
}

/// Removes the worktree `r` after its claim was marked done, its branch
/// kept for review, and says so; a worktree git would not remove (a file
/// written since the check) is left, with a warning, for `status` to list.
pub fn close_worktree(
    ctx: &Ctx,
    r: &crate::service::worktree::Record,
) -> Option<crate::service::worktree::Closed> {
    use crate::service::worktree::{self, Closed};
    match worktree::close(ctx.repo().ok()?, r) {
        Ok(c) => {
            match &c {
                Closed::Removed { path, branch } => ctx.out.status(&format!(
                    "Removed the worktree {}; its branch {branch} is kept for review.",
                    path.display()
                )),
                Closed::Pruned { path, branch } => ctx.out.status(&format!(
                    "The worktree {} was deleted by hand: pruned; its branch {branch} is kept for review.",
                    path.display()
                )),
            }
            Some(c)
        }
        Err(e) => {
            ctx.out.warn(&format!(
                "the worktree {} was left in place: {e:#}",
                r.path.display()
            ));
            None
        }
    }
}
