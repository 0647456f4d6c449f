//! `loopx completions` and `loopx man`: the scripts load in their shell and
//! complete, and the pages render with `man -l`.

use std::process::Command;

use crate::common::{TestEnv, run};

/// Whether `program` runs here; says how to get it when it does not (the
/// test is then skipped, as the brief for opt-in tests asks).
fn have(program: &str, install: &str) -> bool {
    let ok = Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        crate::common::skipped(format_args!(
            "skipped: {program} is not installed ({install}); .ci/run installs it"
        ));
    }
    ok
}

#[test]
fn the_bash_completion_loads_and_completes_commands_and_flags() {
    if !have("bash", "apt-get install bash") {
        return;
    }
    let env = TestEnv::new();
    let script = env.root().join("loopx.bash");
    let out = run(env.command().args(["completions", "bash"])).ok();
    std::fs::write(&script, &out.stdout).unwrap();
    // Load it, then complete `loopx to` and `loopx todo claim --n` the way
    // bash's programmable completion calls the function.
    let probe = format!(
        r#"set -e
source '{}'
complete -p loopx
COMP_WORDS=(loopx to); COMP_CWORD=1; COMP_LINE="loopx to"; COMP_POINT=${{#COMP_LINE}}
_loopx loopx to loopx
echo "one: ${{COMPREPLY[*]}}"
COMP_WORDS=(loopx todo claim --n); COMP_CWORD=3; COMP_LINE="loopx todo claim --n"; COMP_POINT=${{#COMP_LINE}}
_loopx loopx --n claim
echo "two: ${{COMPREPLY[*]}}"
"#,
        script.display()
    );
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &probe])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("-F _loopx loopx"), "{stdout}");
    assert!(stdout.contains("one: todo"), "{stdout}");
    let two = stdout.lines().find(|l| l.starts_with("two:")).unwrap();
    assert!(two.contains("--next") && two.contains("--no-sync"), "{two}");
    // Every shell clap knows gets a script.
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let out = run(env.command().args(["completions", shell])).ok();
        assert!(out.stdout.contains("loopx"), "{shell}");
    }
    let bad = run(env.command().args(["completions", "tcsh"])).code(2);
    assert!(
        bad.stderr.contains("invalid value 'tcsh'"),
        "{}",
        bad.stderr
    );
}

#[test]
fn the_man_pages_render_with_man() {
    if !have("man", "apt-get install man-db") {
        return;
    }
    let env = TestEnv::new();
    let out = run(env.command().arg("man")).ok();
    let page = env.root().join("loopx.1");
    std::fs::write(&page, &out.stdout).unwrap();
    let render = |page: &std::path::Path| {
        let out = Command::new("man")
            .arg("-l")
            .arg(page)
            .env("MANPAGER", "cat")
            .env("MANWIDTH", "80")
            .env("LANG", "C")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let text = render(&page);
    assert!(text.contains("NAME"), "{text}");
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("loopx - The control plane"), "{text}");
    assert!(
        text.contains("SUBCOMMANDS") || text.contains("loopx-todo(1)"),
        "{text}"
    );
    // --dir writes a page per command, without clap's `help` pseudo-commands.
    let dir = env.root().join("man1");
    let listed = run(env.command().args(["man", "--dir"]).arg(&dir).arg("--json"))
        .ok()
        .json();
    let names: Vec<&str> = listed["pages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"loopx-todo-claim.1"), "{names:?}");
    assert!(!names.iter().any(|n| n.contains("help")), "{names:?}");
    let claim = render(&dir.join("loopx-todo-claim.1"));
    assert!(claim.contains("--next"), "{claim}");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), names.len());
}
