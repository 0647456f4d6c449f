//! Which git wire protocol loopx's own network calls speak (issue 28).
//!
//! git's protocol v2 (git's default) answers a fetch's first request with
//! its capabilities and needs a separate `ls-refs` request before anything
//! else: one round trip more than v0, whose server sends its refs right
//! after the request. A sync that finds the hub where it left it is a
//! fetch that gets nothing, so v0 makes it a connection and one request
//! (2 round trips on git daemon and smart HTTP) instead of 3. The price of
//! v0 is that the server lists *all* its refs (v2's `ls-refs` sends only
//! the ones asked for): about 70 bytes a ref, nothing for a hub that holds
//! only loopx's refs, a lot for a code repository with thousands of tags or
//! a forge's hidden pull-request refs. Pushes speak v0 whatever is set
//! (git has no v2 push), so they pay that listing already.
//!
//! `git config loopx.protocol`: `0` (v0), `2` (v2), or `auto` (the default,
//! also for a value it does not know): v0, unless the user set git's own
//! `protocol.version` (then git's choice stands), the remote is a forge
//! known to list hidden refs ([`HIDDEN_REF_HOSTS`]), or this clone knows
//! more than [`FEW_REFS`] of the remote's branches and tags (its
//! `refs/remotes/` and `refs/tags/`: what the hub would list besides
//! loopx's refs).
//!
//! Only loopx's git processes get it (`git -c protocol.version=…`); the
//! user's own git is untouched.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::config::config_matching;

/// Up to this many branches and tags, a v0 listing (about 70 bytes a ref,
/// ~14 KB) fits TCP's initial window of 10 segments: it arrives in the
/// same round trip as one ref would, so v0 saves its round trip outright.
/// Past about three times this, slow start makes the listing cost the
/// round trip v0 saves (docs/sync.md, *Round trips*).
pub(super) const FEW_REFS: usize = 200;

/// Forges whose servers list refs a clone never fetches (pull and merge
/// requests: two refs each) in a v0 listing, however few branches and
/// tags this clone sees.
pub(super) const HIDDEN_REF_HOSTS: [&str; 2] = ["github.com", "gitlab.com"];

/// What [`version`] answered, per git dir and URL.
type Seen = HashMap<(PathBuf, String), Option<&'static str>>;

/// The `protocol.version` loopx runs git with for `url` (`"0"` or `"2"`),
/// or None to leave it to git's config. Computed once per URL and process.
pub(super) fn version(git_dir: &Path, url: &str) -> Option<&'static str> {
    static SEEN: Mutex<Option<Seen>> = Mutex::new(None);
    let key = (git_dir.to_path_buf(), url.to_owned());
    if let Ok(seen) = SEEN.lock()
        && let Some(v) = seen.as_ref().and_then(|m| m.get(&key))
    {
        return *v;
    }
    let config =
        config_matching(git_dir, r"^(loopx\.protocol|protocol\.version)$").unwrap_or_default();
    let get = |k: &str| {
        config
            .iter()
            .rev()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.trim().to_owned())
    };
    let setting = get("loopx.protocol");
    let user_version = get("protocol.version").is_some();
    let v = decide(
        setting.as_deref(),
        user_version,
        host(url).as_deref(),
        || known_refs(git_dir),
    );
    if let Ok(mut seen) = SEEN.lock() {
        seen.get_or_insert_with(HashMap::new).insert(key, v);
    }
    v
}

/// The choice, from `loopx.protocol`'s value, whether git's own
/// `protocol.version` is set, the remote's host, and (asked only when it
/// matters) how many branches and tags this clone knows.
pub(super) fn decide(
    setting: Option<&str>,
    user_version: bool,
    host: Option<&str>,
    refs: impl FnOnce() -> usize,
) -> Option<&'static str> {
    match setting.map(str::to_ascii_lowercase).as_deref() {
        Some("0" | "v0") => return Some("0"),
        Some("2" | "v2") => return Some("2"),
        _ => {}
    }
    if user_version {
        return None;
    }
    let forge = host.is_some_and(|h| {
        let h = h.to_ascii_lowercase();
        HIDDEN_REF_HOSTS
            .iter()
            .any(|f| h == *f || h.ends_with(&format!(".{f}")))
    });
    if forge || refs() > FEW_REFS {
        Some("2")
    } else {
        Some("0")
    }
}

/// How many branches and tags of remotes this clone holds, counted up to
/// one past [`FEW_REFS`] (past it the answer is the same).
fn known_refs(git_dir: &Path) -> usize {
    let count = format!("--count={}", FEW_REFS + 1);
    super::output(
        git_dir,
        &[
            "for-each-ref",
            &count,
            "--format=x",
            "refs/remotes/",
            "refs/tags/",
        ],
    )
    .map(|out| out.lines().count())
    .unwrap_or(0)
}

/// The host a git URL connects to, or None for a local path.
pub(super) fn host(url: &str) -> Option<String> {
    if let Some(t) = super::ssh::Target::of(url) {
        return Some(t.host);
    }
    let (_, rest) = url.split_once("://")?;
    let authority = rest.split('/').next().unwrap_or("");
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => authority.split(':').next().unwrap_or(""),
    };
    (!host.is_empty()).then(|| host.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_speaks_v0_to_a_small_hub_and_v2_to_a_big_one_or_a_forge() {
        let never = || -> usize { panic!("refs counted when they do not matter") };
        // The setting wins, whatever else holds.
        assert_eq!(
            decide(Some("0"), true, Some("github.com"), never),
            Some("0")
        );
        assert_eq!(decide(Some("v2"), false, None, never), Some("2"));
        // git's own protocol.version stands in auto.
        assert_eq!(decide(None, true, None, never), None);
        assert_eq!(decide(Some("auto"), true, None, never), None);
        // Auto (or a value loopx does not know): v0 while the clone knows
        // few branches and tags.
        assert_eq!(decide(None, false, None, || 0), Some("0"));
        assert_eq!(
            decide(Some("bogus"), false, Some("hub"), || FEW_REFS),
            Some("0")
        );
        assert_eq!(decide(None, false, Some("hub"), || FEW_REFS + 1), Some("2"));
        // Forges with hidden refs: v2 without counting.
        assert_eq!(decide(None, false, Some("github.com"), never), Some("2"));
        assert_eq!(decide(None, false, Some("Gitlab.com"), never), Some("2"));
        assert_eq!(
            decide(None, false, Some("ssh.github.com"), never),
            Some("2")
        );
        assert_eq!(decide(None, false, Some("notgithub.com"), || 1), Some("0"));
    }

    #[test]
    fn urls_name_their_host() {
        for (url, want) in [
            ("https://github.com/team/repo.git", Some("github.com")),
            ("https://bot:token@gitlab.com:443/x.git", Some("gitlab.com")),
            ("git://127.0.0.1:9418/hub.git", Some("127.0.0.1")),
            ("http://[::1]:8080/hub.git", Some("::1")),
            ("ssh://git@github.com:22/team/repo.git", Some("github.com")),
            ("git@github.com:team/repo.git", Some("github.com")),
            ("/srv/hub.git", None),
            ("../hub.git", None),
            ("file:///srv/hub.git", None),
        ] {
            assert_eq!(host(url).as_deref(), want, "{url}");
        }
    }
}
