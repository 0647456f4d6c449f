//! `loopx hooks install|uninstall|doctor` in a temp HOME and project: the
//! files each runtime reads, idempotent on a second run, other settings
//! kept, and uninstall restoring the original bytes.

use std::path::{Path, PathBuf};

use crate::common::{TestEnv, assert_text};

/// Existing settings, written the way people write them (four-space
/// indents, comments in TOML), so a byte-for-byte restore means something.
const CLAUDE_BEFORE: &str = "{\n    \"model\": \"opus\",\n    \"permissions\": {\"allow\": [\"Bash(ls:*)\"]},\n    \"hooks\": {\n        \"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"say done\"}]}]\n    }\n}\n";
const GEMINI_BEFORE: &str = "{ \"theme\": \"GitHub\", \"general\": { \"vimMode\": true } }\n";
const CODEX_TOML_BEFORE: &str = "# my Codex settings\nmodel = \"gpt-5-codex\" # the default\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\n";
const PI_MINE: &str =
    "export default function (pi) {\n  pi.on(\"agent_end\", async () => {});\n}\n";
const HOOK_BEFORE: &str = "#!/bin/sh\n# the team's own pre-push\necho ran >> \"$(dirname \"$0\")/../pre-push-ran\"\nexit 0\n";

/// The loopx under test, as `hooks install` writes it into hook commands.
fn exe() -> String {
    std::fs::canonicalize(env!("CARGO_BIN_EXE_loopx"))
        .unwrap()
        .display()
        .to_string()
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Codex trusts the test's repository (its config under the test's HOME).
fn trust_in_codex(env: &TestEnv) {
    let repo = std::fs::canonicalize(&env.repo).unwrap();
    write(
        &env.root().join("home/.codex/config.toml"),
        &format!(
            "[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
            repo.display()
        ),
    );
}

/// A repository with settings of its own for Claude Code, Gemini CLI and
/// Codex, and a pre-push hook under core.hooksPath.
fn project() -> (TestEnv, Vec<(PathBuf, &'static str)>) {
    let env = TestEnv::with_board();
    env.git(&["config", "core.hooksPath", ".githooks"]);
    trust_in_codex(&env);
    let originals = vec![
        (env.repo.join(".claude/settings.json"), CLAUDE_BEFORE),
        (env.repo.join(".gemini/settings.json"), GEMINI_BEFORE),
        (env.repo.join(".codex/config.toml"), CODEX_TOML_BEFORE),
        (env.repo.join(".githooks/pre-push"), HOOK_BEFORE),
    ];
    for (p, t) in &originals {
        write(p, t);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let hook = env.repo.join(".githooks/pre-push");
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    (env, originals)
}

#[test]
fn install_merges_is_idempotent_and_uninstall_restores_the_bytes() {
    let (env, originals) = project();
    let out = env.loopx(&["hooks", "install", "--mcp"]).ok();
    assert_text(
        &out.stdout,
        "\
claude-code  .claude/settings.json: updated (backup .claude/settings.json.loopx-backup)
codex        .codex/hooks.json: created
codex        .codex/config.toml: updated (backup .codex/config.toml.loopx-backup)
cursor       .cursor/hooks.json: created
cursor       .cursor/rules/loopx.mdc: created
gemini       .gemini/settings.json: updated (backup .gemini/settings.json.loopx-backup)
opencode     .opencode/plugins/loopx.js: created
pi           .pi/extensions/loopx.ts: created
git          .githooks/pre-push: updated (chains the hook that was there, kept as .githooks/pre-push.loopx-backup)
git          .githooks/post-merge: created
",
    );
    // Existing settings are kept, in their order; loopx's hooks are added.
    let claude: serde_json::Value =
        serde_json::from_str(&read(&env.repo.join(".claude/settings.json"))).unwrap();
    let keys: Vec<&String> = claude.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["model", "permissions", "hooks"]);
    let events: Vec<&String> = claude["hooks"].as_object().unwrap().keys().collect();
    assert_eq!(
        events,
        [
            "Stop",
            "SessionStart",
            "UserPromptSubmit",
            "SessionEnd",
            "StopFailure"
        ]
    );
    assert_eq!(
        claude["hooks"]["Stop"][0]["hooks"][0]["command"],
        "say done"
    );
    // Hooks run this very binary by its absolute path: a login shell that
    // resets PATH (Codex runs `bash -lc`) cannot lose it.
    let exe = exe();
    assert_eq!(
        claude["hooks"]["Stop"][1]["hooks"][0]["command"],
        format!("{exe} hook claude-code Stop")
    );
    let gemini: serde_json::Value =
        serde_json::from_str(&read(&env.repo.join(".gemini/settings.json"))).unwrap();
    assert_eq!(gemini["general"]["vimMode"], true);
    assert_eq!(
        gemini["hooks"]["AfterAgent"][0]["hooks"][0]["name"],
        "loopx-after-agent"
    );
    assert_text(
        &read(&env.repo.join(".codex/config.toml")),
        &format!(
            "# my Codex settings\nmodel = \"gpt-5-codex\" # the default\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\n\n[mcp_servers.loopx]\ncommand = \"{exe}\"\nargs = [\"mcp\"]\n"
        ),
    );
    let cursor: serde_json::Value =
        serde_json::from_str(&read(&env.repo.join(".cursor/hooks.json"))).unwrap();
    assert_eq!(cursor["version"], 1);
    assert_eq!(cursor["hooks"]["stop"][0]["loop_limit"], 5);
    assert!(
        cursor["hooks"].get("beforeShellExecution").is_none(),
        "the guard is opt-in"
    );

    // A second run changes nothing.
    let snapshot = |env: &TestEnv| -> Vec<String> {
        [
            ".claude/settings.json",
            ".codex/hooks.json",
            ".codex/config.toml",
            ".cursor/hooks.json",
            ".gemini/settings.json",
            ".githooks/pre-push",
            ".githooks/post-merge",
            ".pi/extensions/loopx.ts",
        ]
        .iter()
        .map(|f| read(&env.repo.join(f)))
        .collect()
    };
    let before = snapshot(&env);
    let again = env.loopx(&["hooks", "install", "--mcp"]).ok();
    assert!(
        again.stdout.lines().all(|l| l.ends_with(": unchanged")),
        "{}",
        again.stdout
    );
    assert_eq!(snapshot(&env), before);

    // Uninstall puts every original byte back and removes what it created.
    let out = env.loopx(&["hooks", "uninstall"]).ok();
    assert_text(
        &out.stdout,
        "\
claude-code  .claude/settings.json: restored
codex        .codex/hooks.json: removed
codex        .codex/config.toml: restored
cursor       .cursor/hooks.json: removed
cursor       .cursor/rules/loopx.mdc: removed
gemini       .gemini/settings.json: restored
opencode     .opencode/plugins/loopx.js: removed
pi           .pi/extensions/loopx.ts: removed
git          .githooks/pre-push: restored
git          .githooks/post-merge: removed
",
    );
    for (path, text) in &originals {
        assert_eq!(&read(path), text, "{}", path.display());
        assert!(!Path::new(&format!("{}.loopx-backup", path.display())).exists());
    }
    assert!(!env.repo.join(".cursor").exists());
    assert!(!env.repo.join(".opencode").exists());
    assert!(!env.repo.join(".pi").exists());
    assert!(!env.repo.join(".codex/hooks.json").exists());
    assert!(!env.repo.join(".githooks/post-merge").exists());
}

#[test]
fn the_guard_is_installed_only_when_asked_and_a_dry_run_writes_nothing() {
    let env = TestEnv::with_board();
    let out = env
        .loopx(&["hooks", "install", "--runtime", "claude", "--dry-run"])
        .ok();
    assert_text(
        &out.stdout,
        "claude-code  .claude/settings.json: would be created\n",
    );
    assert!(!env.repo.join(".claude").exists());
    env.loopx(&["hooks", "install", "--runtime", "claude-code", "--guard"])
        .ok();
    let v: serde_json::Value =
        serde_json::from_str(&read(&env.repo.join(".claude/settings.json"))).unwrap();
    assert_eq!(
        v["hooks"]["PreToolUse"][0]["matcher"],
        "Bash|Edit|Write|MultiEdit|NotebookEdit"
    );
    // Installing again without --guard takes the guard out, and only it.
    let out = env
        .loopx(&["hooks", "install", "--runtime", "claude-code", "--json"])
        .ok();
    assert_eq!(out.json()["changes"][0]["action"], "updated");
    let v: serde_json::Value =
        serde_json::from_str(&read(&env.repo.join(".claude/settings.json"))).unwrap();
    assert!(v["hooks"].get("PreToolUse").is_none());
    assert!(v["hooks"].get("SessionStart").is_some());
}

#[test]
fn user_scope_writes_under_home_and_uninstall_removes_it() {
    let env = TestEnv::with_board();
    let home = env.root().join("home");
    write(&home.join(".gemini/settings.json"), GEMINI_BEFORE);
    let out = env.loopx(&["hooks", "install", "--scope", "user"]).ok();
    assert_text(
        &out.stdout,
        "\
claude-code  .claude/settings.json: created
codex        .codex/hooks.json: created
cursor       .cursor/hooks.json: created
gemini       .gemini/settings.json: updated (backup .gemini/settings.json.loopx-backup)
opencode     .config/opencode/plugins/loopx.js: created
pi           .pi/agent/extensions/loopx.ts: created
git          -: skipped (git hooks belong to a repository: use --scope project)
",
    );
    assert!(home.join(".claude/settings.json").exists());
    assert!(
        !env.repo.join(".claude").exists(),
        "the project is untouched"
    );
    env.loopx(&["hooks", "uninstall", "--scope", "user"]).ok();
    assert_eq!(read(&home.join(".gemini/settings.json")), GEMINI_BEFORE);
    let left: Vec<_> = std::fs::read_dir(&home)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(left, [".gemini"]);
}

#[test]
fn a_user_change_after_install_is_kept_by_uninstall() {
    let env = TestEnv::with_board();
    env.loopx(&["hooks", "install", "--runtime", "codex"]).ok();
    let path = env.repo.join(".codex/hooks.json");
    let mut v: serde_json::Value = serde_json::from_str(&read(&path)).unwrap();
    v["hooks"]["Stop"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"hooks": [{"type": "command", "command": "notify-send done"}]}));
    write(&path, &serde_json::to_string_pretty(&v).unwrap());
    let out = env
        .loopx(&["hooks", "uninstall", "--runtime", "codex"])
        .ok();
    assert_text(&out.stdout, "codex        .codex/hooks.json: updated\n");
    assert_text(
        &read(&path),
        "{\n  \"hooks\": {\n    \"Stop\": [\n      {\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"notify-send done\"\n          }\n        ]\n      }\n    ]\n  }\n}\n",
    );
}

#[test]
fn a_broken_settings_file_is_refused_and_left_alone() {
    let env = TestEnv::with_board();
    let path = env.repo.join(".claude/settings.json");
    write(&path, "{ \"model\": ");
    let out = env
        .loopx(&["hooks", "install", "--runtime", "claude"])
        .code(1);
    assert!(out.stderr.contains("is not valid JSON"), "{}", out.stderr);
    assert_eq!(read(&path), "{ \"model\": ");
}

#[test]
fn the_git_shim_chains_the_old_hook_and_keeps_its_status() {
    let (env, _) = project();
    env.loopx(&["hooks", "install", "--runtime", "git"]).ok();
    let shim = env.repo.join(".githooks/pre-push");
    let run = || {
        let mut c = std::process::Command::new("sh");
        crate::common::isolate(&mut c, env.root());
        c.arg(&shim)
            .args(["origin", "git@example.com:r.git"])
            .current_dir(&env.repo)
            .env("PATH", "/usr/bin:/bin")
            .output()
            .unwrap()
    };
    assert!(run().status.success());
    assert_eq!(read(&env.repo.join(".githooks/../pre-push-ran")), "ran\n");
    write(
        &env.repo.join(".githooks/pre-push.loopx-backup"),
        "#!/bin/sh\nexit 7\n",
    );
    assert_eq!(run().status.code(), Some(7));
}

#[test]
fn doctor_checks_path_events_and_matchers_and_names_trust_steps() {
    let env = TestEnv::with_board();
    env.loopx(&["hooks", "install", "--runtime", "gemini"]).ok();
    let bin = Path::new(env!("CARGO_BIN_EXE_loopx")).parent().unwrap();
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let ok = crate::common::run(env.command().env("PATH", &path).args([
        "hooks",
        "doctor",
        "--runtime",
        "gemini",
    ]))
    .ok();
    assert_text(
        &env.normalize(&ok.stdout).replace(&bin.display().to_string(), "$BIN"),
        "\
loopx on PATH: $BIN/loopx
gemini       .gemini/settings.json: wired (SessionStart, BeforeAgent, AfterAgent, SessionEnd)
  trust: Gemini CLI ignores .gemini/settings.json in an untrusted folder: trust this folder when it asks; a headless run (gemini -p) needs GEMINI_CLI_TRUST_WORKSPACE=true in its environment (--skip-trust does not load the folder's hooks in 0.61)
worktrees: a claim takes a worktree of its own when another agent's session on this clone is live (seen through /proc); set git config loopx.worktree to always or never to decide instead
",
    );
    let settings = env.repo.join(".gemini/settings.json");
    let mut v: serde_json::Value = serde_json::from_str(&read(&settings)).unwrap();
    v["hooks"]["AfterTool"] =
        serde_json::json!([{"matcher": "", "hooks": [{"type": "command", "command": "x"}]}]);
    v["hooks"]["Stop"] =
        serde_json::json!([{"hooks": [{"type": "command", "command": "loopx hook gemini Stop"}]}]);
    write(&settings, &v.to_string());
    let bad = crate::common::run(env.command().env("PATH", "/usr/bin:/bin").args([
        "hooks",
        "doctor",
        "--runtime",
        "gemini",
    ]))
    .code(1);
    assert_text(
        &bad.stdout,
        "\
problem: loopx is not on PATH, so every hook fails (silently in most runtimes); install it or put it on the PATH the runtimes start with
gemini       .gemini/settings.json: broken (SessionStart, BeforeAgent, AfterAgent, SessionEnd, Stop)
  problem: hooks.AfterTool has an empty matcher; leave the key out to match everything
  problem: Stop is not a gemini event (a typo is silently ignored)
  problem: hooks.Stop runs `loopx hook gemini Stop`, which loopx does not answer there
  trust: Gemini CLI ignores .gemini/settings.json in an untrusted folder: trust this folder when it asks; a headless run (gemini -p) needs GEMINI_CLI_TRUST_WORKSPACE=true in its environment (--skip-trust does not load the folder's hooks in 0.61)
worktrees: a claim takes a worktree of its own when another agent's session on this clone is live (seen through /proc); set git config loopx.worktree to always or never to decide instead
",
    );
}

/// A small deterministic generator (xorshift64*), so each case is
/// reproducible from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

/// Random user settings for a JSON hook file: other keys, nested values,
/// and hooks of the user's own (some under loopx's events), in one of
/// several formattings; or a blank file.
fn random_settings(rng: &mut Rng, flat: bool) -> String {
    use serde_json::{Value, json};
    if rng.below(8) == 0 {
        return rng.pick(&["", "\n", "  \n"]).to_owned();
    }
    let mut doc = serde_json::Map::new();
    for _ in 0..rng.below(4) {
        let key = rng.pick(&["model", "theme", "env", "permissions", "zeta", "alpha"]);
        let value = match rng.below(4) {
            0 => json!(rng.below(100)),
            1 => json!(rng.pick(&["opus", "dark", ""])),
            2 => json!({"allow": [rng.pick(&["Bash(ls:*)", "Read"])], "deny": []}),
            _ => json!([]),
        };
        doc.insert(key.to_owned(), value);
    }
    if rng.below(2) == 0 {
        let mut hooks = serde_json::Map::new();
        for _ in 0..=rng.below(3) {
            let event = if flat {
                rng.pick(&["stop", "sessionStart", "afterFileEdit"])
            } else {
                rng.pick(&[
                    "Stop",
                    "SessionStart",
                    "PreToolUse",
                    "Notification",
                    "BeforeTool",
                ])
            };
            let command = rng.pick(&["say done", "notify-send hi", "./check.sh"]);
            let entry = if flat {
                json!({"command": command})
            } else if rng.below(2) == 0 {
                json!({"matcher": "Bash", "hooks": [{"type": "command", "command": command}]})
            } else {
                json!({"hooks": [{"type": "command", "command": command, "timeout": 5}]})
            };
            let list = hooks
                .entry(event)
                .or_insert_with(|| Value::Array(Vec::new()));
            list.as_array_mut().unwrap().push(entry);
        }
        if flat {
            doc.insert("version".to_owned(), json!(1));
        }
        doc.insert("hooks".to_owned(), Value::Object(hooks));
    }
    let doc = Value::Object(doc);
    let mut text = match rng.below(3) {
        0 => serde_json::to_string(&doc).unwrap(),
        1 => serde_json::to_string_pretty(&doc).unwrap(),
        _ => serde_json::to_string_pretty(&doc)
            .unwrap()
            .replace("  ", "    "),
    };
    if rng.below(3) != 0 {
        text.push('\n');
    }
    text
}

/// Every path under `dir` (but `.git`), with the bytes of each file.
fn tree(dir: &Path) -> Vec<(PathBuf, Option<Vec<u8>>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let p = e.unwrap().path();
            if p.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            if p.is_dir() {
                todo.push(p.clone());
                out.push((p, None));
            } else {
                let bytes = std::fs::read(&p).unwrap();
                out.push((p, Some(bytes)));
            }
        }
    }
    out.sort();
    out
}

/// Property: whatever sequence of installs (with and without `--guard`
/// and `--mcp`, one runtime or all, both scopes) ran on top of whatever
/// settings the user had (Pi: extensions of their own, one perhaps at
/// loopx's path), uninstall gives back the original bytes, and leaves no
/// file or folder of its own.
#[test]
fn uninstall_after_any_install_sequence_restores_the_users_bytes() {
    let files = [
        (".claude/settings.json", false),
        (".gemini/settings.json", false),
        (".codex/hooks.json", false),
        (".cursor/hooks.json", true),
    ];
    for seed in 1..=40u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let env = TestEnv::with_board();
        let home = env.root().join("home");
        for base in [&env.repo, &home] {
            for (rel, flat) in files {
                if rng.below(3) != 0 {
                    write(&base.join(rel), &random_settings(&mut rng, flat));
                }
            }
            if rng.below(2) == 0 {
                write(&base.join(".codex/config.toml"), CODEX_TOML_BEFORE);
            }
            // Pi: extensions of the user's own beside loopx's, sometimes
            // one at loopx's very path.
            let pi = if *base == home {
                ".pi/agent/extensions"
            } else {
                ".pi/extensions"
            };
            if rng.below(2) == 0 {
                write(&base.join(pi).join("mine.ts"), PI_MINE);
            }
            if rng.below(4) == 0 {
                write(&base.join(pi).join("loopx.ts"), PI_MINE);
            }
        }
        let before = (tree(&env.repo), tree(&home));
        let mut steps = Vec::new();
        for _ in 0..=rng.below(4) {
            let mut args = vec!["hooks", "install"];
            let runtime = rng.pick(&[
                "all",
                "all",
                "claude-code",
                "codex",
                "cursor",
                "gemini",
                "pi",
            ]);
            args.extend(["--runtime", runtime]);
            args.extend(["--scope", rng.pick(&["project", "user"])]);
            if rng.below(2) == 0 {
                args.push("--guard");
            }
            if rng.below(2) == 0 {
                args.push("--mcp");
            }
            env.loopx(&args).ok();
            steps.push(args.join(" "));
        }
        for scope in ["project", "user"] {
            env.loopx(&["hooks", "uninstall", "--scope", scope]).ok();
        }
        let after = (tree(&env.repo), tree(&home));
        let show = |t: &[(PathBuf, Option<Vec<u8>>)]| -> Vec<String> {
            t.iter()
                .map(|(p, b)| {
                    let text = b
                        .as_deref()
                        .map(String::from_utf8_lossy)
                        .unwrap_or_default();
                    format!("{}: {text:?}", p.display())
                })
                .collect()
        };
        assert_eq!(
            show(&after.0),
            show(&before.0),
            "seed {seed}, project, after {steps:#?}"
        );
        assert_eq!(
            show(&after.1),
            show(&before.1),
            "seed {seed}, home, after {steps:#?}"
        );
    }
}

#[test]
fn uninstall_takes_the_install_flags_and_says_when_there_is_nothing_to_remove() {
    let env = TestEnv::with_board();
    let out = env
        .loopx(&[
            "hooks",
            "uninstall",
            "--runtime",
            "claude",
            "--guard",
            "--mcp",
        ])
        .ok();
    assert_text(
        &out.stdout,
        "claude-code  .claude/settings.json: nothing to remove\n",
    );
    env.loopx(&["hooks", "install", "--runtime", "gemini"]).ok();
    env.loopx(&["hooks", "install", "--runtime", "gemini", "--guard"])
        .ok();
    let out = env
        .loopx(&["hooks", "uninstall", "--runtime", "gemini", "--guard"])
        .ok();
    assert_text(&out.stdout, "gemini       .gemini/settings.json: removed\n");
    assert!(!env.repo.join(".gemini").exists());
}

#[test]
fn doctor_checks_the_program_each_hook_runs_and_the_runtime_timeout_limits() {
    let env = TestEnv::with_board();
    let out = env.loopx(&["hooks", "install", "--runtime", "codex"]).ok();
    assert!(
        out.stdout.contains("codex        .codex/hooks.json: created (Codex runs no hooks in a project it does not trust")
            && out.stdout.contains("`codex exec --trust …`"),
        "{}",
        out.stdout
    );
    let hooks = env.repo.join(".codex/hooks.json");
    let v: serde_json::Value = serde_json::from_str(&read(&hooks)).unwrap();
    assert_eq!(v["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"], 3);
    // Absolute paths need nothing on PATH.
    let doctor = |env: &TestEnv| {
        crate::common::run(env.command().env("PATH", "/usr/bin:/bin").args([
            "hooks",
            "doctor",
            "--runtime",
            "codex",
            "--json",
        ]))
    };
    // Codex runs no hooks in a project its config does not trust: doctor
    // says so, and what to run, as a note (exit 0): a run may be trusted on
    // its command line (`codex exec --trust`), which doctor cannot see.
    let untrusted = doctor(&env).ok().json();
    assert_eq!(untrusted["ok"], true, "{untrusted}");
    assert!(
        untrusted["checks"][0].get("problems").is_none(),
        "{untrusted}"
    );
    let notes = untrusted["checks"][0]["notes"].to_string();
    assert!(
        notes.contains("Codex runs no hooks in a project it does not trust")
            && notes.contains("codex exec --trust")
            && notes.contains("cannot be seen from here"),
        "{notes}"
    );
    trust_in_codex(&env);
    let ok = doctor(&env).ok().json();
    assert_eq!(ok["ok"], true, "{ok}");
    // A binary that moved, and a timeout Codex cuts.
    let moved = read(&hooks)
        .replace(&exe(), "/nowhere/bin/loopx")
        .replace("\"timeout\": 3", "\"timeout\": 15");
    write(&hooks, &moved);
    let bad = doctor(&env).code(1).json();
    let problems = bad["checks"][0]["problems"].to_string();
    assert!(
        problems.contains("hooks.SessionStart runs /nowhere/bin/loopx, which is not there or not executable (loopx moved?): run `loopx hooks install` again"),
        "{problems}"
    );
    assert!(
        problems.contains(
            "hooks.SessionEnd asks for a 15 s timeout: Codex cuts a SessionEnd hook to 3 s"
        ),
        "{problems}"
    );
    // Installing again points every hook at this binary, in place.
    let out = env.loopx(&["hooks", "install", "--runtime", "codex"]).ok();
    assert_text(&out.stdout, "codex        .codex/hooks.json: updated\n");
    assert!(!read(&hooks).contains("/nowhere"));
    // `--program loopx` keeps the PATH lookup, for settings a team shares.
    env.loopx(&[
        "hooks",
        "install",
        "--runtime",
        "codex",
        "--program",
        "loopx",
    ])
    .ok();
    let v: serde_json::Value = serde_json::from_str(&read(&hooks)).unwrap();
    assert_eq!(
        v["hooks"]["Stop"][0]["hooks"][0]["command"],
        "loopx hook codex Stop"
    );
}

#[test]
fn the_opencode_plugin_is_placed_pointed_at_this_loopx_checked_and_removed() {
    let env = TestEnv::with_board();
    let out = env
        .loopx(&["hooks", "install", "--runtime", "opencode"])
        .ok();
    assert_text(
        &out.stdout,
        "opencode     .opencode/plugins/loopx.js: created\n",
    );
    let plugin = env.repo.join(".opencode/plugins/loopx.js");
    let text = read(&plugin);
    assert!(text.starts_with("// loopx-managed plugin"), "{text}");
    assert!(
        text.contains(&format!("const LOOPX = \"{}\";", exe())),
        "{text}"
    );
    // Idempotent.
    let again = env
        .loopx(&["hooks", "install", "--runtime", "opencode"])
        .ok();
    assert_text(
        &again.stdout,
        "opencode     .opencode/plugins/loopx.js: unchanged\n",
    );
    let doctor = |env: &TestEnv| {
        crate::common::run(env.command().env("PATH", "/usr/bin:/bin").args([
            "hooks",
            "doctor",
            "--runtime",
            "opencode",
            "--json",
        ]))
    };
    let ok = doctor(&env).ok().json();
    assert_eq!(ok["checks"][0]["status"], "wired", "{ok}");
    write(&plugin, &text.replace(&exe(), "/nowhere/loopx"));
    let bad = doctor(&env).code(1).json();
    assert!(
        bad["checks"][0]["problems"][0]
            .as_str()
            .unwrap()
            .contains("runs /nowhere/loopx, which is not there"),
        "{bad}"
    );
    // A file of the user's at that path is left alone by uninstall.
    env.loopx(&["hooks", "uninstall", "--runtime", "opencode"])
        .ok();
    assert!(!env.repo.join(".opencode").exists());
    write(&plugin, "export const Mine = async () => ({});\n");
    let out = env
        .loopx(&["hooks", "uninstall", "--runtime", "opencode"])
        .ok();
    assert_eq!(out.stdout, "");
    assert_eq!(read(&plugin), "export const Mine = async () => ({});\n");
}

#[test]
fn hooks_installed_with_a_wrapper_program_are_loopxs_to_doctor_reinstall_and_uninstall() {
    let env = TestEnv::with_board();
    trust_in_codex(&env);
    let wrapper = env.root().join("bin/loopx-logged");
    write(&wrapper, &format!("#!/bin/sh\nexec {} \"$@\"\n", exe()));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let wrapper = wrapper.display().to_string();
    let install = || {
        env.loopx(&[
            "hooks",
            "install",
            "--runtime",
            "codex",
            "--guard",
            "--program",
            &wrapper,
        ])
        .ok()
    };
    install();
    let hooks = env.repo.join(".codex/hooks.json");
    let first = read(&hooks);
    assert!(
        first.contains(&format!("{wrapper} hook codex Stop")),
        "{first}"
    );
    // A second install changes nothing: no hook is duplicated.
    assert_text(
        &install().stdout,
        "codex        .codex/hooks.json: unchanged\n",
    );
    assert_eq!(read(&hooks), first);
    // Doctor sees the wrapper's hooks as wired, and needs no loopx on PATH.
    let doctor = crate::common::run(env.command().env("PATH", "/usr/bin:/bin").args([
        "hooks",
        "doctor",
        "--runtime",
        "codex",
    ]))
    .ok();
    assert!(
        doctor
            .stdout
            .contains("codex        .codex/hooks.json: wired (")
            && doctor
                .stdout
                .contains("loopx is not on PATH (the hooks run it by its absolute path"),
        "{}",
        doctor.stdout
    );
    // Uninstall removes them.
    let out = env
        .loopx(&["hooks", "uninstall", "--runtime", "codex"])
        .ok();
    assert_text(&out.stdout, "codex        .codex/hooks.json: removed\n");
    assert!(!hooks.exists());
}
