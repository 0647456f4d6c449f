//! The status page in a real browser: headless Chromium loads it, runs its
//! script, and the DOM it dumps is checked. Opt-in for plain `cargo test`
//! (it needs Chromium); `.ci/run` installs Debian's `chromium` and runs it:
//!
//!     LOOPX_CHROMIUM=/usr/bin/chromium cargo test --test cli test_browser::

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::TestEnv;

const PWNED: &str = "<script>document.title='PWNED'</script>";

fn chromium() -> Option<PathBuf> {
    match std::env::var_os("LOOPX_CHROMIUM") {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ => {
            crate::common::skipped(format_args!(
                "skipped: the browser test needs Chromium; run it with \
                 LOOPX_CHROMIUM=/usr/bin/chromium cargo test --test cli test_browser:: \
                 (apt-get install chromium)"
            ));
            None
        }
    }
}

/// Where screenshots go: under the target directory, kept as CI artifacts.
fn shots() -> PathBuf {
    let target = option_env!("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    let dir = target.join("browser");
    std::fs::create_dir_all(&dir).expect("mkdir target/browser");
    dir
}

fn headless(bin: &Path, home: &Path, args: &[&str]) -> std::process::Output {
    let out = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
        ])
        .args(["--no-first-run", "--disable-extensions"])
        .arg(format!(
            "--user-data-dir={}",
            home.join("chromium").display()
        ))
        .args(args)
        .env("HOME", home)
        .output()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A board worth a screenshot, with injected markup in agent-written text.
fn board() -> TestEnv {
    let env = TestEnv::with_board();
    env.loopx(&["goal", "add", "docs", "--objective", "Write the manual"])
        .ok();
    let t = env.add("Write the parser", &["--goal", "main", "--priority", "P1"]);
    env.add("Test the parser", &["--goal", "main", "--after", &t]);
    let evil = env.add(PWNED, &["--goal", "main"]);
    env.add("Chapter 1", &["--goal", "docs"]);
    let d = env.add("Chapter 2", &["--goal", "docs"]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    env.agent("agent-b", &["todo", "claim", &evil]).ok();
    env.agent("agent-b", &["todo", "update", &evil, "--note", PWNED])
        .ok();
    env.loopx(&["todo", "update", &d, "--status", "deferred"])
        .ok();
    env.loopx(&[
        "gate",
        "open",
        "--goal",
        "main",
        "--kind",
        "permission",
        "--question",
        "May I push the parser to production?",
        "--option",
        "approve",
        "--option",
        "reject",
    ])
    .ok();
    env.loopx(&[
        "gate",
        "open",
        "--goal",
        "docs",
        "--question",
        PWNED,
        "--option",
        PWNED,
        "--option",
        "no",
    ])
    .ok();
    env
}

fn count(dom: &str, key: &str) -> u64 {
    let dl = &dom[dom.find("id=\"counts\"").expect("counts")..];
    let dd = &dl[dl.find(&format!("data-count=\"{key}\">")).expect(key)..];
    let v = &dd[dd.find('>').unwrap() + 1..];
    v[..v.find('<').unwrap()].parse().expect("a number")
}

#[test]
fn chromium_renders_the_page_and_runs_nothing_injected() {
    let Some(bin) = chromium() else { return };
    let env = board();
    let page = env.root().join("status.html");
    env.loopx(&["status", "--html", page.to_str().unwrap()])
        .ok();
    let json = env.loopx(&["status", "--json"]).ok().json();
    let url = format!("file://{}", page.display());
    let home = env.root().join("home");

    let dom = String::from_utf8(headless(&bin, &home, &["--dump-dom", &url]).stdout).unwrap();
    // The page's own script ran (the filter box shows), so an injected one
    // would have run too; yet the title is the page's own.
    assert!(
        dom.contains("id=\"filter\"") && dom.contains("display: block"),
        "the page's script did not run: {dom}"
    );
    let title = &dom[dom.find("<title>").unwrap() + 7..dom.find("</title>").unwrap()];
    assert_eq!(
        title,
        format!("loopx refs/loopx/state tick {}", json["tick"])
    );
    assert!(!dom.contains("PWNED</title>"));
    // The gates section is the first section, the human's gate first in it.
    let first = &dom[dom.find("<section").unwrap()..];
    assert!(first.starts_with("<section id=\"gates\">"), "{first:.200}");
    let human = json["gates"][0]["id"].as_str().unwrap();
    assert!(first.find(human).unwrap() < first.find("id=\"goals\"").unwrap());
    // The counts the browser shows are the JSON's.
    for k in [
        "ready", "open", "waiting", "claimed", "blocked", "deferred", "done",
    ] {
        assert_eq!(count(&dom, k), json["counts"][k].as_u64().unwrap(), "{k}");
    }
    assert_eq!(count(&dom, "agents"), json["agents"].as_u64().unwrap());

    for (name, size) in [("status.png", "1200,1600"), ("status-360.png", "360,1800")] {
        let shot = shots().join(name);
        let _ = std::fs::remove_file(&shot);
        headless(
            &bin,
            &home,
            &[
                &format!("--screenshot={}", shot.display()),
                &format!("--window-size={size}"),
                &url,
            ],
        );
        let png = std::fs::read(&shot).expect("a screenshot");
        assert!(png.starts_with(b"\x89PNG"), "{name} is a PNG");
        assert!(png.len() > 10_000, "{name} shows something");
    }
}
