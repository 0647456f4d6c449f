//! The runtime smoke test: real Claude Code and Codex, installed from npm,
//! each run for one prompt against a fake model API on loopback inside a
//! network namespace with only loopback up (tests/runtimes/smoke.sh). It
//! proves, per runtime, that every hook `hooks install --guard` wires fires,
//! that loopx's brief reaches the model request, and that with a publish
//! gate open the model's `cargo publish` is denied and never runs.
//!
//! Opt-in: set LOOPX_RUNTIMES_BIN to a folder holding `claude` and `codex`
//! (`npm install --prefix target/runtimes @anthropic-ai/claude-code@2.1.197
//! @openai/codex@0.171.0`, then target/runtimes/node_modules/.bin), and run
//! as root (or where `unshare --net` works); `.ci/run` does both.

use std::path::Path;
use std::process::Command;

#[test]
fn claude_code_and_codex_run_the_hooks_offline() {
    let Some(bin) = std::env::var_os("LOOPX_RUNTIMES_BIN") else {
        crate::common::skipped(format_args!(
            "skipped: set LOOPX_RUNTIMES_BIN to a folder with Claude Code's and Codex's binaries \
             (npm install --prefix target/runtimes @anthropic-ai/claude-code@2.1.197 @openai/codex@0.171.0; \
             LOOPX_RUNTIMES_BIN=target/runtimes/node_modules/.bin), as .ci/run does"
        ));
        return;
    };
    let bin = std::fs::canonicalize(bin).expect("LOOPX_RUNTIMES_BIN exists");
    let work = tempfile::Builder::new()
        .prefix("loopx-runtimes")
        .tempdir()
        .expect("temp dir");
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("unshare")
        .arg("--net")
        .arg("bash")
        .arg(here.join("tests/runtimes/smoke.sh"))
        .arg(env!("CARGO_BIN_EXE_loopx"))
        .arg(&bin)
        .arg(work.path())
        .args(["claude-code", "codex"])
        // Nothing of the caller's environment: no agent markers, no HOME.
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("LANG", "C")
        .output()
        .expect("unshare runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("ok claude-code") && stdout.contains("ok codex"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
