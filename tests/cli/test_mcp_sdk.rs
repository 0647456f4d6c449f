//! `loopx mcp` driven by the official MCP Python SDK (`mcp` on PyPI), in
//! the classic and the auto/2026-07-28 modes, with every message validated
//! against the official JSON schemas (tests/mcp/). Opt-in: it needs Python
//! with `mcp` and `jsonschema` installed, named by LOOPX_MCP_SDK_PYTHON;
//! `.ci/run` makes that venv and runs it.

use std::path::Path;
use std::process::Command;

use crate::common::TestEnv;

#[test]
fn the_official_python_sdk_runs_a_whole_turn_in_both_eras() {
    let Some(python) = std::env::var_os("LOOPX_MCP_SDK_PYTHON") else {
        crate::common::skipped(format_args!(
            "skipped: set LOOPX_MCP_SDK_PYTHON to a python with `mcp==2.3.0 jsonschema==4.26.0` installed \
             (python3 -m venv target/mcp-venv && target/mcp-venv/bin/pip install mcp==2.3.0 jsonschema==4.26.0; \
             LOOPX_MCP_SDK_PYTHON=target/mcp-venv/bin/python cargo test --test cli test_mcp_sdk), as .ci/run does"
        ));
        return;
    };
    let env = TestEnv::with_board();
    env.add("One", &["--", "true"]);
    env.add("Two", &[]);
    env.add("Three", &[]);
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut c = Command::new(&python);
    crate::common::isolate(&mut c, env.root());
    let out = c
        .arg(here.join("tests/mcp/conformance.py"))
        .arg(env!("CARGO_BIN_EXE_loopx"))
        .arg(&env.repo)
        .arg(env.root().join("mcp-logs"))
        .current_dir(&env.repo)
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("legacy:") && stdout.contains("valid under 2025-11-25"),
        "{stdout}"
    );
    assert!(
        stdout.contains("auto:") && stdout.contains("valid under 2026-07-28"),
        "{stdout}"
    );
}
