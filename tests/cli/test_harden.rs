//! Hardening: commands that stop on time and leave nothing running, output
//! that cannot fill memory, secrets that never reach the history, and
//! bounded input.
//!
//! The commands here are hostile on purpose (they fork, ignore TERM, close
//! their output, write a gigabyte). Each run is tagged with a marker in its
//! environment, which every process it starts inherits, so the test can
//! find whatever it left behind in /proc. A guard kills loopx if it runs far
//! past its command's deadline, so a regression fails instead of hanging
//! the suite; nothing here asserts how fast anything was.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Output, TestEnv, assert_text};

/// The processes whose environment holds `LOOPX_TEST_MARK=<mark>`.
pub(crate) fn tagged(mark: &str) -> Vec<u32> {
    let needle = format!("LOOPX_TEST_MARK={mark}");
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        // A zombie has an empty environ: it runs nothing any more.
        if environ.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()) {
            out.push(pid);
        }
    }
    out
}

/// Sends SIGKILL to `pids` (cleanup after a failure).
pub(crate) fn kill_all(pids: &[u32]) {
    for pid in pids {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
}

/// What a guarded run saw.
pub(crate) struct Guarded {
    pub(crate) out: Output,
    /// loopx's peak resident memory (VmHWM), in KiB, as last read.
    pub(crate) peak_kib: u64,
    /// Tagged processes still alive once loopx exited.
    pub(crate) left: Vec<u32>,
}

/// Runs `loopx ARGS` tagged with a fresh marker; kills everything tagged
/// and fails if loopx is still running after `guard`.
pub(crate) fn guarded(env: &TestEnv, args: &[&str], guard: Duration) -> Guarded {
    let mark = format!("{}-{}", std::process::id(), env.root().display()).replace('/', "_");
    let dir = env.root().join("out");
    std::fs::create_dir_all(&dir).expect("mkdir out");
    let stdout = dir.join("stdout");
    let stderr = dir.join("stderr");
    let mut child = env
        .command()
        .args(args)
        .env("LOOPX_TEST_MARK", &mark)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout).expect("stdout file"))
        .stderr(std::fs::File::create(&stderr).expect("stderr file"))
        .spawn()
        .expect("loopx runs");
    let started = Instant::now();
    let mut peak_kib = 0;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        let status_file = format!("/proc/{}/status", child.id());
        if let Ok(s) = std::fs::read_to_string(status_file)
            && let Some(kib) = s
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        {
            peak_kib = kib;
        }
        if started.elapsed() > guard {
            let _ = child.kill();
            let _ = child.wait();
            kill_all(&tagged(&mark));
            panic!("loopx {args:?} was still running after {guard:?}: its deadline did not hold");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let left = tagged(&mark);
    kill_all(&left);
    Guarded {
        out: Output {
            code: status.code().unwrap_or(-1),
            stdout: std::fs::read_to_string(&stdout).unwrap_or_default(),
            stderr: std::fs::read_to_string(&stderr).unwrap_or_default(),
        },
        peak_kib,
        left,
    }
}

/// `evidence run --timeout 2s --json -- ARGV` under a guard of a minute.
fn run_with_timeout(env: &TestEnv, argv: &[&str]) -> Guarded {
    let mut args = vec!["evidence", "run", "--timeout", "2s", "--json", "--"];
    args.extend_from_slice(argv);
    guarded(env, &args, Duration::from_secs(60))
}

#[test]
fn a_timeout_ends_the_whole_process_group() {
    let env = TestEnv::with_board();
    // A child that forks: the grandchild holds the output pipe open.
    let g = run_with_timeout(&env, &["sh", "-c", "echo started; sleep 100000 & wait"]);
    let v = g.out.clone().code(3).json();
    assert_eq!(v["evidence"]["run"]["timed_out"], true, "{v}");
    assert_eq!(v["evidence"]["run"]["output_tail"], "started");
    assert!(g.left.is_empty(), "left running: {:?}", g.left);

    // A child that ignores TERM (and so does the sleep it starts).
    let g = run_with_timeout(
        &env,
        &["sh", "-c", "trap '' TERM; sleep 100000; sleep 100000"],
    );
    assert_eq!(
        g.out.clone().code(3).json()["evidence"]["run"]["timed_out"],
        true
    );
    assert!(g.left.is_empty(), "left running: {:?}", g.left);

    // A child that closes its output and keeps running.
    let g = run_with_timeout(&env, &["sh", "-c", "exec >&- 2>&-; sleep 100000"]);
    assert_eq!(
        g.out.clone().code(3).json()["evidence"]["run"]["timed_out"],
        true
    );
    assert!(g.left.is_empty(), "left running: {:?}", g.left);

    // The record says so in words, in the human output too.
    let human = guarded(
        &env,
        &[
            "evidence",
            "run",
            "--timeout",
            "1s",
            "--",
            "sleep",
            "100000",
        ],
        Duration::from_secs(60),
    );
    assert!(human.left.is_empty());
    assert!(
        human.out.clone().code(3).stdout.contains("(timed out"),
        "{}",
        human.out.stdout
    );
}

#[test]
fn what_a_finished_command_leaves_in_its_group_is_ended() {
    let env = TestEnv::with_board();
    // The command exits at once and leaves a daemon-like child behind that
    // holds the pipe: the run ends with the command, and so does the child.
    let g = guarded(
        &env,
        &[
            "evidence",
            "run",
            "--json",
            "--",
            "sh",
            "-c",
            "sleep 100000 & echo done",
        ],
        Duration::from_secs(60),
    );
    let v = g.out.clone().ok().json();
    assert_eq!(v["evidence"]["run"]["exit"], 0);
    assert_eq!(v["evidence"]["run"]["output_tail"], "done");
    assert!(g.left.is_empty(), "left running: {:?}", g.left);
}

#[test]
fn a_gigabyte_of_output_streams_through_bounded_memory() {
    let env = TestEnv::with_board();
    const GIB: u64 = 1 << 30;
    let g = guarded(
        &env,
        &[
            "evidence",
            "run",
            "--json",
            "--",
            "head",
            "-c",
            &GIB.to_string(),
            "/dev/zero",
        ],
        Duration::from_secs(600),
    );
    let v = g.out.clone().ok().json();
    // The digest is of the whole gigabyte.
    let expected = {
        let out = Command::new("sh")
            .args(["-c", &format!("head -c {GIB} /dev/zero | sha256sum")])
            .output()
            .expect("sha256sum runs");
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .next()
            .expect("a digest")
            .to_owned()
    };
    assert_eq!(v["evidence"]["run"]["output_sha256"], expected.as_str());
    assert!(v["evidence"]["run"]["output_tail"].as_str().unwrap().len() <= 4096);
    // Holding the output would take over 1,048,576 KiB.
    assert!(
        g.peak_kib > 0 && g.peak_kib < 100 * 1024,
        "loopx peaked at {} KiB",
        g.peak_kib
    );
}

#[test]
fn secrets_are_redacted_in_argv_summary_subject_and_tail() {
    let env = TestEnv::with_board();
    let secret = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
    let script = "echo AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENGbPxRfiCY; printf 'password\thunter2\\n'; echo https://ada:pa55word@example.com/x; echo ok";
    let out = env
        .loopx(&[
            "evidence", "run", "--json", "--", "sh", "-c", script, "--token", secret,
        ])
        .ok();
    let v = out.json();
    let run = &v["evidence"]["run"];
    assert_text(
        run["output_tail"].as_str().unwrap(),
        "AWS_SECRET_ACCESS_KEY=[REDACTED]\npassword\t[REDACTED]\nhttps://ada:[REDACTED]@example.com/x\nok",
    );
    // The digest is of the redacted text: it confirms no guess.
    assert_eq!(run["output_redacted"], true);
    let redacted_digest = Command::new("sh")
        .args([
            "-c",
            "printf 'AWS_SECRET_ACCESS_KEY=[REDACTED]\\npassword\\t[REDACTED]\\nhttps://ada:[REDACTED]@example.com/x\\nok\\n' | sha256sum",
        ])
        .output()
        .expect("sha256sum");
    assert!(
        String::from_utf8_lossy(&redacted_digest.stdout)
            .starts_with(run["output_sha256"].as_str().unwrap()),
        "{run}"
    );
    let argv: Vec<&str> = run["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(argv[4], "[REDACTED]", "{argv:?}");
    assert!(run["argv_sha256"].as_str().is_some_and(|d| d.len() == 64));
    // Nothing of the secrets is anywhere in the history: op, files, subject.
    let history = env.git(&["log", "-p", "--format=%B", "refs/loopx/state"]);
    for s in [
        secret,
        "wJalrXUtnFEMIK7MDENGbPxRfiCY",
        "hunter2",
        "pa55word",
    ] {
        assert!(!history.contains(s), "{s} reached the history");
    }
    // An explicit summary is redacted too, and so is the subject made of it.
    env.loopx(&[
        "evidence",
        "run",
        "--summary",
        "deploy with token=s3cr3t-value",
        "--",
        "true",
    ])
    .ok();
    let subject = env.git(&["log", "-1", "--format=%s", "refs/loopx/state"]);
    assert!(subject.contains("token=[REDACTED]"), "{subject}");
    env.loopx(&[
        "evidence",
        "add",
        "--summary",
        "used password: pw-in-summary",
    ])
    .ok();
    let history = env.git(&["log", "-p", "--format=%B", "refs/loopx/state"]);
    assert!(!history.contains("s3cr3t-value") && !history.contains("pw-in-summary"));
}

#[test]
fn a_validation_with_a_secret_is_refused_and_one_via_the_environment_runs() {
    let env = TestEnv::with_board();
    let before = env.ticks();
    let out = env
        .loopx(&[
            "todo",
            "add",
            "Deploy",
            "--",
            "curl",
            "-H",
            "Authorization: Bearer abcdef123456",
            "https://example.com",
        ])
        .code(2);
    assert!(out.stderr.contains("secret"), "{}", out.stderr);
    assert!(out.stderr.contains("environment"), "{}", out.stderr);
    assert!(!out.stderr.contains("abcdef123456"), "{}", out.stderr);
    assert_eq!(env.ticks(), before);
    // The same check with the secret in the environment is fine, and its
    // recorded argv is exactly the todo's.
    let t = env.add("Check", &["--", "sh", "-c", "test -n \"$HOME\""]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let v = env
        .agent("agent-a", &["todo", "done", &t, "--json"])
        .ok()
        .json();
    assert_eq!(v["validation"]["argv"][2], "test -n \"$HOME\"");
    assert!(v["validation"].get("argv_sha256").is_none());
}

#[test]
fn limits_refuse_oversized_and_multi_line_input_with_exit_2() {
    let env = TestEnv::with_board();
    let before = env.ticks();
    let long = "x".repeat(301);
    let out = env.loopx(&["todo", "add", &long]).code(2);
    assert!(out.stderr.contains("limit is 300"), "{}", out.stderr);
    let out = env
        .loopx(&["todo", "add", "Title\nLoopx-Human: Ada <ada@example.com>"])
        .code(2);
    assert!(out.stderr.contains("one line"), "{}", out.stderr);
    let question = "q".repeat(2001);
    env.loopx(&["gate", "open", "--question", &question])
        .code(2);
    env.loopx(&["gate", "open", "--question", "Ship?\nnow"])
        .code(2);
    let note = "n".repeat(64 * 1024 + 1);
    let out = env.loopx(&["todo", "add", "Fine", "--note", &note]).code(2);
    assert!(out.stderr.contains("64 KiB"), "{}", out.stderr);
    assert_eq!(env.ticks(), before, "a refusal changed nothing");
    // Notes may have many lines; a todo grows note by note up to the
    // file limit, and the note that would pass it is refused.
    let t = env.add("Grows", &["--note", "line one\nline two"]);
    let big = "b".repeat(60 * 1024);
    for _ in 0..4 {
        env.loopx(&["todo", "update", &t, "--note", &big]).ok();
    }
    let out = env.loopx(&["todo", "update", &t, "--note", &big]).code(2);
    assert!(out.stderr.contains("256 KiB"), "{}", out.stderr);
}

/// What a hostile agent writes to reach a person's terminal: erase the
/// line, write the clipboard (OSC 52), reverse what follows (bidi).
const HOSTILE: &str = "publish\x1b[2K\x1b]52;c;ZXZpbA==\x07\u{202e}gnp.exe";
/// A note may span lines, but a carriage return may not rewrite one.
const HOSTILE_NOTE: &str = "first line\r(no gates waiting on a human)\nsecond \x1b[2K line";

fn assert_terminal_safe(what: &str, out: &Output) {
    for (stream, text) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        let bad: Vec<char> = text
            .chars()
            .filter(|c| {
                (c.is_control() && *c != '\n' && *c != '\t')
                    || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
            })
            .collect();
        assert!(
            bad.is_empty(),
            "`loopx {what}` wrote {bad:?} to {stream}:\n{text}"
        );
    }
}

#[test]
fn every_human_renderer_escapes_control_characters() {
    let env = TestEnv::with_board();
    env.loopx(&["goal", "add", "hostile", "--objective", HOSTILE])
        .ok();
    env.git(&["config", "loopx.goal", "main"]);
    let t = env.add(HOSTILE, &["--note", HOSTILE_NOTE]);
    env.loopx(&["todo", "update", &t, "--note", HOSTILE_NOTE])
        .ok();
    let g = env
        .loopx(&[
            "gate",
            "open",
            "--question",
            HOSTILE,
            "--option",
            HOSTILE,
            "--option",
            "no",
            "--kind",
            "publish",
        ])
        .ok()
        .stdout
        .trim()
        .to_owned();
    env.loopx(&["evidence", "add", "--todo", &t, "--summary", HOSTILE])
        .ok();
    env.agent(
        "agent-a",
        &[
            "refresh-state",
            "--outcome",
            "blocked",
            "--next-action",
            HOSTILE,
        ],
    )
    .ok();
    let renderers: Vec<Vec<&str>> = vec![
        vec!["status"],
        vec!["todo", "list"],
        vec!["todo", "list", "--all"],
        vec!["todo", "show", &t],
        vec!["gate", "list"],
        vec!["gate", "show", &g],
        vec!["goal", "list"],
        vec!["goal", "show", "hostile"],
        vec!["agent", "list"],
        vec!["agent", "show", "agent-a"],
        vec!["evidence", "list"],
        vec!["log"],
        vec!["log", "-p"],
        vec!["show"],
        vec!["show", "4"],
        vec!["diff", "3"],
        vec!["diff", "3", "-p"],
        vec!["quota", "status"],
    ];
    for args in &renderers {
        let out = env.loopx(args);
        assert_terminal_safe(&args.join(" "), &out);
        // Agents' views too.
        let out = env.agent("agent-b", args);
        assert_terminal_safe(&args.join(" "), &out);
    }
    // An error that quotes the text is escaped as well.
    let out = env.loopx(&["gate", "answer", &g, "--choice", HOSTILE]);
    assert_terminal_safe("gate answer", &out);
    // JSON keeps the exact text.
    let v = env.loopx(&["todo", "show", &t, "--json"]).ok().json();
    assert_eq!(v["title"], HOSTILE, "{v}");
    let v = env.loopx(&["gate", "show", &g, "--json"]).ok().json();
    assert!(v.to_string().contains("\\u001b[2K"), "{v}");
}

/// Runs a shell recipe in the repository, with git's config isolated.
fn sh(env: &TestEnv, script: &str) -> String {
    let out = Command::new("sh")
        .args(["-c", script])
        .current_dir(&env.repo)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("sh runs");
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn review_recipes_read_trailers_not_forged_lines_in_notes() {
    let env = TestEnv::with_board();
    let t = env.add("Ship it", &[]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    // An agent's note with lines that look like a human's trailers.
    let forged = "done\n\nLoopx-Op: todo.release\nLoopx-Human: Ada Lovelace <ada@example.com>\nLoopx-Tick: 7";
    env.agent("agent-a", &["todo", "update", &t, "--note", forged])
        .ok();
    let review = include_str!("../../docs/review.md");
    let recipe = |start: &str| {
        review
            .lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("docs/review.md has no recipe starting {start:?}"))
            .to_owned()
    };
    // By one human: Ada's own ticks, not the agent's forged note.
    let humans = sh(
        &env,
        &recipe("git log --format='%h%x09%(trailers:key=Loopx-Human"),
    );
    assert!(humans.contains("register agent agent-a"), "{humans}");
    assert!(
        !humans.contains("update "),
        "a forged note matched:\n{humans}"
    );
    // By kind: no release happened.
    let releases = sh(
        &env,
        &recipe("git log --format='%h %(trailers:key=Loopx-Op"),
    );
    assert_eq!(releases, "", "a forged note matched");
    // By number: the tick whose trailer says 7 (the note also says 7).
    let seventh = sh(
        &env,
        &recipe("git log --format='%H %(trailers:key=Loopx-Tick"),
    );
    assert_eq!(seventh.lines().count(), 0, "only 6 ticks exist:\n{seventh}");
    // git itself parses the agent's tick as an agent's.
    let parsed = sh(
        &env,
        "git log -1 --format=%B refs/loopx/state | git interpret-trailers --parse",
    );
    assert!(parsed.contains("Loopx-Agent: agent-a"), "{parsed}");
    assert!(!parsed.contains("Loopx-Human"), "{parsed}");
    // What the old grep recipe would have found: the forged line.
    let grep = sh(
        &env,
        "git log --oneline --grep='^Loopx-Human: Ada' refs/loopx/state",
    );
    assert!(
        grep.contains("update "),
        "the forged line is in the body:\n{grep}"
    );
}

#[test]
fn should_run_skips_on_a_stale_lock_and_says_how_to_fix_it() {
    use std::time::SystemTime;
    let env = TestEnv::with_board();
    env.add("Work", &[]);
    env.agent("agent-a", &["quota", "should-run"]).ok();
    let lock = env.repo.join(".git/refs/loopx/state.lock");
    std::fs::write(&lock, "").unwrap();
    let f = std::fs::File::options().write(true).open(&lock).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(120))
        .unwrap();
    let out = env
        .agent("agent-a", &["quota", "should-run", "--json"])
        .code(3);
    let v = out.json();
    assert_eq!(v["decision"], "skip");
    assert_eq!(v["reason"]["code"], "state-locked");
    assert!(
        v["reason"]["fix"]
            .as_str()
            .unwrap()
            .contains("loopx doctor --fix")
    );
    assert!(v.get("turn_token").is_none());
    let out = env.agent("agent-a", &["quota", "should-run"]).code(3);
    assert!(
        out.stdout.starts_with("skip: state-locked — "),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("fix: a person runs `loopx doctor --fix`"),
        "{}",
        out.stdout
    );
    // The lock is never broken by an agent's poll.
    assert!(lock.exists());
    env.loopx(&["doctor", "--fix"]).ok();
    env.agent("agent-a", &["quota", "should-run"]).ok();
}

/// Polls `check` every 50 ms until it holds, for at most `limit`.
fn eventually(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let started = Instant::now();
    while started.elapsed() < limit {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    check()
}

#[test]
fn a_command_does_not_outlive_a_killed_loopx() {
    // Ctrl-C in a terminal, or an agent runtime ending its tool call, kills
    // loopx; the command's own process group no longer gets that signal.
    let env = TestEnv::with_board();
    let mark = format!("killed-{}-{}", std::process::id(), env.root().display()).replace('/', "_");
    let mut loopx = env
        .command()
        .args([
            "evidence",
            "run",
            "--timeout",
            "1h",
            "--",
            "sleep",
            "100000",
        ])
        .env("LOOPX_TEST_MARK", &mark)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("loopx runs");
    let sleeping = |pids: &[u32]| {
        pids.iter().any(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| c.starts_with(b"sleep\x00100000"))
        })
    };
    assert!(
        eventually(Duration::from_secs(30), || sleeping(&tagged(&mark))),
        "the command never started"
    );
    loopx.kill().expect("kill loopx");
    loopx.wait().expect("reap loopx");
    let gone = eventually(Duration::from_secs(30), || tagged(&mark).is_empty());
    let left = tagged(&mark);
    kill_all(&left);
    assert!(gone, "left running after loopx was killed: {left:?}");
}

#[test]
fn a_long_multi_line_check_is_recorded_with_a_fitted_summary() {
    // A validation and a settle check are code, and may be long scripts
    // with line breaks: their evidence summary is made to fit, never
    // refused after the command ran.
    let env = TestEnv::with_board();
    let script = format!("true\n# {}\nexit 1", "x".repeat(3000));
    let t = env.add("Check", &["--", "sh", "-c", &script]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    // It fails, so it is recorded as evidence (before, that record was
    // refused and the failure lost).
    env.agent("agent-a", &["todo", "done", &t]).code(3);
    let v = env.loopx(&["evidence", "list", "--json"]).ok().json();
    let summary = v["evidence"][0]["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("validation: sh -c true # xxx"),
        "{summary}"
    );
    assert!(summary.chars().count() <= 200 && !summary.contains('\n'));
    // The run's argv is kept as written (a validation is code).
    assert_eq!(v["evidence"][0]["run"]["argv"][2], script.as_str());
}
