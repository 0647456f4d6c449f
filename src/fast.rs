//! The fast start-up path: a read answered from the state cache
//! ([`crate::cache`]) without opening the repository through gix.
//!
//! A cache hit needs three things, all read here as plain files: where the
//! repository is, which ref holds the state (`loopx.ref`) with the few
//! settings a read takes ([`Settings`]), and the commit that ref names. The
//! first is found as git finds it, for the one layout this path fully
//! understands: a directory with a `.git` *directory* in it, owned by this
//! user, on the same filesystem as the starting directory. A start whose
//! own `.git` is that directory and whose path, as given, is the one the
//! settings name needs no walk and no resolving of links (the settings
//! were written with the resolved path, and the same directory has one).
//! Anything else stands aside for the slow path, which opens the
//! repository with gix and decides: a `.git` file (linked worktrees,
//! submodules), a `commondir` or `reftable` in the git dir, a bare
//! repository or a start inside a git dir, a repository owned by another
//! user (git's `safe.directory` check is the slow path's), a filesystem
//! boundary on the way up, and any variable that moves the repository, its
//! refs or its config (`GIT_DIR` and the others in [`STAND_ASIDE`]).
//!
//! The settings come from a file beside the cache (`settings`), written by
//! the slow path after gix read the config. It is keyed by this binary
//! ([`crate::cache::build_key`]), the worktree, the variables that choose
//! config files (every `GIT_*`, `HOME`, `XDG_CONFIG_HOME`) and the content of
//! every config file that was read or could have been read: the system and
//! installation files, `$XDG_CONFIG_HOME/git/config` (or
//! `~/.config/git/config`), `~/.gitconfig` (or `GIT_CONFIG_GLOBAL`), the
//! repository's `config` and `config.worktree`, and `HEAD`. A file that
//! appears, disappears or changes by one byte is a miss. A file that had
//! not changed for 3 s (`SETTLED`) when the settings were written is also
//! keyed by its inode, size and times, and while those stay the same its
//! content is not read again (any change moves its change time, which
//! cannot be set by hand). Config with an `[include]` or `[includeIf]`
//! section, or naming a ref storage, is never cached (an include's target
//! may not exist yet, or depend on the branch): such a repository always
//! takes the slow path.
//!
//! The ref is read from its loose file, else from `packed-refs`; a
//! symbolic ref, anything but an object id, or no ref at all is a miss. No
//! object is read, so replace refs play no part (the cache holds the state
//! as the slow path read it, without them). Everything that writes opens
//! the repository as before.

use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::cache::{Header, read_file, read_regular};
use crate::config::{Config, Settings};
use crate::model::State;
use crate::store::{Oid, Store, Tip};

/// The first line of the settings file.
const MAGIC: &str = "loopx-settings";

/// Variables that move the repository, its refs, its objects or its
/// config past the files the settings are keyed by: when one is set the
/// fast path stands aside.
pub const STAND_ASIDE: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
    "GIT_NAMESPACE",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_QUARANTINE_PATH",
    "GIT_REPLACE_REF_BASE",
    "GIT_NO_REPLACE_OBJECTS",
];

pub use crate::env::keyed_var;

/// A repository the fast path understands, with its settings.
#[derive(Debug)]
pub struct Fast {
    git_dir: PathBuf,
    state_ref: String,
    settings: Settings,
}

/// What the settings file holds after its key.
#[derive(serde::Serialize, serde::Deserialize)]
struct Body {
    state_ref: String,
    settings: Settings,
}

/// Where the repository is, as far as the fast path understands it.
struct Layout {
    workdir: PathBuf,
    git_dir: PathBuf,
}

impl Fast {
    /// The repository at or above `cwd` with its cached settings, or None
    /// when the fast path does not understand the layout or the settings
    /// file is missing or stale. `vars` are the keyed variables
    /// ([`keyed_var`]) of the environment.
    pub fn open(cwd: &Path, vars: &[(&str, &str)]) -> Option<Fast> {
        // `LOOPX_REF` names another state ref (a goal's) than the config.
        if vars.iter().any(|(k, _)| STAND_ASIDE.contains(k))
            || crate::env::Env::process().is_set(crate::store::REF_VAR)
        {
            return None;
        }
        // A start at the top of the work tree, named as the settings name
        // it (an agent in its clone, `-C` with the clone's path), needs no
        // walk: its `.git` is the one git finds from the resolved path, and
        // the settings' `workdir` check below is the proof that the path
        // is the resolved one. Anything else resolves the path and walks up.
        let quick = match level(cwd) {
            Level::Found(layout) => Self::with(layout, vars),
            Level::Aside => return None,
            Level::Absent => None,
        };
        quick.or_else(|| Self::with(discover(cwd)?, vars))
    }

    /// The fast path in `layout`, when its settings file holds.
    fn with(layout: Layout, vars: &[(&str, &str)]) -> Option<Fast> {
        let bytes = read_regular(&settings_path(&layout.git_dir))?;
        let body = check(&bytes, &layout, vars)?;
        let body: Body = serde_json::from_slice(body).ok()?;
        Some(Fast {
            git_dir: layout.git_dir,
            state_ref: body.state_ref,
            settings: body.settings,
        })
    }

    /// The git dir (also the common dir: linked worktrees stand aside).
    pub fn git_dir(&self) -> &Path {
        &self.git_dir
    }

    /// The state ref (`loopx.ref`, else `refs/loopx/state`).
    pub fn state_ref(&self) -> &str {
        &self.state_ref
    }

    /// The cached settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The state ref's lock file, where a writer holds it.
    pub fn lock_path(&self) -> PathBuf {
        self.git_dir.join(format!("{}.lock", self.state_ref))
    }

    /// The object id the state ref names: its loose file, else its line in
    /// `packed-refs`. None for a symbolic ref, anything unreadable or no
    /// ref at all (the slow path says why).
    pub fn tip(&self) -> Option<Oid> {
        let loose = self.git_dir.join(&self.state_ref);
        if let Some(bytes) = read_regular(&loose) {
            let text = std::str::from_utf8(&bytes).ok()?;
            let hex = text.strip_suffix('\n').unwrap_or(text);
            return object_id(hex);
        }
        // Not a plain file (a link: git's old symbolic refs), or none.
        match std::fs::symlink_metadata(&loose) {
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            _ => return None,
        }
        let packed = read_file(&self.git_dir.join("packed-refs")).ok()?;
        let packed = std::str::from_utf8(&packed).ok()?;
        packed
            .lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with('^'))
            .find_map(|l| {
                let (hex, name) = l.split_once(' ')?;
                (name == self.state_ref).then_some(hex)
            })
            .and_then(object_id)
    }

    /// The state at the state ref's commit from the cache, on a hit.
    pub fn cached(&self) -> Option<(Tip, State)> {
        crate::cache::read_in(&self.git_dir, &self.state_ref, self.tip()?)
    }

    /// The cache's head at the state ref's commit (the state with only its
    /// claimed todos once the cache is sharded), on a hit.
    pub fn cached_claims(&self) -> Option<crate::cache::Claims> {
        crate::cache::read_claims_in(&self.git_dir, &self.state_ref, self.tip()?)
    }
}

/// Only full hex ids (SHA-1 or SHA-256), lowercase as git writes them.
fn object_id(hex: &str) -> Option<Oid> {
    let plain = matches!(hex.len(), 40 | 64)
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    plain.then(|| Oid::from_hex(hex)).flatten()
}

/// What a directory's `.git` makes of it.
enum Level {
    /// A repository in the one layout the fast path understands.
    Found(Layout),
    /// A repository the slow path decides: a `.git` file or link, another
    /// owner, a linked worktree's or reftable's layout.
    Aside,
    /// No `.git` here.
    Absent,
}

/// What `dir/.git` is (see the module docs for the layout understood).
fn level(dir: &Path) -> Level {
    let dot = dir.join(".git");
    match std::fs::symlink_metadata(&dot) {
        Ok(m) if m.is_dir() => {
            let me = rustix::process::geteuid().as_raw();
            let owned = m.uid() == me && std::fs::metadata(dir).is_ok_and(|d| d.uid() == me);
            let is = |f: &str, dir: bool| {
                std::fs::metadata(dot.join(f)).is_ok_and(|m| m.is_dir() == dir)
            };
            let absent = |f: &str| matches!(std::fs::symlink_metadata(dot.join(f)), Err(e) if e.kind() == ErrorKind::NotFound);
            // What git needs of a git dir, and nothing that makes this one
            // another layout (a linked worktree's, reftable).
            let plain = is("objects", true)
                && is("refs", true)
                && (absent("packed-refs") || is("packed-refs", false))
                && absent("commondir")
                && absent("reftable");
            if owned && plain {
                Level::Found(Layout {
                    workdir: dir.to_path_buf(),
                    git_dir: dot,
                })
            } else {
                Level::Aside
            }
        }
        // A `.git` file or link: a linked worktree or a submodule.
        Ok(_) => Level::Aside,
        Err(e) if e.kind() == ErrorKind::NotFound => Level::Absent,
        Err(_) => Level::Aside,
    }
}

/// The repository at or above `cwd`, found as git finds it, in the one
/// layout the fast path understands (see the module docs).
fn discover(cwd: &Path) -> Option<Layout> {
    let start = std::fs::canonicalize(cwd).ok()?;
    let dev = std::fs::metadata(&start).ok()?.dev();
    let mut dir = start.as_path();
    loop {
        match level(dir) {
            Level::Found(layout) => return Some(layout),
            Level::Aside => return None,
            Level::Absent => {}
        }
        // Perhaps a git dir itself (a bare repository, or a start inside
        // `.git`): the slow path decides.
        if std::fs::symlink_metadata(dir.join("HEAD")).is_ok() {
            return None;
        }
        let parent = dir.parent()?;
        if std::fs::metadata(parent).ok()?.dev() != dev {
            return None;
        }
        dir = parent;
    }
}

fn settings_path(git_dir: &Path) -> PathBuf {
    crate::cache::dir_in(git_dir).join("settings")
}

/// The length of [`file_key`]'s answer.
const KEY_LEN: usize = 18;

/// The key line of one config file: whether it exists and the checksum of
/// its content. None when it cannot be told (unreadable, a directory).
fn file_key(path: &Path) -> Option<String> {
    match read_file(path) {
        Ok(bytes) => Some(format!("1 {:016x}", crate::cache::checksum(&bytes))),
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            Some("0 0000000000000000".to_owned())
        }
        Err(_) => None,
    }
}

/// The checksum of the keyed variables, in name order.
fn env_key(vars: &[(&str, &str)]) -> String {
    let mut sorted: Vec<&(&str, &str)> = vars.iter().collect();
    sorted.sort();
    let mut text = String::new();
    for (k, v) in sorted {
        text.push_str(k);
        text.push('=');
        text.push_str(v);
        text.push('\0');
    }
    format!("{:016x}", crate::cache::checksum(text.as_bytes()))
}

/// The body of a settings file whose every key line still holds, or None.
fn check<'a>(bytes: &'a [u8], layout: &Layout, vars: &[(&str, &str)]) -> Option<&'a [u8]> {
    let (mut header, body) = Header::read(bytes, MAGIC, crate::cache::build_key()?)?;
    if header.field("workdir")? != layout.workdir.to_str()? {
        return None;
    }
    if header.field("env")? != env_key(vars) {
        return None;
    }
    let sum = header.field("sum")?;
    if sum != format!("{:016x}", crate::cache::checksum(body)) {
        return None;
    }
    let mut files = 0;
    for line in header.rest().take_while(|l| !l.is_empty()) {
        let rest = line.strip_prefix("file ")?;
        // `<exists> <sum> <stat> <path>`: the path last, as it may hold
        // spaces.
        let (key, rest) = rest.split_at_checked(KEY_LEN)?;
        let (stat, path) = rest.strip_prefix(' ')?.split_once(' ')?;
        let path = Path::new(path);
        // A file that had settled when the key was written and still has
        // the same inode, size and times has the same content: no read.
        let same = stat != UNSETTLED && std::fs::metadata(path).is_ok_and(|m| stat_key(&m) == stat);
        if !same && file_key(path)? != key {
            return None;
        }
        files += 1;
    }
    (files > 0).then_some(body)
}

/// The stat field of a file line whose file is missing or had not settled.
const UNSETTLED: &str = "-";

/// How long before the settings are written a config file must have last
/// changed for its stat to stand for its content (git's "racily clean"
/// problem): a later change gets a later change time, even where the
/// filesystem's clock ticks coarsely.
const SETTLED: std::time::Duration = std::time::Duration::from_secs(3);

/// A file's identity and times (device, inode, size, modification and
/// change time to the nanosecond). The change time cannot be set by hand:
/// any write or rename to the file sets it to the current time.
fn stat_key(m: &std::fs::Metadata) -> String {
    format!(
        "{:x}.{:x}.{:x}.{}.{}.{}.{}",
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec()
    )
}

/// The stat field for `path` as a settings file is written now: its
/// [`stat_key`] when it last changed [`SETTLED`] ago or earlier, else
/// [`UNSETTLED`] (so its content is read each time).
fn settled_stat(path: &Path) -> String {
    let Ok(m) = std::fs::metadata(path) else {
        return UNSETTLED.to_owned();
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let changed = std::time::Duration::new(
        u64::try_from(m.ctime()).unwrap_or(u64::MAX),
        u32::try_from(m.ctime_nsec()).unwrap_or(0),
    );
    if changed + SETTLED <= now {
        stat_key(&m)
    } else {
        UNSETTLED.to_owned()
    }
}

/// Whether a config file's text could make the settings depend on more
/// than the listed files: an include (whose target may not exist yet, or
/// depend on the branch) or another ref storage.
fn unkeyable(text: &[u8]) -> bool {
    let text = String::from_utf8_lossy(text).to_ascii_lowercase();
    text.contains("refstorage")
        || text
            .lines()
            .any(|l| l.trim_start().starts_with('[') && l.contains("include"))
}

/// After the slow path opened `store` from `cwd` and read `config`: writes
/// the settings file the fast path reads, when the layout is one it
/// understands and the file there does not already hold. Best effort, and
/// removes a settings file it cannot replace, so a stale one is never left
/// to match by accident.
pub fn remember(cwd: &Path, vars: &[(&str, &str)], store: &Store, config: &Config) {
    if vars.iter().any(|(k, _)| STAND_ASIDE.contains(k))
        || crate::env::Env::process().is_set(crate::store::REF_VAR)
    {
        return;
    }
    let Some(layout) = discover(cwd) else { return };
    let path = settings_path(&layout.git_dir);
    if read_regular(&path).is_some_and(|b| check(&b, &layout, vars).is_some()) {
        return;
    }
    let same = |a: &Path, b: &Path| {
        std::fs::canonicalize(a)
            .ok()
            .zip(std::fs::canonicalize(b).ok())
            .is_some_and(|(a, b)| a == b)
    };
    let understood = same(store.git_dir(), &layout.git_dir)
        && same(store.common_dir(), &layout.git_dir)
        && store.workdir().is_some_and(|w| same(w, &layout.workdir));
    let written = understood && write(&path, &layout, vars, store, config).is_some();
    if !written {
        let _ = std::fs::remove_file(&path);
    }
}

fn write(
    path: &Path,
    layout: &Layout,
    vars: &[(&str, &str)],
    store: &Store,
    config: &Config,
) -> Option<()> {
    let key = crate::cache::build_key()?;
    let body = serde_json::to_vec(&Body {
        state_ref: store.state_ref().to_owned(),
        settings: config.settings(),
    })
    .ok()?;
    let mut head = format!(
        "{MAGIC}\nkey {key}\nworkdir {}\nenv {}\nsum {:016x}\n",
        layout.workdir.to_str()?,
        env_key(vars),
        crate::cache::checksum(&body)
    );
    let mut files = store.config_files();
    files.push(layout.git_dir.join("HEAD"));
    for file in files {
        // A relative path (`GIT_CONFIG_GLOBAL=x`) is read from wherever
        // loopx starts: not a file the key can name.
        if file.is_relative() {
            return None;
        }
        let name = file.to_str()?;
        if name.contains('\n') || name.is_empty() {
            return None;
        }
        if file.file_name() != Some(std::ffi::OsStr::new("HEAD"))
            && std::fs::read(&file).is_ok_and(|t| unkeyable(&t))
        {
            return None;
        }
        // The stat before the content: a change in between leaves a
        // stat that no longer matches, so the content is read next time.
        let stat = settled_stat(&file);
        head.push_str(&format!("file {} {stat} {name}\n", file_key(&file)?));
    }
    head.push('\n');
    crate::cache::write_file(path, &head, &body).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_object_ids_are_tips() {
        assert!(object_id(&"a".repeat(40)).is_some());
        assert!(object_id(&"0".repeat(64)).is_some());
        for bad in [
            "ref: refs/heads/main".to_owned(),
            "A".repeat(40),
            "a".repeat(39),
            String::new(),
            format!("{} ", "a".repeat(40)),
        ] {
            assert!(object_id(&bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn includes_and_ref_storage_are_never_keyed() {
        assert!(unkeyable(b"[include]\n\tpath = x\n"));
        assert!(unkeyable(b"  [includeIf \"onbranch:main\"]\n\tpath = x\n"));
        assert!(unkeyable(b"[extensions]\n\trefStorage = reftable\n"));
        assert!(!unkeyable(b"[loopx]\n\tgoal = api\n[user]\n\tname = A\n"));
    }

    #[test]
    fn the_env_key_ignores_order_but_not_values() {
        let a = env_key(&[("HOME", "/h"), ("GIT_CONFIG_GLOBAL", "/dev/null")]);
        let b = env_key(&[("GIT_CONFIG_GLOBAL", "/dev/null"), ("HOME", "/h")]);
        let c = env_key(&[("GIT_CONFIG_GLOBAL", "/dev/null"), ("HOME", "/h2")]);
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
