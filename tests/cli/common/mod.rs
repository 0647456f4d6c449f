//! The one test harness: real `loopx` processes against real git
//! repositories in temp dirs.
//!
//! Every command runs with a cleared environment (so agent-runtime markers of
//! the shell running the tests cannot leak in), git config isolated from the
//! machine's, `LOOPX_NOW` advanced by a minute per command and `LOOPX_SEED`
//! fixed, so outputs are reproducible and can be asserted whole.

#![allow(dead_code)]

pub mod cdp;
pub mod daemon;
pub mod fixtures;
pub mod forge;
pub mod hubs;
pub mod keys;
pub mod nginx;
pub mod sshd;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use tempfile::TempDir;

/// This machine's clock, in seconds since the epoch: the latest time a
/// command may be given (LOOPX_NOW may not be ahead of it).
pub fn system_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_secs() as i64
}

/// 2024-12-02T09:00:00Z, the first command's clock.
pub const START: i64 = 1_733_130_000;

pub struct TestEnv {
    tmp: TempDir,
    /// The repository commands run in.
    pub repo: PathBuf,
    clock: Arc<AtomicI64>,
    pub seed: String,
    /// Variables every command of this environment gets ([`TestEnv::set_env`]).
    vars: Vec<(String, String)>,
}

impl TestEnv {
    /// A fresh non-bare repository whose user is Ada Lovelace.
    pub fn new() -> Self {
        let env = Self::empty();
        git_in(&env.repo, &["init", "-q", "-b", "main", "."]);
        env.git(&["config", "user.name", "Ada Lovelace"]);
        env.git(&["config", "user.email", "ada@example.com"]);
        env
    }

    /// A temp dir with an empty `repo` folder, no git repository yet.
    pub fn empty() -> Self {
        let tmp = tempfile::Builder::new()
            .prefix("loopx-test")
            .tempdir()
            .expect("temp dir");
        let repo = tmp.path().join("repo");
        std::fs::create_dir_all(&repo).expect("mkdir repo");
        std::fs::create_dir_all(tmp.path().join("home")).expect("mkdir home");
        TestEnv {
            tmp,
            repo,
            clock: Arc::new(AtomicI64::new(START)),
            seed: "test".to_owned(),
            vars: Vec::new(),
        }
    }

    /// Gives every later command of this environment (and its spawners'
    /// commands) the variable `name`.
    pub fn set_env(&mut self, name: &str, value: &str) {
        self.vars.push((name.to_owned(), value.to_owned()));
    }

    /// A repository with a state, goal `main`, and agents `agent-a`, `agent-b`.
    pub fn with_board() -> Self {
        let env = Self::new();
        env.loopx(&["init", "--goal", "main", "--objective", "Ship the parser"])
            .ok();
        env.loopx(&["agent", "register", "agent-a"]).ok();
        env.loopx(&["agent", "register", "agent-b"]).ok();
        env
    }

    pub fn root(&self) -> &Path {
        self.tmp.path()
    }

    /// The time the next command will see, as RFC 3339.
    pub fn now(&self) -> String {
        rfc3339(self.clock.load(Ordering::SeqCst))
    }

    /// The time the next command will see, in seconds since the epoch.
    pub fn now_secs(&self) -> i64 {
        self.clock.load(Ordering::SeqCst)
    }

    /// Moves the clock forward by `secs` (on top of the minute per command).
    pub fn advance(&self, secs: i64) {
        self.clock.fetch_add(secs, Ordering::SeqCst);
    }

    /// A `loopx` command with the isolated environment, in the repository.
    pub fn command(&self) -> Command {
        let mut c = self.spawner().command();
        c.env("LOOPX_NOW", self.now()).env("LOOPX_SEED", &self.seed);
        self.advance(60);
        c
    }

    /// A handle that threads can use to start `loopx` processes at once
    /// (with random ids, all at the environment's current time: the clock
    /// does not move for them, so no machine sees another's ticks dated in
    /// its future).
    pub fn spawner(&self) -> Spawner {
        Spawner {
            root: self.tmp.path().to_path_buf(),
            repo: self.repo.clone(),
            clock: Arc::clone(&self.clock),
            vars: self.vars.clone(),
        }
    }

    /// Runs `loopx ARGS` as the repository's human.
    #[must_use]
    pub fn loopx(&self, args: &[&str]) -> Output {
        run(self.command().args(args))
    }

    /// Runs `loopx ARGS` as agent `agent` (through `LOOPX_AGENT`).
    #[must_use]
    pub fn agent(&self, agent: &str, args: &[&str]) -> Output {
        run(self.command().env("LOOPX_AGENT", agent).args(args))
    }

    /// Runs `git ARGS` in the repository and returns its stdout; panics on
    /// failure.
    pub fn git(&self, args: &[&str]) -> String {
        git_in(&self.repo, args)
    }

    /// The tip commit of the state ref, or None.
    pub fn tip(&self) -> Option<String> {
        let out = Command::new("git")
            .args(["rev-parse", "-q", "--verify", "refs/loopx/state"])
            .current_dir(&self.repo)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .expect("git runs");
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    /// Number of commits on the state ref.
    pub fn ticks(&self) -> usize {
        self.git(&["rev-list", "--count", "refs/loopx/state"])
            .trim()
            .parse()
            .expect("a count")
    }

    /// Adds a todo as the human and returns its id.
    pub fn add(&self, title: &str, extra: &[&str]) -> String {
        let mut args = vec!["todo", "add", title];
        args.extend_from_slice(extra);
        self.loopx(&args).ok().stdout.trim().to_owned()
    }

    /// Commits `bytes` at `path` onto the state ref with plain git plumbing,
    /// as someone editing the state by hand would; returns the new commit.
    pub fn commit_file(&self, path: &str, bytes: &[u8]) -> String {
        let blob = {
            let mut c = Command::new("git");
            isolate(&mut c, self.root());
            let mut child = c
                .args(["hash-object", "-w", "--stdin"])
                .current_dir(&self.repo)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .expect("git runs");
            use std::io::Write;
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(bytes)
                .expect("write");
            let out = child.wait_with_output().expect("git hash-object");
            String::from_utf8_lossy(&out.stdout).trim().to_owned()
        };
        let index = self.root().join("hand-index");
        // Dated by the harness's clock, as a command would be, so the next
        // tick is not older than it.
        let date = format!("{} +0000", self.clock.fetch_add(60, Ordering::SeqCst));
        let with_index = |args: &[&str]| {
            let mut c = Command::new("git");
            isolate(&mut c, self.root());
            let out = c
                .args(args)
                .current_dir(&self.repo)
                .env("GIT_INDEX_FILE", &index)
                .env("GIT_AUTHOR_NAME", "Hand Editor")
                .env("GIT_AUTHOR_EMAIL", "hand@example.com")
                .env("GIT_COMMITTER_NAME", "Hand Editor")
                .env("GIT_COMMITTER_EMAIL", "hand@example.com")
                .env("GIT_AUTHOR_DATE", &date)
                .env("GIT_COMMITTER_DATE", &date)
                .output()
                .expect("git runs");
            assert!(
                out.status.success(),
                "git {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).trim().to_owned()
        };
        with_index(&["read-tree", "refs/loopx/state"]);
        with_index(&[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("100644,{blob},{path}"),
        ]);
        let tree = with_index(&["write-tree"]);
        let commit = with_index(&[
            "commit-tree",
            &tree,
            "-p",
            "refs/loopx/state",
            "-m",
            "hand edit",
        ]);
        with_index(&["update-ref", "refs/loopx/state", &commit]);
        let _ = std::fs::remove_file(&index);
        commit
    }

    /// Replaces the temp dir path by `$TMP` and commit ids by `<commit>`.
    pub fn normalize(&self, text: &str) -> String {
        let tmp = self.tmp.path().to_string_lossy().into_owned();
        let mut out = text.replace(&tmp, "$TMP");
        // Long hex runs (commit and tree ids) vary with every format change.
        let mut result = String::new();
        let mut run = String::new();
        for c in out.drain(..) {
            if c.is_ascii_hexdigit() && !c.is_ascii_uppercase() {
                run.push(c);
            } else {
                flush_hex(&mut run, &mut result);
                result.push(c);
            }
        }
        flush_hex(&mut run, &mut result);
        result
    }
}

fn flush_hex(run: &mut String, out: &mut String) {
    if run.len() >= 40 {
        out.push_str("<commit>");
    } else {
        out.push_str(run);
    }
    run.clear();
}

/// Starts `loopx` processes from any thread.
#[derive(Clone)]
pub struct Spawner {
    root: PathBuf,
    repo: PathBuf,
    clock: Arc<AtomicI64>,
    vars: Vec<(String, String)>,
}

impl Spawner {
    pub fn command(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_loopx"));
        isolate(&mut c, &self.root);
        c.envs(self.vars.iter().map(|(k, v)| (k, v)));
        c.current_dir(&self.repo)
            .env("LOOPX_NOW", rfc3339(self.clock.load(Ordering::SeqCst)));
        c
    }
}

/// Says that an opt-in test did not run, and why, where a person running
/// plain `cargo test` sees it: straight to the process's stderr, which the
/// test harness does not capture (it captures only `eprintln!`).
pub fn skipped(why: std::fmt::Arguments) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{why}");
}

/// Marks every process the tests start (and, through inheritance, every
/// process those start): `.ci/run` fails if one is still running after the
/// suite.
pub const SUITE_MARK: (&str, &str) = ("LOOPX_TEST_SUITE", "1");

/// Clears the environment and points git's config away from the machine's.
pub fn isolate(c: &mut Command, tmp: &Path) {
    c.env_clear()
        .env(SUITE_MARK.0, SUITE_MARK.1)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", tmp.join("home"))
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("LANG", "C")
        .env("NO_COLOR", "1");
}

/// Runs git in `dir` with an isolated config; panics with its stderr on
/// failure.
pub fn git_in(dir: &Path, args: &[&str]) -> String {
    let home = dir
        .parent()
        .map_or_else(|| dir.to_path_buf(), |p| p.join("home"));
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("HOME", &home)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_DATE", "2024-12-02T09:00:00Z")
        .env("GIT_COMMITTER_DATE", "2024-12-02T09:00:00Z")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn rfc3339(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Howard Hinnant's days-to-civil algorithm, so the harness needs no clock crate.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// What a command did. The functions that run a command are `#[must_use]`:
/// check the status with `.ok()` or `.code(n)`.
#[derive(Debug, Clone)]
pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// Asserts exit 0 and returns self.
    #[track_caller]
    pub fn ok(self) -> Self {
        self.code(0)
    }

    /// Asserts the exit status.
    #[track_caller]
    pub fn code(self, want: i32) -> Self {
        assert_eq!(
            self.code, want,
            "exit status {} (wanted {want})\n--- stdout\n{}--- stderr\n{}",
            self.code, self.stdout, self.stderr
        );
        self
    }

    /// The `error.code` of a `--json` error document on stdout ("" when
    /// there is none).
    #[track_caller]
    pub fn error_code(&self) -> String {
        self.json()["error"]["code"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Parses stdout as one JSON document.
    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.stdout))
    }
}

#[must_use]
pub fn run(c: &mut Command) -> Output {
    let out = c.stdin(Stdio::null()).output().expect("loopx runs");
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs a command with `input` on its stdin (then closed), as agent
/// runtimes run their hooks.
#[must_use]
pub fn run_stdin(c: &mut Command, input: &[u8]) -> Output {
    use std::io::Write;
    let mut child = c
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("loopx runs");
    let mut stdin = child.stdin.take().expect("stdin");
    // A hook may answer without reading everything; a closed pipe is fine.
    let _ = stdin.write_all(input);
    drop(stdin);
    let out = child.wait_with_output().expect("loopx finishes");
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Asserts two texts are equal, showing a line diff when they are not.
#[track_caller]
pub fn assert_text(actual: &str, expected: &str) {
    if actual != expected {
        panic!(
            "text differs (- expected, + actual):\n{}\n--- actual, whole:\n{actual}",
            text_diff(expected, actual)
        );
    }
}

/// A line diff of two texts, `-` for lines only in `expected`, `+` for
/// lines only in `actual`.
pub fn text_diff(expected: &str, actual: &str) -> String {
    let diff = similar::TextDiff::from_lines(expected, actual);
    let mut shown = String::new();
    for change in diff.iter_all_changes() {
        let sign = match change.tag() {
            similar::ChangeTag::Delete => "-",
            similar::ChangeTag::Insert => "+",
            similar::ChangeTag::Equal => " ",
        };
        shown.push_str(&format!("{sign}{change}"));
        if change.missing_newline() {
            shown.push('\n');
        }
    }
    shown
}

/// Another machine of a team: a repository of its own in the environment's
/// temp dir, whose `loopx` commands share the environment's clock and seed.
pub struct Machine<'a> {
    env: &'a TestEnv,
    pub repo: PathBuf,
}

impl TestEnv {
    /// A bare repository `<tmp>/<name>`: the hub machines sync through.
    /// Returns its path as a string, ready for `git remote add`.
    pub fn hub(&self, name: &str) -> String {
        let path = self.root().join(name);
        std::fs::create_dir_all(&path).expect("mkdir hub");
        git_in(&path, &["init", "-q", "--bare", "."]);
        path.to_string_lossy().into_owned()
    }

    /// The environment's own repository, seen as a machine.
    pub fn machine(&self) -> Machine<'_> {
        Machine {
            env: self,
            repo: self.repo.clone(),
        }
    }

    /// `git clone <url>` into `<tmp>/<name>`, a machine whose human is
    /// named `<name>` (`<name>@example.com`).
    pub fn clone_machine(&self, name: &str, url: &str) -> Machine<'_> {
        git_in(self.root(), &["clone", "-q", url, name]);
        let m = Machine {
            env: self,
            repo: self.root().join(name),
        };
        m.git(&["config", "user.name", name]);
        m.git(&["config", "user.email", &format!("{name}@example.com")]);
        m
    }

    /// An existing repository under the temp dir, as a machine.
    pub fn machine_in(&self, repo: PathBuf) -> Machine<'_> {
        Machine { env: self, repo }
    }

    /// Like [`TestEnv::spawner`], for another repository.
    pub fn spawner_in(&self, repo: &Path) -> Spawner {
        Spawner {
            root: self.tmp.path().to_path_buf(),
            repo: repo.to_path_buf(),
            clock: Arc::clone(&self.clock),
            vars: self.vars.clone(),
        }
    }
}

impl Machine<'_> {
    /// A `loopx` command in this machine's repository, on the shared clock.
    pub fn command(&self) -> Command {
        let mut c = self.env.spawner_in(&self.repo).command();
        c.env("LOOPX_NOW", self.env.now())
            .env("LOOPX_SEED", &self.env.seed);
        self.env.advance(60);
        c
    }

    #[must_use]
    pub fn loopx(&self, args: &[&str]) -> Output {
        run(self.command().args(args))
    }

    #[must_use]
    pub fn agent(&self, agent: &str, args: &[&str]) -> Output {
        run(self.command().env("LOOPX_AGENT", agent).args(args))
    }

    /// Adds a todo as the machine's human and returns its id.
    pub fn add(&self, title: &str) -> String {
        self.loopx(&["todo", "add", title])
            .ok()
            .stdout
            .trim()
            .to_owned()
    }

    pub fn git(&self, args: &[&str]) -> String {
        git_in(&self.repo, args)
    }

    /// What `rev` names in this repository, or None.
    pub fn rev(&self, rev: &str) -> Option<String> {
        let mut c = Command::new("git");
        isolate(&mut c, self.env.root());
        let out = c
            .args(["rev-parse", "-q", "--verify", rev])
            .current_dir(&self.repo)
            .output()
            .expect("git runs");
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    /// The state ref's commit, or None.
    pub fn tip(&self) -> Option<String> {
        self.rev("refs/loopx/state")
    }

    /// The state ref's tree, or None.
    pub fn tree(&self) -> Option<String> {
        self.rev("refs/loopx/state^{tree}")
    }

    pub fn spawner(&self) -> Spawner {
        self.env.spawner_in(&self.repo)
    }

    /// The shared clock's time (without moving it).
    pub fn now(&self) -> String {
        self.env.now()
    }
}

/// The arguments of `loopx settle --turn TURN --todo TODO REST…`, for an
/// agent's command (`env.agent("agent-a", &settle(&tok, &t, &["--outcome",
/// "advanced"]))`).
pub fn settle<'a>(turn: &'a str, todo: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["settle", "--turn", turn, "--todo", todo];
    args.extend_from_slice(rest);
    args
}
