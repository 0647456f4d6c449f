//! Hardening, round 3 (issue 27): each test is the attack that once got
//! through. Nothing here asserts how fast anything was: a stall is shown
//! structurally (a process still running when another has finished, a
//! counter of writers that went on without the queue), memory through the
//! process's own accounting.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{Output, TestEnv};
use crate::test_harden::guarded;

// Escapes from a timeout (issue 27 item 6).

#[test]
fn a_setsid_grandchild_does_not_outlive_a_timeout() {
    let env = TestEnv::with_board();
    // The grandchild leaves the command's session and group, then forks a
    // child of its own; the command itself hangs until the deadline.
    let g = guarded(
        &env,
        &[
            "evidence",
            "run",
            "--timeout",
            "2s",
            "--json",
            "--",
            "sh",
            "-c",
            "setsid sh -c 'sleep 100000 & sleep 100000' & echo started; sleep 100000",
        ],
        Duration::from_secs(60),
    );
    let v = g.out.clone().code(3).json();
    assert_eq!(v["evidence"]["run"]["timed_out"], true, "{v}");
    assert_eq!(v["evidence"]["run"]["output_tail"], "started");
    assert!(g.left.is_empty(), "left running: {:?}", g.left);
}

#[test]
fn a_setsid_daemon_left_by_a_finished_command_is_ended() {
    let env = TestEnv::with_board();
    // The command exits at once; what it left in another session holds the
    // output pipe open.
    let g = guarded(
        &env,
        &[
            "evidence",
            "run",
            "--json",
            "--",
            "sh",
            "-c",
            "setsid sleep 100000 & echo done",
        ],
        Duration::from_secs(60),
    );
    let v = g.out.clone().ok().json();
    assert_eq!(v["evidence"]["run"]["exit"], 0, "{v}");
    assert!(g.left.is_empty(), "left running: {:?}", g.left);
}

// Smaller (issue 27 item 9).

/// Runs `loopx ARGS` with a stdout whose reader is gone.
fn into_closed_pipe(env: &TestEnv, args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let out = env
        .command()
        .args(args)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("loopx runs");
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::new(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn a_closed_pipe_is_a_quiet_exit_for_every_command() {
    let env = TestEnv::with_board();
    for i in 0..5 {
        env.add(&format!("Work item {i}"), &[]);
    }
    let commands: &[&[&str]] = &[
        &["log"],
        &["--json", "log"],
        &["status"],
        &["--json", "status"],
        &["todo", "list"],
        &["--json", "todo", "list"],
        &["show", "2"],
        &["--json", "show", "2"],
        &["diff", "1", "3"],
        &["--json", "agent", "list"],
        &["goal", "list"],
        &["--json", "verify"],
        &["digest", "--since", "1d"],
        &["--json", "todo", "add", "Written, then printed to nobody"],
    ];
    for args in commands {
        let out = into_closed_pipe(&env, args);
        assert_eq!(out.code, 0, "loopx {args:?}: {}", out.stderr);
        assert!(
            !out.stderr.contains("error"),
            "loopx {args:?} said: {}",
            out.stderr
        );
    }
    // The tick of the last one landed: the output is what was lost.
    let list = env.loopx(&["todo", "list"]).ok().stdout;
    assert!(list.contains("Written, then printed to nobody"), "{list}");
}

/// Whether this machine lets an unprivileged process mount a tmpfs in a
/// user namespace of its own (`unshare -rm`).
fn can_mount_tmpfs() -> bool {
    Command::new("unshare")
        .args([
            "-rm",
            "sh",
            "-c",
            "d=$(mktemp -d) && mount -t tmpfs -o size=1m tmpfs \"$d\"",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
#[allow(clippy::print_stderr)]
fn a_full_disk_says_what_is_full_and_that_nothing_was_written() {
    if !can_mount_tmpfs() {
        eprintln!("SKIPPED: this machine cannot mount a tmpfs in a user namespace (unshare -rm)");
        return;
    }
    let env = TestEnv::with_board();
    let mnt = env.root().join("full");
    std::fs::create_dir_all(&mnt).unwrap();
    // A copy of the repository on a small tmpfs, which is then filled; the
    // tick is tried there, and the ref read before and after it.
    let script = r#"
        set -e
        mount -t tmpfs -o size=4m tmpfs "$1"
        cp -a "$2" "$1/r"
        cd "$1/r"
        before=$(git rev-parse refs/loopx/state)
        dd if=/dev/zero of="$1/fill" bs=4k 2>/dev/null || true
        set +e
        "$3" --json todo add "On a full disk"
        echo "exit $?" >&2
        after=$(git rev-parse refs/loopx/state)
        [ "$before" = "$after" ] && echo "ref unchanged" >&2
        true
    "#;
    // loopx's own isolated environment, for the whole script.
    let loopx = env.command();
    let mut unshare = Command::new("unshare");
    unshare.env_clear();
    for (k, v) in loopx.get_envs() {
        if let Some(v) = v {
            unshare.env(k, v);
        }
    }
    let out = crate::common::run(
        unshare
            .args(["-rm", "sh", "-c", script, "sh"])
            .arg(&mnt)
            .arg(&env.repo)
            .arg(loopx.get_program()),
    );
    assert!(out.stderr.contains("exit 1"), "{}", out.stderr);
    assert!(out.stderr.contains("ref unchanged"), "{}", out.stderr);
    let doc: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "one JSON error document ({e}):\n{}\n{}",
            out.stdout, out.stderr
        )
    });
    assert_eq!(doc["error"]["code"], "disk-full", "{doc}");
    let message = doc["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(
            "is full (no space left on device): nothing was written (refs/loopx/state did not move)"
        ),
        "{message}"
    );
    assert!(!message.contains("Message {"), "no debug dump: {message}");
    assert!(
        doc["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("free some space"),
        "{doc}"
    );
}

// gc cannot lose the state (issue 27 item 3).

#[test]
fn gc_prune_now_racing_eight_writers_loses_nothing() {
    let env = TestEnv::with_board();
    let spawner = env.spawner();
    let done = std::sync::atomic::AtomicBool::new(false);
    const WRITERS: usize = 8;
    const EACH: usize = 5;
    let gcs = std::thread::scope(|s| {
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let sp = spawner.clone();
                s.spawn(move || {
                    for i in 0..EACH {
                        crate::common::run(sp.command().args([
                            "todo",
                            "add",
                            &format!("writer {w} item {i}"),
                        ]))
                        .ok();
                    }
                })
            })
            .collect();
        let gc = s.spawn(|| {
            let mut runs = Vec::new();
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                let out =
                    crate::common::run(spawner.command().args(["gc", "--prune", "now", "--json"]))
                        .ok();
                runs.push(out.json());
            }
            runs
        });
        for w in writers {
            w.join().expect("a writer");
        }
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        gc.join().expect("the gc loop")
    });
    assert!(!gcs.is_empty());
    for v in &gcs {
        // `now` is raised to the safe minimum, and the output says so.
        assert_eq!(v["prune"]["expire"], "1.hour.ago", "{v}");
        assert_eq!(v["prune"]["raised_from"], "now", "{v}");
    }
    env.loopx(&["verify"]).ok();
    env.loopx(&["doctor"]).ok();
    let list = env.loopx(&["todo", "list", "--json"]).ok().json();
    assert_eq!(
        list["todos"].as_array().unwrap().len(),
        WRITERS * EACH,
        "every writer's every todo is there"
    );
    env.git(&["fsck", "--full", "--no-dangling"]);
    // In words, too.
    let text = env.loopx(&["gc", "--prune", "now"]).ok().stdout;
    assert!(
        text.contains("Kept unreachable objects younger than an hour (now asked for less)"),
        "{text}"
    );
}

#[test]
fn doctor_fix_puts_back_the_last_good_tip_from_the_reflog() {
    let env = TestEnv::with_board();
    env.add("First", &[]);
    let good = env.tip().unwrap();
    env.add("Second", &[]);
    let lost = env.tip().unwrap();
    // What a prune under a running tick did: the tip's commit is gone.
    let file = env
        .repo
        .join(".git/objects")
        .join(&lost[..2])
        .join(&lost[2..]);
    std::fs::remove_file(&file).expect("the tip's commit is a loose object");
    // No tick is written on top of the missing commit (the local cache
    // still holds its state), and the error says what to do.
    let out = env.loopx(&["todo", "add", "On a missing tip"]).code(1);
    assert!(out.stderr.contains("loopx doctor --fix"), "{}", out.stderr);
    assert_eq!(env.tip().unwrap(), lost, "nothing was written");
    let v = env.loopx(&["doctor", "--json"]).code(1).json();
    let problem = v["problems"][0]["message"].as_str().unwrap();
    assert!(
        problem.contains(&format!(
            "the last good tip in its reflog is {}",
            &good[..12]
        )),
        "{v}"
    );
    assert_eq!(v["problems"].as_array().unwrap().len(), 1, "{v}");
    let v = env.loopx(&["doctor", "--fix", "--json"]).ok().json();
    assert_eq!(v["restored"]["missing"], lost.as_str(), "{v}");
    assert_eq!(v["restored"]["to"], good.as_str(), "{v}");
    assert_eq!(env.tip().unwrap(), good);
    env.loopx(&["verify"]).ok();
    env.add("After the repair", &[]);
    env.loopx(&["verify"]).ok();
    assert!(
        env.git(&["reflog", "show", "refs/loopx/state"])
            .contains("doctor --fix put back the last good tip"),
        "the repair is in the reflog too"
    );
}

// A stuck lock holder (issue 27 item 2).

/// The writers' queue's log of passes: one line per tick that went on
/// without its turn, with why.
fn passes(env: &TestEnv) -> Vec<String> {
    std::fs::read_to_string(env.repo.join(".git/loopx/queue-passed"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The holder's record in the lock file: its pid, once it is `pid`.
fn lock_record(env: &TestEnv) -> String {
    std::fs::read_to_string(env.repo.join(".git/loopx/writers.lock")).unwrap_or_default()
}

fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill {sig} {pid}");
}

#[test]
fn a_stopped_loopx_holding_the_queue_is_passed_at_once() {
    let env = TestEnv::with_board();
    env.add("Before", &[]);
    // A loopx that holds the queue: the state ref's own lock is taken, so
    // it keeps retrying its compare-and-swap, in its turn. Then it is
    // stopped there, as a debugger or a ^Z would.
    let ref_lock = env.repo.join(".git/refs/loopx/state.lock");
    std::fs::write(&ref_lock, "").unwrap();
    // Its fixed clock is a few minutes on from the ticks made while it is
    // stopped, as a real clock would have moved on: a writer whose clock
    // is behind the history is refused (`clock-behind`).
    let later = crate::common::rfc3339(env.now_secs() + 600);
    let mut stuck = env
        .command()
        .env("LOOPX_NOW", &later)
        .args(["todo", "add", "Made by the stopped one"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("loopx runs");
    let pid = stuck.id();
    let mut waited = 0;
    while !lock_record(&env).starts_with(&format!("{pid} ")) {
        waited += 1;
        assert!(waited < 6000, "loopx never took its turn");
        std::thread::sleep(Duration::from_millis(5));
    }
    signal(pid, "-STOP");
    std::fs::remove_file(&ref_lock).unwrap();
    // Every later tick goes on without waiting for it, and says why.
    for i in 0..5 {
        env.add(&format!("While it is stopped {i}"), &[]);
    }
    let passed = passes(&env);
    assert_eq!(passed.len(), 5, "{passed:?}");
    for p in &passed {
        assert!(
            p.ends_with(&format!("its holder (pid {pid}) is stopped")),
            "passed at once, not after waiting: {p}"
        );
    }
    let doctor = env.loopx(&["doctor", "--json"]).ok().json();
    let text = doctor["problems"].to_string();
    assert!(text.contains("the writers' queue is stuck"), "{text}");
    assert!(
        text.contains("5 ticks went on without the writers' queue"),
        "{text}"
    );
    // Continued, it finishes its own tick on the new tip: nothing is lost.
    signal(pid, "-CONT");
    let status = stuck.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let list = env.loopx(&["todo", "list", "--json"]).ok().json();
    assert_eq!(list["todos"].as_array().unwrap().len(), 7, "{list}");
    env.loopx(&["verify"]).ok();
}

#[test]
fn a_plain_flock_holding_the_queue_is_passed() {
    let env = TestEnv::with_board();
    env.add("Before", &[]);
    let lock = env.repo.join(".git/loopx/writers.lock");
    // One process that takes the lock and sleeps holding it (so killing it
    // leaves nothing behind).
    let mut holder = Command::new("sh")
        .args(["-c", "exec 9>>\"$1\"; flock 9; exec sleep 100000", "sh"])
        .arg(&lock)
        .spawn()
        .expect("flock runs (util-linux)");
    // Taken: a non-blocking try fails.
    let mut waited = 0;
    while Command::new("flock")
        .args(["-n"])
        .arg(&lock)
        .arg("true")
        .status()
        .unwrap()
        .success()
    {
        waited += 1;
        assert!(waited < 6000, "flock never took the lock");
        std::thread::sleep(Duration::from_millis(5));
    }
    for i in 0..3 {
        env.add(&format!("Past flock {i}"), &[]);
    }
    let passed = passes(&env);
    let _ = holder.kill();
    let _ = holder.wait();
    assert_eq!(passed.len(), 3, "{passed:?}");
    for p in &passed {
        // The record is the last loopx's, which is gone: not a wait.
        assert!(!p.contains("waited"), "{p}");
    }
    env.loopx(&["verify"]).ok();
}

#[test]
fn a_validation_and_a_signature_run_outside_the_queue() {
    let env = TestEnv::with_board();
    let lock = env.repo.join(".git/loopx/writers.lock");
    let lock = lock.to_str().unwrap();
    // The validation succeeds only if nobody holds the queue while it runs.
    let t = env.add("Checked", &["--", "flock", "-n", lock, "true"]);
    let v = env.loopx(&["todo", "done", &t, "--json"]).ok().json();
    assert_eq!(v["validation"]["exit"], 0, "the queue was free: {v}");
    if !crate::common::keys::have_openssh() {
        return;
    }
    // ssh-keygen, through a wrapper that notes whether the queue is free.
    let m = env.machine();
    let ada = crate::common::keys::keygen(&env, "ada");
    let seen = env.root().join("seen");
    let wrapper = env.root().join("keygen.sh");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nif flock -n '{lock}' true; then echo free >> '{seen}'; else echo held >> '{seen}'; fi\nexec ssh-keygen \"$@\"\n",
            seen = seen.display()
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    m.git(&[
        "config",
        "gpg.ssh.program",
        &format!("{}", wrapper.display()),
    ]);
    crate::common::keys::trust(&m, "ada", &ada);
    crate::common::keys::sign_with(&m, &ada);
    // Format 4 binds a signed act to the human who announced the key.
    crate::common::keys::announce(&m, "ada", &ada);
    let gate = m
        .agent(
            "agent-a",
            &[
                "--json",
                "gate",
                "open",
                "--kind",
                "publish",
                "--question",
                "Ship?",
            ],
        )
        .ok()
        .json()["gate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    m.loopx(&["gate", "answer", &gate, "--choice", "approve"])
        .ok();
    let seen = std::fs::read_to_string(&seen).unwrap_or_default();
    assert!(seen.contains("free"), "ssh-keygen ran: {seen:?}");
    assert!(
        !seen.contains("held"),
        "ssh-keygen ran inside the queue: {seen:?}"
    );
}

// Notifications never stall a tick (issue 27 item 1).

/// Opens `n` human-only gates before notifications are configured.
fn open_gates(env: &TestEnv, n: usize) {
    for i in 0..n {
        env.agent(
            "agent-a",
            &[
                "gate",
                "open",
                "--kind",
                "spend",
                "--question",
                &format!("Spend {i}?"),
            ],
        )
        .ok();
    }
}

/// A tick as agent-a, tagged with `mark` (which the notify runner and its
/// commands inherit).
fn tagged_tick(env: &TestEnv, mark: &str, title: &str) {
    crate::common::run(
        env.command()
            .env("LOOPX_TEST_MARK", mark)
            .env("LOOPX_AGENT", "agent-a")
            .args(["todo", "add", title]),
    )
    .ok();
}

/// Waits (under a guard of minutes: a hang, not a timing) until nothing
/// tagged `mark` runs any more.
fn until_gone(mark: &str) {
    let started = std::time::Instant::now();
    while !crate::test_harden::tagged(mark).is_empty() {
        if started.elapsed() > Duration::from_secs(300) {
            let left = crate::test_harden::tagged(mark);
            crate::test_harden::kill_all(&left);
            panic!("still running after minutes: {left:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn notified_once_each_while_the_tick_returns(gates: usize) {
    let env = TestEnv::with_board();
    open_gates(&env, gates);
    let log = env.root().join("sent.log");
    let script = env.root().join("notify.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\nsleep 1\ncat >> '{}'\n", log.display()),
    )
    .unwrap();
    env.git(&[
        "config",
        "loopx.notify",
        &format!("sh {}", script.display()),
    ]);
    let mark = format!("notify-{gates}-{}", std::process::id());
    tagged_tick(&env, &mark, "The tick that finds the gates due");
    // The tick has returned; its notifications have not.
    let sent = |log: &std::path::Path| {
        std::fs::read_to_string(log)
            .unwrap_or_default()
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).expect("one JSON line per call");
                v["id"].as_str().unwrap().to_owned()
            })
            .collect::<Vec<String>>()
    };
    let running = crate::test_harden::tagged(&mark);
    assert!(
        !running.is_empty(),
        "the notify runner and its commands outlive the tick"
    );
    assert!(sent(&log).len() < gates, "the tick did not wait for them");
    crate::test_notify::settle(&env.repo);
    until_gone(&mark);
    let mut ids = sent(&log);
    assert_eq!(ids.len(), gates, "each gate once: {ids:?}");
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), gates, "no gate twice");
    let records = env
        .loopx(&["log", "--op", "gate.notified", "--json"])
        .ok()
        .stdout;
    assert_eq!(records.lines().count(), gates, "{records}");
    // Later ticks send nothing again.
    tagged_tick(&env, &mark, "Later");
    crate::test_notify::settle(&env.repo);
    until_gone(&mark);
    assert_eq!(sent(&log).len(), gates);
    env.loopx(&["verify"]).ok();
}

#[test]
fn ten_open_gates_with_a_slow_notify_never_hold_the_tick() {
    notified_once_each_while_the_tick_returns(10);
}

#[test]
fn forty_open_gates_with_a_slow_notify_never_hold_the_tick() {
    notified_once_each_while_the_tick_returns(40);
}

#[test]
fn a_notify_past_its_limit_leaves_nothing_running_and_is_backed_off() {
    let env = TestEnv::with_board();
    open_gates(&env, 3);
    let started = env.root().join("started.log");
    let script = env.root().join("notify.sh");
    // It forks, and neither it nor its child ever ends by itself.
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho start >> '{}'\nsleep 100000 &\nsleep 100000\n",
            started.display()
        ),
    )
    .unwrap();
    env.git(&[
        "config",
        "loopx.notify",
        &format!("sh {}", script.display()),
    ]);
    env.git(&["config", "loopx.notifyTimeout", "1s"]);
    let mark = format!("notify-limit-{}", std::process::id());
    let starts = || {
        std::fs::read_to_string(&started)
            .unwrap_or_default()
            .lines()
            .count()
    };
    // First failure; then, a minute later, the retry (a minute's
    // back-off); then, a minute later again, nothing: two minutes now.
    for (tick, want) in [(0, 3), (1, 6), (2, 6)] {
        tagged_tick(&env, &mark, &format!("Tick {tick}"));
        crate::test_notify::settle(&env.repo);
        until_gone(&mark);
        assert_eq!(starts(), want, "after tick {tick}");
    }
    let st = env.loopx(&["status", "--json"]).ok().json();
    let failed = st["notify_failed"].as_array().unwrap();
    assert_eq!(failed.len(), 3, "{st}");
    for f in failed {
        assert!(
            f["reason"]
                .as_str()
                .unwrap()
                .contains("ran longer than 1s and was stopped"),
            "{st}"
        );
        let marker = env
            .repo
            .join(".git/loopx/notify-failed")
            .join(f["gate"].as_str().unwrap());
        let text = std::fs::read_to_string(marker).unwrap();
        assert!(text.contains("\nattempts 2 next "), "{text}");
    }
}

// Unbounded reads (issue 27 item 5).

#[test]
fn a_usage_file_of_dev_zero_is_refused_in_bounded_memory_in_every_format() {
    let env = TestEnv::with_board();
    env.add("Work to do", &[]);
    for format in ["loopx", "claude", "codex", "gemini"] {
        let turn = env
            .agent("agent-a", &["quota", "should-run", "--json"])
            .ok()
            .json()["turn_token"]
            .as_str()
            .expect("a turn token")
            .to_owned();
        let g = guarded(
            &env,
            &[
                "--agent",
                "agent-a",
                "quota",
                "spend-slot",
                "--turn",
                &turn,
                "--usage-file",
                "/dev/zero",
                "--usage-format",
                format,
            ],
            Duration::from_secs(120),
        );
        let out = g.out.clone().code(2);
        assert!(
            out.stderr
                .contains("the usage file /dev/zero is not a regular file"),
            "{format}: {}",
            out.stderr
        );
        // 16 MiB read at most, in a buffer that may double once.
        assert!(g.peak_kib < 128 * 1024, "{format}: peak {} KiB", g.peak_kib);
    }
    // A regular file over the limit is refused from its size, unread.
    let big = env.root().join("big.json");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(17 << 20)
        .unwrap();
    let turn = env
        .agent("agent-a", &["quota", "should-run", "--json"])
        .ok()
        .json()["turn_token"]
        .as_str()
        .expect("a turn token")
        .to_owned();
    let out = env
        .agent(
            "agent-a",
            &[
                "quota",
                "spend-slot",
                "--turn",
                &turn,
                "--usage-file",
                big.to_str().unwrap(),
            ],
        )
        .code(2);
    assert!(
        out.stderr
            .contains("is over 16 MiB (the limit of a usage file)"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_huge_title_or_file_from_elsewhere_is_refused_unread() {
    use crate::common::forge;
    let env = TestEnv::with_board();
    env.add("Honest", &[]);
    let m = env.machine();
    let honest = env.tip().unwrap();
    // A 40 MB title in the tip's message (a remote's forgery, say).
    let huge = "x".repeat(40 << 20);
    forge::amend_tip(&m, |_, p| {
        p.message = p.message.replacen("Honest", &huge, 1);
    });
    let g = guarded(&env, &["--json", "verify"], Duration::from_secs(120));
    let said = format!("{}{}", g.out.stdout, g.out.stderr);
    assert_ne!(g.out.code, 0, "{said}");
    assert!(
        said.contains("over loopx's limit of 4 MiB for an object of the state"),
        "{}",
        &said[..said.len().min(2000)]
    );
    assert!(
        g.peak_kib < 100 * 1024,
        "verify peaked at {} KiB",
        g.peak_kib
    );
    // A 40 MB file in the tip's tree: every read of the state refuses it.
    m.git(&["update-ref", "refs/loopx/state", &honest]);
    let tree = forge::tree_with(
        &m,
        &format!("{honest}^{{tree}}"),
        &[("todos/ab/t-ab000000.toml", Some(huge.as_bytes()))],
    );
    forge::amend_tip(&m, |_, p| p.tree = tree.clone());
    let g = guarded(&env, &["--json", "status"], Duration::from_secs(120));
    let said = format!("{}{}", g.out.stdout, g.out.stderr);
    assert_ne!(g.out.code, 0, "{said}");
    assert!(said.contains("\"code\":\"too-large\""), "{said}");
    assert!(
        g.peak_kib < 100 * 1024,
        "status peaked at {} KiB",
        g.peak_kib
    );
}

#[test]
fn a_huge_note_through_a_hub_is_refused_unread() {
    use crate::common::forge;
    let env = TestEnv::with_board();
    let hub = env.hub("hub.git");
    let guarded_hub = env.hub("guarded.git");
    env.loopx(&["-C", &guarded_hub, "hub", "install"]).ok();
    env.git(&["remote", "add", "origin", &hub]);
    env.git(&["remote", "add", "guarded", &format!("file://{guarded_hub}")]);
    env.add("Honest", &[]);
    env.loopx(&["sync"]).ok();
    let a = env.machine();
    let (ok, err) = forge::push(&a, "guarded", "refs/loopx/state:refs/loopx/state");
    assert!(ok, "{err}");
    let b = env.clone_machine("b", &hub);
    b.loopx(&["sync"]).ok();
    let b_tip = b.tip().unwrap();
    // A tick whose note is 40 MB, made with plain git.
    let huge = "n".repeat(40 << 20);
    forge::amend_tip(&a, |_, p| p.message.push_str(&format!("\n{huge}\n")));
    // The guarded hub refuses it from the header.
    let (ok, err) = forge::push(&a, "guarded", "+refs/loopx/state:refs/loopx/state");
    assert!(!ok, "the guarded hub took it");
    assert!(err.contains("over loopx's limit of 4 MiB"), "{err}");
    // An unguarded hub takes it; the clone that syncs it refuses it unread.
    let (ok, err) = forge::push(&a, "origin", "+refs/loopx/state:refs/loopx/state");
    assert!(ok, "{err}");
    // b's sync, with its peak memory (run from env's repository, so b's
    // is given with -C).
    let dir = b.repo.to_str().unwrap().to_owned();
    let g = guarded(
        &env,
        &["-C", &dir, "--json", "sync"],
        Duration::from_secs(120),
    );
    let said = format!("{}{}", g.out.stdout, g.out.stderr);
    assert_ne!(g.out.code, 0, "{said}");
    assert!(
        said.contains("over loopx's limit of 4 MiB"),
        "{}",
        &said[..said.len().min(2000)]
    );
    assert!(g.peak_kib < 100 * 1024, "sync peaked at {} KiB", g.peak_kib);
    assert_eq!(b.tip().unwrap(), b_tip, "nothing was taken in");
}

#[test]
fn an_artifact_streams_through_its_hash_and_a_device_is_refused_unread() {
    let env = TestEnv::with_board();
    let g = guarded(
        &env,
        &[
            "evidence",
            "add",
            "--summary",
            "zeros",
            "--artifact",
            "/dev/zero",
            "--json",
        ],
        Duration::from_secs(60),
    );
    let out = g.out.clone().code(2);
    assert!(
        out.stdout
            .contains("cannot read the artifact /dev/zero: it is not a regular file"),
        "{}",
        out.stdout
    );
    // 200 MB (sparse on disk) hashed in bounded memory.
    let big = env.repo.join("big.bin");
    std::fs::File::create(&big)
        .and_then(|f| f.set_len(200 << 20))
        .unwrap();
    let g = guarded(
        &env,
        &[
            "evidence",
            "add",
            "--summary",
            "big",
            "--artifact",
            "big.bin",
            "--json",
        ],
        Duration::from_secs(120),
    );
    let v = g.out.clone().ok().json();
    assert_eq!(v["evidence"]["artifact"]["bytes"], 200u64 << 20, "{v}");
    assert!(g.peak_kib < 100 * 1024, "peak {} KiB", g.peak_kib);
}
