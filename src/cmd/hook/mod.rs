//! `loopx hook <runtime> <event>`: the one entry point every runtime's hook
//! (and git's) calls. The front end: it reads the runtime's JSON on stdin
//! ([`hook::stdin`], at most 1 MiB, 16 MiB for the tool guard's event, for
//! at most 2 s), normalises it ([`crate::hook`]), opens the store as the
//! session's agent, loads the state, lets [`hook::decide`] decide, writes
//! the ticks and the session file ([`hook::session`]), and answers in the
//! runtime's own JSON.
//!
//! It always exits 0 and never prints anything but the answer on stdout:
//! anything unexpected fails open with one line on stderr. The one place
//! that fails closed is the opt-in tool guard (`guard_event`): inside a
//! loopx repository it denies a call it cannot check (an input over 16
//! MiB, not closed within 2 s, not JSON, a shell call without a readable
//! command, a state it cannot read, a panic, not judged within 3 s),
//! unless a human set
//! `LOOPX_GUARD=off`. Only session start and end write ticks (registering
//! the agent, recording the turn's end); a prompt and a tool call only read.
//! Per-session counters live in `<git common dir>/loopx/hooks/`, never on
//! the state ref.

mod hub;
mod usage;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow};

use crate::cmd::tx;
use crate::ctx::{Ctx, Env, Global};
use crate::error::{Code, refusal_of};
use crate::hook::decide::{self, Start};
use crate::hook::session::SessionFile;
use crate::hook::{self, Answer, Event, Input, Runtime, guard};
use crate::model::runtime::UsageFrom;
use crate::model::{AgentId, AgentStatus, State, TodoStatus};
use crate::op::turn::ready::ReadyList;
use crate::op::{AgentRegister, Change, QuotaPark};
use crate::output::{Format, Out};
use crate::store::Tip;
use hub::Synced;

/// Answer an agent runtime's hook: read its JSON on stdin, reply in its own JSON
///
/// Runtimes: claude-code (or claude), codex, cursor, gemini, opencode, pi,
/// and git for the git shims. Events as each runtime names them:
/// SessionStart, UserPromptSubmit, PreToolUse, Stop, SessionEnd, PreCompact
/// (Claude Code, Codex); sessionStart, beforeSubmitPrompt,
/// beforeShellExecution, stop, sessionEnd (Cursor); SessionStart,
/// BeforeAgent, BeforeTool, AfterAgent, SessionEnd (Gemini CLI);
/// SessionStart, UserPromptSubmit, PreToolUse, Stop (OpenCode's plugin);
/// SessionStart, UserPromptSubmit, PreToolUse, Stop, SessionEnd (Pi's
/// extension); pre-push, post-merge (git). Always exits 0.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// claude-code, codex, cursor, gemini, opencode, pi or git
    #[arg(allow_hyphen_values = true)]
    runtime: Option<String>,
    /// The event, spelled as the runtime names it
    #[arg(allow_hyphen_values = true)]
    event: Option<String>,
    /// What the runtime passes after the event (git's pre-push: remote and URL)
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    rest: Vec<String>,
}

/// Runs the hook; never fails, always exits 0.
pub fn main(global: &Global, args: &Args) -> ExitCode {
    let json = Out::new(Format::Json, true);
    let text = Out::new(Format::Human, true);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(global, args)));
    match result {
        Ok(Ok(reply)) => {
            for n in &reply.notes {
                text.status(n);
            }
            if let Answer::Note(n) = &reply.answer {
                text.status(n);
            }
            if let Some(doc) = hook::render(reply.runtime, reply.event, &reply.answer) {
                let _ = json.json_line(&doc);
            }
        }
        Ok(Err(e)) => text.status(&format!("loopx hook: {e:#}; answering nothing.")),
        Err(_) => text.status("loopx hook: internal error; answering nothing."),
    }
    ExitCode::SUCCESS
}

/// What the hook answers, plus lines for people on stderr.
struct Reply {
    runtime: Runtime,
    event: Event,
    answer: Answer,
    notes: Vec<String>,
}

/// One hook call, once the agent and its session are known.
struct Call<'a> {
    ctx: Ctx,
    runtime: Runtime,
    agent: AgentId,
    input: &'a Input,
    session: SessionFile,
}

fn run(global: &Global, args: &Args) -> Result<Reply> {
    let env = Env::process().clone();
    let name = args.runtime.as_deref().unwrap_or("");
    let runtime = Runtime::parse(name).ok_or_else(|| {
        anyhow!(
            "unknown runtime {name:?} (use claude-code, codex, cursor, gemini, opencode, pi or git)"
        )
    })?;
    let typed = args.event.as_deref().unwrap_or("");
    let (_, event) = runtime.event(typed).ok_or_else(|| {
        let names: Vec<_> = runtime.events().iter().map(|(n, _)| *n).collect();
        anyhow!(
            "{typed:?} is not a {} event loopx answers ({})",
            runtime.as_str(),
            names.join(", ")
        )
    })?;
    let mut reply = Reply {
        runtime,
        event,
        answer: Answer::Nothing,
        notes: Vec::new(),
    };
    if runtime == Runtime::Git {
        reply.answer = hub::git_event(global, &env, event, &args.rest)?;
        return Ok(reply);
    }
    if event == Event::Tool {
        reply.answer = guard_event(global, &env, runtime, &mut reply.notes);
        return Ok(reply);
    }
    let stdin = hook::stdin::read(hook::stdin::LIMIT).map_err(|e| anyhow!(e))?;
    let input = hook::parse_input(runtime, event, &stdin).map_err(|e| anyhow!(e))?;
    let caller = crate::ctx::hook_caller(&env, runtime, input.session.as_deref())?;
    let dir = hook_dir(global, &input);
    let Some((agent, named)) = caller else {
        return Err(anyhow!(
            "the hook's input has no session id, so loopx cannot tell which agent this is; set LOOPX_AGENT"
        ));
    };
    let Some((call, continued)) = open(dir, runtime, event, agent, named, &input)? else {
        return Ok(reply);
    };
    // Claude Code's transcript holds each message's usage: record what
    // came since the last record, at every Stop and at the session's end.
    // Pi's extension sends the usage Pi reported since its last call.
    let spec = runtime.spec();
    let recorded = match (spec.usage, event) {
        (UsageFrom::Transcript, Event::Stop | Event::End) => Some(usage::transcript(&call)),
        (UsageFrom::Payload, Event::Stop | Event::End) => Some(usage::pi(&call, &stdin)),
        _ => None,
    };
    match recorded {
        Some(Err(e)) if !quiet(&e) => reply.notes.push(format!(
            "loopx hook: the session's usage was not recorded: {e:#}"
        )),
        _ => {}
    }
    let outcome = match event {
        Event::Start => start(&call, continued).inspect(|_| {
            if let Some(var) = spec.env_file
                && !named
            {
                export_agent(&call.ctx.env, var, &call.agent);
            }
        }),
        Event::Prompt => prompt(&call),
        Event::Stop => stop(&call).and_then(|a| match &a {
            // Gemini CLI does not wait for its SessionEnd hook, so a tick
            // written there may never land, and OpenCode has none: the end
            // of the turn is recorded when the agent stops (AfterAgent,
            // which Gemini waits for; session.idle). Pi's session may stay
            // open long after its turn (agent_end).
            Answer::Nothing if spec.stop_ends_turn => end(&call, None).map(|_| a),
            _ => Ok(a),
        }),
        Event::End => end(&call, Some(&mut reply.notes)),
        Event::LimitReached => limit_reached(&call),
        Event::PreCompact | Event::Tool | Event::PrePush | Event::PostMerge => Ok(Answer::Nothing),
    };
    match outcome {
        Ok(a) if !spec.shell_has_session && !named => {
            reply.answer = decide::name_the_agent(a, event, &call.agent);
        }
        Ok(a) => reply.answer = a,
        Err(e) if quiet(&e) => {}
        Err(e) => return Err(e),
    }
    Ok(reply)
}

/// Where the hook acts: `-C`, else the payload's `cwd` ([`hook_cwd`]),
/// else the current directory (None).
fn hook_dir(global: &Global, input: &Input) -> Option<PathBuf> {
    global.dir.clone().or_else(|| hook_cwd(input))
}

/// The payload's `cwd`, when it is a folder.
fn hook_cwd(input: &Input) -> Option<PathBuf> {
    input
        .cwd
        .as_deref()
        .map(PathBuf::from)
        .filter(|p| p.is_dir())
}

/// Opens the store as the session's agent: the one its start recorded,
/// which may be an earlier session's that is gone ([`hook::sessions`]),
/// unless `LOOPX_AGENT` `named` one. Also whether it continues an earlier
/// session's agent. None where loopx is not in use.
fn open(
    dir: Option<PathBuf>,
    runtime: Runtime,
    event: Event,
    agent: AgentId,
    named: bool,
    input: &Input,
) -> Result<Option<(Call<'_>, bool)>> {
    let ctx = match Ctx::with(dir.clone(), Format::Json, Some(agent.as_str())) {
        Ok(ctx) => ctx,
        Err(e) if quiet(&e) => return Ok(None),
        Err(e) => return Err(e),
    };
    let common = ctx.store().ok().map(|s| s.common_dir().to_path_buf());
    let session = SessionFile::new(common.as_deref(), runtime, input.session.as_deref());
    let (ctx, agent, continued) = match named {
        true => (ctx, agent, false),
        false => match session_agent(&ctx, runtime, event, &session)? {
            Some((a, continued)) if a != agent => (
                Ctx::with(dir, Format::Json, Some(a.as_str()))?,
                a,
                continued,
            ),
            _ => (ctx, agent, false),
        },
    };
    let call = Call {
        ctx,
        runtime,
        agent,
        input,
        session,
    };
    Ok(Some((call, continued)))
}

/// StopFailure: on a usage limit (`rate_limit`), park the agent until the
/// time the runtime's message gives (or [`hook::limit::FALLBACK`]), so its
/// loop waits instead of retrying. Other errors and unregistered agents:
/// nothing.
fn limit_reached(call: &Call) -> Result<Answer> {
    let ctx = &call.ctx;
    let Some((until, reason)) = decide::limit(call.input, ctx.now) else {
        return Ok(Answer::Nothing);
    };
    // An unregistered agent or no goal: `apply` refuses, and the hook
    // (whose output the runtime ignores) says nothing.
    let parked = tx::start(ctx)?.run(|state| {
        let goal = crate::cmd::pick_goal(ctx, state, None)?;
        Ok(tx::op(
            ctx,
            Change::QuotaPark(QuotaPark {
                agent: call.agent.clone(),
                goal,
                until,
                reason: Some(reason.clone()),
            }),
        )?)
    });
    match parked {
        Ok(_) => Ok(Answer::Nothing),
        Err(e) if refusal_of(&e).is_some() => Ok(Answer::Nothing),
        Err(e) => Err(e),
    }
}

/// Errors that mean loopx is not in use here: say nothing.
fn quiet(e: &anyhow::Error) -> bool {
    refusal_of(e).is_some_and(|r| matches!(r.code, Code::NotARepository | Code::NoState))
}

/// Session start (also resume, clear and compaction): register the agent
/// if it is new, and prime the session with the brief or a stand-down.
fn start(call: &Call, continued: bool) -> Result<Answer> {
    let (ctx, agent) = (&call.ctx, &call.agent);
    // The brief comes from the hub's state when the clone has one: sync
    // first (which also pushes what earlier sessions left here), bounded.
    let offline = match hub::sync(ctx, hub::START_SYNC) {
        Synced::Alone | Synced::Online => None,
        Synced::Offline(why) => Some(why),
    };
    // The cache's head and the agent's ready list first, as should-run
    // reads them; the whole state when they cannot prove the brief.
    let mut claims = tx::load_claims(ctx)?;
    let (state, tip, head) = match claims.state.agents.get(agent) {
        Some(a) if a.status == AgentStatus::Retired => return Ok(decide::retired(agent)),
        Some(_) => {
            // Over several goals the pick reads the whole state.
            let several = crate::cmd::named_goal(ctx, &claims.state, None)
                .ok()
                .flatten()
                .is_none()
                && claims.state.scope(agent).len() > 1;
            let list = match claims.complete || several {
                true => None,
                false => crate::cmd::pick_goal(ctx, &claims.state, None)
                    .ok()
                    .and_then(|g| claims.ready_list(agent, &g)),
            };
            let state = std::mem::take(&mut claims.state);
            (state, claims.tip, (!claims.complete).then_some(list))
        }
        None => {
            let done = tx::start(ctx)?.run(|_| {
                Ok(tx::op(
                    ctx,
                    Change::AgentRegister(AgentRegister {
                        agent: agent.clone(),
                        runtime: call.runtime.stored(),
                        capabilities: Vec::new(),
                        goals: None,
                    }),
                )?)
            })?;
            (done.state, done.tip, None)
        }
    };
    let hub = ctx.repo().ok().and_then(crate::sync::hub);
    let lx = loopx_command(ctx, call.runtime);
    let worktrees: Vec<(crate::model::TodoId, PathBuf, String)> = ctx
        .store()
        .map(|s| crate::service::worktree::records(s.common_dir()))
        .unwrap_or_default()
        .into_iter()
        .filter(|r| &r.agent == agent && r.path.is_dir())
        .map(|r| (r.todo, r.path, r.branch))
        .collect();
    let worktree_next = ctx
        .repo()
        .is_ok_and(|r| crate::service::worktree::decide(r, None, agent).take);
    let text_at = |state: &State, tip: &Tip, list: Option<&ReadyList>| -> Option<String> {
        let goal = &state.goals[&crate::cmd::pick_goal(ctx, state, None).ok()?];
        let tip = tip.commit.to_string();
        let st = Start {
            agent,
            goal,
            tip: &tip,
            now: ctx.now,
            runtime: call.runtime.as_str(),
            continued,
            offline: offline.as_deref(),
            hub: hub.as_deref(),
            lx: &lx,
            worktrees: &worktrees,
            worktree_next,
        };
        match list {
            Some(l) => decide::brief_from_ready(state, &st, l),
            None => Some(decide::brief(state, &st)),
        }
    };
    let (state, text) = match head {
        None => {
            let text = text_at(&state, &tip, None);
            (state, text)
        }
        Some(list) => match list.and_then(|l| text_at(&state, &tip, Some(&l))) {
            Some(text) => (state, Some(text)),
            None => {
                // The whole state, read at the tip again: no brief mixes
                // two states; a damaged ready index is written again.
                let snap = tx::load(ctx)?;
                tx::repair_ready(ctx, &snap);
                match snap.state.agents.get(agent) {
                    Some(a) if a.status == AgentStatus::Retired => {
                        return Ok(decide::retired(agent));
                    }
                    _ => {}
                }
                let text = text_at(&snap.state, &snap.tip, None);
                (snap.state, text)
            }
        },
    };
    let mut s = call.session.load();
    let process = hook::sessions::runtime_process(call.input.pid);
    decide::open(&mut s, &state, agent, call.input, ctx.now, process);
    let goal = match crate::cmd::pick_goal(ctx, &state, None) {
        Ok(g) => &state.goals[&g],
        Err(r) => {
            call.session.save(&s);
            call.session.release();
            let hint = r.hint.map(|h| h.to_string());
            return Ok(decide::no_goal(agent, &r.message, hint.as_deref()));
        }
    };
    s.view = Some(hook::view::view(&state, agent, Some(goal), ctx.now));
    s.turn_goal = Some(goal.id.clone());
    call.session.save(&s);
    call.session.release();
    let mut text = text.expect("a goal was picked, so the brief was made");
    // The hook never verifies inline: it says so, and the guard judges
    // every human-only gate open meanwhile.
    if !verified_tip(ctx, &tip) {
        let why = if marked(ctx) {
            "this clone's state ref was moved outside loopx (a plain `git fetch` onto refs/loopx/*, `git update-ref`, a restored backup) to a tick it has not verified"
        } else {
            "this clone has no verified tip recorded yet (a clone made before loopx kept one, or state that arrived outside loopx)"
        };
        text.push_str(&format!(
            "\n\nloopx: {why}. Until a human runs `loopx verify` (or `loopx sync`) here, every command a human-only gate could cover is denied and a validation verifies the history first; tell the user."
        ));
    }
    Ok(decide::context(agent, text))
}

/// How the agent's shell calls loopx under `runtime` (the brief names it
/// so): see [`hook::loopx_command`].
fn loopx_command(ctx: &Ctx, runtime: Runtime) -> String {
    let exe = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .unwrap_or_else(|_| PathBuf::from("loopx"));
    hook::loopx_command(runtime, ctx.env.get("PATH"), &exe)
}

/// Claude Code's SessionStart may append `export` lines to the file named by
/// `CLAUDE_ENV_FILE` (`var`), which later shell commands source: the agent
/// id there keeps every loopx call in the session on the same agent.
fn export_agent(env: &Env, var: &str, agent: &AgentId) {
    let Some(path) = env.get(var) else {
        return;
    };
    let line = format!("export LOOPX_AGENT={agent}\n");
    let old = std::fs::read_to_string(path).unwrap_or_default();
    if old.contains(&line) {
        return;
    }
    let _ = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
}

/// A prompt is submitted: what changed since the previous one. Reads the
/// state, writes only the session file.
fn prompt(call: &Call) -> Result<Answer> {
    let ctx = &call.ctx;
    let snap = tx::load(ctx)?;
    let state = &snap.state;
    let goal = crate::cmd::pick_goal(ctx, state, None)
        .ok()
        .and_then(|g| state.goals.get(&g));
    let mut s = call.session.load();
    let text = decide::prompt(&mut s, state, &call.agent, goal, ctx.now);
    call.session.save(&s);
    Ok(text.map_or(Answer::Nothing, |text| Answer::Context {
        text,
        agent: None,
    }))
}

/// The tool guard's event (opt-in: PreToolUse, beforeShellExecution,
/// BeforeTool): deny a shell command an open human-only gate covers. It
/// fails closed: a call it cannot check, because its input is over
/// [`hook::stdin::GUARD_LIMIT`], did not close within
/// [`hook::stdin::WAIT`], is not JSON or holds no command it can read
/// ([`guard::command_of`]), or because judging it panicked or outlasted
/// [`guard::DEADLINE`] ([`guard::judged`]), is denied with the reason, inside a loopx
/// repository; outside one the hook still says nothing. A human switches
/// the guard off for a broken loopx with `LOOPX_GUARD=off` in the runtime's
/// launch environment (read from the context's environment, `env`).
fn guard_event(global: &Global, env: &Env, runtime: Runtime, notes: &mut Vec<String>) -> Answer {
    let started = Instant::now();
    let switch = env.get(guard::SWITCH);
    if guard::is_off(switch) {
        // Read all the same, so the runtime's write does not fail.
        let _ = hook::stdin::read(hook::stdin::GUARD_LIMIT);
        notes.push(format!(
            "loopx hook: the tool guard is off ({}={}); answering nothing.",
            guard::SWITCH,
            guard::OFF
        ));
        return Answer::Nothing;
    }
    if let Some(value) = switch.filter(|v| *v != "on") {
        notes.push(format!(
            "loopx hook: {}={value:?} is neither `on` nor `off`, so the tool guard stays on.",
            guard::SWITCH
        ));
    }
    let read = guard::judged(started, guard::DEADLINE, move || read_tool(runtime));
    // A clock fixed ahead of this machine's (LOOPX_NOW) is refused by every
    // command; here it refuses every call, since nothing can be judged at
    // a time that has not come.
    let clock = env
        .get("LOOPX_NOW")
        .and_then(|v| crate::ctx::fixed_now(v).err())
        .map(|r| r.message);
    let (dir, why) = match read.and_then(|r| r) {
        Err(why) => (global.dir.clone(), why),
        Ok(input) if clock.is_some() => {
            (hook_dir(global, &input), clock.expect("checked just above"))
        }
        Ok(input) => {
            let dir = hook_dir(global, &input);
            let (at, owned) = (dir.clone(), env.clone());
            let checked = guard::judged(started, guard::DEADLINE, move || {
                check_tool(at, &owned, runtime, &input)
            });
            match checked.and_then(|c| c) {
                Ok(answer) => return answer,
                Err(why) => (dir, why),
            }
        }
    };
    // Denied only where loopx is in use (or where that cannot be told).
    let in_use = guard::judged(Instant::now(), IN_USE_WAIT, move || loopx_in_use(dir));
    if !in_use.unwrap_or(true) {
        notes.push(format!("loopx hook: {why}; answering nothing."));
        return Answer::Nothing;
    }
    notes.push(format!(
        "loopx hook: {why}; the tool call is denied ({}={} in the runtime's launch environment switches the guard off).",
        guard::SWITCH,
        guard::OFF
    ));
    Answer::Deny(format!(
        "loopx: the tool guard could not check this call ({why}), so it is refused."
    ))
}

/// How long the guard waits to learn whether loopx is in use where a call
/// it could not check runs; past it, the call is denied.
const IN_USE_WAIT: Duration = Duration::from_secs(1);

/// The tool call's input, read within the guard's limits.
fn read_tool(runtime: Runtime) -> Result<Input, String> {
    let stdin = hook::stdin::read(hook::stdin::GUARD_LIMIT)?;
    hook::parse_input(runtime, Event::Tool, &stdin)
}

/// Judges the tool call in `dir`: an error says why it cannot be checked.
fn check_tool(
    dir: Option<PathBuf>,
    env: &Env,
    runtime: Runtime,
    input: &Input,
) -> Result<Answer, String> {
    let Some(command) = guard::command_of(runtime, input)? else {
        return Ok(write_scope(dir, env, runtime, input));
    };
    if guard::risks(command).is_empty() {
        return Ok(Answer::Nothing);
    }
    let caller = crate::ctx::hook_caller(env, runtime, input.session.as_deref())
        .map_err(|e| format!("{e:#}"))?;
    Ok(tool(dir, caller.as_ref().map(|(a, _)| a), command))
}

/// An edit or write tool's call by an agent whose claim owns a linked
/// worktree on this clone: denied when it names a file in the main
/// checkout or another claim's worktree ([`guard::scope`]). Anything it
/// cannot tell (no agent, no repository, no worktree) answers nothing:
/// the shell guard's fail-closed rule is about gates, not this.
fn write_scope(dir: Option<PathBuf>, env: &Env, runtime: Runtime, input: &Input) -> Answer {
    if input.paths.is_empty() {
        return Answer::Nothing;
    }
    let Ok(Some((agent, _))) = crate::ctx::hook_caller(env, runtime, input.session.as_deref())
    else {
        return Answer::Nothing;
    };
    let cwd = input.cwd.as_deref().map(PathBuf::from).or(dir.clone());
    let Ok(ctx) = Ctx::with(dir, Format::Json, Some(agent.as_str())) else {
        return Answer::Nothing;
    };
    let Ok(store) = ctx.store() else {
        return Answer::Nothing;
    };
    let (own, others): (Vec<_>, Vec<_>) = crate::service::worktree::records(store.common_dir())
        .into_iter()
        .filter(|r| r.path.is_dir())
        .partition(|r| r.agent == agent);
    if own.is_empty() {
        return Answer::Nothing;
    }
    let Some(checkout) = store
        .workdir()
        .and_then(|w| crate::git::worktree::main_worktree(w).ok())
    else {
        return Answer::Nothing;
    };
    let paths = |rs: Vec<crate::service::worktree::Record>| -> Vec<PathBuf> {
        rs.into_iter().map(|r| r.path).collect()
    };
    guard::scope::check(
        &input.paths,
        cwd.as_deref(),
        &paths(own),
        &paths(others),
        &checkout,
    )
    .map_or(Answer::Nothing, Answer::Deny)
}

/// Whether loopx is in use at `dir`: a repository with a state. A failure
/// to tell counts as in use.
fn loopx_in_use(dir: Option<PathBuf>) -> bool {
    let tip = Ctx::with(dir, Format::Json, None).and_then(|ctx| tx::tip(&ctx));
    match tip {
        Ok(tip) => tip.is_some(),
        Err(e) => !quiet(&e),
    }
}

/// A shell command the guard's table matches: deny it when an open
/// human-only gate covers it, or when the gates cannot be read.
fn tool(dir: Option<PathBuf>, agent: Option<&AgentId>, command: &str) -> Answer {
    let cwd = dir.clone();
    let loaded = Ctx::with(dir, Format::Json, agent.map(AgentId::as_str)).and_then(|ctx| {
        let snap = tx::load(&ctx)?;
        let verified = verified_tip(&ctx, &snap.tip);
        Ok((snap.state, verified))
    });
    match loaded {
        Ok((state, verified)) => guard::check_in(command, &state, agent, cwd.as_deref(), verified)
            .map_or(Answer::Nothing, Answer::Deny),
        Err(e) if quiet(&e) => Answer::Nothing,
        Err(e) => Answer::Deny(format!(
            "loopx could not read its state to check this command against open gates ({e:#}); it is refused until `loopx status` works again."
        )),
    }
}

/// Whether `tip` is the state ref's verified mark
/// ([`crate::store::mark`]), read without opening the repository when the
/// fast start-up path holds it. The hook never verifies inline.
fn verified_tip(ctx: &Ctx, tip: &crate::store::Tip) -> bool {
    mark_of(ctx).is_some_and(|h| h == tip.commit.to_string())
}

/// Whether this clone records a verified tip for its state ref at all.
fn marked(ctx: &Ctx) -> bool {
    mark_of(ctx).is_some()
}

/// The state ref's verified mark as its file holds it.
fn mark_of(ctx: &Ctx) -> Option<String> {
    let dir = match ctx.fast() {
        Some(f) => f.git_dir().to_path_buf(),
        None => ctx.store().ok()?.common_dir().to_path_buf(),
    };
    crate::store::mark::read_hex(&dir, ctx.state_ref())
}

/// The agent wants to stop: keep it going while it holds a claim, quota
/// remains and neither the runtime's loop guard nor loopx's own count says
/// stop. Writes only the session file.
fn stop(call: &Call) -> Result<Answer> {
    let ctx = &call.ctx;
    let mut s = call.session.load();
    if !decide::may_continue(call.input, &s, ctx.config()?.stop_continuations) {
        return Ok(Answer::Nothing);
    }
    let snap = tx::load(ctx)?;
    let state = &snap.state;
    let goal = crate::cmd::pick_goal(ctx, state, None)
        .ok()
        .map(|g| &state.goals[&g]);
    let tip = snap.tip.commit.to_string();
    let lx = loopx_command(ctx, call.runtime);
    let Some(text) = decide::stop(&mut s, state, &call.agent, goal, &tip, ctx.now, &lx) else {
        return Ok(Answer::Nothing);
    };
    if let Some(g) = goal {
        s.turn_goal = Some(g.id.clone());
    }
    call.session.save(&s);
    Ok(Answer::Continue(text))
}

/// The session ends: record the end of the turn if the agent did loopx work
/// in it without recording it, and say what it still holds (in `notes`;
/// None when the session goes on: Gemini's stop). Releases nothing.
fn end(call: &Call, notes: Option<&mut Vec<String>>) -> Result<Answer> {
    let ctx = &call.ctx;
    let s = call.session.load();
    if notes.is_some() {
        call.session.finish();
    }
    let snap = tx::load(ctx)?;
    let state = &snap.state;
    let fallback = crate::cmd::pick_goal(ctx, state, None).ok();
    let reason = call.input.reason.as_deref();
    let Some(ending) = decide::end(&s, notes.is_some(), state, &call.agent, fallback, reason)
    else {
        return Ok(Answer::Nothing);
    };
    if let Some(change) = &ending.record {
        tx::start(ctx)?.run(|_| Ok(tx::op(ctx, change.clone())?))?;
    }
    let Some(notes) = notes else {
        return Ok(Answer::Nothing);
    };
    // What the session wrote and no turn pushed goes to the hub in one push.
    if let Synced::Offline(why) = hub::sync(ctx, hub::END_SYNC) {
        notes.push(format!(
            "loopx: {why}; what this session recorded stays here until the next session or `loopx sync` pushes it."
        ));
    }
    notes.extend(decide::kept(&call.agent, &ending.claims));
    Ok(Answer::Nothing)
}

/// The agent the session acts as: the one its start recorded; at a start
/// with none recorded, the agent of an earlier session of the same runtime
/// in this clone that is gone (then `true`), when one is registered and
/// active, those holding claims first, then the latest. None: the agent
/// its session id derives.
fn session_agent(
    ctx: &Ctx,
    runtime: Runtime,
    event: Event,
    session: &SessionFile,
) -> Result<Option<(AgentId, bool)>> {
    let Some(path) = &session.path else {
        return Ok(None);
    };
    if let Some(a) = session.load().agent.and_then(|a| AgentId::new(&a).ok()) {
        return Ok(Some((a, false)));
    }
    // Only a session loopx has not seen yet takes an agent over (one whose
    // file an older loopx wrote keeps the agent its id derives).
    if event != Event::Start || path.exists() {
        return Ok(None);
    }
    let common = ctx.store()?.common_dir().to_path_buf();
    let mut gone = hook::sessions::gone(&common, runtime, path);
    if gone.is_empty() {
        return Ok(None);
    }
    let snap = tx::load(ctx)?;
    let state = &snap.state;
    let claims = |a: &AgentId| {
        state
            .todos
            .values()
            .filter(|t| t.status == TodoStatus::Claimed && t.owner() == Some(a))
            .count()
    };
    // A gone session whose agent is retired or unknown here can never be
    // continued: its file goes.
    gone.retain(|g| {
        let active = state
            .agents
            .get(&g.agent)
            .is_some_and(|a| a.status == AgentStatus::Active);
        if !active {
            let _ = std::fs::remove_file(&g.path);
        }
        active
    });
    gone.sort_by(|a, b| {
        claims(&b.agent)
            .cmp(&claims(&a.agent))
            .then(b.modified.cmp(&a.modified))
    });
    Ok(gone
        .into_iter()
        .find(|g| hook::sessions::take(g, path))
        .map(|g| (g.agent, true)))
}
