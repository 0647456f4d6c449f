//! The local state cache: the live state at one commit of the state ref, in
//! a few compact files under the git dir
//! (`<git-common-dir>/loopx/cache/<ref>/`), so a read parses them instead of
//! every live TOML file of the tree.
//!
//! Derived and disposable (DESIGN §2): never part of the shared state,
//! never pushed, never trusted by `verify`, sync or the hub hook (they
//! re-derive from the tree through `tx::load_at`/`tx::snapshot`). It is not
//! the stored format either: its layout may change with any build. It is
//! keyed by the commit id the ref points at, so the hot path resolves the
//! ref and reads these files without opening any object; a commit id is
//! immutable, so an entry can never be stale. The key also holds this
//! binary's version, the stored format, the cache layout and the
//! executable's size and modification time: a cache written by another
//! build (which may know other fields) is rebuilt, never read.
//!
//! The layout. A `head` file holds the tip (commit, tree, tick) and the
//! state as `serde_json` of [`State`] itself (so a field added to the model
//! flows through without a change here). Below [`SHARD_FROM`] live todos
//! (an empty board) that is all. From there the head keeps only the todos
//! that have a claim
//! (live or expired: what `should-run` reads first, [`read_claims_in`]),
//! and every todo is kept in shards, `todos-00`, `todos-01`, … (about [`PER_SHARD`] todos each, by
//! the first byte of the id, so the shards in order are the todos in id
//! order). Every file's header names the commit it was written at; the
//! head lists, for each shard, that commit and the shard's checksum. A tick
//! ([`update`]) rewrites only the shards of the todos it touched and then
//! the head: an untouched shard keeps the commit it was written at, which
//! the new head names again (its todos are the same at both commits).
//!
//! Anything wrong with any file (missing, zero-length, truncated, garbage,
//! another key, a shard of another commit or with another checksum than
//! the head says, a todo in the wrong shard, a directory or a special file
//! in its place, unreadable) is a miss: the caller reads the tree and
//! writes a fresh cache. Each file is written to a temporary file in the
//! same directory and renamed over the old one, the shards before the head,
//! so a reader sees whole files; an update torn between files (a crash, or
//! a racing writer of another commit) leaves a head that names the old
//! commit, or a shard whose header or checksum disagrees with the head:
//! a miss, never a wrong answer. Every failure to write is silent: the
//! cache only ever saves time.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::model::files::Touched;
use crate::model::{AgentId, Entities, FORMAT, GoalId, State, Todo, TodoId};
use crate::op::board::{self, Counts};
use crate::op::turn::ready::{self, AgentReady, ReadyList};
use crate::store::{Oid, Store, Tip};
use crate::time::Timestamp;

/// Bumped when the layout of the cache files changes.
const LAYOUT: u32 = 5;
/// The first line of a head file.
const MAGIC: &str = "loopx-cache";
/// The first line of a shard of todos.
const SHARD_MAGIC: &str = "loopx-cache-todos";
/// The first line of the ready index (`crate::op::turn::ready`).
const READY_MAGIC: &str = "loopx-cache-ready";
/// Below this many live todos the head holds them all (no shards). Only
/// an empty board: from one todo on, every todo is in a shard and the head
/// keeps only the claimed ones, so `should-run` parses the head alone (or
/// with its agent's ready list) at any size. Until the sixth session this
/// was 1,024, and at 100 todos parsing the whole head was 60 % of
/// should-run's instructions (bench/results/history.md, "Sixth session:
/// static29").
pub const SHARD_FROM: usize = 1;
/// About this many todos a shard, when a full write picks the number (up
/// to 64 shards: from about 1,000 todos there are 64). Small, so a tick on
/// a named todo parses and writes a few todos whatever the size: at 100
/// todos (8 shards) a tick costs what it did when the head held every
/// todo, where 256 (one shard) cost 20 % more; a full read opens more
/// files for it (`todo list` +4.5 % instructions at 100 todos, +1.5 % at
/// 1,000). Measured in bench/results/history.md, "Sixth session: static29".
pub const PER_SHARD: usize = 16;
/// Tests' override of [`SHARD_FROM`] (with a quarter of it a shard), so a
/// small board is sharded: the variable of the CLI tests, a thread's
/// setting in unit tests.
pub const SHARD_VAR: &str = "LOOPX_CACHE_SHARD_FROM";

#[cfg(test)]
thread_local! {
    /// The unit tests' [`SHARD_VAR`].
    pub static SHARD_FROM_TEST: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// [`SHARD_FROM`] and [`PER_SHARD`], or the tests' override.
fn thresholds() -> (usize, usize) {
    #[cfg(test)]
    if let Some(from) = SHARD_FROM_TEST.with(|c| c.get()) {
        return (from, (from / 4).max(1));
    }
    static SET: OnceLock<Option<(usize, usize)>> = OnceLock::new();
    let set = SET.get_or_init(|| parse_override(crate::env::Env::process().get(SHARD_VAR)?));
    set.unwrap_or((SHARD_FROM, PER_SHARD))
}

/// [`SHARD_VAR`]'s value: `FROM` (a quarter of it a shard) or `FROM:PER`
/// (a shard of about `PER` todos, for measuring other sizes).
fn parse_override(value: &str) -> Option<(usize, usize)> {
    match value.split_once(':') {
        Some((from, per)) => Some((from.parse().ok()?, per.parse::<usize>().ok()?.max(1))),
        None => {
            let from: usize = value.parse().ok()?;
            Some((from, (from / 4).max(1)))
        }
    }
}
/// At most this many shards (each is a file a full read opens).
const MAX_SHARDS: usize = 64;

/// The folder of the cache under the git common dir.
pub fn dir(store: &Store) -> PathBuf {
    dir_in(store.common_dir())
}

/// [`dir`] under a given git common dir.
pub fn dir_in(common_dir: &Path) -> PathBuf {
    common_dir.join("loopx").join("cache")
}

/// The folder of the cache of the state ref: one per ref, so two refs
/// used in turn in one repository do not evict each other.
fn folder_in(common_dir: &Path, state_ref: &str) -> PathBuf {
    dir_in(common_dir).join(ref_name(state_ref))
}

fn ref_name(state_ref: &str) -> String {
    state_ref
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// The head file in a cache folder.
pub fn head_path(folder: &Path) -> PathBuf {
    folder.join("head")
}

/// The ready index's file in a cache folder.
pub fn ready_path(folder: &Path) -> PathBuf {
    folder.join("ready")
}

/// Shard `i`'s file in a cache folder.
pub fn shard_path(folder: &Path, i: usize) -> PathBuf {
    folder.join(format!("todos-{i:02x}"))
}

/// The cache folder of `store`'s state ref.
pub fn folder(store: &Store) -> PathBuf {
    folder_in(store.common_dir(), store.state_ref())
}

/// How many shards a full write of `todos` live todos makes.
pub fn shards_for(todos: usize) -> usize {
    let (from, per) = thresholds();
    if todos < from {
        0
    } else {
        todos.div_ceil(per).next_power_of_two().min(MAX_SHARDS)
    }
}

/// The shard of `n` that holds a todo: by the first byte of its id, so
/// shard order is id order.
pub fn shard_of(id: &TodoId, n: usize) -> usize {
    shard_of_hex(id.hex(), n).unwrap_or(0)
}

/// The shard of `n` that holds every todo whose hex part starts with
/// `hex`, when it has the two digits that decide it.
fn shard_of_hex(hex: &str, n: usize) -> Option<usize> {
    let first = u8::from_str_radix(hex.get(..2)?, 16).ok()?;
    Some(usize::from(first) * n / 256)
}

/// What a cache must have been written by: this binary, this format, this
/// layout. None when the executable cannot be identified: then nothing is
/// cached at all.
pub fn build_key() -> Option<&'static str> {
    static KEY: OnceLock<Option<String>> = OnceLock::new();
    KEY.get_or_init(|| {
        // The running executable's inode, through the kernel's link to
        // it: one call where resolving its path first took two.
        let meta = std::fs::metadata("/proc/self/exe").ok()?;
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

/// What the head says of one shard: the commit it was written at and its
/// body's checksum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ShardRef {
    commit: Oid,
    sum: u64,
}

/// The state at `commit` from the cache, with its tree and tick; None on any
/// miss (see the module docs).
pub fn read(store: &Store, commit: Oid) -> Option<(Tip, State)> {
    read_in(store.common_dir(), store.state_ref(), commit)
}

/// What the head alone holds: the state with, once sharded, only its
/// claimed todos (see [`read_claims_in`]).
pub struct Claims {
    pub tip: Tip,
    /// The state; while `complete` is false its todos are only those with
    /// a claim (live or expired), every other entity whole.
    pub state: State,
    /// Whether `state` holds every live todo (an unsharded cache).
    pub complete: bool,
    /// The board's counts of every live todo (a sharded head keeps them),
    /// exact at any time when each claim is as live as it was at
    /// [`CountsAt::at`] ([`Claims::counts_at`]).
    counts: Option<CountsAt>,
    /// Where the ready index of a sharded head is, and what the head says
    /// of it.
    ready: Option<(PathBuf, ShardRef)>,
}

impl Claims {
    /// The whole state (read from the tree, or an unsharded cache).
    pub fn whole(tip: Tip, state: State) -> Claims {
        Claims {
            tip,
            state,
            complete: true,
            counts: None,
            ready: None,
        }
    }

    /// `agent`'s ready list on `goal` from the index beside a sharded head
    /// (`crate::op::turn::ready`), when its file is whole and the one the
    /// head names; only that agent's part of it is parsed.
    pub fn ready_list(&self, agent: &AgentId, goal: &GoalId) -> Option<ReadyList> {
        self.ready_list_until(agent, goal, |_| false)
    }

    /// [`Claims::ready_list`] with its todos parsed only up to the first
    /// that `enough` accepts: a list that stops there reads as incomplete,
    /// so it answers [`ready::first_ready`] as the whole list does when
    /// `enough` is the test that takes a todo (`should-run` wants one).
    pub fn ready_list_until(
        &self,
        agent: &AgentId,
        goal: &GoalId,
        enough: impl FnMut(&Todo) -> bool,
    ) -> Option<ReadyList> {
        let (folder, want) = self.ready.as_ref()?;
        read_ready_list(folder, build_key()?, want, agent, goal, enough)
    }

    /// [`Claims::ready_list_until`] on several goals from one read of the
    /// index (`should-run` across an agent's goals): the lists by goal,
    /// each parsed up to the first todo `enough` accepts.
    pub fn ready_lists_until(
        &self,
        agent: &AgentId,
        goals: &[&GoalId],
        mut enough: impl FnMut(&Todo) -> bool,
    ) -> Option<BTreeMap<GoalId, ReadyList>> {
        let (folder, want) = self.ready.as_ref()?;
        let bytes = read_regular(&ready_path(folder))?;
        let (table, body) = parse_ready(build_key()?, &bytes, want)?;
        let (at, len) = table.get(agent.as_str())?;
        let part = body.get(*at..at.checked_add(*len)?)?;
        let (head, mut lines) = part_head(part)?;
        let mut out = BTreeMap::new();
        for (g, h) in head.goals {
            let n = h.todos;
            if !goals.contains(&&g) {
                for _ in 0..n {
                    lines.next()?;
                }
                continue;
            }
            let mut todos = Vec::new();
            let mut read = 0;
            while read < n {
                let line = lines.next()?;
                read += 1;
                let t: Todo = serde_json::from_slice(line).ok()?;
                let stop = enough(&t);
                todos.push(t);
                if stop {
                    break;
                }
            }
            for _ in read..n {
                lines.next()?;
            }
            let whole = todos.len() == n;
            out.insert(g, list_of(h, todos, whole));
        }
        goals.iter().all(|g| out.contains_key(*g)).then_some(out)
    }

    /// The board's counts of every live todo at `now`, when the head holds
    /// counts that hold then: every claim (the head holds them all) is
    /// live at `now` exactly when it was at the time they were counted, so
    /// every todo stands where it stood (readiness moves with time only
    /// through a lease's end).
    pub fn counts_at(&self, now: Timestamp) -> Option<Counts> {
        let c = self.counts.as_ref()?;
        let then = Timestamp::from_unix(c.at);
        let skew = self.state.meta.settings.clock_skew;
        self.state
            .todos
            .values()
            .all(|t| t.live_claim(now, skew).is_some() == t.live_claim(then, skew).is_some())
            .then(|| c.counts.clone())
    }
}

/// A sharded head's counts, and when (unix seconds) they were counted.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct CountsAt {
    at: i64,
    counts: Counts,
}

/// A sharded head's body: the state with its claimed todos, and the
/// board's counts of every todo.
#[derive(serde::Deserialize)]
struct HeadBody {
    state: State,
    counts: CountsAt,
}

/// [`HeadBody`] to write, borrowing the state.
#[derive(serde::Serialize)]
struct HeadBodyRef<'a> {
    state: &'a State,
    counts: &'a CountsAt,
}

/// A head file read: its folder, tip, the shards' table, the state it
/// holds (every todo when unsharded, else the claimed ones) and, when
/// sharded, the board's counts.
struct Head {
    folder: PathBuf,
    tip: Tip,
    shards: Vec<ShardRef>,
    ready: Option<ShardRef>,
    state: State,
    counts: Option<CountsAt>,
}

/// The head of the cache at `commit`.
fn read_head(common_dir: &Path, state_ref: &str, commit: Oid) -> Option<Head> {
    let key = build_key()?;
    let folder = folder_in(common_dir, state_ref);
    let bytes = read_regular(&head_path(&folder))?;
    let (tip, shards, ready, body) = parse_head(key, &bytes)?;
    if tip.commit != commit {
        return None;
    }
    let (state, counts) = if shards.is_empty() {
        (serde_json::from_slice(body).ok()?, None)
    } else {
        let b: HeadBody = serde_json::from_slice(body).ok()?;
        (b.state, Some(b.counts))
    };
    // A sharded head holds exactly the claimed todos; an unsharded one
    // every todo.
    if !shards.is_empty() && state.todos.values().any(|t| t.claim.is_none()) {
        return None;
    }
    Some(Head {
        folder,
        tip,
        shards,
        ready,
        state,
        counts,
    })
}

/// [`read_claims_in`] of `store`'s state ref.
pub fn read_claims(store: &Store, commit: Oid) -> Option<Claims> {
    read_claims_in(store.common_dir(), store.state_ref(), commit)
}

/// The state at `commit` from the cache's head alone, without a shard:
/// what `should-run` reads first (`crate::op::turn::decide_from_claims`
/// answers from the claimed todos, which are most often all it needs).
/// None on any miss, like [`read_in`].
pub fn read_claims_in(common_dir: &Path, state_ref: &str, commit: Oid) -> Option<Claims> {
    let head = read_head(common_dir, state_ref, commit)?;
    Some(Claims {
        tip: head.tip,
        state: head.state,
        complete: head.shards.is_empty(),
        counts: head.counts,
        ready: head.ready.map(|r| (head.folder, r)),
    })
}

/// [`read`] for the state ref `state_ref` of the repository whose git
/// common dir is `common_dir`, without opening it (`crate::fast`).
pub fn read_in(common_dir: &Path, state_ref: &str, commit: Oid) -> Option<(Tip, State)> {
    let key = build_key()?;
    let Head {
        folder,
        tip,
        shards,
        mut state,
        ..
    } = read_head(common_dir, state_ref, commit)?;
    if shards.is_empty() {
        return Some((tip, state));
    }
    let n = shards.len();
    let one = |i: usize| read_shard(&folder, key, i, &shards);
    // Two cores parse the shards of a large state in half the time: the
    // odd ones on a second thread.
    let parts: Vec<Option<Part>> =
        if n >= 2 && std::thread::available_parallelism().is_ok_and(|p| p.get() >= 2) {
            std::thread::scope(|s| {
                let odd = s.spawn(|| (1..n).step_by(2).map(one).collect::<Vec<_>>());
                let even: Vec<_> = (0..n).step_by(2).map(one).collect();
                let odd = odd.join().unwrap_or_default();
                let mut all = Vec::with_capacity(n);
                let mut odd = odd.into_iter();
                for e in even {
                    all.push(e);
                    all.extend(odd.next());
                }
                all
            })
        } else {
            (0..n).map(one).collect()
        };
    if parts.len() != n {
        return None;
    }
    // The shards in order hold the todos in id order (see `shard_of`).
    let total = parts.iter().flatten().map(Vec::len).sum();
    let mut todos: Vec<(TodoId, Box<Todo>)> = Vec::with_capacity(total);
    for part in parts {
        todos.extend(part?);
    }
    // Built from sorted entries in bulk: full nodes.
    let todos: BTreeMap<TodoId, Box<Todo>> = todos.into_iter().collect();
    // The head's claimed todos are the shards' ones, the same.
    let claimed = todos.values().filter(|t| t.claim.is_some());
    if !claimed.map(|t| &**t).eq(state.todos.values()) {
        return None;
    }
    state.todos = Entities::from_boxed(todos);
    Some((tip, state))
}

/// [`read_part_in`] of `store`'s state ref.
pub fn read_part(store: &Store, commit: Oid, typed: &[&str]) -> Option<(Tip, State)> {
    read_part_in(store.common_dir(), store.state_ref(), commit, typed)
}

/// The state at `commit` for a tick on the todos the user typed (ids or
/// prefixes): the head, and only the shards that hold those todos and the
/// todos they wait for (`after`). Its todo map is partial
/// ([`Entities::partial`]): it holds every claimed todo (the head's) and
/// every todo of the shards read, and marks any read that could need
/// another; the tick then reads the whole state (`crate::tx`). An
/// unsharded head is the whole state. None on any miss, like [`read_in`],
/// and when a typed prefix is too short to name its shard.
pub fn read_part_in(
    common_dir: &Path,
    state_ref: &str,
    commit: Oid,
    typed: &[&str],
) -> Option<(Tip, State)> {
    let key = build_key()?;
    let Head {
        folder,
        tip,
        shards,
        mut state,
        counts,
        ..
    } = read_head(common_dir, state_ref, commit)?;
    if shards.is_empty() {
        return Some((tip, state));
    }
    let n = shards.len();
    let c = &counts.as_ref()?.counts;
    let total = c.open + c.waiting + c.claimed + c.blocked + c.deferred + c.done;
    let mut prefixes = Vec::with_capacity(typed.len());
    for t in typed {
        prefixes.push(crate::model::id::prefix_of(TodoId::PREFIX, TodoId::KIND, t).ok()?);
    }
    let mut want: Vec<usize> = Vec::new();
    for p in &prefixes {
        want.push(shard_of_hex(p, n)?);
    }
    let mut loaded: Vec<usize> = Vec::new();
    let mut todos: BTreeMap<TodoId, Box<Todo>> = BTreeMap::new();
    // Two rounds: the named todos' shards, then those of what they wait for.
    for round in 0..2 {
        want.sort_unstable();
        want.dedup();
        for &i in &want {
            if !loaded.contains(&i) {
                todos.extend(read_shard(&folder, key, i, &shards)?);
                loaded.push(i);
            }
        }
        if round == 0 {
            let named = todos
                .values()
                .filter(|t| prefixes.iter().any(|p| t.id.hex().starts_with(p.as_str())));
            want.extend(named.flat_map(|t| t.after.iter().map(|a| shard_of(a, n))));
        }
    }
    // The shards read and the head agree on the claimed todos.
    let claimed = state.todos.iter_held();
    for (id, t) in claimed {
        if loaded.contains(&shard_of(id, n)) && todos.get(id).map(|b| &**b) != Some(t) {
            return None;
        }
    }
    for (id, t) in &todos {
        if t.claim.is_some() && state.todos.get(id) != Some(&**t) {
            return None;
        }
    }
    for (id, t) in state.todos.iter_held() {
        todos
            .entry(id.clone())
            .or_insert_with(|| Box::new(t.clone()));
    }
    if todos.len() > total {
        return None;
    }
    state.todos = Entities::partial(todos, total, move |prefix| {
        shard_of_hex(prefix, n).is_some_and(|i| loaded.contains(&i))
    });
    Some((tip, state))
}

/// One shard's todos, boxed as the state's map holds them.
type Part = Vec<(TodoId, Box<Todo>)>;

/// The todos of shard `i` of the head's table `shards`, when its file is
/// whole, is the one the head names, and holds only todos of that shard
/// in strictly increasing id order (so none is misplaced or counted twice).
fn read_shard(folder: &Path, key: &str, i: usize, shards: &[ShardRef]) -> Option<Part> {
    let n = shards.len();
    let bytes = read_regular(&shard_path(folder, i))?;
    let body = parse_shard(key, &bytes, i, n, &shards[i])?;
    let part: Vec<Todo> = serde_json::from_slice(body).ok()?;
    drop(bytes);
    let placed =
        part.iter().all(|t| shard_of(&t.id, n) == i) && part.windows(2).all(|w| w[0].id < w[1].id);
    // Boxed shard by shard, so only one shard's todos are ever held twice.
    placed.then(|| {
        part.into_iter()
            .map(|t| (t.id.clone(), Box::new(t)))
            .collect()
    })
}

/// A regular file's bytes (never a FIFO's, which would block a read, nor
/// a symbolic link's target): opened without following a link and without
/// blocking, then read as [`read_file`] reads. For the files this module
/// and `crate::fast` write and check.
pub fn read_regular(path: &Path) -> Option<Vec<u8>> {
    use std::os::unix::fs::OpenOptionsExt;
    let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    // Read to the size fstat gave: a buffer of a guessed size would be
    // zeroed by the allocator, touching pages a start-up need not.
    read_sized(file, meta.len()).ok()
}

/// A file's bytes, as `std::fs::read` gives them, in one system call
/// fewer for a regular file: open, fstat, one read, close. The start-up
/// path reads a dozen small files, and on a virtual machine a call costs
/// some microseconds.
pub fn read_file(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut file, &mut bytes)?;
        return Ok(bytes);
    }
    read_sized(file, meta.len())
}

/// Reads a regular file that fstat said is `len` bytes long. A read that
/// returns less than asked, once `len` bytes are in, is the end (a regular
/// file's reads are short only there), so the extra read that
/// `read_to_end` makes to see the end is saved; a file that grew since
/// fstat is read to its new end, and one that says it is empty (as
/// `/proc` files do) is read until a read returns nothing.
fn read_sized(mut file: std::fs::File, len: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let len = usize::try_from(len).map_err(std::io::Error::other)?;
    let mut bytes = vec![0u8; len + 1];
    let mut filled = 0;
    loop {
        if filled == bytes.len() {
            bytes.resize(bytes.len() * 2, 0);
        }
        let n = match file.read(&mut bytes[filled..]) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let short = filled + n < bytes.len();
        filled += n;
        if n == 0 || (short && len > 0 && filled >= len) {
            break;
        }
    }
    bytes.truncate(filled);
    Ok(bytes)
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

/// A checksum field: 16 lowercase hex digits.
fn sum_field(text: &str) -> Option<u64> {
    (text.len() == 16)
        .then(|| u64::from_str_radix(text, 16).ok())
        .flatten()
}

/// The body's length and checksum from the header's next two fields,
/// checked against the body.
fn check_body(header: &mut Header<'_>, body: &[u8]) -> Option<u64> {
    let len: usize = header.field("bytes")?.parse().ok()?;
    let sum = sum_field(header.field("sum")?)?;
    (body.len() == len && checksum(body) == sum).then_some(sum)
}

/// What a head file holds: the tip, the shards' table, the ready index's
/// line (sharded heads only) and the body.
type HeadParts<'a> = (Tip, Vec<ShardRef>, Option<ShardRef>, &'a [u8]);

/// A `name <commit> <sum>` line of a head's header.
fn file_ref(line: Option<&str>, name: &str) -> Option<ShardRef> {
    let mut words = line?.strip_prefix(name)?.strip_prefix(' ')?.split(' ');
    let commit = Oid::from_hex(words.next()?)?;
    let sum = sum_field(words.next()?)?;
    words.next().is_none().then_some(ShardRef { commit, sum })
}

/// A head file's parts, when whole.
fn parse_head<'a>(key: &str, bytes: &'a [u8]) -> Option<HeadParts<'a>> {
    let (mut header, body) = Header::read(bytes, MAGIC, key)?;
    let commit = Oid::from_hex(header.field("commit")?)?;
    let tree = Oid::from_hex(header.field("tree")?)?;
    let tick: u64 = header.field("tick")?.parse().ok()?;
    check_body(&mut header, body)?;
    let n: usize = header.field("shards")?.parse().ok()?;
    if n > MAX_SHARDS {
        return None;
    }
    let mut shards = Vec::with_capacity(n);
    let mut rest = header.rest();
    for i in 0..n {
        let line = rest.next()?.strip_prefix("shard ")?;
        let mut words = line.split(' ');
        if words.next()? != format!("{i:02x}") {
            return None;
        }
        let commit = Oid::from_hex(words.next()?)?;
        let sum = sum_field(words.next()?)?;
        if words.next().is_some() {
            return None;
        }
        shards.push(ShardRef { commit, sum });
    }
    let ready = if n > 0 {
        Some(file_ref(rest.next(), "ready")?)
    } else {
        None
    };
    if rest.next() != Some("") {
        return None;
    }
    Some((Tip { commit, tree, tick }, shards, ready, body))
}

/// The body of shard `i` of `n`, when its file is whole and is the one the
/// head names (`want`).
fn parse_shard<'a>(
    key: &str,
    bytes: &'a [u8],
    i: usize,
    n: usize,
    want: &ShardRef,
) -> Option<&'a [u8]> {
    let (mut header, body) = Header::read(bytes, SHARD_MAGIC, key)?;
    if header.field("shard")? != format!("{i:02x} of {n}") {
        return None;
    }
    if Oid::from_hex(header.field("commit")?)? != want.commit {
        return None;
    }
    let sum = check_body(&mut header, body)?;
    (sum == want.sum && header.rest().next() == Some("")).then_some(body)
}

/// Where each agent's part of the ready index is in its body: byte offset
/// and length.
type ReadyTable<'a> = BTreeMap<&'a str, (usize, usize)>;

/// The ready index's table and body, when its file is whole and is the one
/// the head names (`want`).
fn parse_ready<'a>(
    key: &str,
    bytes: &'a [u8],
    want: &ShardRef,
) -> Option<(ReadyTable<'a>, &'a [u8])> {
    let (mut header, body) = Header::read(bytes, READY_MAGIC, key)?;
    if Oid::from_hex(header.field("commit")?)? != want.commit {
        return None;
    }
    if check_body(&mut header, body)? != want.sum {
        return None;
    }
    let n: usize = header.field("agents")?.parse().ok()?;
    let mut rest = header.rest();
    let mut table = ReadyTable::new();
    for _ in 0..n {
        let mut words = rest.next()?.strip_prefix("agent ")?.split(' ');
        let (agent, at, len) = (words.next()?, words.next()?, words.next()?);
        if words.next().is_some() {
            return None;
        }
        table.insert(agent, (at.parse().ok()?, len.parse().ok()?));
    }
    (rest.next() == Some("")).then_some((table, body))
}

/// `agent`'s ready list on `goal` from the ready index the head names
/// (`want`): only that agent's part of the file is parsed, and of its
/// todos only those up to the first that `enough` accepts (all of them
/// when it accepts none).
fn read_ready_list(
    folder: &Path,
    key: &str,
    want: &ShardRef,
    agent: &AgentId,
    goal: &GoalId,
    enough: impl FnMut(&Todo) -> bool,
) -> Option<ReadyList> {
    let bytes = read_regular(&ready_path(folder))?;
    let (table, body) = parse_ready(key, &bytes, want)?;
    let (at, len) = table.get(agent.as_str())?;
    let part = body.get(*at..at.checked_add(*len)?)?;
    part_list(part, goal, enough)
}

/// An agent's part of the ready index: a line of JSON with its
/// capabilities and, for each goal in order, its list's flags and how many
/// todos it holds ([`PartHead`]), then each list's todos, a line of JSON
/// each (compact JSON holds no newline), so a reader parses the todos it
/// needs and stops.
#[derive(serde::Serialize, serde::Deserialize)]
struct PartHead {
    capabilities: Vec<String>,
    goals: BTreeMap<GoalId, ListHead>,
}

/// A list's flags in a [`PartHead`], and how many todo lines follow.
#[derive(serde::Serialize, serde::Deserialize)]
struct ListHead {
    complete: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    unchanged: Option<ready::Unchanged>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    nothing: Option<ready::Nothing>,
    todos: usize,
}

/// Appends `lists`, one agent's part of the ready index, to `body`.
fn write_part(body: &mut Vec<u8>, lists: &AgentReady) -> serde_json::Result<()> {
    let head = PartHead {
        capabilities: lists.capabilities.clone(),
        goals: lists
            .goals
            .iter()
            .map(|(goal, list)| {
                let head = ListHead {
                    complete: list.complete,
                    unchanged: list.unchanged.clone(),
                    nothing: list.nothing.clone(),
                    todos: list.todos.len(),
                };
                (goal.clone(), head)
            })
            .collect(),
    };
    serde_json::to_writer(&mut *body, &head)?;
    body.push(b'\n');
    for t in lists.goals.values().flat_map(|l| &l.todos) {
        serde_json::to_writer(&mut *body, t)?;
        body.push(b'\n');
    }
    Ok(())
}

/// The todo lines of an agent's part of the ready index, after its head.
type TodoLines<'a> = std::slice::Split<'a, u8, fn(&u8) -> bool>;

/// An agent's part of the ready index: its head and the todo lines after.
fn part_head(part: &[u8]) -> Option<(PartHead, TodoLines<'_>)> {
    let newline: fn(&u8) -> bool = |b| *b == b'\n';
    let mut lines = part.split(newline);
    let head: PartHead = serde_json::from_slice(lines.next()?).ok()?;
    Some((head, lines))
}

/// One agent's whole part of the ready index.
fn read_agent_part(part: &[u8]) -> Option<AgentReady> {
    let (head, mut lines) = part_head(part)?;
    let mut goals = BTreeMap::new();
    for (goal, h) in head.goals {
        let todos = (0..h.todos)
            .map(|_| serde_json::from_slice(lines.next()?).ok())
            .collect::<Option<Vec<Todo>>>()?;
        goals.insert(goal, list_of(h, todos, true));
    }
    // The last todo line ends with a newline: one empty piece, then none.
    (lines.next() == Some(&[][..]) && lines.next().is_none()).then_some(AgentReady {
        capabilities: head.capabilities,
        goals,
    })
}

/// The list on `goal` in an agent's part of the ready index, its todos
/// parsed up to the first that `enough` accepts.
fn part_list(
    part: &[u8],
    goal: &GoalId,
    mut enough: impl FnMut(&Todo) -> bool,
) -> Option<ReadyList> {
    let (head, mut lines) = part_head(part)?;
    let mut h = None;
    for (g, list) in head.goals {
        if &g == goal {
            h = Some(list);
            break;
        }
        for _ in 0..list.todos {
            lines.next()?;
        }
    }
    let h = h?;
    let mut todos = Vec::new();
    for _ in 0..h.todos {
        let t: Todo = serde_json::from_slice(lines.next()?).ok()?;
        let stop = enough(&t);
        todos.push(t);
        if stop {
            break;
        }
    }
    let whole = todos.len() == h.todos;
    Some(list_of(h, todos, whole))
}

/// A list from its flags and the todos read of it (`whole`: all of them;
/// else the list reads as incomplete, so it answers only as far as it
/// goes).
fn list_of(h: ListHead, todos: Vec<Todo>, whole: bool) -> ReadyList {
    ReadyList {
        todos,
        complete: h.complete && whole,
        unchanged: h.unchanged,
        nothing: h.nothing,
    }
}

/// `agent`'s ready list on `goal` at `commit` from the cache (what a tick
/// just wrote), reading the head's header but not its body; None on any
/// miss.
pub fn ready_list(store: &Store, commit: Oid, agent: &AgentId, goal: &GoalId) -> Option<ReadyList> {
    let key = build_key()?;
    let folder = folder(store);
    let bytes = read_regular(&head_path(&folder))?;
    let (tip, _, ready, _) = parse_head(key, &bytes)?;
    if tip.commit != commit {
        return None;
    }
    read_ready_list(&folder, key, &ready?, agent, goal, |_| false)
}

/// Repairs the cache's ready index after a reader fell back to the whole
/// read: when the head on disk names `tip`, is sharded and its ready
/// index is missing, damaged, or lacks an answer the whole state gives (a
/// tick on named todos carries the digests and the nothing-ready entries
/// but cannot make one), the index is ranked again from the whole `state`
/// at `tip` and the head written again naming it (its body as it was), so
/// the next reader answers from the head again. Silent and best
/// effort, like [`write()`]; a racing writer of another commit at worst
/// leaves a head or an index that names another commit: a miss, never a
/// wrong answer.
pub fn repair_ready(store: &Store, tip: &Tip, state: &State) {
    let Some(key) = build_key() else { return };
    let _ = repair_ready_in(&folder(store), key, tip, state);
}

fn repair_ready_in(folder: &Path, key: &str, tip: &Tip, state: &State) -> Option<()> {
    if state.todos.is_partial() {
        return None;
    }
    let bytes = read_regular(&head_path(folder))?;
    let (at, shards, ready, body) = parse_head(key, &bytes)?;
    if at.commit != tip.commit || shards.is_empty() || at.tree != tip.tree {
        return None;
    }
    let index = ready::build_all(state, ready::SIZES);
    // A whole index that already holds every answer the whole state
    // gives (the no-change digests, where nothing is ready) stays.
    let old = ready.and_then(|r| read_ready(folder, key, &r));
    if old.is_some_and(|old| ready::same_answers(&old, &index)) {
        return None;
    }
    let new = write_ready(folder, key, tip.commit, &index).ok()?;
    let header = head_header(key, &at, body, &shards, Some(&new));
    write_file(&head_path(folder), &header, body).ok()
}

/// The whole ready index, when its file is the one the head names.
fn read_ready(folder: &Path, key: &str, want: &ShardRef) -> Option<ready::Index> {
    let bytes = read_regular(&ready_path(folder))?;
    let (table, body) = parse_ready(key, &bytes, want)?;
    let mut index = ready::Index::new();
    for (agent, (at, len)) in table {
        let part = body.get(at..at.checked_add(len)?)?;
        index.insert(AgentId::new(agent).ok()?, read_agent_part(part)?);
    }
    Some(index)
}

/// Writes the ready index `index`, written at `commit`.
fn write_ready(
    folder: &Path,
    key: &str,
    commit: Oid,
    index: &ready::Index,
) -> std::io::Result<ShardRef> {
    let mut body = Vec::with_capacity(16 * 1024);
    let mut table = String::new();
    for (agent, lists) in index {
        let at = body.len();
        write_part(&mut body, lists).map_err(std::io::Error::other)?;
        table.push_str(&format!("agent {agent} {at} {}\n", body.len() - at));
    }
    let sum = checksum(&body);
    let header = format!(
        "{READY_MAGIC}\nkey {key}\ncommit {commit}\nbytes {}\nsum {sum:016x}\nagents {}\n{table}\n",
        body.len(),
        index.len()
    );
    write_file(&ready_path(folder), &header, &body)?;
    Ok(ShardRef { commit, sum })
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
/// effort: a failure leaves the cache as it was, or missing.
pub fn write(store: &Store, tip: &Tip, state: &State) {
    let Some(key) = build_key() else { return };
    let _ = write_all(&folder(store), key, tip, state);
    // The single file of the cache's first layout, if a build left one.
    let old = dir(store).join(format!("{}.state", ref_name(store.state_ref())));
    let _ = std::fs::remove_file(old);
}

/// The cache after a tick from `parent` to `tip` that changed the entities
/// `touched` (`tx`'s hook): when the head on disk is the parent's, only the
/// shards of the touched todos and the head are written; else the whole
/// cache. Best effort, like [`write()`].
pub fn update(store: &Store, parent: Option<&Tip>, tip: &Tip, state: &State, touched: &Touched) {
    update_from(store, parent, None, tip, state, touched)
}

/// [`update`], also given the state the tick was applied to: needed when
/// the states are partial ([`read_part_in`]), whose head's counts are
/// carried over (`carried_counts`) rather than counted again.
pub fn update_from(
    store: &Store,
    parent: Option<&Tip>,
    before: Option<&State>,
    tip: &Tip,
    state: &State,
    touched: &Touched,
) {
    let Some(key) = build_key() else { return };
    let folder = folder(store);
    if state.todos.is_partial() {
        if update_part(&folder, key, parent, before, tip, state, touched).is_none() {
            // Never a head that names the new commit with stale parts.
            let _ = std::fs::remove_file(head_path(&folder));
        }
        return;
    }
    let n = shards_for(state.todos.len());
    let table = parent.filter(|_| n > 0).and_then(|p| {
        let bytes = read_regular(&head_path(&folder))?;
        let (at, shards, ready, _) = parse_head(key, &bytes)?;
        (at.commit == p.commit && shards.len() == n).then_some((shards, ready))
    });
    let Some((mut table, ready)) = table else {
        let _ = write_all(&folder, key, tip, state);
        return;
    };
    let mut dirty: Vec<usize> = touched.todos.iter().map(|id| shard_of(id, n)).collect();
    dirty.sort_unstable();
    dirty.dedup();
    for i in dirty {
        match write_shard(&folder, key, i, n, tip.commit, state) {
            Ok(r) => table[i] = r,
            Err(_) => return,
        }
    }
    // The parent's index, kept by what the tick touched.
    let old = ready.and_then(|r| read_ready(&folder, key, &r));
    let index = ready::update_all(old, state, touched, ready::SIZES);
    let Ok(ready) = write_ready(&folder, key, tip.commit, &index) else {
        return;
    };
    let _ = write_head(&folder, key, tip, state, &table, Some(&ready));
}

/// [`update_from`] for a partial state: the touched shards (each one the
/// state holds whole) and the head, with the head's counts carried over
/// when the tick cannot have moved an untouched todo, else the whole state
/// made from the parent's shards and written in full. None when neither
/// can be done (the caller removes the head: the next read misses).
fn update_part(
    folder: &Path,
    key: &str,
    parent: Option<&Tip>,
    before: Option<&State>,
    tip: &Tip,
    state: &State,
    touched: &Touched,
) -> Option<()> {
    let (parent, before) = (parent?, before?);
    let bytes = read_regular(&head_path(folder))?;
    let (at, mut table, ready, body) = parse_head(key, &bytes)?;
    if at.commit != parent.commit {
        return None;
    }
    let n = table.len();
    let held = |id: &TodoId| state.todos.holds_prefix(&id.hex()[..2.min(id.hex().len())]);
    let carried = (n > 0 && shards_for(state.todos.len()) == n && touched.todos.iter().all(held))
        .then(|| {
            let old: HeadCounts = serde_json::from_slice(body).ok()?;
            let counts = carried_counts(before, state, touched, &old.counts)?;
            // The parent's ready index kept by the touched todos alone:
            // no todo became or stopped being done (`carried_counts`), so
            // no other todo's place in it moved. A list ranked again, or
            // any read of a todo the state lacks, marks the state short.
            let old = read_ready(folder, key, &ready?)?;
            let index = ready::update_touched(old, before, state, touched, ready::SIZES);
            (!state.todos.fell_short_of_whole()).then_some((counts, index))
        })
        .flatten();
    let Some((counts, index)) = carried else {
        let whole = complete(folder, key, &table, state, touched)?;
        return write_all(folder, key, tip, &whole).ok();
    };
    let mut dirty: Vec<usize> = touched.todos.iter().map(|id| shard_of(id, n)).collect();
    dirty.sort_unstable();
    dirty.dedup();
    for i in dirty {
        let todos = state
            .todos
            .iter_held()
            .map(|(_, t)| t)
            .filter(|t| shard_of(&t.id, n) == i);
        table[i] = write_shard_of(folder, key, i, n, tip.commit, todos).ok()?;
    }
    let ready = write_ready(folder, key, tip.commit, &index).ok()?;
    write_head_with(folder, key, tip, state, &table, Some(&ready), Some(counts)).ok()
}

/// A sharded head's counts only (the claimed todos skipped unbuilt).
#[derive(serde::Deserialize)]
struct HeadCounts {
    counts: CountsAt,
}

/// The board's counts after a tick from `before` to `after` (partial
/// states), from the parent head's `old` counts: only the touched and the
/// claimed todos are placed again (each at its own side's count time),
/// when nothing an untouched todo's place depends on can have moved: no
/// goal, gate or settings changed, no agent's status or capabilities, no
/// todo became or stopped being done (another may wait for it), and the
/// live scoped claims are the same. None otherwise, or when placing one of
/// them needed a todo the states lack.
fn carried_counts(
    before: &State,
    after: &State,
    touched: &Touched,
    old: &CountsAt,
) -> Option<CountsAt> {
    if touched.meta || !touched.goals.is_empty() || !touched.gates.is_empty() {
        return None;
    }
    for id in &touched.agents {
        let (a, b) = (before.agents.get(id), after.agents.get(id));
        let key = |x: Option<&crate::model::Agent>| x.map(|x| (x.status, x.capabilities.clone()));
        if key(a) != key(b) {
            return None;
        }
    }
    for id in &touched.todos {
        let done = |s: &State| {
            s.todos
                .get(id)
                .map(|t| t.status == crate::model::TodoStatus::Done)
        };
        match (done(before), done(after)) {
            (Some(a), Some(b)) if a == b => {}
            _ => return None,
        }
    }
    let t0 = Timestamp::from_unix(old.at);
    let t1 = counted_at(after);
    if board::live_scoped(before, t0) != board::live_scoped(after, t1) {
        return None;
    }
    // The todos placed again: every touched and every claimed one.
    let mut again: Vec<&TodoId> = touched.todos.iter().collect();
    let claimed = |s: &'_ State| {
        s.todos
            .iter_held()
            .filter(|(_, t)| t.claim.is_some())
            .map(|(k, _)| k.clone())
            .collect::<Vec<_>>()
    };
    let (cb, ca) = (claimed(before), claimed(after));
    again.extend(cb.iter().chain(ca.iter()));
    again.sort();
    again.dedup();
    let was = board::counts_of(
        before,
        again.iter().filter_map(|k| before.todos.get(*k)),
        t0,
    );
    let now = board::counts_of(after, again.iter().filter_map(|k| after.todos.get(*k)), t1);
    if before.todos.fell_short_of_whole() || after.todos.fell_short_of_whole() {
        return None;
    }
    Some(CountsAt {
        at: t1.unix(),
        counts: board::carry(&old.counts, &was, &now)?,
    })
}

/// When a sharded head's counts are taken: the newest claim's start
/// (every claim live at a later time was live then), or the epoch.
fn counted_at(state: &State) -> Timestamp {
    state
        .todos
        .iter_held()
        .filter_map(|(_, t)| t.claim.as_ref())
        .map(|c| c.since)
        .max()
        .unwrap_or(Timestamp::from_unix(0))
}

/// The whole state after a tick on a partial `state`: every shard of the
/// parent's cache it does not hold read, with the tick's touched todos as
/// `state` has them. None when a shard cannot be read.
fn complete(
    folder: &Path,
    key: &str,
    table: &[ShardRef],
    state: &State,
    touched: &Touched,
) -> Option<State> {
    let n = table.len();
    let mut todos: BTreeMap<TodoId, Box<Todo>> = BTreeMap::new();
    for i in 0..n {
        let part = read_shard(folder, key, i, table)?;
        todos.extend(part);
    }
    for id in &touched.todos {
        match state.todos.iter_held().find(|(k, _)| *k == id) {
            Some((_, t)) => todos.insert(id.clone(), Box::new(t.clone())),
            None => todos.remove(id),
        };
    }
    if todos.len() != state.todos.len() {
        return None;
    }
    let mut whole = state.clone();
    whole.todos = Entities::from_boxed(todos);
    Some(whole)
}

/// Every file of the cache of `state` at `tip`: the shards, then the head.
fn write_all(folder: &Path, key: &str, tip: &Tip, state: &State) -> std::io::Result<()> {
    let n = shards_for(state.todos.len());
    let mut table = Vec::with_capacity(n);
    for i in 0..n {
        table.push(write_shard(folder, key, i, n, tip.commit, state)?);
    }
    let ready = if n > 0 {
        let index = ready::build_all(state, ready::SIZES);
        Some(write_ready(folder, key, tip.commit, &index)?)
    } else {
        None
    };
    write_head(folder, key, tip, state, &table, ready.as_ref())?;
    // Shards of a larger count before: never read, so only tidied.
    for i in n..MAX_SHARDS {
        let path = shard_path(folder, i);
        if std::fs::symlink_metadata(&path).is_err() {
            break;
        }
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// Writes shard `i` of `n` of `state`'s todos, written at `commit`.
fn write_shard(
    folder: &Path,
    key: &str,
    i: usize,
    n: usize,
    commit: Oid,
    state: &State,
) -> std::io::Result<ShardRef> {
    let todos = state.todos.values().filter(|t| shard_of(&t.id, n) == i);
    write_shard_of(folder, key, i, n, commit, todos)
}

/// Writes shard `i` of `n` holding `todos` (in id order), written at
/// `commit`.
fn write_shard_of<'a>(
    folder: &Path,
    key: &str,
    i: usize,
    n: usize,
    commit: Oid,
    todos: impl Iterator<Item = &'a Todo>,
) -> std::io::Result<ShardRef> {
    let mut body = Vec::with_capacity(64 * 1024);
    body.push(b'[');
    for t in todos {
        if body.len() > 1 {
            body.push(b',');
        }
        serde_json::to_writer(&mut body, t).map_err(std::io::Error::other)?;
    }
    body.push(b']');
    let sum = checksum(&body);
    let header = format!(
        "{SHARD_MAGIC}\nkey {key}\nshard {i:02x} of {n}\ncommit {commit}\nbytes {}\nsum {sum:016x}\n\n",
        body.len()
    );
    write_file(&shard_path(folder, i), &header, &body)?;
    Ok(ShardRef { commit, sum })
}

/// Writes the head of `state` at `tip` with the shards' table `shards`
/// (empty: the head holds the todos too).
fn write_head(
    folder: &Path,
    key: &str,
    tip: &Tip,
    state: &State,
    shards: &[ShardRef],
    ready: Option<&ShardRef>,
) -> std::io::Result<()> {
    write_head_with(folder, key, tip, state, shards, ready, None)
}

/// [`write_head`], with the counts of a sharded head when already known
/// (else counted from `state`, which must then be whole).
fn write_head_with(
    folder: &Path,
    key: &str,
    tip: &Tip,
    state: &State,
    shards: &[ShardRef],
    ready: Option<&ShardRef>,
    counts: Option<CountsAt>,
) -> std::io::Result<()> {
    let body = if shards.is_empty() {
        serde_json::to_vec(state)
    } else {
        // A copy with only the claimed todos (what `should-run` reads
        // first, `read_claims_in`): it shares every other entity.
        let mut rest = state.clone();
        rest.todos = state
            .todos
            .iter_held()
            .filter(|(_, t)| t.claim.is_some())
            .map(|(k, t)| (k.clone(), t.clone()))
            .collect();
        // The board's counts (`Claims::counts_at`) as of the newest
        // claim's start: every claim live at a later time was live then,
        // and the same bytes from the same state, whenever written.
        let counts = counts.unwrap_or_else(|| {
            let at = counted_at(state);
            CountsAt {
                at: at.unix(),
                counts: board::counts(state, at),
            }
        });
        serde_json::to_vec(&HeadBodyRef {
            state: &rest,
            counts: &counts,
        })
    }
    .map_err(std::io::Error::other)?;
    let header = head_header(key, tip, &body, shards, ready);
    write_file(&head_path(folder), &header, &body)
}

/// The header of a head file whose body is `body`.
fn head_header(
    key: &str,
    tip: &Tip,
    body: &[u8],
    shards: &[ShardRef],
    ready: Option<&ShardRef>,
) -> String {
    let mut header = format!(
        "{MAGIC}\nkey {key}\ncommit {}\ntree {}\ntick {}\nbytes {}\nsum {:016x}\nshards {}\n",
        tip.commit,
        tip.tree,
        tip.tick,
        body.len(),
        checksum(body),
        shards.len()
    );
    for (i, r) in shards.iter().enumerate() {
        header.push_str(&format!("shard {i:02x} {} {:016x}\n", r.commit, r.sum));
    }
    if let Some(r) = ready {
        header.push_str(&format!("ready {} {:016x}\n", r.commit, r.sum));
    }
    header.push('\n');
    header
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_follow_id_order_and_cover_every_id() {
        for n in [1, 2, 4, 8, 64] {
            let mut last = 0;
            for b in 0..=255u8 {
                let id = TodoId::new(&format!("t-{b:02x}00")).unwrap();
                let i = shard_of(&id, n);
                assert!(i < n && i >= last, "{id} in shard {i} of {n}");
                last = i;
            }
            assert_eq!(last, n - 1, "every shard of {n} is used");
        }
    }

    #[test]
    fn only_an_empty_board_is_one_file() {
        assert_eq!(shards_for(0), 0);
        assert_eq!(shards_for(SHARD_FROM - 1), 0);
        assert_eq!(shards_for(SHARD_FROM), 1);
        assert_eq!(shards_for(PER_SHARD), 1);
        assert_eq!(shards_for(PER_SHARD + 1), 2);
        assert_eq!(shards_for(100), 8);
        assert_eq!(shards_for(1_000), 64);
        assert_eq!(shards_for(10_000), 64);
        assert_eq!(shards_for(1_000_000), MAX_SHARDS);
    }

    /// A todo of `goal` whose title holds the line breaks and quotes a
    /// line of the ready index must survive.
    fn todo(n: u32, goal: &str) -> Todo {
        let at = Timestamp::from_unix(1_767_225_600);
        Todo {
            id: TodoId::from_hex(&format!("{n:08x}")),
            goal: GoalId::new(goal).unwrap(),
            title: format!("todo {n}\nsecond line\r\n\"quoted\" \u{2028}"),
            priority: "P1".parse().unwrap(),
            status: crate::model::TodoStatus::Open,
            after: Vec::new(),
            capabilities: vec!["rust\n".to_owned()],
            scope: Vec::new(),
            validate: None,
            validate_from: None,
            epoch: 0,
            created_at: at,
            created_by: crate::model::Actor::Agent(AgentId::new("agent-a").unwrap()),
            updated_at: at,
            done_at: None,
            claim: None,
            notes: Vec::new(),
            last_evidence: None,
        }
    }

    #[test]
    fn an_agents_ready_lists_read_back_whole_and_short() {
        let list = |goal: &str, n: u32, complete: bool| ReadyList {
            todos: (0..n).map(|i| todo(i + 1, goal)).collect(),
            complete,
            unchanged: (goal == "api").then(|| ready::Unchanged {
                at: 5,
                digest: "d".to_owned(),
            }),
            nothing: None,
        };
        let lists = AgentReady {
            capabilities: vec!["rust".to_owned()],
            goals: [("api", 3, true), ("docs", 0, true), ("main", 4, false)]
                .into_iter()
                .map(|(g, n, c)| (GoalId::new(g).unwrap(), list(g, n, c)))
                .collect(),
        };
        let mut body = Vec::new();
        write_part(&mut body, &lists).unwrap();
        // One line for the head, one for each todo.
        assert_eq!(body.iter().filter(|b| **b == b'\n').count(), 1 + 3 + 4);
        assert_eq!(read_agent_part(&body), Some(lists.clone()));
        for (goal, whole) in &lists.goals {
            assert_eq!(
                part_list(&body, goal, |_| false).as_ref(),
                Some(whole),
                "{goal}"
            );
            for stop in 0..whole.todos.len() {
                let short = part_list(&body, goal, |t| t.id == whole.todos[stop].id).unwrap();
                assert_eq!(short.todos, whole.todos[..=stop], "{goal} to {stop}");
                let last = stop + 1 == whole.todos.len();
                assert_eq!(short.complete, whole.complete && last, "{goal} to {stop}");
                assert_eq!(short.unchanged, whole.unchanged, "{goal}");
            }
        }
        assert!(part_list(&body, &GoalId::new("other").unwrap(), |_| false).is_none());
        // A part cut short, or with a line more, is not read.
        assert!(read_agent_part(&body[..body.len() - 1]).is_none());
        let mut more = body.clone();
        more.extend_from_slice(b"{}\n");
        assert!(read_agent_part(&more).is_none());
    }

    #[test]
    fn the_override_takes_a_threshold_and_a_shard_size() {
        assert_eq!(parse_override("8"), Some((8, 2)));
        assert_eq!(parse_override("1"), Some((1, 1)));
        assert_eq!(parse_override("1:32"), Some((1, 32)));
        assert_eq!(parse_override("4:0"), Some((4, 1)));
        assert_eq!(parse_override("x"), None);
        assert_eq!(parse_override("4:x"), None);
    }
}
