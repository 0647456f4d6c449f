//! The resolved context of one invocation: repository, clock, identity, id
//! source and output. The only reader of the environment; nothing later looks
//! at flags or environment variables again.

use std::cell::{OnceCell, RefCell};
use std::path::PathBuf;

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

use crate::config::Config;
pub use crate::env::Env;
use crate::error::{Code, Refusal};
pub use crate::ids::IdGen;
pub use crate::model::Caller;
use crate::model::Runtime;
use crate::model::{Actor, AgentId};
use crate::output::{Format, Out};
use crate::repo::{Clock, Repo};
use crate::store::{Person, Store};
use crate::time::Timestamp;

/// The identity a human without a git identity reads as; no act is written
/// under it ([`no_identity`]).
pub const FALLBACK_HUMAN: (&str, &str) = ("unknown human", "human@loopx.invalid");

/// Whether `actor` is a human without a git identity.
pub fn is_unidentified(actor: &Actor) -> bool {
    matches!(actor, Actor::Human { name, email } if name == FALLBACK_HUMAN.0 && email == FALLBACK_HUMAN.1)
}

/// A human act refused as git refuses a commit without an identity: every
/// human act is recorded under its author's git identity, and one written
/// as "unknown human" would stay that forever.
pub fn no_identity() -> Refusal {
    Refusal::error(
        Code::NoIdentity,
        "please tell me who you are: git has no identity for you here (user.name and user.email), and loopx records every human act under it",
    )
    .with_hint(
        "run `git config --global user.name \"Your Name\"` and `git config --global user.email you@example.com` (without --global for this repository only), then run the command again",
    )
}
pub use crate::repo::FALLBACK_COMMITTER;

/// Decides who is calling (DESIGN §4 "Who is acting").
pub fn caller(flag: Option<&str>, env: &Env) -> Result<Caller, Refusal> {
    if let Some(id) = named(flag, env)? {
        return Ok(Caller::Agent(id));
    }
    // The runtimes' markers, in the order of `Runtime::ALL`: the first
    // runtime with a marker set is the one.
    let runtimes = Runtime::ALL.iter().filter_map(|r| {
        r.identity()
            .map(|(markers, session)| (r.as_str(), markers, session))
    });
    for (_, markers, session) in runtimes.clone() {
        for key in markers.iter().chain([&session]) {
            env.utf8(key)?;
        }
    }
    for (runtime, markers, session) in runtimes {
        let Some(marker) = markers.iter().find(|m| env.get(m).is_some()) else {
            continue;
        };
        return match env.get(session).and_then(|s| derive_agent(runtime, s)) {
            Some(id) => Ok(Caller::Agent(id)),
            None => Ok(Caller::UnknownAgent { runtime, marker }),
        };
    }
    Ok(Caller::Human)
}

/// Who a runtime's hook acts for: [`caller`]'s rule, with the session id
/// taken from the hook's payload instead of the environment. The agent,
/// and whether it was named (`LOOPX_AGENT`) rather than derived; None
/// when the payload has no session id either.
pub fn hook_caller(
    env: &Env,
    runtime: Runtime,
    session: Option<&str>,
) -> Result<Option<(AgentId, bool)>, Refusal> {
    if let Some(id) = named(None, env)? {
        return Ok(Some((id, true)));
    }
    Ok(session
        .and_then(|s| derive_agent(runtime.as_str(), s))
        .map(|a| (a, false)))
}

/// The agent `--agent` or `LOOPX_AGENT` names, if any.
fn named(flag: Option<&str>, env: &Env) -> Result<Option<AgentId>, Refusal> {
    env.utf8("LOOPX_AGENT")?;
    // Set but empty is a mistake (an unset variable in a script, a
    // runtime that cleared it), never the human: acting as the human is
    // what an agent must not get by accident.
    if flag.is_none()
        && env.is_set("LOOPX_AGENT")
        && env.get("LOOPX_AGENT").is_none_or(|v| v.trim().is_empty())
    {
        return Err(Refusal::usage(
            Code::BadEnv,
            "LOOPX_AGENT is set but empty, so loopx cannot tell who is acting (an empty id never means the human)",
        )
        .with_hint("set LOOPX_AGENT to the agent's id (`loopx agent register` makes one), or unset it to act as the human"));
    }
    flag.or(env.get("LOOPX_AGENT"))
        .map(|id| AgentId::new(id).map_err(|e| Refusal::usage(Code::BadId, e)))
        .transpose()
}

/// The runtime whose marker is set, and its session id, when there is one
/// (as [`caller`] reads them).
fn runtime_session(env: &Env) -> Option<(Runtime, &str)> {
    Runtime::ALL.into_iter().find_map(|r| {
        let (markers, session) = r.identity()?;
        markers.iter().find(|m| env.get(m).is_some())?;
        Some((r, env.get(session)?))
    })
}

/// `<runtime>-<8 hex digits of the SHA-256 of the whole session id>`. A
/// hash, not a prefix: Codex's ids are UUIDv7, whose first digits are a
/// timestamp shared by every session started in the same minute. None for
/// an empty or blank session id.
pub fn derive_agent(runtime: &str, session: &str) -> Option<AgentId> {
    let session = session.trim();
    if session.is_empty() {
        return None;
    }
    let digest = Sha256::digest(session.as_bytes());
    let short: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    AgentId::new(&format!("{runtime}-{short}")).ok()
}

/// The global flags as parsed, before anything is resolved: `cli` flattens
/// them into the command line, and [`Ctx::new`] resolves them once.
#[derive(clap::Args, Debug, Clone)]
pub struct Global {
    /// Run as if loopx was started in PATH
    #[arg(short = 'C', global = true, value_name = "PATH")]
    pub dir: Option<PathBuf>,
    /// Output format
    #[arg(long, global = true, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Same as --format json
    #[arg(long, global = true)]
    pub json: bool,
    /// Act as this registered agent [default: $LOOPX_AGENT, or the agent-runtime session]
    #[arg(long, global = true, value_name = "ID")]
    pub agent: Option<String>,
    /// Write the state even in a bare repository (a hub: write from a clone)
    #[arg(long, global = true)]
    pub allow_bare: bool,
}

impl Global {
    pub fn format(&self) -> Format {
        if self.json { Format::Json } else { self.format }
    }
}

/// The clock `LOOPX_NOW` fixes: at or before this machine's clock plus
/// the default clock-skew margin, never after. A later one is refused
/// (exit 2) by every command, reads and should-run included: loopx never
/// writes nor judges from the future, so an agent cannot date a steal
/// tomorrow. (The state's own margin is not read yet here; a team's wider
/// one still bounds what other clones take.)
pub fn fixed_now(s: &str) -> Result<Timestamp, Refusal> {
    let t =
        Timestamp::parse(s).map_err(|e| Refusal::usage(Code::BadEnv, format!("LOOPX_NOW: {e}")))?;
    let now = Timestamp::system_now();
    let skew = crate::model::Settings::default().clock_skew;
    if t > now.plus(skew) {
        return Err(Refusal::usage(
            Code::BadEnv,
            format!(
                "LOOPX_NOW is {t}, after this machine's clock ({now}) plus the clock-skew margin ({skew}): it may fix the clock in the past, never in the future"
            ),
        )
        .with_hint("unset LOOPX_NOW, or give a time at or before now"));
    }
    Ok(t)
}

/// Everything a command needs, resolved once: where it runs, the
/// environment, the clock, who is calling, ids, output; and the repository
/// with its `loopx.*` settings, opened on first use, so commands that also
/// work outside a repository (`hooks`, `mcp`, `demo`) take the same context
/// as every other command.
pub struct Ctx {
    /// Where loopx runs (`-C`, else the current directory): commands that
    /// run user commands or read user paths start here.
    pub cwd: PathBuf,
    pub out: Out,
    /// When this invocation started: the time of the ops it writes.
    pub now: Timestamp,
    /// This machine's clock for checks (`LOOPX_NOW` fixes it).
    clock: Clock,
    pub env: Env,
    pub ids: IdGen,
    caller: Caller,
    /// The agent named by `--agent` itself (not by `LOOPX_AGENT` or a
    /// runtime marker): `log` reads it as a filter.
    agent_flag: Option<AgentId>,
    actor: RefCell<Option<Actor>>,
    repo: OnceCell<Repo>,
    /// The fast start-up path's view of the repository, tried once.
    fast: OnceCell<Option<crate::fast::Fast>>,
    /// `--allow-bare`: state writes in a bare repository are allowed.
    pub allow_bare: bool,
}

impl Ctx {
    /// Resolves the global flags and the environment. Opens no repository.
    pub fn new(global: &Global) -> Result<Ctx> {
        let mut ctx = Ctx::with(global.dir.clone(), global.format(), global.agent.as_deref())?;
        ctx.allow_bare = global.allow_bare;
        Ok(ctx)
    }

    /// [`Ctx::new`] from its parts (the hook resolves its directory from
    /// the runtime's payload).
    pub fn with(dir: Option<PathBuf>, format: Format, agent_flag: Option<&str>) -> Result<Ctx> {
        let env = Env::process().clone();
        let out = Out::new(format, env.get("NO_COLOR").is_some());
        let cwd = match dir {
            Some(d) => d,
            None => std::env::current_dir().context("reading the current directory")?,
        };
        let clock = match env.get("LOOPX_NOW") {
            Some(s) => Clock::Fixed(fixed_now(s)?),
            None => Clock::System,
        };
        let now = clock.now();
        let caller = caller(agent_flag, &env)?;
        let agent_flag = match (&caller, agent_flag) {
            (Caller::Agent(id), Some(_)) => Some(id.clone()),
            _ => None,
        };
        let ids = IdGen::new(env.get("LOOPX_SEED").map(str::to_owned), now.unix());
        // A runtime session's agent may continue an earlier session's
        // (crate::hook::sessions): its session file says which.
        let repo = OnceCell::new();
        let fast = OnceCell::new();
        let caller = match (&caller, runtime_session(&env)) {
            (Caller::Agent(_), Some((runtime, session)))
                if agent_flag.is_none() && env.get("LOOPX_AGENT").is_none() =>
            {
                // The fast path's view first (no repository opened), kept
                // for the command.
                let quick = env
                    .keyed_vars()
                    .filter(|_| env.get("LOOPX_NO_FAST").is_none())
                    .and_then(|vars| crate::fast::Fast::open(&cwd, &vars));
                if let Some(f) = quick {
                    let continued = crate::hook::sessions::agent_of(f.git_dir(), runtime, session);
                    let _ = fast.set(Some(f));
                    continued.map_or(caller, Caller::Agent)
                } else {
                    match Store::discover(&cwd) {
                        Ok(store) => {
                            let continued = crate::hook::sessions::agent_of(
                                store.common_dir(),
                                runtime,
                                session,
                            );
                            let home = env.get("HOME").map(PathBuf::from);
                            let _ = repo.set(Repo::new(store, home, clock));
                            continued.map_or(caller, Caller::Agent)
                        }
                        Err(_) => caller,
                    }
                }
            }
            _ => caller,
        };
        Ok(Ctx {
            cwd,
            out,
            now,
            clock,
            env,
            ids,
            caller,
            agent_flag,
            actor: RefCell::new(None),
            repo,
            fast,
            allow_bare: false,
        })
    }

    /// The repository handle (store, settings, committer, clock, signing),
    /// opened on first use, or why there is none: what the layers below
    /// the commands take.
    pub fn repo(&self) -> Result<&Repo> {
        if let Some(r) = self.repo.get() {
            return Ok(r);
        }
        let repo = Repo::open(&self.cwd, self.home(), self.clock)?;
        // The settings a later start can read without opening it, unless
        // this start already read them.
        if !matches!(self.fast.get(), Some(Some(_)))
            && let Some(vars) = self.env.keyed_vars()
        {
            crate::fast::remember(&self.cwd, &vars, repo.store(), repo.config());
        }
        Ok(self.repo.get_or_init(|| repo))
    }

    /// The repository as the fast start-up path sees it, when it has not
    /// been opened yet and its layout and settings are understood and
    /// current (`crate::fast`); None sends the caller to [`Ctx::repo`].
    pub fn fast(&self) -> Option<&crate::fast::Fast> {
        // `LOOPX_NO_FAST=1`: always open the repository (a way to compare).
        if self.repo.get().is_some() || self.env.get("LOOPX_NO_FAST").is_some() {
            return None;
        }
        self.fast
            .get_or_init(|| {
                let vars = self.env.keyed_vars()?;
                crate::fast::Fast::open(&self.cwd, &vars)
            })
            .as_ref()
    }

    /// The settings a read takes (`loopx.goal`, `loopx.claimSync`): from
    /// the fast path when it has them, else from git config. Settings that
    /// decide trust are read through [`Ctx::config`] only.
    pub fn settings(&self) -> Result<crate::config::Settings> {
        if let Some(f) = self.fast() {
            return Ok(f.settings().clone());
        }
        Ok(self.config()?.settings())
    }

    /// The state ref's lock file, where a writer holds it.
    pub fn state_lock_path(&self) -> Option<PathBuf> {
        match self.fast() {
            Some(f) => Some(f.lock_path()),
            None => Some(self.store().ok()?.lock_path()),
        }
    }

    /// The repository loopx runs in, opened on first use, or why there is
    /// none. Commands read through `tx` and `history`; only the layers
    /// below commands (`tx`, `sync`, `history`) call the store.
    pub fn store(&self) -> Result<&Store> {
        Ok(self.repo()?.store())
    }

    /// The `loopx.*` git settings of the repository, read once.
    pub fn config(&self) -> Result<&Config> {
        Ok(self.repo()?.config())
    }

    /// The state ref (`refs/loopx/state`, or git config `loopx.ref`), for
    /// messages.
    pub fn state_ref(&self) -> &str {
        if let Some(f) = self.fast() {
            return f.state_ref();
        }
        self.store()
            .map_or(crate::store::DEFAULT_REF, Store::state_ref)
    }

    /// The user's home directory (`HOME`).
    pub fn home(&self) -> Option<PathBuf> {
        self.env.get("HOME").map(PathBuf::from)
    }

    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    /// The agent `--agent` named on the command line, if it was given.
    pub fn agent_flag(&self) -> Option<&AgentId> {
        self.agent_flag.as_ref()
    }

    /// The acting agent or human. A human without a git identity is
    /// [`FALLBACK_HUMAN`] here; writing an op as it is refused
    /// (`cmd::tx::op`, [`no_identity`]), so reads still work.
    pub fn actor(&self) -> Result<Actor, Refusal> {
        if let Some(a) = self.actor.borrow().as_ref() {
            return Ok(a.clone());
        }
        let actor = match &self.caller {
            Caller::Agent(id) => Actor::Agent(id.clone()),
            Caller::UnknownAgent { runtime, marker } => {
                return Err(Refusal::rule(
                    Code::AgentUnknown,
                    format!(
                        "this shell runs under {runtime} ({marker} is set) but its session id is not available, so loopx cannot tell which agent is acting"
                    ),
                )
                .with_hint("set LOOPX_AGENT to the agent's id (or pass --agent ID)"));
            }
            Caller::Human => match self.store().ok().and_then(Store::user) {
                Some(p) => Actor::Human {
                    name: p.name,
                    email: p.email,
                },
                None => Actor::Human {
                    name: FALLBACK_HUMAN.0.to_owned(),
                    email: FALLBACK_HUMAN.1.to_owned(),
                },
            },
        };
        *self.actor.borrow_mut() = Some(actor.clone());
        Ok(actor)
    }

    /// The committer of ticks: git's configured committer, else loopx's.
    pub fn committer(&self) -> Person {
        match self.repo() {
            Ok(r) => r.committer().clone(),
            Err(_) => Person {
                name: FALLBACK_COMMITTER.0.to_owned(),
                email: FALLBACK_COMMITTER.1.to_owned(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Env {
        Env::from_pairs(pairs)
    }

    #[test]
    fn the_flag_beats_the_environment_and_markers() {
        let e = env(&[("LOOPX_AGENT", "from-env"), ("CLAUDECODE", "1")]);
        assert_eq!(
            caller(Some("flag"), &e).unwrap(),
            Caller::Agent(AgentId::new("flag").unwrap())
        );
        assert_eq!(
            caller(None, &e).unwrap(),
            Caller::Agent(AgentId::new("from-env").unwrap())
        );
    }

    #[test]
    fn an_empty_loopx_agent_is_an_error_never_the_human() {
        for blank in ["", " ", "\t"] {
            let e = env(&[("LOOPX_AGENT", blank)]);
            let r = caller(None, &e).unwrap_err();
            assert_eq!((r.exit.code(), r.code), (2, Code::BadEnv), "{blank:?}");
            // An explicit --agent still decides.
            assert_eq!(
                caller(Some("flag"), &e).unwrap(),
                Caller::Agent(AgentId::new("flag").unwrap())
            );
        }
        assert_eq!(caller(None, &env(&[])).unwrap(), Caller::Human);
    }

    #[test]
    fn runtime_markers_derive_one_id() {
        let e = env(&[
            ("CLAUDECODE", "1"),
            ("CLAUDE_CODE_SESSION_ID", "1A2B3C4D-5e6f-7788"),
        ]);
        assert_eq!(
            caller(None, &e).unwrap(),
            Caller::Agent(derive_agent("claude-code", "1A2B3C4D-5e6f-7788").unwrap())
        );
        let e = env(&[("GEMINI_CLI", "1")]);
        assert!(matches!(
            caller(None, &e).unwrap(),
            Caller::UnknownAgent {
                runtime: "gemini",
                ..
            }
        ));
        assert_eq!(caller(None, &env(&[])).unwrap(), Caller::Human);
    }

    #[test]
    fn uuid7_sessions_of_the_same_second_are_different_agents() {
        // Two UUIDv7 ids minted in the same millisecond: same first 12 digits.
        let a = derive_agent("codex", "0199a1b2-c3d4-7e5f-8a6b-1c2d3e4f5a6b").unwrap();
        let b = derive_agent("codex", "0199a1b2-c3d4-7f00-9b1c-2d3e4f5a6b7c").unwrap();
        assert_ne!(a, b);
        assert!(a.as_str().starts_with("codex-") && a.as_str().len() == "codex-".len() + 8);
        assert_eq!(
            a,
            derive_agent("codex", "0199a1b2-c3d4-7e5f-8a6b-1c2d3e4f5a6b").unwrap()
        );
        assert_eq!(derive_agent("codex", "  "), None);
    }
}
