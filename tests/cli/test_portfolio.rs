//! Issue 51: the repositories a person follows (`loopx portfolio`, kept in
//! their global git config, never in a state), `status --all` across them
//! (terminal, JSON, the page and its watch), and notifications that say
//! where, with remote URLs shown without credentials.
//!
//! Every test points `GIT_CONFIG_GLOBAL` at a file of its own temp dir
//! (the harness's default is /dev/null), so the real global config is
//! never read or written.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Machine, TestEnv, run};

const GOAL_MAIN: &str = "refs/loopx/goals/main";

/// A test environment whose global git config is `<tmp>/home/.gitconfig`.
fn env_with_global() -> (TestEnv, PathBuf) {
    let mut env = TestEnv::with_board();
    let global = env.root().join("home/.gitconfig");
    env.set_env("GIT_CONFIG_GLOBAL", global.to_str().unwrap());
    (env, global)
}

fn canon(p: &Path) -> String {
    std::fs::canonicalize(p)
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

#[test]
fn the_portfolio_lives_in_the_global_git_config_and_adding_twice_changes_nothing() {
    let (env, global) = env_with_global();
    let tip = env.tip();
    let out = env.loopx(&["portfolio", "add", "."]).ok();
    let repo = canon(&env.repo);
    assert_eq!(out.stdout.trim(), format!("Following {repo}."));
    let again = env.loopx(&["--json", "portfolio", "add", "../repo"]).ok();
    assert_eq!(again.json()["added"], false, "{}", again.stdout);
    let again = env.loopx(&["portfolio", "add", "."]).ok();
    assert!(
        again.stdout.contains("Already following"),
        "{}",
        again.stdout
    );
    // A folder that is no repository is followed, with a warning.
    std::fs::create_dir_all(env.root().join("plain")).unwrap();
    let plain = env.loopx(&["portfolio", "add", "../plain"]).ok();
    assert!(
        plain.stderr.contains("not a git repository"),
        "{}",
        plain.stderr
    );
    let text = std::fs::read_to_string(&global).unwrap();
    assert_eq!(
        text.matches("portfolio = ").count(),
        2,
        "one value per repository: {text}"
    );
    let list = env.loopx(&["--json", "portfolio", "list"]).ok().json();
    let paths: Vec<&str> = list["repositories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, [repo.clone(), canon(&env.root().join("plain"))]);
    // Nothing of it is in the state.
    assert_eq!(env.tip(), tip);
    // A path that does not exist is refused; so is removing one not followed.
    let missing = env
        .loopx(&["--json", "portfolio", "add", "../nowhere"])
        .code(2);
    assert_eq!(missing.error_code(), "bad-path");
    let unknown = env
        .loopx(&["--json", "portfolio", "remove", "../nowhere"])
        .code(2);
    assert_eq!(unknown.error_code(), "bad-path");
    // A followed folder that is gone is removed by the path list shows.
    std::fs::remove_dir(env.root().join("plain")).unwrap();
    let listed = env.loopx(&["portfolio", "list"]).ok().stdout;
    assert!(listed.contains("(missing)"), "{listed}");
    env.loopx(&["portfolio", "remove", "../plain"]).ok();
    env.loopx(&["portfolio", "remove", &repo]).ok();
    let list = env.loopx(&["--json", "portfolio", "list"]).ok().json();
    assert_eq!(list["repositories"], serde_json::json!([]));
}

/// What [`followed`] made: the paths (canonical) and the two gates.
struct Followed<'e> {
    web: String,
    api: String,
    api2: String,
    plain: String,
    gone: String,
    web_gate: String,
    api_gate: String,
    api_machine: Machine<'e>,
    /// The clone of the same hub's shared ref, which made the split (not
    /// followed by [`followed`]).
    shared: Machine<'e>,
}

/// A clone of `hub` named `name` that works the goal ref `goal_ref`.
fn goal_clone<'e>(env: &'e TestEnv, name: &str, hub: &str, goal_ref: &str) -> Machine<'e> {
    let m = env.clone_machine(name, hub);
    m.git(&["config", "loopx.ref", goal_ref]);
    m.loopx(&["sync"]).ok();
    m
}

fn gate_id(out: crate::common::Output) -> String {
    out.json()["gate"]["id"].as_str().unwrap().to_owned()
}

/// Follows: `repo` (the environment's own: a gate waiting on a human, a
/// budget, agent-a holding a claim); `api` and `api2`, two clones of one
/// hub working goal `main` of a split state (a gate on it); `plain`, a
/// folder in no repository; and `gone`, which no longer exists.
fn followed(env: &TestEnv) -> Followed<'_> {
    let t = env.add("Write the parser", &[]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    env.loopx(&["goal", "set", "main", "--budget-usd", "20"])
        .ok();
    let web_gate = gate_id(
        env.loopx(&[
            "--json",
            "gate",
            "open",
            "--kind",
            "permission",
            "--question",
            "May I deploy the site?",
        ])
        .ok(),
    );
    let hub = env.hub("api.git");
    let shared = env.clone_machine("api-shared", &hub);
    shared
        .loopx(&["init", "--goal", "main", "--objective", "The API"])
        .ok();
    shared
        .loopx(&["goal", "add", "docs", "--objective", "The manual"])
        .ok();
    shared.loopx(&["sync"]).ok();
    shared.loopx(&["goal", "split"]).ok();
    shared.loopx(&["sync"]).ok();
    let api = goal_clone(env, "api", &hub, GOAL_MAIN);
    let api_gate = gate_id(
        api.loopx(&[
            "--json",
            "gate",
            "open",
            "--kind",
            "production",
            "--question",
            "May I migrate the API database?",
        ])
        .ok(),
    );
    let api2 = goal_clone(env, "api2", &hub, GOAL_MAIN);
    let plain = env.root().join("plain");
    let gone = env.root().join("gone");
    std::fs::create_dir_all(&plain).unwrap();
    std::fs::create_dir_all(&gone).unwrap();
    let f = Followed {
        web: canon(&env.repo),
        api: canon(&api.repo),
        api2: canon(&api2.repo),
        plain: canon(&plain),
        gone: canon(&gone),
        web_gate,
        api_gate,
        api_machine: api,
        shared,
    };
    for p in [&f.web, &f.api, &f.api2, &f.plain, &f.gone] {
        env.loopx(&["portfolio", "add", p]).ok();
    }
    std::fs::remove_dir(&gone).unwrap();
    f
}

#[test]
fn status_all_shows_every_repository_what_waits_first_and_a_missing_one_as_such() {
    let (env, _) = env_with_global();
    let f = followed(&env);
    let json = env.loopx(&["--json", "status", "--all"]).ok().json();
    let repos = json["repositories"].as_array().unwrap();
    let paths: Vec<&str> = repos.iter().map(|r| r["path"].as_str().unwrap()).collect();
    // Two clones of one hub on one ref show once, naming both.
    assert_eq!(paths, [&f.web, &f.api, &f.plain, &f.gone], "{json:#}");
    assert_eq!(repos[1]["also"][0]["path"], f.api2.as_str());
    assert_eq!(repos[1]["goal"], "main", "a goal's clone shows its goal");
    assert_eq!(repos[1]["ref"], GOAL_MAIN);
    assert_eq!(repos[2]["problem"], "not-a-repository");
    assert_eq!(repos[3]["problem"], "missing");
    // Each repository's status is `loopx -C PATH status --json`'s.
    assert_eq!(repos[0]["status"]["gates"][0]["id"], f.web_gate.as_str());
    assert_eq!(repos[0]["status"]["budgets"][0]["goal"], "main");
    assert_eq!(repos[1]["status"]["gates"][0]["id"], f.api_gate.as_str());
    // What waits on the person, across them, oldest first, with answers
    // that run from anywhere.
    let waiting = json["waiting"].as_array().unwrap();
    assert_eq!(waiting.len(), 2, "{json:#}");
    assert_eq!(waiting[0]["id"], f.web_gate.as_str());
    assert_eq!(waiting[0]["repository"], f.web.as_str());
    assert_eq!(
        waiting[1]["answer_commands"][0],
        format!(
            "loopx -C {} gate answer {} --choice approve",
            f.api, f.api_gate
        )
    );
    // The fleet: agent-a, in the environment's repository.
    let fleet = json["fleet"].as_array().unwrap();
    let a = fleet.iter().find(|r| r["agent"] == "agent-a").unwrap();
    assert_eq!(a["repository"], f.web.as_str());
    assert_eq!(a["holds"].as_array().unwrap().len(), 1);

    let text = env.loopx(&["status", "--all"]).ok().stdout;
    let pos = |s: &str| text.find(s).unwrap_or_else(|| panic!("{s:?} in:\n{text}"));
    assert!(pos("waiting on you:") < pos("budgets:"), "{text}");
    assert!(pos("budgets:") < pos("fleet:"), "{text}");
    assert!(pos("fleet:") < pos("repositories:"), "{text}");
    pos(&format!(
        "      loopx -C {} gate answer {} --choice approve\n",
        f.web, f.web_gate
    ));
    pos(&format!("  plain  {}  not a git repository", f.plain));
    pos(&format!("  gone  {}  missing", f.gone));
    pos(&format!("  api  {}  goal main, tick", f.api));
    pos(&format!("      also at {} ({GOAL_MAIN}, tick", f.api2));

    // The printed answer works from anywhere: here, from the temp dir.
    let words: Vec<String> = waiting[1]["answer_commands"][0]
        .as_str()
        .unwrap()
        .split(' ')
        .skip(1)
        .map(str::to_owned)
        .collect();
    run(env.spawner().command().current_dir(env.root()).args(&words)).ok();
    let after = env.loopx(&["--json", "status", "--all"]).ok().json();
    assert_eq!(after["waiting"].as_array().unwrap().len(), 1, "{after:#}");
    let api_gates = f
        .api_machine
        .loopx(&["--json", "gate", "list", "--open"])
        .ok();
    assert_eq!(api_gates.json()["gates"], serde_json::json!([]));

    // The clone of the shared ref, followed too: it shows every goal, but
    // holds goal main's ref behind the goal's clone (whose answer it has
    // not synced), so the goal's clone still shows apart.
    let shared = canon(&f.shared.repo);
    env.loopx(&["portfolio", "add", &shared]).ok();
    let json = env.loopx(&["--json", "status", "--all"]).ok().json();
    let paths = |json: &serde_json::Value| -> Vec<String> {
        json["repositories"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["path"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        paths(&json),
        [f.web.as_str(), &f.api, &f.plain, &f.gone, &shared],
        "{json:#}"
    );
    // Once both have synced, the goal's clone is at the commit the shared
    // clone holds for goal main: it folds into it, nothing hidden.
    f.api_machine.loopx(&["sync"]).ok();
    f.shared.loopx(&["sync"]).ok();
    let json = env.loopx(&["--json", "status", "--all"]).ok().json();
    assert_eq!(
        paths(&json),
        [f.web.as_str(), &f.plain, &f.gone, &shared],
        "{json:#}"
    );
    let also: Vec<&str> = json["repositories"][3]["also"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["path"].as_str().unwrap())
        .collect();
    assert_eq!(also, [f.api.as_str(), f.api2.as_str()], "{json:#}");
    // A gate of goal main, shown through the shared clone: its printed
    // answer runs in the goal's clone, which writes goal main's ref.
    let gate = gate_id(
        f.api_machine
            .loopx(&[
                "--json",
                "gate",
                "open",
                "--goal",
                "main",
                "--kind",
                "publish",
                "--question",
                "May I publish the API docs?",
            ])
            .ok(),
    );
    f.api_machine.loopx(&["sync"]).ok();
    f.shared.loopx(&["sync"]).ok();
    let json = env.loopx(&["--json", "status", "--all"]).ok().json();
    assert_eq!(paths(&json), [f.web.as_str(), &f.plain, &f.gone, &shared]);
    let w = json["waiting"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["id"] == gate.as_str())
        .expect("the gate waits");
    assert_eq!(w["repository"], shared.as_str());
    assert_eq!(
        w["answer_commands"][0],
        format!("loopx -C {} gate answer {gate} --choice approve", f.api)
    );
    let words: Vec<String> = w["answer_commands"][0]
        .as_str()
        .unwrap()
        .split(' ')
        .skip(1)
        .map(str::to_owned)
        .collect();
    run(env.spawner().command().current_dir(env.root()).args(&words)).ok();
    let open = f
        .api_machine
        .loopx(&["--json", "gate", "list", "--open"])
        .ok();
    assert_eq!(open.json()["gates"], serde_json::json!([]));
}

/// A repository another user owns shows as such; the others still show.
#[test]
fn another_users_repository_shows_as_such_and_hides_nothing() {
    let (env, _) = env_with_global();
    let theirs = env.root().join("theirs");
    std::fs::create_dir_all(&theirs).unwrap();
    crate::common::git_in(&theirs, &["init", "-q", "."]);
    let done = Command::new("chown")
        .args(["-R", "12345:12345"])
        .arg(&theirs)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !done {
        crate::common::skipped(format_args!(
            "skipped: chown needs root; another user's repository was not exercised"
        ));
        return;
    }
    let theirs = canon(&theirs);
    env.loopx(&["portfolio", "add", &theirs]).ok();
    env.loopx(&["portfolio", "add", "."]).ok();
    let json = env.loopx(&["--json", "status", "--all"]).ok().json();
    let repos = json["repositories"].as_array().unwrap();
    assert_eq!(repos[0]["problem"], "other-user", "{json:#}");
    assert!(repos[1]["status"]["tick"].as_u64().unwrap() > 0, "{json:#}");
    let text = env.loopx(&["status", "--all"]).ok().stdout;
    assert!(
        text.contains(&format!("theirs  {theirs}  another user's")),
        "{text}"
    );
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "waited for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_page_of_every_repository_puts_gates_first_and_watch_follows_each_ref() {
    let (env, _) = env_with_global();
    let f = followed(&env);
    let file = env.root().join("all.html");
    env.loopx(&["status", "--all", "--html", file.to_str().unwrap()])
        .ok();
    let page = std::fs::read_to_string(&file).unwrap();
    let pos = |s: &str| {
        page.find(s)
            .unwrap_or_else(|| panic!("{s:?} not on the page"))
    };
    assert!(pos("<section id=\"gates\">") < pos("<section id=\"stuck\">"));
    assert!(pos("<section id=\"stuck\">") < pos("<section id=\"money\">"));
    assert!(pos("<section id=\"money\">") < pos("<section id=\"fleet\">"));
    assert!(pos("<section id=\"fleet\">") < pos("<section id=\"repositories\">"));
    pos(&format!(
        "loopx -C {} gate answer {} --choice approve",
        f.api, f.api_gate
    ));
    pos(&format!(
        "data-repo=\"{}\" data-problem=\"missing\"",
        f.gone
    ));
    pos(&format!(
        "data-repo=\"{}\" data-problem=\"not-a-repository\"",
        f.plain
    ));
    pos(&format!("<code>{}</code>", f.api2));
    pos("<tr data-agent=\"agent-a\"");

    // Watch: one page now, another once a followed ref moves.
    let watched = env.root().join("watch.html");
    let mut child = env
        .command()
        .args([
            "status",
            "--all",
            "--html",
            watched.to_str().unwrap(),
            "--watch",
            "--max-updates",
            "2",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("loopx starts");
    // The page is written once; its sidecar follows every ref (issue 52).
    let sidecar = env.root().join("watch.html.live.js");
    wait_for("the first page", || watched.exists() && sidecar.exists());
    let page = std::fs::read_to_string(&watched).unwrap();
    let first = std::fs::read_to_string(&sidecar).unwrap();
    f.api_machine.add("Watched todo");
    let mut status = None;
    wait_for("the watcher to stop", || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    assert!(status.unwrap().success());
    let second = std::fs::read_to_string(&sidecar).unwrap();
    assert_ne!(first, second, "the sidecar follows the moved ref");
    assert_eq!(std::fs::read_to_string(&watched).unwrap(), page);
    let json = |text: &str| serde_json::to_string(text).unwrap();
    let repo = format!("data-repo=\"{}\"", f.api);
    let repo = json(&repo);
    assert!(second.contains(repo.trim_matches('"')), "{second}");
}

/// The page across repositories in a real browser at 1280 and 390 pixels
/// (opt-in, as `test_browser`): the layout holds as the browser measures
/// it (`test_browser::layout_problems`), gates first.
#[test]
fn chromium_renders_the_page_of_every_repository_at_1280_and_390() {
    let Some(bin) = crate::test_browser::chromium() else {
        return;
    };
    let (env, _) = env_with_global();
    let f = followed(&env);
    let file = env.root().join("all.html");
    env.loopx(&["status", "--all", "--html", file.to_str().unwrap()])
        .ok();
    let url = format!("file://{}", file.display());
    let home = env.root().join("home");
    let dom =
        String::from_utf8(crate::test_browser::headless(&bin, &home, &["--dump-dom", &url]).stdout)
            .unwrap();
    assert!(
        dom.contains("id=\"filter\"") && dom.contains("display: block"),
        "the page's script ran: {dom:.300}"
    );
    let first = &dom[dom.find("<section").unwrap()..];
    assert!(first.starts_with("<section id=\"gates\">"), "{first:.200}");
    assert!(first.find(&f.web_gate).unwrap() < first.find("id=\"fleet\"").unwrap());
    for (name, width) in [("status-all-1280.png", 1280), ("status-all-390.png", 390)] {
        let problems = crate::test_browser::layout_problems(&bin, &home, &file, width);
        assert!(
            problems.is_empty(),
            "at {width} px:\n{}",
            problems.join("\n")
        );
        let shot = crate::test_browser::shots().join(name);
        let _ = std::fs::remove_file(&shot);
        crate::test_browser::headless(
            &bin,
            &home,
            &[
                &format!("--screenshot={}", shot.display()),
                &format!("--window-size={width},2000"),
                &url,
            ],
        );
        let png = std::fs::read(&shot).expect("a screenshot");
        assert!(png.starts_with(b"\x89PNG"), "{name} is a PNG");
        assert!(png.len() > 10_000, "{name} shows something");
    }
}
