//! `loopx hook <runtime> <event>`: the one entry point every runtime's hook
//! (and git's) calls. It reads the runtime's JSON on stdin (at most 1 MiB,
//! for at most 2 s), normalises it ([`crate::hook`]), maps the event to the
//! turn, and answers in the runtime's own JSON.
//!
//! It always exits 0 and never prints anything but the answer on stdout:
//! anything unexpected fails open with one line on stderr. The one place
//! that fails closed is the opt-in tool guard, when a command it covers
//! cannot be checked. Only session start and end write ticks (registering
//! the agent, recording the turn's end); a prompt and a tool call only read.
//! Per-session counters live in `<git common dir>/loopx/hooks/`, never on
//! the state ref.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use serde::{Deserialize, Serialize};

use crate::ctx::Global;
use crate::ctx::{Ctx, Env, derive_agent};
use crate::error::{Code, refusal_of};
use sha2::Digest;

use crate::hook::{self, Answer, Event, Input, Runtime, guard, view};
use crate::model::usage::Usage;
use crate::model::{AgentId, AgentStatus, LastTurn, Outcome, State, TodoStatus};
use crate::op::brief;
use crate::op::turn::new_token;
use crate::op::turn::reason_message;
use crate::op::{Change, rules, short, turn};
use crate::output::{Format, Out};
use crate::time::Timestamp;
use crate::tx;

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

/// The most stdin a hook reads, and how long it waits for it.
const STDIN_LIMIT: u64 = 1 << 20;
const STDIN_WAIT: Duration = Duration::from_secs(2);
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

fn run(global: &Global, args: &Args) -> Result<Reply> {
    let env = Env::capture();
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
        reply.answer = git_event(global, &env, event, &args.rest)?;
        return Ok(reply);
    }
    let stdin = read_stdin()?;
    let input = hook::parse_input(runtime, event, &stdin).map_err(|e| anyhow!(e))?;
    let explicit = env.get("LOOPX_AGENT").map(str::to_owned);
    let agent = match &explicit {
        Some(a) => Some(AgentId::new(a).map_err(|e| anyhow!("LOOPX_AGENT: {e}"))?),
        None => input
            .session
            .as_deref()
            .and_then(|s| derive_agent(runtime.as_str(), s)),
    };
    let dir = global.dir.clone().or_else(|| {
        input
            .cwd
            .as_deref()
            .map(PathBuf::from)
            .filter(|p| p.is_dir())
    });
    if event == Event::Tool {
        reply.answer = tool(dir, agent.as_ref(), runtime, &input);
        return Ok(reply);
    }
    let Some(agent) = agent else {
        return Err(anyhow!(
            "the hook's input has no session id, so loopx cannot tell which agent this is; set LOOPX_AGENT"
        ));
    };
    let ctx = match Ctx::with(dir.clone(), Format::Json, Some(agent.as_str())) {
        Ok(ctx) => ctx,
        Err(e) if quiet(&e) => return Ok(reply),
        Err(e) => return Err(e),
    };
    let session = SessionFile::new(&ctx, runtime, input.session.as_deref());
    // The session acts as the agent its start recorded, which may be an
    // earlier session's that is gone (hook::sessions).
    let (ctx, agent, continued) = match explicit {
        Some(_) => (ctx, agent, false),
        None => match session_agent(&ctx, runtime, event, &session)? {
            Some((a, continued)) if a != agent => (
                Ctx::with(dir, Format::Json, Some(a.as_str()))?,
                a,
                continued,
            ),
            _ => (ctx, agent, false),
        },
    };
    // Claude Code's transcript holds each message's usage: record what
    // came since the last record, at every Stop and at the session's end.
    // Pi's extension sends the usage Pi reported since its last call.
    let usage = match (runtime, event) {
        (Runtime::ClaudeCode, Event::Stop | Event::End) => {
            Some(transcript_usage(&ctx, &agent, &input, &session))
        }
        (Runtime::Pi, Event::Stop | Event::End) => {
            Some(pi_usage(&ctx, &agent, &input, &session, &stdin))
        }
        _ => None,
    };
    if let Some(recorded) = usage {
        match recorded {
            Ok(()) => {}
            Err(e) if quiet(&e) => {}
            Err(e) => reply.notes.push(format!(
                "loopx hook: the session's usage was not recorded: {e:#}"
            )),
        }
    }
    let outcome = match event {
        Event::Start => start(&ctx, runtime, &agent, &input, &session, continued).inspect(|_| {
            if runtime == Runtime::ClaudeCode && explicit.is_none() {
                export_agent(&ctx.env, &agent);
            }
        }),
        Event::Prompt => prompt(&ctx, &agent, &session),
        Event::Stop => {
            stop(&ctx, runtime, &agent, &input, &session).and_then(|a| match (runtime, &a) {
                // Gemini CLI does not wait for its SessionEnd hook, so a tick
                // written there may never land, and OpenCode has none: the end
                // of the turn is recorded when the agent stops (AfterAgent,
                // which Gemini waits for; session.idle). Pi's session may stay
                // open long after its turn (agent_end).
                (Runtime::Gemini | Runtime::OpenCode | Runtime::Pi, Answer::Nothing) => {
                    end(&ctx, &agent, &input, &session, None).map(|_| a)
                }
                _ => Ok(a),
            })
        }
        Event::End => end(&ctx, &agent, &input, &session, Some(&mut reply.notes)),
        Event::LimitReached => limit_reached(&ctx, &agent, &input),
        Event::PreCompact | Event::Tool | Event::PrePush | Event::PostMerge => Ok(Answer::Nothing),
    };
    match outcome {
        Ok(a) if runtime == Runtime::Gemini && explicit.is_none() => {
            reply.answer = name_the_agent(a, event, &agent);
        }
        Ok(a) => reply.answer = a,
        Err(e) if quiet(&e) => {}
        Err(e) => return Err(e),
    }
    Ok(reply)
}

/// Gemini CLI gives the session id to hooks only: its shell tool sets
/// `GEMINI_CLI` but no `GEMINI_SESSION_ID`, so a bare `loopx` run by the
/// agent cannot tell which agent it is and refuses (Gemini CLI 0.61.0, seen
/// in the runtime smoke test). The commands loopx gives a Gemini agent name
/// it, `LOOPX_AGENT=<id> loopx …`, and the brief says so.
fn name_the_agent(answer: Answer, event: Event, agent: &AgentId) -> Answer {
    let named = |text: String| text.replace("`loopx ", &format!("`LOOPX_AGENT={agent} loopx "));
    match answer {
        Answer::Context { text, agent: a } if event == Event::Start => Answer::Context {
            text: format!(
                "{}\nGemini CLI's shell does not say which session runs it: run loopx as `LOOPX_AGENT={agent} loopx …`.",
                named(text)
            ),
            agent: a,
        },
        Answer::Context { text, agent: a } => Answer::Context {
            text: named(text),
            agent: a,
        },
        Answer::Continue(text) => Answer::Continue(named(text)),
        other => other,
    }
}

/// StopFailure: on a usage limit (`rate_limit`), park the agent until the
/// time the runtime's message gives (or [`hook::limit::FALLBACK`]), so its
/// loop waits instead of retrying. Other errors and unregistered agents:
/// nothing.
fn limit_reached(ctx: &Ctx, agent: &AgentId, input: &Input) -> Result<Answer> {
    if input.error_type.as_deref() != Some("rate_limit") {
        return Ok(Answer::Nothing);
    }
    let text = input.error_text.as_deref().unwrap_or("usage limit reached");
    // The runtime's words are not trusted for more than a park can hold: a
    // reset "in 9999 hours" parks for the longest park, not not at all.
    let until = hook::limit::reset_time(text, ctx.now)
        .unwrap_or_else(|| ctx.now.plus(hook::limit::FALLBACK))
        .min(ctx.now.plus(crate::op::park::LONGEST));
    // One line of at most 300 characters, without the payload's control
    // characters, is what reaches the shared state.
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let reason: String = one_line
        .chars()
        .filter(|c| !c.is_control())
        .take(300)
        .collect();
    // An unregistered agent or no goal: `apply` refuses, and the hook
    // (whose output the runtime ignores) says nothing.
    let parked = tx::commit(ctx, |state| {
        let goal = crate::cmd::pick_goal(ctx, state, None)?;
        Ok(tx::op(
            ctx,
            Change::QuotaPark {
                agent: agent.clone(),
                goal,
                until,
                reason: Some(reason.clone()),
            },
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

/// Reads the hook's stdin, bounded in size and time.
fn read_stdin() -> Result<Vec<u8>> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let r = std::io::stdin()
            .lock()
            .take(STDIN_LIMIT + 1)
            .read_to_end(&mut buf);
        let _ = tx.send(r.map(|_| buf));
    });
    match rx.recv_timeout(STDIN_WAIT) {
        Ok(Ok(buf)) if buf.len() as u64 > STDIN_LIMIT => Err(anyhow!("stdin is over 1 MiB")),
        Ok(Ok(buf)) => Ok(buf),
        Ok(Err(e)) => Err(anyhow!("reading stdin: {e}")),
        Err(_) => Err(anyhow!("stdin did not close within 2 s")),
    }
}

/// Session start (also resume, clear and compaction): register the agent
/// if it is new, and prime the session with the brief or a stand-down.
fn start(
    ctx: &Ctx,
    runtime: Runtime,
    agent: &AgentId,
    input: &Input,
    session: &SessionFile,
    continued: bool,
) -> Result<Answer> {
    // The brief comes from the hub's state when the clone has one: sync
    // first (which also pushes what earlier sessions left here), bounded.
    let offline = match hub_sync(ctx, START_SYNC) {
        Synced::Alone | Synced::Online => None,
        Synced::Offline(why) => Some(why),
    };
    let snap = tx::load(ctx)?;
    let (state, tip) = match snap.state.agents.get(agent) {
        Some(a) if a.status == AgentStatus::Retired => {
            return Ok(context(
                agent,
                format!(
                    "loopx: you are agent {agent}, which a human retired: take no loopx work in this session."
                ),
            ));
        }
        Some(_) => (snap.state, snap.tip),
        None => {
            let done = tx::commit(ctx, |_| {
                Ok(tx::op(
                    ctx,
                    Change::AgentRegister {
                        agent: agent.clone(),
                        runtime: runtime.model(),
                        capabilities: Vec::new(),
                    },
                )?)
            })?;
            (done.state, done.tip)
        }
    };
    let mut s = session.load();
    let keep = matches!(input.source.as_deref(), Some("resume" | "compact"));
    let seen = Seen::of(&state, agent);
    if !keep || s.started.is_none() {
        s.started = Some(ctx.now);
        s.at_start = Some(seen.clone());
    }
    s.continuations = 0;
    s.nudged = Some(ctx.now);
    s.at_nudge = Some(seen);
    s.agent = Some(agent.to_string());
    s.ended = false;
    if let Some((pid, start)) = hook::sessions::runtime_process(input.pid) {
        s.pid = Some(pid);
        s.pid_start = Some(start);
    }
    let goal = match super::pick_goal(ctx, &state, None) {
        Ok(g) => state.goals[&g].clone(),
        Err(r) => {
            session.save(&s);
            session.release();
            let hint = r.hint.map(|h| format!(" ({h})")).unwrap_or_default();
            return Ok(context(
                agent,
                format!("loopx: you are agent {agent}. {}{hint}.", r.message),
            ));
        }
    };
    s.view = Some(view::view(&state, agent, Some(&goal), ctx.now));
    session.save(&s);
    session.release();
    let since = state
        .agents
        .get(agent)
        .and_then(|a| a.last_turn.as_ref())
        .map(|t| t.at);
    let mut d = turn::decide(&state, agent, &goal, ctx.now);
    // The earlier session's end recorded an unchanged turn; this session
    // is what its "resume" asked for, not a retry of the same turn.
    if continued && d.skip == Some(turn::Reason::NoChange) {
        d.skip = None;
    }
    let b = brief::build(&state, agent, &goal, ctx.now, since);
    let lx = loopx_command(ctx, runtime);
    let mut text = format!("loopx: you are agent {agent}.\n");
    if let Some(why) = &offline {
        text.push_str(&format!("{why}\n"));
    }
    text.push_str(&b.human());
    if continued {
        text.push_str(&format!(
            "This session continues {agent}, the agent of an earlier {} session in this clone that has ended: its claims are yours.\n",
            runtime.as_str()
        ));
    }
    if let Some(hub) = ctx.repo().ok().and_then(crate::sync::hub) {
        text.push_str(&format!(
            "This clone shares its state through {hub}: `{lx} todo claim`, `{lx} todo done` and `{lx} settle` sync with it by themselves, so they are safe across machines; never pass --no-sync. A claim that exits 4 lost to another agent (maybe on another machine): run `{lx} quota should-run` again.\n"
        ));
    }
    match (&d.skip, &d.todo) {
        (Some(r), _) => text.push_str(&format!(
            "Stand down ({}): {}. Take no loopx work until that changes; the user's own requests come first.\n",
            r.code(),
            reason_message(r, agent, &goal.id)
        )),
        (None, Some((id, own))) => {
            let title = short(&state.todos[id].title);
            let token = new_token(agent, &goal.id, &tip.commit.to_string(), ctx.now);
            if *own {
                text.push_str(&format!("Next: go on with your claim {id} \"{title}\".\n"));
            } else {
                text.push_str(&format!(
                    "Next: claim {id} \"{title}\" with `{lx} todo claim {id}`.\n"
                ));
            }
            text.push_str(&format!(
                "Turn token: {token}. End the turn with `{lx} settle --turn {token} --todo {id} --outcome advanced|blocked|unchanged [--done] [-- CHECK]`.\n"
            ));
        }
        (None, None) => {}
    }
    Ok(context(agent, text))
}

/// How the agent's shell calls loopx under `runtime` (the brief names it
/// so): see [`hook::loopx_command`].
fn loopx_command(ctx: &Ctx, runtime: Runtime) -> String {
    let exe = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .unwrap_or_else(|_| PathBuf::from("loopx"));
    hook::loopx_command(runtime, ctx.env.get("PATH"), &exe)
}

/// How long the SessionStart hook's sync with the hub may take: well below
/// the time any runtime gives a hook (OpenCode's plugin stops one at 15 s).
const START_SYNC: crate::time::Span = crate::time::Span::seconds(3);
/// The same at SessionEnd (Codex cuts that hook to 3 s).
const END_SYNC: crate::time::Span = crate::time::Span::seconds(2);

/// What a hook's sync with the hub did.
enum Synced {
    /// The clone has no hub (or opted out with loopx.claimSync false).
    Alone,
    Online,
    /// It did not finish in time, or failed: why, and the state's age.
    Offline(String),
}

/// Syncs with the hub, when the clone has one, in a child `loopx sync` that
/// is ended (with every git process it started) after `limit`. Killing
/// it is safe: the hub's ref moves only by a whole push, the local one only
/// by compare-and-swap.
fn hub_sync(ctx: &Ctx, limit: crate::time::Span) -> Synced {
    if !super::syncs(ctx, false, false).unwrap_or(false) {
        return Synced::Alone;
    }
    let (Ok(exe), Ok(store)) = (std::env::current_exe(), ctx.store()) else {
        return Synced::Alone;
    };
    let root = store.root().to_path_buf();
    let argv: Vec<String> = vec![
        exe.display().to_string(),
        "-C".to_owned(),
        root.display().to_string(),
        "sync".to_owned(),
    ];
    let run = crate::run::run(&argv, &root, limit);
    // Exit 4: the hub rejected one of this agent's ticks, and sync recorded
    // it: the state is the hub's all the same.
    if matches!(run.exit, Some(0 | 4)) {
        return Synced::Online;
    }
    let why = if run.timed_out {
        format!("the hub did not answer within {limit}")
    } else {
        // The error's line, not its hint.
        let lines = run.last_lines(8);
        lines
            .iter()
            .find_map(|l| l.strip_prefix("error: "))
            .or(lines.last().copied())
            .map_or_else(|| "the sync with the hub failed".to_owned(), str::to_owned)
    };
    Synced::Offline(format!("offline: {why}; {}", state_age(ctx)))
}

/// "state as of <when it last synced with the hub>".
fn state_age(ctx: &Ctx) -> String {
    let synced = ctx
        .repo()
        .ok()
        .and_then(|r| crate::sync::names(r, None).ok())
        .and_then(|n| ctx.store().ok()?.resolve(&n.synced).ok().flatten())
        .and_then(|t| crate::history::entry(ctx.repo().ok()?, t.commit).ok());
    match synced {
        Some(e) => format!(
            "state as of {} (the last sync); claims fail until the hub answers",
            crate::history::Tick::read(e).time()
        ),
        None => {
            "this clone never synced with its hub; claims fail until the hub answers".to_owned()
        }
    }
}

fn context(agent: &AgentId, text: String) -> Answer {
    Answer::Context {
        text: text.trim_end().to_owned(),
        agent: Some(agent.to_string()),
    }
}

/// Claude Code's SessionStart may append `export` lines to the file named by
/// `CLAUDE_ENV_FILE`, which later shell commands source: the agent id
/// there keeps every loopx call in the session on the same agent.
fn export_agent(env: &Env, agent: &AgentId) {
    let Some(path) = env.get("CLAUDE_ENV_FILE") else {
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
fn prompt(ctx: &Ctx, agent: &AgentId, session: &SessionFile) -> Result<Answer> {
    let snap = tx::load(ctx)?;
    let state = &snap.state;
    let goal = super::pick_goal(ctx, state, None)
        .ok()
        .and_then(|g| state.goals.get(&g));
    let now = view::view(state, agent, goal, ctx.now);
    let mut s = session.load();
    let lines = match &s.view {
        Some(old) => view::delta(old, &now, state, agent),
        None => Vec::new(),
    };
    s.view = Some(now);
    s.continuations = 0;
    s.nudged = Some(ctx.now);
    s.at_nudge = Some(Seen::of(state, agent));
    session.save(&s);
    if lines.is_empty() {
        return Ok(Answer::Nothing);
    }
    let mut text = "loopx: since your last prompt:".to_owned();
    for l in lines {
        text.push_str(&format!("\n- {l}"));
    }
    Ok(Answer::Context { text, agent: None })
}

/// Before a shell command runs (opt-in): deny what an open human-only gate
/// covers. Fails closed only for a command the guard covers whose gates
/// cannot be read.
fn tool(dir: Option<PathBuf>, agent: Option<&AgentId>, runtime: Runtime, input: &Input) -> Answer {
    let (Some(tool), Some(command)) = (input.tool.as_deref(), input.command.as_deref()) else {
        return Answer::Nothing;
    };
    let shell = match runtime {
        Runtime::ClaudeCode | Runtime::Codex | Runtime::OpenCode => hook::claude::is_shell(tool),
        Runtime::Gemini => hook::gemini::is_shell(tool),
        Runtime::Pi => hook::pi::is_shell(tool),
        Runtime::Cursor | Runtime::Git => true,
    };
    if !shell || guard::risks(command).is_empty() {
        return Answer::Nothing;
    }
    let cwd = dir.clone();
    let loaded = Ctx::with(dir, Format::Json, agent.map(AgentId::as_str))
        .and_then(|ctx| tx::load(&ctx).map(|s| s.state));
    match loaded {
        Ok(state) => guard::check_in(command, &state, agent, cwd.as_deref())
            .map_or(Answer::Nothing, Answer::Deny),
        Err(e) if quiet(&e) => Answer::Nothing,
        Err(e) => Answer::Deny(format!(
            "loopx could not read its state to check this command against open gates ({e:#}); it is refused until `loopx status` works again."
        )),
    }
}

/// The agent wants to stop: keep it going while it holds a claim, quota
/// remains and neither the runtime's loop guard nor loopx's own count says
/// stop. Writes only the session file.
fn stop(
    ctx: &Ctx,
    runtime: Runtime,
    agent: &AgentId,
    input: &Input,
    session: &SessionFile,
) -> Result<Answer> {
    if input.stop_active || input.stop_aborted {
        return Ok(Answer::Nothing);
    }
    let mut s = session.load();
    let max = ctx.config()?.stop_continuations;
    if s.continuations >= max {
        return Ok(Answer::Nothing);
    }
    let snap = tx::load(ctx)?;
    let state = &snap.state;
    let Some(a) = state.agents.get(agent) else {
        return Ok(Answer::Nothing);
    };
    // The agent closed its turn as blocked or unchanged since it was last
    // prompted or nudged: it has said why it stops.
    if let Some(t) = &a.last_turn
        && t.outcome != Outcome::Advanced
        && Seen::newer_turn(t, s.nudged, s.at_nudge.as_ref())
    {
        return Ok(Answer::Nothing);
    }
    let Ok(goal) = super::pick_goal(ctx, state, None) else {
        return Ok(Answer::Nothing);
    };
    let goal = &state.goals[&goal];
    let d = turn::decide(state, agent, goal, ctx.now);
    let (None, Some((id, true)), Some(slots)) = (&d.skip, &d.todo, d.slots) else {
        return Ok(Answer::Nothing);
    };
    let t = &state.todos[id];
    let left = t
        .claim
        .as_ref()
        .filter(|c| c.lease_until > ctx.now)
        .map(|c| format!(", lease {} left", c.lease_until.since(ctx.now)))
        .unwrap_or_default();
    let token = new_token(agent, &goal.id, &snap.tip.commit.to_string(), ctx.now);
    let lx = loopx_command(ctx, runtime);
    s.continuations += 1;
    s.nudged = Some(ctx.now);
    s.at_nudge = Some(Seen::of(state, agent));
    session.save(&s);
    Ok(Answer::Continue(format!(
        "loopx: you still hold {id} \"{}\"{left}, and {} of {} slots remain: keep working on it. Record each step with `{lx} settle --turn {token} --todo {id} --outcome advanced [--done] [-- CHECK]`. To stop instead, say why with `{lx} refresh-state --outcome blocked --todo {id} --next-action TEXT`, or give it up with `{lx} todo update {id} --status open`.",
        short(&t.title),
        slots.left(),
        slots.slots
    )))
}

/// The session ends: record the end of the turn if the agent did loopx work
/// in it without recording it, and say what it still holds (in `notes`;
/// None when the session goes on: Gemini's stop). Releases nothing.
fn end(
    ctx: &Ctx,
    agent: &AgentId,
    input: &Input,
    session: &SessionFile,
    notes: Option<&mut Vec<String>>,
) -> Result<Answer> {
    let s = session.load();
    if notes.is_some() {
        session.finish();
    }
    let snap = tx::load(ctx)?;
    let state = &snap.state;
    let Some(a) = state
        .agents
        .get(agent)
        .filter(|a| a.status == AgentStatus::Active)
    else {
        return Ok(Answer::Nothing);
    };
    let mut claims: Vec<_> = state
        .todos
        .values()
        .filter(|t| t.status == TodoStatus::Claimed && t.owner() == Some(agent))
        .collect();
    claims.sort_by(|x, y| rules::pick_order(x, y));
    // At a session's end, anything recorded since it started counts; at
    // Gemini's stop, only what was recorded since the last prompt or nudge.
    let (from, base) = if notes.is_none() && s.nudged > s.started {
        (s.nudged, s.at_nudge.as_ref())
    } else {
        (s.started, s.at_start.as_ref())
    };
    let recorded = a
        .last_turn
        .as_ref()
        .is_some_and(|t| Seen::newer_turn(t, from, base));
    let wrote = a
        .last_writeback
        .is_some_and(|w| Seen::newer_writeback(w, from, base));
    if !recorded && (wrote || !claims.is_empty()) {
        let goal = match claims.first() {
            Some(t) => Some(t.goal.clone()),
            None => super::pick_goal(ctx, state, None).ok(),
        };
        if let Some(goal) = goal {
            let why = input
                .reason
                .as_deref()
                .map(|r| format!(" (the session ended: {r})"))
                .unwrap_or_default();
            let next_action = claims
                .first()
                .map(|t| format!("resume {} \"{}\"{why}", t.id, short(&t.title)));
            let todo = claims.first().map(|t| t.id.clone());
            let outcome = if wrote {
                Outcome::Advanced
            } else {
                Outcome::Unchanged
            };
            tx::commit(ctx, |_| {
                Ok(tx::op(
                    ctx,
                    Change::RefreshState {
                        goal: goal.clone(),
                        outcome,
                        turn: None,
                        todo: todo.clone(),
                        next_action: next_action.clone(),
                        // A session's end is not a turn: no fingerprint.
                        progress: None,
                    },
                )?)
            })?;
        }
    }
    let Some(notes) = notes else {
        return Ok(Answer::Nothing);
    };
    // What the session wrote and no turn pushed goes to the hub in one push.
    if let Synced::Offline(why) = hub_sync(ctx, END_SYNC) {
        notes.push(format!(
            "loopx: {why}; what this session recorded stays here until the next session or `loopx sync` pushes it."
        ));
    }
    for t in claims {
        let until = t
            .claim
            .as_ref()
            .map(|c| c.lease_until.to_string())
            .unwrap_or_default();
        notes.push(format!(
            "loopx: {agent} keeps {} \"{}\" until {until}; nothing was released (`loopx todo release {}` gives it up).",
            t.id,
            short(&t.title),
            t.id
        ));
    }
    Ok(Answer::Nothing)
}

/// The most of a transcript one hook reads at once.
const TRANSCRIPT_CHUNK: u64 = 64 << 20;

/// How long one ledger entry of a hook-read session gathers usage.
const USAGE_STRETCH: crate::time::Span = crate::time::Span::hours(1);

/// Records the usage of the transcript's messages written since the last
/// record (a byte offset kept in the session file, moved only after the
/// tick landed), added to the running total of the session's current hour
/// and reported as that total under a key derived from the session and the
/// hour's start. A Stop that reads the same stretch again after a crash
/// recomputes the same or a larger total for the same key: the max rule
/// counts it once.
fn transcript_usage(
    ctx: &Ctx,
    agent: &AgentId,
    input: &Input,
    session: &SessionFile,
) -> Result<()> {
    use std::io::{Seek, SeekFrom};
    let (Some(path), Some(sid)) = (input.transcript.as_deref(), input.session.as_deref()) else {
        return Ok(());
    };
    let mut s = session.load();
    let Ok(mut file) = std::fs::File::open(path) else {
        return Ok(());
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let from = if s.usage_offset > len {
        0
    } else {
        s.usage_offset
    };
    file.seek(SeekFrom::Start(from))
        .with_context(|| format!("reading {path}"))?;
    let mut buf = Vec::new();
    file.take(TRANSCRIPT_CHUNK)
        .read_to_end(&mut buf)
        .with_context(|| format!("reading {path}"))?;
    // Only whole lines: the last one may still be being written.
    let Some(end) = buf.iter().rposition(|b| *b == b'\n') else {
        return Ok(());
    };
    let text = String::from_utf8_lossy(&buf[..=end]);
    let next = from + end as u64 + 1;
    let parts = hook::usage::claude::transcript(&text);
    if record_usage(ctx, agent, sid, &mut s, parts)? {
        s.usage_offset = next;
        session.save(&s);
    }
    Ok(())
}

/// Records the usage Pi reported since the extension's last call (the
/// payload's `usage`), as [`transcript_usage`] does a transcript's.
fn pi_usage(
    ctx: &Ctx,
    agent: &AgentId,
    input: &Input,
    session: &SessionFile,
    stdin: &[u8],
) -> Result<()> {
    let Some(sid) = input.session.as_deref() else {
        return Ok(());
    };
    let payload: serde_json::Value = serde_json::from_slice(stdin).unwrap_or_default();
    let parts = hook::pi::usage(&payload);
    if parts.is_empty() {
        return Ok(());
    }
    let mut s = session.load();
    if record_usage(ctx, agent, sid, &mut s, parts)? {
        session.save(&s);
    }
    Ok(())
}

/// Adds `parts` (one per model) to the running total of the session's
/// current hour and reports that total under a key derived from the session
/// `sid` and the hour's start. Returns whether the agent is active (else
/// nothing was recorded, and the caller keeps its place to read again).
fn record_usage(
    ctx: &Ctx,
    agent: &AgentId,
    sid: &str,
    s: &mut Session,
    mut parts: Vec<Usage>,
) -> Result<bool> {
    let snap = tx::load(ctx)?;
    let active = snap
        .state
        .agents
        .get(agent)
        .is_some_and(|a| a.status == AgentStatus::Active);
    if parts.is_empty() || !active {
        return Ok(active);
    }
    let goal = snap
        .state
        .todos
        .values()
        .filter(|t| t.status == TodoStatus::Claimed && t.owner() == Some(agent))
        .map(|t| t.goal.clone())
        .next()
        .map_or_else(|| super::pick_goal(ctx, &snap.state, None), Ok)?;
    let mut unpriced = Vec::new();
    for u in &mut parts {
        super::usage::price(ctx, u, &mut unpriced)?;
    }
    let delta = hook::usage::merge(parts);
    if !delta.is_empty() {
        // One ledger entry per session and hour: a stretch's usage adds to
        // the hour's total, reported again under the hour's key, so the
        // ledger stays small and a re-read (the total recomputed from the
        // saved one) counts once under the max rule.
        let fresh = s
            .usage_since
            .is_none_or(|since| ctx.now.since(since) >= USAGE_STRETCH);
        if fresh {
            s.usage_since = Some(ctx.now);
            s.usage_total = Usage::default();
        }
        let since = s.usage_since.expect("set above");
        let total = add_usage(&s.usage_total, &delta);
        let digest = sha2::Sha256::new()
            .chain_update(b"loopx transcript usage")
            .chain_update([0])
            .chain_update(sid.as_bytes())
            .chain_update([0])
            .chain_update(since.unix().to_le_bytes())
            .finalize();
        let turn = crate::model::id::hex(&digest[..8]);
        tx::commit(ctx, |_| {
            Ok(tx::op(
                ctx,
                Change::UsageRecord {
                    goal: goal.clone(),
                    turn: turn.clone(),
                    usage: total.clone(),
                },
            )?)
        })?;
        s.usage_total = total;
    }
    Ok(true)
}

/// git's pre-push and post-merge: a note when the local state differs from
/// a remote's last fetched copy. Reads only; nothing while loopx's own sync
/// runs git.
fn git_event(global: &Global, env: &Env, event: Event, rest: &[String]) -> Result<Answer> {
    if env.get("LOOPX_IN_SYNC").is_some() {
        return Ok(Answer::Nothing);
    }
    let dir = match &global.dir {
        Some(d) => d.clone(),
        None => std::env::current_dir().context("reading the current directory")?,
    };
    let Ok(store) = crate::store::Store::discover(&dir) else {
        return Ok(Answer::Nothing);
    };
    let Some(tip) = store.tip()? else {
        return Ok(Answer::Nothing);
    };
    let refs = crate::git::output(
        store.common_dir(),
        &[
            "for-each-ref",
            "--format=%(refname) %(objectname)",
            "refs/loopx/remotes/",
        ],
    )?;
    let tip = tip.commit.to_string();
    let only = match event {
        Event::PrePush => rest.first().map(String::as_str),
        _ => None,
    };
    let differs: Vec<&str> = refs
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter_map(|(name, oid)| {
            let remote = name
                .strip_prefix("refs/loopx/remotes/")?
                .strip_suffix("/state")?;
            (oid != tip && only.is_none_or(|o| o == remote)).then_some(remote)
        })
        .collect();
    if differs.is_empty() {
        return Ok(Answer::Nothing);
    }
    Ok(Answer::Note(
        differs
            .iter()
            .map(|r| {
                format!(
                    "loopx: the loopx state differs from {r}'s last fetched copy; `loopx sync {r}` reconciles them (a plain git push does not carry it)."
                )
            })
            .collect::<Vec<_>>()
            .join("\n"),
    ))
}

/// What a hook remembers about one session between its calls.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Session {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    started: Option<Timestamp>,
    /// Stop continuations since the last prompt.
    #[serde(default)]
    continuations: u32,
    /// The last prompt or continuation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    nudged: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    view: Option<view::View>,
    /// How far the transcript's usage has been recorded, in bytes.
    #[serde(default, skip_serializing_if = "is_zero")]
    usage_offset: u64,
    /// When the current stretch of recorded usage began, and its total.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    usage_since: Option<Timestamp>,
    #[serde(default)]
    usage_total: Usage,
    /// The agent the session acts as (hook::sessions): recorded at its
    /// start, maybe taken over from an earlier session that is gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    agent: Option<String>,
    /// The runtime's process and its start time (/proc), to tell whether
    /// the session still runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pid_start: Option<u64>,
    /// Its end event was seen.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    ended: bool,
    /// What the agent had recorded when the session started, and when it
    /// was last prompted or nudged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    at_start: Option<Seen>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    at_nudge: Option<Seen>,
}

/// An agent's last turn and write-back as a hook saw them. Timestamps have
/// whole seconds, so a record in the same second as a session's start or
/// nudge is new only if it differs from what was there then (an earlier
/// session's end, a second before, looked new to the next session).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Seen {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    turn: Option<LastTurn>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    writeback: Option<Timestamp>,
}

impl Seen {
    fn of(state: &State, agent: &AgentId) -> Self {
        let a = state.agents.get(agent);
        Seen {
            turn: a.and_then(|a| a.last_turn.clone()),
            writeback: a.and_then(|a| a.last_writeback),
        }
    }

    /// `turn` was recorded after `from` (with `base`, what was seen then).
    fn newer_turn(turn: &LastTurn, from: Option<Timestamp>, base: Option<&Self>) -> bool {
        from.is_some_and(|f| {
            turn.at > f || (turn.at == f && base.is_none_or(|b| b.turn.as_ref() != Some(turn)))
        })
    }

    fn newer_writeback(at: Timestamp, from: Option<Timestamp>, base: Option<&Self>) -> bool {
        from.is_some_and(|f| at > f || (at == f && base.is_none_or(|b| b.writeback != Some(at))))
    }
}

/// Two stretches' usage together (a session's running total).
fn add_usage(a: &Usage, b: &Usage) -> Usage {
    hook::usage::merge(vec![a.clone(), b.clone()])
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// `<git common dir>/loopx/hooks/<runtime>-<session>.json`; without a
/// session id, nothing is remembered.
struct SessionFile {
    path: Option<PathBuf>,
}

impl SessionFile {
    fn new(ctx: &Ctx, runtime: Runtime, session: Option<&str>) -> Self {
        let path = session.and_then(|s| {
            let store = ctx.store().ok()?;
            hook::sessions::path(store.common_dir(), runtime, s)
        });
        SessionFile { path }
    }

    /// The session ended: kept (its agent may be continued by a later
    /// session), marked as such, without what only a running one needs.
    fn finish(&self) {
        let mut s = self.load();
        s.ended = true;
        s.view = None;
        self.save(&s);
    }

    /// Drops the earlier session's file a takeover moved aside.
    fn release(&self) {
        if let Some(p) = &self.path {
            hook::sessions::release(p);
        }
    }

    fn load(&self) -> Session {
        self.path
            .as_ref()
            .and_then(|p| std::fs::read(p).ok())
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    fn save(&self, s: &Session) {
        let Some(path) = &self.path else { return };
        let Ok(bytes) = serde_json::to_vec(s) else {
            return;
        };
        if std::fs::read(path).is_ok_and(|old| old == bytes) {
            return;
        }
        let tmp = path.with_extension("json.tmp");
        let _ = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&tmp, &bytes))
            .and_then(|()| std::fs::rename(&tmp, path));
    }
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
