//! The repository handle: what the layers below the commands (tx, sync,
//! verify, trust, history, notify, service) need of one repository, opened
//! once. The store, its resolved `loopx.*` settings, the committer, the
//! clock and the signing setup (loaded on first use, then shared by every
//! check of the invocation; its data lives below, in `crate::signing`).
//!
//! The command context keeps what only the front ends need (the
//! environment, the caller, output) and hands this out with `ctx.repo()`.
//! Nothing here prints; callers pass explicit values (the caller, an actor,
//! ids, a progress callback) and get typed reports back.

use std::cell::OnceCell;
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::config::Config;
use crate::signing::{AllowedSigners, Signing};
use crate::store::{Person, Store};
use crate::time::Timestamp;

/// The committer recorded when git has no identity configured.
pub const FALLBACK_COMMITTER: (&str, &str) = ("loopx", "loopx@loopx.invalid");

/// This machine's clock, as checks read it: the system clock read at each
/// check (a long sync must not judge a tick made meanwhile by the time the
/// process started), or a fixed instant.
///
/// `LOOPX_NOW` moves the machine's clock itself, for tests and demos: the
/// ticks a process writes and the checks it makes (the clock-skew rule of
/// `verify`, sync and the hub) read the same instant. A tick forged with
/// `LOOPX_NOW=2099-…` is therefore accepted by the process that wrote it
/// and refused, as in the future, by any clone or hub without it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    System,
    Fixed(Timestamp),
}

impl Clock {
    /// The time now, by this clock.
    pub fn now(self) -> Timestamp {
        match self {
            Clock::System => Timestamp::system_now(),
            Clock::Fixed(t) => t,
        }
    }
}

/// One repository, opened once per invocation.
pub struct Repo {
    store: Store,
    config: Config,
    /// Resolved on first use: read-only commands never need it.
    committer: OnceCell<Person>,
    home: Option<PathBuf>,
    clock: Clock,
    signing: OnceCell<Signing>,
    /// The key this invocation's human acts are signed with instead of the
    /// configured one: a signer announcement signs with the key it names.
    act_key: OnceCell<PathBuf>,
}

impl Repo {
    /// Opens the repository at or above `dir` and reads its settings.
    pub fn open(dir: &Path, home: Option<PathBuf>, clock: Clock) -> Result<Repo> {
        Ok(Repo::new(Store::discover(dir)?, home, clock))
    }

    /// A handle on an opened store (the hub's hook opens its own).
    pub fn new(store: Store, home: Option<PathBuf>, clock: Clock) -> Repo {
        let config = Config::read(&store);
        Repo {
            store,
            config,
            committer: OnceCell::new(),
            home,
            clock,
            signing: OnceCell::new(),
            act_key: OnceCell::new(),
        }
    }

    /// A handle on the same repository whose state ref is `name` (another
    /// ref of a split state), with the same settings, home and clock.
    pub fn for_ref(&self, name: &str) -> Repo {
        Repo {
            store: self.store.for_ref(name),
            config: self.config.clone(),
            committer: self.committer.clone(),
            home: self.home.clone(),
            clock: self.clock,
            signing: OnceCell::new(),
            act_key: self.act_key.clone(),
        }
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The `loopx.*` git settings, read once.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The committer of ticks: git's configured committer, else loopx's.
    pub fn committer(&self) -> &Person {
        self.committer.get_or_init(|| {
            self.store.committer().unwrap_or_else(|| Person {
                name: FALLBACK_COMMITTER.0.to_owned(),
                email: FALLBACK_COMMITTER.1.to_owned(),
            })
        })
    }

    /// The state ref (`refs/loopx/state`, or git config `loopx.ref`).
    pub fn state_ref(&self) -> &str {
        self.store.state_ref()
    }

    /// The user's home directory (`HOME`), where `~/` paths in settings
    /// point.
    pub fn home(&self) -> Option<&Path> {
        self.home.as_deref()
    }

    /// Signs this invocation's human acts with the key file `path` (a
    /// private key, or a public key whose private half is in ssh-agent)
    /// instead of the configured one; set once, before the act.
    pub fn sign_acts_with(&self, path: PathBuf) {
        let _ = self.act_key.set(path);
    }

    /// The key file set by [`Repo::sign_acts_with`], if any.
    pub fn act_key(&self) -> Option<&Path> {
        self.act_key.get().map(PathBuf::as_path)
    }

    /// This machine's clock.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// The time now, read when asked.
    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// Which signatures this machine asks of human acts, loaded on first
    /// use and shared by every check of this invocation.
    pub fn signing(&self) -> Result<&Signing> {
        if let Some(s) = self.signing.get() {
            return Ok(s);
        }
        let s = Signing::load(&self.store, &self.config, self.home())?;
        Ok(self.signing.get_or_init(|| s))
    }

    /// This machine's allowed signers (see [`Repo::signing`]).
    pub fn signers(&self) -> Result<&AllowedSigners> {
        Ok(self.signing()?.signers())
    }
}
