//! `git push` under the guard: which destinations a push names, and where
//! git would push one that names none (resolved read-only with git, in the
//! directory the command runs in).

use std::path::{Path, PathBuf};

use super::*;

/// The arguments after git's global options (`-C DIR`, `-c KEY=VALUE`,
/// `--git-dir DIR`, `--no-pager`, …), and the directory `-C` moves to.
pub(super) fn git_globals<'a, 'b>(args: &'b [&'a str]) -> (&'b [&'a str], Option<String>) {
    let mut i = 0;
    let mut dir: Option<String> = None;
    while let Some(a) = args.get(i) {
        if !a.starts_with('-') {
            break;
        }
        if *a == "-C"
            && let Some(d) = args.get(i + 1)
        {
            dir = Some(match dir {
                Some(base) if !d.starts_with('/') => format!("{base}/{d}"),
                _ => (*d).to_owned(),
            });
        }
        let takes_value = matches!(
            *a,
            "-C" | "-c"
                | "--git-dir"
                | "--work-tree"
                | "--namespace"
                | "--config-env"
                | "--super-prefix"
        );
        i += if takes_value { 2 } else { 1 };
    }
    (&args[i.min(args.len())..], dir)
}

/// `git [globals] SUBCOMMAND …`: a push, a change of trust, or plumbing
/// that moves loopx's refs.
pub(super) fn git(args: &[&str], scan: &Scan) -> Vec<Risk> {
    let (args, dash_c) = git_globals(args);
    let dir = match (&scan.dir, dash_c) {
        (Some(base), Some(d)) if !d.starts_with('/') => Some(format!("{base}/{d}")),
        (_, Some(d)) => Some(d),
        (base, None) => base.clone(),
    };
    let sub = args.first().copied().unwrap_or("");
    let rest = args.get(1..).unwrap_or_default();
    let loopx_ref = |a: &&str| a.contains("loopx/") || a.contains("refs/replace");
    match sub {
        "push" => git_push(rest, dir),
        "config" => rest
            .iter()
            .map(|a| a.to_ascii_lowercase())
            .find(|a| {
                [
                    "loopx.allowedsignersfile",
                    "gpg.ssh.allowedsignersfile",
                    "loopx.runvalidations",
                    "loopx.signaturesfrom",
                ]
                .iter()
                .any(|k| a.starts_with(k))
            })
            .map(|key| Risk::TrustChange {
                what: format!("git config {key}"),
            })
            .into_iter()
            .collect(),
        // `--stdin` reads its refs from elsewhere (a pipe, a file), which
        // the guard cannot see: denied too.
        "update-ref" | "symbolic-ref"
            if rest.iter().any(loopx_ref) || rest.contains(&"--stdin") =>
        {
            vec![Risk::StateWrite {
                what: format!("git {sub} {}", rest.join(" ")),
            }]
        }
        // Listing is harmless; anything else plants or moves a replacement.
        "replace" if !rest.is_empty() && !rest.iter().any(|a| matches!(*a, "-l" | "--list")) => {
            vec![Risk::StateWrite {
                what: "git replace".to_owned(),
            }]
        }
        "fetch" | "pull"
            if rest.iter().any(|a| {
                a.split_once(':').is_some_and(|(_, dst)| {
                    dst.starts_with("refs/loopx/") || dst.starts_with("refs/replace/")
                })
            }) =>
        {
            vec![Risk::StateWrite {
                what: format!("git {sub} into refs/loopx or refs/replace"),
            }]
        }
        _ => Vec::new(),
    }
}

/// Branches whose push is a release or a deploy in most projects.
pub(super) const PROTECTED: &[&str] = &["main", "master", "production", "prod", "release", "live"];

/// `git push …` (the words after `push`): what its flags and refspecs
/// say, and a [`Risk::Push`] for whatever git's config decides.
pub(super) fn git_push(args: &[&str], dir: Option<String>) -> Vec<Risk> {
    let mut out = Vec::new();
    let mut pos: Vec<&str> = Vec::new();
    let mut remote: Option<String> = None;
    let (mut force, mut all, mut mirror, mut tags, mut follow) =
        (false, false, false, false, false);
    let mut it = args.iter().copied();
    while let Some(a) = it.next() {
        match a {
            "--" => {
                pos.extend(it.by_ref());
                break;
            }
            "-o" | "--push-option" | "--receive-pack" | "--exec" => {
                it.next();
            }
            "--repo" => remote = it.next().map(str::to_owned),
            "--tags" => tags = true,
            "--follow-tags" => follow = true,
            "--mirror" => mirror = true,
            "--all" | "--branches" => all = true,
            _ if a.starts_with("--repo=") => remote = Some(a["--repo=".len()..].to_owned()),
            _ if a.starts_with("--force") || a == "-f" => force = true,
            _ if a.starts_with("--") => {}
            // Clustered short flags: `-fu`.
            _ if a.starts_with('-') => force |= a[1..].contains('f'),
            _ => pos.push(a),
        }
    }
    let mut specs = pos.iter().map(|s| (*s).to_owned());
    if let Some(r) = specs.next() {
        remote = Some(r);
    }
    let specs: Vec<String> = specs.collect();
    let dash_f = if force { " --force" } else { "" };
    if tags {
        out.extend(covered("git push --tags".to_owned(), PUBLISH));
    }
    if follow {
        out.extend(covered("git push --follow-tags".to_owned(), PUBLISH));
    }
    if mirror {
        out.extend(covered("git push --mirror".to_owned(), PUBLISH));
        out.extend(covered(
            "git push --mirror (every branch)".to_owned(),
            PRODUCTION,
        ));
    }
    if all {
        out.extend(covered(
            format!("git push{dash_f} --all (every branch)"),
            PRODUCTION,
        ));
    }
    let mut head = Vec::new();
    for spec in &specs {
        match destination(spec) {
            Dest::Head => head.push(spec.clone()),
            Dest::Ref(dst) => out.extend(dest_risk(&format!("git push{dash_f} {spec}"), &dst)),
        }
    }
    // With no refspec (and not `--all`, `--mirror` or only `--tags`),
    // git's config decides; so it does for `HEAD`.
    if (specs.is_empty() && !all && !mirror && !tags) || !head.is_empty() {
        let mut what = format!("git push{dash_f}");
        if let Some(r) = &remote {
            what.push(' ');
            what.push_str(r);
        }
        for s in &head {
            what.push(' ');
            what.push_str(s);
        }
        out.push(Risk::Push(Push {
            dir,
            remote,
            specs: head,
            what,
        }));
    }
    out
}

/// Where a refspec pushes to.
pub(super) enum Dest {
    /// The current branch (`HEAD`, `@`), which git knows.
    Head,
    Ref(String),
}

pub(super) fn destination(spec: &str) -> Dest {
    let spec = spec.trim_start_matches('+');
    let dst = match spec.split_once(':') {
        Some((_, dst)) => dst,
        None => spec,
    };
    if dst.is_empty() || matches!(dst, "HEAD" | "@") {
        // `HEAD:` is not valid git; `:` alone is "matching branches".
        if spec == ":" {
            return Dest::Ref("refs/heads/*".to_owned());
        }
        return Dest::Head;
    }
    Dest::Ref(dst.to_owned())
}

/// What pushing to `dst` (a branch name or a full ref) is.
pub(super) fn dest_risk(what: &str, dst: &str) -> Option<Risk> {
    if dst.starts_with("refs/tags/") {
        return covered(what.to_owned(), PUBLISH);
    }
    let branch = dst.strip_prefix("refs/heads/").unwrap_or(dst);
    if branch.contains('*') {
        return covered(format!("{what} (every branch)"), PRODUCTION);
    }
    if PROTECTED.contains(&branch) || branch.starts_with("release/") {
        return covered(format!("git push to {branch}"), PRODUCTION);
    }
    None
}

/// What a `git push` that git must resolve would update, as risks: git
/// is run read-only in `base` (moved by the push's `-C` or `cd`) for the
/// current branch and the push config. When git cannot tell, the push is
/// taken as one to a protected branch.
pub(super) fn resolve_push(p: &Push, base: Option<&Path>) -> Vec<Risk> {
    let dir: Option<PathBuf> = match (&p.dir, base) {
        (Some(d), _) if d.starts_with('/') => Some(PathBuf::from(d)),
        (Some(d), Some(b)) => Some(b.join(d)),
        (Some(d), None) => Some(PathBuf::from(d)),
        (None, b) => b.map(Path::to_path_buf),
    };
    let config = match crate::git::push_config(dir.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            return covered(
                format!("{} (git could not say what it updates: {e:#})", p.what),
                PRODUCTION,
            )
            .into_iter()
            .collect();
        }
    };
    push_destinations(p, &config)
        .iter()
        .filter_map(|dst| dest_risk(&p.what, dst))
        .map(|r| match r {
            // Name the command as typed, and where git would send it.
            Risk::Covered { what, kinds } if what.starts_with("git push to ") => {
                let to = &what["git push to ".len()..];
                let current = if config.branch.as_deref() == Some(to) {
                    ", the current branch"
                } else {
                    ""
                };
                Risk::Covered {
                    what: format!("{} (to {to}{current})", p.what),
                    kinds,
                }
            }
            r => r,
        })
        .collect()
}

/// The refs a push updates, as git's rules decide them from `config`:
/// the remote (the one given, else `branch.<b>.pushRemote`,
/// `remote.pushDefault`, `branch.<b>.remote`, `origin`), then its
/// `remote.<r>.push` refspecs, else `push.default` (`simple` unless set).
pub(super) fn push_destinations(p: &Push, config: &crate::git::PushConfig) -> Vec<String> {
    let current = config.branch.as_deref();
    let branch_key = |k: &str| current.and_then(|b| config.get(&format!("branch.{b}.{k}")));
    let remote = p
        .remote
        .clone()
        .or_else(|| branch_key("pushremote").map(str::to_owned))
        .or_else(|| config.get("remote.pushdefault").map(str::to_owned))
        .or_else(|| branch_key("remote").map(str::to_owned))
        .unwrap_or_else(|| "origin".to_owned());
    let specs: Vec<String> = if !p.specs.is_empty() {
        p.specs.clone()
    } else {
        let configured = config.all(&format!("remote.{remote}.push"));
        if !configured.is_empty() {
            configured.into_iter().map(str::to_owned).collect()
        } else {
            match config.get("push.default").unwrap_or("simple") {
                "nothing" => Vec::new(),
                "matching" => vec![":".to_owned()],
                "upstream" | "tracking" => branch_key("merge")
                    .map(|m| vec![format!("HEAD:{m}")])
                    .unwrap_or_default(),
                // simple, current
                _ => vec!["HEAD".to_owned()],
            }
        }
    };
    specs
        .iter()
        .filter_map(|s| match destination(s) {
            Dest::Head => current.map(str::to_owned),
            Dest::Ref(r) => Some(r),
        })
        .collect()
}
