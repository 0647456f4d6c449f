//! One ssh connection for sync's git calls (issue 28): over an ssh remote,
//! loopx's own fetches and pushes share a connection through OpenSSH's
//! `ControlMaster`/`ControlPersist`, so a claim or a sync that needs a
//! second call (a refused push, then a fetch) and the next invocation
//! within [`PERSIST`] skip ssh's handshake.
//!
//! Only loopx's git processes get it, through their `GIT_SSH_COMMAND`; the
//! user's own git is untouched. It stays off when the user chose how ssh
//! runs: `GIT_SSH_COMMAND` or `GIT_SSH` in the environment, git config
//! `core.sshCommand`, or an ssh config that sets `ControlMaster` or
//! `ControlPath` for the host (as `ssh -G` reads it).
//!
//! The sockets live in a directory only this user can enter (0700): under
//! the git dir (`loopx-ssh/`), else under `$XDG_RUNTIME_DIR` when the git
//! dir's path is too long for a socket's name; with neither, no sharing.

use std::collections::HashMap;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use sha2::Digest;

/// How long an idle shared connection stays open after loopx's last call.
pub const PERSIST: &str = "300";

/// A unix socket's path holds at most 107 bytes (and a NUL); ssh adds a
/// dot and 16 random characters while it sets the master up.
const SOCKET_PATH_MAX: usize = 107 - 17;

/// What [`shared`] answered, per git dir and URL.
type Seen = HashMap<(PathBuf, String), Option<String>>;

/// The `GIT_SSH_COMMAND` that shares one connection for `url`, or None
/// (not ssh, the user configured ssh, no private directory). Computed once
/// per URL and process.
pub(super) fn shared(git_dir: &Path, url: &str) -> Option<String> {
    static SEEN: Mutex<Option<Seen>> = Mutex::new(None);
    let key = (git_dir.to_path_buf(), url.to_owned());
    if let Ok(seen) = SEEN.lock()
        && let Some(v) = seen.as_ref().and_then(|m| m.get(&key))
    {
        return v.clone();
    }
    let v = compute(git_dir, url);
    if let Ok(mut seen) = SEEN.lock() {
        seen.get_or_insert_with(HashMap::new).insert(key, v.clone());
    }
    v
}

fn compute(git_dir: &Path, url: &str) -> Option<String> {
    let target = Target::of(url)?;
    if ["GIT_SSH_COMMAND", "GIT_SSH"]
        .iter()
        .any(|k| crate::env::Env::process().get(k).is_some())
    {
        return None;
    }
    if super::output(git_dir, &["config", "--get", "core.sshCommand"])
        .is_ok_and(|v| !v.trim().is_empty())
    {
        return None;
    }
    if user_multiplexes(&target)? {
        return None;
    }
    let dir = socket_dir(git_dir)?;
    let path = dir.join(target.socket_name());
    Some(command(&path))
}

/// The ssh command line: ssh itself, sharing through the socket at `path`.
/// The master passes `GIT_PROTOCOL` on for every session through it (a
/// session's own `SendEnv` counts only when the master's allows it too),
/// so a kept session ([`super::keep`]) can ask for protocol v2 even when
/// the git that opened the connection spoke v0.
pub(super) fn command(path: &Path) -> String {
    format!(
        "ssh -o ControlMaster=auto -o ControlPersist={PERSIST} -o SendEnv=GIT_PROTOCOL -o {}",
        quote(&format!("ControlPath={}", path.display()))
    )
}

/// Single-quotes `s` for the shell git runs `GIT_SSH_COMMAND` through.
pub(super) fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Where an ssh URL connects.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Target {
    pub(super) user: Option<String>,
    pub(super) host: String,
    pub(super) port: Option<String>,
}

impl Target {
    /// The ssh destination of a git URL, or None when git would not use
    /// ssh for it: `ssh://[user@]host[:port]/path` (also `git+ssh://`,
    /// `ssh+git://`) and the scp-like `[user@]host:path`.
    pub(super) fn of(url: &str) -> Option<Target> {
        let rest = ["ssh://", "git+ssh://", "ssh+git://"]
            .iter()
            .find_map(|p| url.strip_prefix(p));
        let (userhost, port) = match rest {
            Some(rest) => {
                let authority = rest.split('/').next().unwrap_or("");
                let (uh, port) = split_port(authority);
                (uh, port)
            }
            None => {
                if url.contains("://") || url.starts_with('/') || url.starts_with('.') {
                    return None;
                }
                // scp-like: a colon before any slash (`./a:b` is a path).
                let colon = scp_colon(url)?;
                (url[..colon].trim_matches(['[', ']']).to_owned(), None)
            }
        };
        let (user, host) = match userhost.rsplit_once('@') {
            Some((u, h)) => (Some(u.to_owned()), h.to_owned()),
            None => (None, userhost),
        };
        // A user or host that ssh would read as an option is refused, as
        // git refuses it.
        let option = |s: &str| s.starts_with('-');
        (!host.is_empty() && !option(&host) && !user.as_deref().is_some_and(option))
            .then_some(Target { user, host, port })
    }

    /// A short socket name for this destination (the path must stay under
    /// the socket name limit).
    fn socket_name(&self) -> String {
        let id = format!(
            "{}@{}:{}",
            self.user.as_deref().unwrap_or(""),
            self.host,
            self.port.as_deref().unwrap_or("")
        );
        let h = sha2::Sha256::digest(id.as_bytes());
        h[..8].iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// `host[:port]` (with `[v6]` brackets) into the host and the port.
fn split_port(authority: &str) -> (String, Option<String>) {
    if let Some(rest) = authority.strip_prefix('[')
        && let Some((h, after)) = rest.split_once(']')
    {
        let port = after.strip_prefix(':').filter(|p| !p.is_empty());
        return (h.to_owned(), port.map(str::to_owned));
    }
    // user@host:port; a user never holds a colon here.
    match authority.rsplit_once(':') {
        Some((h, p)) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
            (h.to_owned(), Some(p.to_owned()))
        }
        _ => (authority.to_owned(), None),
    }
}

/// The colon of an scp-like URL, before any slash (and outside `[…]`).
fn scp_colon(url: &str) -> Option<usize> {
    let mut in_bracket = false;
    for (i, c) in url.char_indices() {
        match c {
            '[' => in_bracket = true,
            ']' => in_bracket = false,
            ':' if !in_bracket => return (i > 0).then_some(i),
            '/' => return None,
            _ => {}
        }
    }
    None
}

/// Whether the user's ssh config already multiplexes (or names a control
/// socket for) this destination; None when ssh cannot tell (not
/// installed, a config it refuses): then loopx leaves ssh alone too.
fn user_multiplexes(t: &Target) -> Option<bool> {
    let mut c = Command::new("ssh");
    c.arg("-G");
    if let Some(p) = &t.port {
        c.args(["-p", p]);
    }
    if let Some(u) = &t.user {
        c.args(["-l", u]);
    }
    let out = c
        .arg("--")
        .arg(&t.host)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    Some(text.lines().any(|l| {
        let mut kv = l.splitn(2, ' ');
        match (kv.next(), kv.next()) {
            (Some("controlmaster"), Some(v)) => v != "false",
            (Some("controlpath"), Some(v)) => v != "none",
            _ => false,
        }
    }))
}

/// The private directory for the sockets: `<git dir>/loopx-ssh`, else
/// `$XDG_RUNTIME_DIR/loopx-ssh`, whichever keeps a socket's path short
/// enough, created 0700; a directory that exists must be this user's and
/// 0700 (else None: no sharing through a place others can reach).
pub(super) fn socket_dir(git_dir: &Path) -> Option<PathBuf> {
    let mut places = vec![std::path::absolute(git_dir).ok()?.join("loopx-ssh")];
    if let Some(run) = crate::env::Env::process().get("XDG_RUNTIME_DIR") {
        places.push(PathBuf::from(run).join("loopx-ssh"));
    }
    places
        .into_iter()
        .find(|d| d.as_os_str().len() + 1 + 16 <= SOCKET_PATH_MAX && private_dir(d))
}

fn private_dir(dir: &Path) -> bool {
    let _ = std::fs::DirBuilder::new().mode(0o700).create(dir);
    let Ok(meta) = std::fs::symlink_metadata(dir) else {
        return false;
    };
    meta.is_dir()
        && meta.uid() == rustix::process::geteuid().as_raw()
        && meta.permissions().mode() & 0o777 == 0o700
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(user: Option<&str>, host: &str, port: Option<&str>) -> Option<Target> {
        Some(Target {
            user: user.map(str::to_owned),
            host: host.to_owned(),
            port: port.map(str::to_owned),
        })
    }

    #[test]
    fn ssh_urls_name_their_destination_and_others_none() {
        assert_eq!(
            Target::of("ssh://git@hub.example:2222/team.git"),
            t(Some("git"), "hub.example", Some("2222"))
        );
        assert_eq!(Target::of("ssh://hub/x"), t(None, "hub", None));
        assert_eq!(
            Target::of("git+ssh://[::1]:22/x"),
            t(None, "::1", Some("22"))
        );
        assert_eq!(
            Target::of("git@github.com:team/repo.git"),
            t(Some("git"), "github.com", None)
        );
        assert_eq!(Target::of("hub:repo.git"), t(None, "hub", None));
        for not_ssh in [
            "https://hub.example/team.git",
            "git://127.0.0.1:9418/hub.git",
            "file:///srv/hub.git",
            "/srv/hub.git",
            "./a:b",
            "dir/a:b",
            "../hub.git",
            "ssh://-oProxyCommand=x/y",
            "ssh://-oProxyCommand=x@hub/y",
            "-oProxyCommand=x@hub:y",
        ] {
            assert_eq!(Target::of(not_ssh), None, "{not_ssh}");
        }
    }

    #[test]
    fn the_command_quotes_the_socket_path_for_the_shell() {
        let c = command(Path::new("/tmp/it's here/loopx-ssh/0123"));
        assert_eq!(
            c,
            "ssh -o ControlMaster=auto -o ControlPersist=300 -o SendEnv=GIT_PROTOCOL -o 'ControlPath=/tmp/it'\\''s here/loopx-ssh/0123'"
        );
    }

    #[test]
    fn the_socket_dir_is_private_and_refused_when_it_is_not() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = socket_dir(tmp.path()).expect("a short path gets a dir");
        assert_eq!(dir, tmp.path().join("loopx-ssh"));
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        // Opened up by someone: not used.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(!private_dir(&dir));
        // A path too long for a socket's name: only XDG_RUNTIME_DIR could do.
        let long = tmp.path().join("x".repeat(100));
        std::fs::create_dir_all(&long).unwrap();
        let found = socket_dir(&long);
        assert!(
            found.as_ref().is_none_or(|d| !d.starts_with(&long)),
            "{found:?}"
        );
    }

    #[test]
    fn distinct_destinations_get_distinct_short_sockets() {
        let a = Target::of("ssh://a@h:1/x").unwrap().socket_name();
        let b = Target::of("ssh://a@h:2/x").unwrap().socket_name();
        assert_ne!(a, b);
        assert_eq!(a.len(), 16);
    }
}
