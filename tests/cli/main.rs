//! The integration tests: one binary, one module per command area.

mod common;

mod test_agent;
mod test_browser;
mod test_cache;
mod test_cli_docs;
mod test_conventions;
mod test_demo;
mod test_diff;
mod test_digest;
mod test_doctor;
mod test_errors;
mod test_evidence;
mod test_fast;
mod test_fetch_progress;
mod test_frictions;
mod test_gate;
mod test_gc;
mod test_goal;
mod test_goalrefs;
mod test_goals_agent;
mod test_guard_bypass;
mod test_harden;
mod test_harden3;
mod test_harden4;
mod test_hook;
mod test_hooks_install;
mod test_identity;
mod test_init;
mod test_kill;
mod test_lease;
mod test_lifecycle;
mod test_log;
mod test_loop;
mod test_machine;
mod test_mcp;
mod test_mcp_sdk;
mod test_notify;
mod test_opencode;
mod test_park;
mod test_pi;
mod test_portfolio;
mod test_possession;
mod test_race;
mod test_recipes;
mod test_repo_trust;
mod test_repos;
mod test_runtimes;
mod test_secrets;
mod test_server;
mod test_sessions;
mod test_shell;
mod test_show;
mod test_sign;
mod test_ssh_keep;
mod test_stall;
mod test_status;
mod test_status_html;
mod test_stuck;
mod test_sync;
mod test_sync_safety;
mod test_team;
mod test_team_loop;
mod test_todo;
mod test_trajectory;
mod test_trust;
mod test_trust4;
mod test_turn;
mod test_usage;
mod test_verified_tip;
mod test_verify;
mod test_vouch;
mod test_worktree;

/// Every `test_*.rs` file in this folder is listed above.
#[test]
fn no_forgotten_test_files() {
    let main = include_str!("main.rs");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli");
    for entry in std::fs::read_dir(dir).expect("tests/cli exists") {
        let name = entry
            .expect("dir entry")
            .file_name()
            .into_string()
            .expect("utf-8");
        if let Some(module) = name
            .strip_prefix("test_")
            .and_then(|n| n.strip_suffix(".rs"))
        {
            assert!(
                main.contains(&format!("mod test_{module};")),
                "tests/cli/{name} is not listed in main.rs"
            );
        }
    }
}
