//! Writers killed with SIGKILL at random moments never leave the ref
//! pointing at anything invalid; a lock they leave behind is reported with
//! the exact fix.

use std::time::{Duration, SystemTime};

use crate::common::{TestEnv, run};

/// A small pseudo-random sequence, so the test needs no extra crate.
fn jitter(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

#[test]
fn sigkill_at_random_moments_never_breaks_the_ref() {
    let env = TestEnv::with_board();
    let t = env.add("shared", &[]);
    let spawner = env.spawner();
    let mut seed = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    let lock = env.repo.join(".git/refs/loopx/state.lock");
    let mut left_locks = 0;
    let (mut killed, mut finished) = (0, 0);
    for round in 0..30 {
        // Four writers at once, each killed after 0–12 ms.
        let mut children: Vec<_> = (0..4)
            .map(|i| {
                let mut c = spawner.command();
                match i % 3 {
                    0 => c.args(["todo", "add", &format!("round {round} writer {i}")]),
                    1 => c.args(["todo", "update", &t, "--note", &format!("round {round}")]),
                    _ => c.args(["status"]),
                };
                c.stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .expect("loopx starts")
            })
            .collect();
        for child in &mut children {
            std::thread::sleep(Duration::from_micros(jitter(&mut seed) % 12_000));
            let _ = child.kill();
        }
        for mut child in children {
            match child.wait().map(|s| s.code()) {
                Ok(Some(_)) => finished += 1,
                _ => killed += 1,
            }
        }
        // The ref names a commit whose tree holds a parsable state.
        env.git(&["cat-file", "-e", "refs/loopx/state^{tree}"]);
        if lock.exists() {
            left_locks += 1;
            // An old lock is reported at once, with the fix.
            let f = std::fs::File::options().write(true).open(&lock).unwrap();
            f.set_modified(SystemTime::now() - Duration::from_secs(60))
                .unwrap();
            let out = env.loopx(&["todo", "add", "after a kill"]).code(1);
            assert!(
                out.stderr.contains("`loopx doctor --fix` removes it"),
                "{}",
                out.stderr
            );
            env.loopx(&["doctor", "--fix"]).ok();
        }
        env.loopx(&["doctor"]).ok();
    }
    env.git(&["fsck", "--no-dangling"]);
    let out = run(env.command().args(["todo", "add", "still works"])).ok();
    assert!(out.stdout.starts_with("t-"));
    assert!(
        killed > 10 && finished > 10,
        "kills must land both before and after writes: {killed} killed, {finished} finished, {left_locks} locks left"
    );
}
