//! The local state cache: the live state at one commit of the state ref, in
//! one compact file under the git dir (`<git-common-dir>/loopx/cache/`), so
//! a read parses one file instead of every live TOML file of the tree.
//!
//! Derived and disposable (DESIGN §2): never part of the shared state,
//! never pushed, never trusted by `verify`, sync or the hub hook (they
//! re-derive from the tree through `tx::load_at`/`tx::snapshot`). It is
//! keyed by the commit id the ref points at, so the hot path resolves the
//! ref and reads this file without opening any object; a commit id is
//! immutable, so an entry can never be stale. The key also holds this
//! binary's version, the stored format, the cache layout and the
//! executable's size and modification time: a cache written by another
//! build (which may know other fields) is rebuilt, never read.
//!
//! The body is `serde_json` of [`State`] itself, so a field added to the
//! model flows through without a change here. Anything wrong with the file
//! (missing, zero-length, truncated, garbage, another key, a directory or a
//! special file in its place, unreadable) is a miss: the caller reads the
//! tree and writes a fresh cache. Writes go to a temporary file in the same
//! directory and are renamed over the old one, so a reader sees a whole
//! file or none, and two racing writers of the same commit write the same
//! bytes. Every failure to write is silent: the cache only ever saves time.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::model::{FORMAT, State};
use crate::store::{Oid, Store, Tip};

/// Bumped when the layout of the cache file changes.
const LAYOUT: u32 = 1;
/// The first line of every cache file.
const MAGIC: &str = "loopx-cache";
/// The size of the cache file this process last read.
static LAST_SIZE: AtomicUsize = AtomicUsize::new(0);

/// The folder of the cache under the git common dir.
pub fn dir(store: &Store) -> PathBuf {
    dir_in(store.common_dir())
}

/// [`dir`] under a given git common dir.
pub fn dir_in(common_dir: &Path) -> PathBuf {
    common_dir.join("loopx").join("cache")
}

/// The cache file of the state ref: one file per ref, so two refs used in
/// turn in one repository do not evict each other.
fn path(store: &Store) -> PathBuf {
    path_in(store.common_dir(), store.state_ref())
}

fn path_in(common_dir: &Path, state_ref: &str) -> PathBuf {
    let name: String = state_ref
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    dir_in(common_dir).join(format!("{name}.state"))
}

/// What a cache must have been written by: this binary, this format, this
/// layout. None when the executable cannot be identified: then nothing is
/// cached at all.
pub fn build_key() -> Option<&'static str> {
    static KEY: OnceLock<Option<String>> = OnceLock::new();
    KEY.get_or_init(|| {
        let exe = std::env::current_exe().ok()?;
        let meta = std::fs::metadata(exe).ok()?;
        let mtime = meta
            .modified()
            .ok()?
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?;
        Some(format!(
            "loopx {} format {FORMAT} layout {LAYOUT} exe {}:{}.{:09}",
            env!("CARGO_PKG_VERSION"),
            meta.len(),
            mtime.as_secs(),
            mtime.subsec_nanos()
        ))
    })
    .as_deref()
}

/// The header of a cache file: every line must match on read.
fn header(key: &str, tip: &Tip, body: &[u8]) -> String {
    format!(
        "{MAGIC}\nkey {key}\ncommit {}\ntree {}\ntick {}\nbytes {}\nsum {:016x}\n\n",
        tip.commit,
        tip.tree,
        tip.tick,
        body.len(),
        checksum(body)
    )
}

/// The state at `commit` from the cache, with its tree and tick; None on any
/// miss (see the module docs).
pub fn read(store: &Store, commit: Oid) -> Option<(Tip, State)> {
    read_in(store.common_dir(), store.state_ref(), commit)
}

/// [`read`] for the state ref `state_ref` of the repository whose git
/// common dir is `common_dir`, without opening it (`crate::fast`).
pub fn read_in(common_dir: &Path, state_ref: &str, commit: Oid) -> Option<(Tip, State)> {
    let key = build_key()?;
    let path = path_in(common_dir, state_ref);
    // Only a regular file: a FIFO in its place would block a read.
    if !std::fs::symlink_metadata(&path).ok()?.is_file() {
        return None;
    }
    let bytes = std::fs::read(&path).ok()?;
    LAST_SIZE.store(bytes.len(), Ordering::Relaxed);
    parse(key, commit, &bytes)
}

/// The header of a file this module or `crate::fast` writes: a magic line,
/// then `name value` lines in a fixed order, up to the first blank line.
pub struct Header<'a> {
    lines: std::str::Lines<'a>,
}

impl<'a> Header<'a> {
    /// Splits `bytes` into its header and its body, when the header starts
    /// with `magic` and then this build's `key`.
    pub fn read(bytes: &'a [u8], magic: &str, key: &str) -> Option<(Header<'a>, &'a [u8])> {
        let end = bytes.windows(2).position(|w| w == b"\n\n")? + 2;
        let head = std::str::from_utf8(&bytes[..end]).ok()?;
        let mut header = Header {
            lines: head.lines(),
        };
        if header.lines.next()? != magic || header.field("key")? != key {
            return None;
        }
        Some((header, &bytes[end..]))
    }

    /// The value of the next line, when that line is the field `name`.
    pub fn field(&mut self, name: &str) -> Option<&'a str> {
        self.lines
            .next()
            .and_then(|l| l.strip_prefix(name))
            .and_then(|l| l.strip_prefix(' '))
    }

    /// The header's remaining lines (the blank one that ends it included).
    pub fn rest(self) -> std::str::Lines<'a> {
        self.lines
    }
}

fn parse(key: &str, commit: Oid, bytes: &[u8]) -> Option<(Tip, State)> {
    let (mut header, body) = Header::read(bytes, MAGIC, key)?;
    if Oid::from_hex(header.field("commit")?)? != commit {
        return None;
    }
    let tree = Oid::from_hex(header.field("tree")?)?;
    let tick: u64 = header.field("tick")?.parse().ok()?;
    let len: usize = header.field("bytes")?.parse().ok()?;
    let sum = header.field("sum")?;
    let sum = if sum.len() == 16 {
        u64::from_str_radix(sum, 16).ok()?
    } else {
        return None;
    };
    if body.len() != len || checksum(body) != sum {
        return None;
    }
    let state: State = serde_json::from_slice(body).ok()?;
    Some((Tip { commit, tree, tick }, state))
}

/// A fast checksum of the body (not a cryptographic one: it catches a
/// damaged file, such as a flipped or zeroed block, not a forger, who could
/// as well move the ref): four independent multiply-rotate lanes over 8-byte
/// words, so it runs at memory speed.
pub fn checksum(bytes: &[u8]) -> u64 {
    const K: [u64; 4] = [
        0x9e37_79b9_7f4a_7c15,
        0xc2b2_ae3d_27d4_eb4f,
        0x1656_67b1_9e37_79f9,
        0x85eb_ca77_c2b2_ae63,
    ];
    let mut lanes = K;
    let mut blocks = bytes.chunks_exact(32);
    for block in &mut blocks {
        for (i, lane) in lanes.iter_mut().enumerate() {
            let w = u64::from_le_bytes(block[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
            *lane = (*lane ^ w).wrapping_mul(K[i]).rotate_left(29);
        }
    }
    let mut h = bytes.len() as u64;
    for lane in lanes {
        h = (h ^ lane).wrapping_mul(K[0]).rotate_left(31);
    }
    for &b in blocks.remainder() {
        h = (h ^ u64::from(b)).wrapping_mul(K[1]).rotate_left(23);
    }
    h ^ (h >> 32)
}

/// Writes the cache of `state` at `tip`, replacing the one there. Best
/// effort: a failure leaves the cache as it was (or absent).
pub fn write(store: &Store, tip: &Tip, state: &State) {
    let Some(key) = build_key() else { return };
    // Sized like the last cache read, so a large state is not copied
    // over and over as the buffer grows.
    let mut body = Vec::with_capacity(LAST_SIZE.load(Ordering::Relaxed) + 4096);
    if serde_json::to_writer(&mut body, state).is_err() {
        return;
    }
    let _ = write_file(&path(store), &header(key, tip, &body), &body);
}

/// The cache after a tick from `parent` to `tip` that changed the entities
/// `touched` (`tx`'s hook, so the cache can be updated in place of being
/// rewritten). Today it rewrites the file: the single JSON body has no
/// place to put one entity.
pub fn update(
    store: &Store,
    parent: Option<&Tip>,
    tip: &Tip,
    state: &State,
    touched: &crate::model::files::Touched,
) {
    let _ = (parent, touched);
    write(store, tip, state);
}

/// Writes `header` and `body` to `path` through a temporary file renamed
/// over it, so a reader sees a whole file or none.
pub fn write_file(path: &Path, header: &str, body: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().expect("the cache file has a folder");
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".state-")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    tmp.write_all(header.as_bytes())?;
    tmp.write_all(body)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
