//! The whole team loop with real runtimes (tests/runtimes/loop.sh): a
//! guarded `file://` hub, a human's two goals of six validated todos in all
//! (no `loopx.goal` anywhere, so no agent names a goal), and Claude
//! Code, Codex and OpenCode from npm in three clones, each offline in its
//! own network namespace against a scripted model that runs exactly what
//! loopx's brief says, several sessions each at the same time. It passes
//! when every todo of both goals is done exactly once, no brief says the
//! goal must be named, no completed turn is rejected, the
//! brief is in every session's first model request, every runtime's hooks
//! fire, the guard denies `cargo publish` and `git push --force` under open
//! gates, `loopx verify` passes everywhere and every clone's tip is the
//! hub's. Its logs stay in target/team-loop/ (CI artifacts).
//!
//! Opt-in: set LOOPX_RUNTIMES_BIN to a folder holding `claude`, `codex` and
//! `opencode` (`npm install --prefix target/runtimes
//! @anthropic-ai/claude-code@2.1.197 @openai/codex@0.171.0
//! opencode-ai@1.18.33 @opencode-ai/plugin@1.18.33`), and run as root (or
//! where `unshare --net` works); `.ci/run` does both.

use std::path::Path;
use std::process::Command;

#[test]
#[allow(clippy::print_stderr, clippy::print_stdout)]
fn three_runtimes_finish_a_goal_together_offline() {
    let bin = std::env::var_os("LOOPX_RUNTIMES_BIN").map(std::path::PathBuf::from);
    let Some(bin) = bin.filter(|b| {
        ["claude", "codex", "opencode"]
            .iter()
            .all(|r| b.join(r).exists())
    }) else {
        eprintln!(
            "skipped: set LOOPX_RUNTIMES_BIN to a folder with Claude Code's, Codex's and OpenCode's binaries \
             (npm install --prefix target/runtimes @anthropic-ai/claude-code@2.1.197 @openai/codex@0.171.0 \
             opencode-ai@1.18.33 @opencode-ai/plugin@1.18.33; LOOPX_RUNTIMES_BIN=target/runtimes/node_modules/.bin), \
             as .ci/run does"
        );
        return;
    };
    let bin = std::fs::canonicalize(bin).expect("LOOPX_RUNTIMES_BIN exists");
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let work = here.join("target/team-loop");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).expect("target/team-loop");
    // npm's cache (where .ci/run's install left @opencode-ai/plugin), so
    // that the offline installs of it succeed.
    let cache = std::env::var_os("npm_config_cache")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".npm")))
        .unwrap_or_default();
    let mut c = Command::new("unshare");
    // Nothing of the caller's environment: no agent markers, no HOME.
    c.env_clear()
        .env(crate::common::SUITE_MARK.0, crate::common::SUITE_MARK.1);
    // The knobs for what the defaults do not do yet (loop.sh says which).
    for (k, v) in std::env::vars().filter(|(k, _)| k.starts_with("LOOP_")) {
        c.env(k, v);
    }
    let out = c
        .arg("--net")
        .arg("bash")
        .arg(here.join("tests/runtimes/loop.sh"))
        .arg(env!("CARGO_BIN_EXE_loopx"))
        .arg(&bin)
        .arg(&work)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("LANG", "C")
        .env("npm_config_cache", cache)
        .output()
        .expect("unshare runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    std::fs::write(work.join("loop.out"), out.stdout.as_slice()).expect("writing the log");
    println!("{stdout}");
    assert!(
        out.status.success() && stdout.contains("ok the loop"),
        "{}\n{stdout}\n{}\n(logs in {})",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        work.display()
    );
}
