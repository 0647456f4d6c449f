//! The runtime smoke test: real Claude Code, Codex, Pi and Gemini CLI,
//! installed from npm, each run against a fake model API on loopback inside
//! a network namespace with only loopback up (tests/runtimes/smoke.sh). It
//! proves, per runtime, that every hook `hooks install --guard` wires fires,
//! that loopx's brief reaches the model request, that with a publish gate
//! open the model's `cargo publish` is denied (naming the gate, for a human)
//! and never runs, and that the agent's own loopx command acts as the agent
//! its session registered; for Pi and Gemini CLI also that a claim taken
//! from the brief and left unrecorded gets the end of its turn recorded, and
//! Pi's usage.
//!
//! Opt-in: set LOOPX_RUNTIMES_BIN to a folder holding `claude`, `codex`,
//! `pi` and `gemini` (`npm install --prefix target/runtimes` with the
//! versions in [`PACKAGES`], then target/runtimes/node_modules/.bin), and
//! run as root (or where `unshare --net` works); `.ci/run` does both.

use std::path::Path;
use std::process::Command;

/// The runtimes' npm packages, pinned (as `.ci/run` installs them).
const PACKAGES: &str = "@anthropic-ai/claude-code@2.1.197 @openai/codex@0.171.0 \
     @mariozechner/pi-coding-agent@0.73.1 @google/gemini-cli@0.61.0";

#[test]
fn claude_code_codex_pi_and_gemini_cli_run_the_hooks_offline() {
    let Some(bin) = std::env::var_os("LOOPX_RUNTIMES_BIN") else {
        crate::common::skipped(format_args!(
            "skipped: set LOOPX_RUNTIMES_BIN to a folder with the binaries of Claude Code, Codex, Pi \
             and Gemini CLI (npm install --prefix target/runtimes {PACKAGES}; \
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
        .args(["claude-code", "codex", "pi", "gemini"])
        // Nothing of the caller's environment: no agent markers, no HOME.
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("LANG", "C")
        .output()
        .expect("unshare runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success()
            && ["claude-code", "codex", "pi", "gemini"]
                .iter()
                .all(|r| stdout.lines().any(|l| l == format!("ok {r}"))),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
