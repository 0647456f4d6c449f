//! The `loopx.*` git settings, read once per invocation into a plain
//! [`Config`] and passed down: nothing else reads them. (`loopx.ref` is the
//! one exception: the store needs it to know where the state lives before
//! anything else can be read; `store.rs` resolves it when it opens.)
//!
//! Settings come from git's own config files (system, global, local), never
//! from the shared state, so a machine's behaviour is decided on that
//! machine.

use crate::store::Store;

/// Ticks between background repacks when git config says nothing.
pub const AUTO_PACK: u64 = 200;
/// How many times the Stop hook sends an agent back to work in one session
/// when git config says nothing: below Cursor's default loop limit (5) and
/// Claude Code's own cap (8).
pub const STOP_CONTINUATIONS: u32 = 3;

/// Every `loopx.*` setting this binary reads, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// `loopx.remote`: the remote `sync` uses when none is named.
    pub remote: String,
    /// `loopx.goal`: the goal commands act on when `--goal` is not given.
    pub goal: Option<String>,
    /// `loopx.claimSync`: whether commands sync around their work by
    /// default (None: they do once the clone has a hub, `sync --setup`).
    pub claim_sync: Option<bool>,
    /// `loopx.autoPack`: ticks between background repacks (0: never).
    pub auto_pack: u64,
    /// `loopx.stopContinuations`: the Stop hook's limit per session.
    pub stop_continuations: u32,
    /// `loopx.syncTimeout`: the time limit of each network step of a sync
    /// (a duration such as `60s` or `2m`, or seconds).
    pub sync_timeout: std::time::Duration,
    /// `loopx.allowedSignersFile`, else git's `gpg.ssh.allowedSignersFile`:
    /// the keys this machine trusts to sign human acts (as written; `trust`
    /// expands `~/` and relative paths).
    pub allowed_signers_file: Option<String>,
    /// `loopx.signingKey`, else git's `user.signingKey` when `gpg.format`
    /// is `ssh`: the key this human signs with.
    pub signing_key: Option<String>,
    /// git's `gpg.ssh.program` (default `ssh-keygen`).
    pub ssh_program: Option<String>,
    /// `loopx.runValidations = all`: every validation from the state runs.
    pub run_all_validations: bool,
    /// `loopx.signaturesFrom`: the last commit whose human acts sync
    /// accepts unsigned (history from before signing was turned on).
    pub signatures_from: Option<String>,
    /// `loopx.notify` (local or global git config only): the command, split
    /// into words, run once per gate that waits on a human.
    pub notify: Option<Vec<String>>,
    /// `loopx.notifyTimeout`: how long the notify command may run (10s).
    pub notify_timeout: crate::time::Span,
    /// `loopx.worktree`: when a claim takes a linked worktree of its own.
    pub worktree: WorktreeMode,
    /// `loopx.worktrees`: the folder claims' worktrees are made in (as
    /// written; relative to the main worktree). None: a folder beside the
    /// main worktree, `<its name>.loopx-worktrees`.
    pub worktrees: Option<String>,
}

/// `loopx.worktree`: when `todo claim` gives the claim a linked worktree on
/// a branch of its own (`--worktree` and `--no-worktree` decide one claim).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WorktreeMode {
    /// When another session on this clone is live (where loopx can tell:
    /// Linux `/proc`, or a runtime that sends its pid).
    #[default]
    Auto,
    /// Every claim.
    Always,
    /// No claim (unless `--worktree`).
    Never,
}

impl WorktreeMode {
    /// The setting's value as git config spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            WorktreeMode::Auto => "auto",
            WorktreeMode::Always => "always",
            WorktreeMode::Never => "never",
        }
    }

    fn parse(v: &str) -> Option<WorktreeMode> {
        match v.to_ascii_lowercase().as_str() {
            "auto" => Some(WorktreeMode::Auto),
            "always" | "true" | "yes" | "on" => Some(WorktreeMode::Always),
            "never" | "false" | "no" | "off" => Some(WorktreeMode::Never),
            _ => None,
        }
    }
}

/// The settings a read may take from the fast start-up path's cache
/// (`crate::fast`) without opening the repository: none of them decides
/// trust (allowed signers, signing, validations, notify are read from git
/// config itself, through [`Config`], every time).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Settings {
    /// `loopx.goal`.
    pub goal: Option<String>,
    /// `loopx.claimSync`.
    pub claim_sync: Option<bool>,
}

impl Config {
    /// The settings a read may take from the fast path's cache.
    pub fn settings(&self) -> Settings {
        Settings {
            goal: self.goal.clone(),
            claim_sync: self.claim_sync,
        }
    }
}

/// Each network step of a sync when git config says nothing.
pub const SYNC_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

impl Default for Config {
    fn default() -> Self {
        Config {
            remote: "origin".to_owned(),
            goal: None,
            claim_sync: None,
            auto_pack: AUTO_PACK,
            stop_continuations: STOP_CONTINUATIONS,
            sync_timeout: SYNC_TIMEOUT,
            allowed_signers_file: None,
            signing_key: None,
            ssh_program: None,
            run_all_validations: false,
            signatures_from: None,
            notify: None,
            notify_timeout: crate::time::Span::seconds(10),
            worktree: WorktreeMode::Auto,
            worktrees: None,
        }
    }
}

impl Config {
    /// Reads the settings from the repository's git config. A value that
    /// does not parse falls back to the default, as git does for unknown
    /// settings of other tools.
    pub fn read(store: &Store) -> Config {
        let d = Config::default();
        let text = |key: &str| {
            store
                .config(key)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        Config {
            remote: text("loopx.remote").unwrap_or(d.remote),
            goal: text("loopx.goal"),
            claim_sync: store.config_bool("loopx.claimSync").or(d.claim_sync),
            auto_pack: text("loopx.autoPack")
                .and_then(|v| v.parse().ok())
                .unwrap_or(d.auto_pack),
            stop_continuations: text("loopx.stopContinuations")
                .and_then(|v| v.parse().ok())
                .unwrap_or(d.stop_continuations),
            sync_timeout: text("loopx.syncTimeout")
                .and_then(|v| {
                    let secs = v
                        .parse::<i64>()
                        .ok()
                        .or_else(|| v.parse::<crate::time::Span>().ok().map(|s| s.as_secs()))?;
                    (secs > 0).then(|| std::time::Duration::from_secs(secs.unsigned_abs()))
                })
                .unwrap_or(d.sync_timeout),
            allowed_signers_file: text("loopx.allowedSignersFile")
                .or_else(|| text("gpg.ssh.allowedSignersFile")),
            signing_key: text("loopx.signingKey").or_else(|| {
                (text("gpg.format").as_deref() == Some("ssh"))
                    .then(|| text("user.signingKey"))
                    .flatten()
            }),
            ssh_program: text("gpg.ssh.program"),
            run_all_validations: text("loopx.runValidations").as_deref() == Some("all"),
            signatures_from: text("loopx.signaturesFrom"),
            notify: store
                .config_local_or_global("loopx.notify")
                .and_then(|v| words(&v))
                .filter(|w| !w.is_empty()),
            notify_timeout: text("loopx.notifyTimeout")
                .and_then(|v| crate::time::Span::parse(&v).ok())
                .filter(|s| s.as_secs() > 0)
                .unwrap_or(d.notify_timeout),
            worktree: text("loopx.worktree")
                .and_then(|v| WorktreeMode::parse(&v))
                .unwrap_or(d.worktree),
            worktrees: text("loopx.worktrees"),
        }
    }
}

/// The price of a model's tokens on this machine: git config
/// `loopx.price.<model>.input`, `.output` and `.cachedInput` (dollars per
/// million tokens) for the reported id, else for the table row it matches;
/// else the shipped table ([`crate::price`]). A row set in git config needs
/// `input` and `output`; `cachedInput` defaults to `input`. None for a
/// model with no price anywhere. The team's price (`crate::price::team`)
/// comes before this.
pub fn price(store: &Store, model: &str) -> Option<crate::price::Price> {
    let shipped = crate::price::lookup(model);
    let configured = |key: &str| {
        let get = |field: &str| {
            store
                .config(&format!("loopx.price.{key}.{field}"))
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|v| v.is_finite() && *v >= 0.0)
        };
        let base = shipped.filter(|(k, _)| *k == key).map(|(_, p)| p);
        let input = get("input").or(base.map(|p| p.input))?;
        let output = get("output").or(base.map(|p| p.output))?;
        let cached_input = get("cachedInput")
            .or(base.map(|p| p.cached_input))
            .unwrap_or(input);
        Some(crate::price::Price {
            input,
            output,
            cached_input,
        })
    };
    configured(model)
        .or_else(|| shipped.and_then(|(k, _)| configured(k)))
        .or(shipped.map(|(_, p)| p))
}

/// Splits a command line into words as a POSIX shell would for plain
/// words, single and double quotes and backslashes; no expansion. None
/// for an unclosed quote.
pub fn words(line: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => cur.push(c),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        // POSIX: inside double quotes a backslash quotes only
                        // `$`, `` ` ``, `"`, `\` and a newline (which it
                        // removes); before anything else it stays.
                        '\\' => match chars.next()? {
                            '\n' => {}
                            c @ ('$' | '`' | '"' | '\\') => cur.push(c),
                            c => {
                                cur.push('\\');
                                cur.push(c);
                            }
                        },
                        c => cur.push(c),
                    }
                }
            }
            '\\' => match chars.next()? {
                // A line continuation, as sh reads it.
                '\n' => {}
                c => {
                    in_word = true;
                    cur.push(c);
                }
            },
            c if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::words;

    #[test]
    fn words_split_like_a_shell() {
        assert_eq!(
            words(r#"curl -d "a b" 'c "d"' e\ f"#).unwrap(),
            ["curl", "-d", "a b", "c \"d\"", "e f"]
        );
        assert_eq!(words("  ").unwrap(), Vec::<String>::new());
        // As sh: in double quotes a backslash stays before other characters.
        assert_eq!(words(r#""w\x""#).unwrap(), [r"w\x"]);
        assert_eq!(
            words(r#""a\"b" "\$HOME" "c\\d" e\x"#).unwrap(),
            [r#"a"b"#, "$HOME", r"c\d", "ex"]
        );
        assert_eq!(words("\"a\\\nb\"").unwrap(), ["ab"]);
        assert_eq!(words("a \\\n b").unwrap(), ["a", "b"]);
        assert_eq!(words("'open"), None);
    }
}
