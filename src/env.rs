//! The process environment, read once. [`Env::process`] is the one place
//! loopx reads its environment variables; the command context carries that
//! snapshot to the commands, and the few layers below them that a variable
//! steers (verify's thread count, the cache's shard override, the ssh
//! transport, the store's ref override and config files) read the same
//! snapshot. A layering test keeps every other file from reading the
//! process environment (docs/design.md "Where input comes from").

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::sync::OnceLock;

use crate::error::{Code, Refusal};

/// The environment variables loopx reads, captured once per process.
#[derive(Clone, Debug, Default)]
pub struct Env {
    vars: BTreeMap<String, String>,
    /// Variables loopx cares about whose values are not valid UTF-8: an
    /// identity variable among them is an error, never a human.
    not_utf8: BTreeSet<String>,
}

/// Whether a variable keys the start-up path's settings (`crate::fast`):
/// every `GIT_*`, and the two that place the global config files.
pub fn keyed_var(name: &str) -> bool {
    name.starts_with("GIT_") || name == "HOME" || name == "XDG_CONFIG_HOME"
}

/// Whether loopx reads the variable `k`.
fn wanted(k: &str) -> bool {
    k.starts_with("LOOPX_")
        || k == "NO_COLOR"
        || k == "PAGER"
        || k == "HOME"
        // What chooses git's config files (`crate::fast` keys its settings
        // by them), the ssh command among them, and where a pre-receive
        // hook finds the pushed objects.
        || keyed_var(k)
        || k == "USERPROFILE"
        || k == "PATH"
        // Where the ssh transport may keep its sockets.
        || k == "XDG_RUNTIME_DIR"
        // A machine's name when /etc/hostname has none.
        || k == "HOSTNAME"
        || k.starts_with("CLAUDE")
        || k.starts_with("CODEX_")
        || k.starts_with("GEMINI_")
        || k.starts_with("CURSOR_")
        || k.starts_with("OPENCODE")
        // Set by loopx's Pi extension.
        || k == "PI_SESSION_ID"
}

impl Env {
    /// This process's environment, read on first use and kept.
    pub fn process() -> &'static Env {
        static ENV: OnceLock<Env> = OnceLock::new();
        ENV.get_or_init(Env::capture)
    }

    fn capture() -> Self {
        let mut env = Env::default();
        for (k, v) in std::env::vars_os() {
            let Ok(k) = k.into_string() else { continue };
            if !wanted(&k) {
                continue;
            }
            match v.into_string() {
                Ok(v) => env.vars.insert(k, v),
                Err(_) => {
                    env.not_utf8.insert(k);
                    None
                }
            };
        }
        env
    }

    /// An environment of exactly these variables (tests).
    pub fn from_pairs(pairs: &[(&str, &str)]) -> Env {
        Env {
            vars: pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            not_utf8: BTreeSet::new(),
        }
    }

    /// Refuses (exit 2) when `key` is set but not valid UTF-8.
    pub fn utf8(&self, key: &str) -> Result<(), Refusal> {
        if self.not_utf8.contains(key) {
            return Err(Refusal::usage(
                Code::BadEnv,
                format!("{key} is set but is not valid UTF-8, so loopx cannot tell who is acting"),
            )
            .with_hint(format!("unset {key} or set it to a plain id")));
        }
        Ok(())
    }

    /// The variables the fast start-up path keys its settings by
    /// ([`keyed_var`]), set ones only; None when one of them
    /// is not valid UTF-8 (then the fast path stands aside).
    pub fn keyed_vars(&self) -> Option<Vec<(&str, &str)>> {
        if self.not_utf8.iter().any(|k| keyed_var(k)) {
            return None;
        }
        Some(
            self.vars
                .iter()
                .filter(|(k, _)| keyed_var(k))
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect(),
        )
    }

    /// The value of `key`, when it is set, not empty and valid UTF-8.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.vars
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// Whether `key` is set at all (empty or not UTF-8 included).
    pub fn is_set(&self, key: &str) -> bool {
        self.vars.contains_key(key) || self.not_utf8.contains(key)
    }

    /// [`Env::get`] as an `OsStr`, for APIs that take one.
    pub fn get_os(&self, key: &str) -> Option<&OsStr> {
        self.get(key).map(OsStr::new)
    }
}

/// The names of every variable set in this process, wanted or not (the demo
/// clears loopx's and the runtimes' from the processes it starts). Read
/// when asked, not kept: only the demo needs them.
pub fn names() -> Vec<String> {
    std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .collect()
}
