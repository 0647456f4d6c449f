//! `loopx hub install`: put loopx's `pre-receive` hook into a bare hub.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

use crate::ctx::Ctx;
use crate::error::{Code, Exit, Refusal};

/// Guard this bare repository: refuse pushes to refs/loopx/* that forge or rewrite the state
///
/// Installs a `pre-receive` hook that refuses, for every pushed update of
/// refs/loopx/*: a deletion, a non-fast-forward, and any pushed commit that
/// `loopx verify` rejects (each one is re-applied before the ref moves),
/// and a new goal ref that is not the half of a split whose other half
/// the hub holds; and any creation or update of refs/replace/*. The pushing user sees why. An existing `pre-receive` hook is kept as
/// `pre-receive.loopx-chained` and runs first. The hook calls this loopx
/// binary by its absolute path: run `hub install` again after moving or
/// upgrading it. Run it in the hub: `loopx -C hub.git hub install`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// The line that marks the hook as loopx's own.
const MARK: &str = "# Installed by `loopx hub install`.";
/// Where an existing hook is kept, to be run first.
pub const CHAINED: &str = "pre-receive.loopx-chained";

#[derive(Serialize)]
struct Wire {
    hook: String,
    loopx: String,
    /// The hook that was there before, now run first.
    #[serde(skip_serializing_if = "Option::is_none")]
    chained: Option<String>,
    /// Whether loopx's hook was there already (now rewritten).
    updated: bool,
}

pub fn run(ctx: &Ctx, _args: &Args) -> Result<Exit> {
    if ctx.store()?.workdir().is_some() {
        return Err(Refusal::usage(
            Code::NotAHub,
            format!(
                "{} has a worktree; `hub install` guards the bare repository clones push to",
                ctx.store()?.root().display()
            ),
        )
        .with_hint("run it there: `loopx -C path/to/hub.git hub install`")
        .into());
    }
    let hooks = hooks_dir(ctx)?;
    std::fs::create_dir_all(&hooks).with_context(|| format!("creating {}", hooks.display()))?;
    let hook = hooks.join("pre-receive");
    let chained = hooks.join(CHAINED);
    let exe = std::env::current_exe().context("finding the loopx binary")?;
    let exe = std::fs::canonicalize(&exe).unwrap_or(exe);
    let mut wire = Wire {
        hook: hook.display().to_string(),
        loopx: exe.display().to_string(),
        chained: None,
        updated: false,
    };
    match std::fs::read(&hook) {
        Ok(bytes) if String::from_utf8_lossy(&bytes).contains(MARK) => wire.updated = true,
        Ok(_) => {
            if chained.exists() {
                return Err(Refusal::error(
                    Code::HookExists,
                    format!(
                        "{} is not loopx's, and {} is taken already",
                        hook.display(),
                        chained.display()
                    ),
                )
                .with_hint("merge the two hooks by hand, or remove one, then run `loopx hub install` again; nothing was changed")
                .into());
            }
            std::fs::rename(&hook, &chained)
                .with_context(|| format!("moving {} to {}", hook.display(), chained.display()))?;
            wire.chained = Some(chained.display().to_string());
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("reading {}", hook.display())),
    }
    if chained.exists() && wire.chained.is_none() {
        wire.chained = Some(chained.display().to_string());
    }
    write_hook(&hook, &exe)?;
    ctx.out.emit(&wire, || {
        let mut s = format!(
            "{} {}: pushes to refs/loopx/* must be fast-forwards of valid loopx ticks (checked by {}).",
            if wire.updated { "Updated" } else { "Installed" },
            wire.hook,
            wire.loopx
        );
        if let Some(c) = &wire.chained {
            s.push_str(&format!("\nThe hook that was there runs first, as {c}."));
        }
        s
    })?;
    Ok(Exit::Ok)
}

/// The hooks folder git runs: `core.hooksPath`, else `hooks/` in the git dir.
fn hooks_dir(ctx: &Ctx) -> Result<PathBuf> {
    let store = ctx.store()?;
    let dir = store.common_dir();
    Ok(match store.config("core.hooksPath") {
        Some(p) if !p.trim().is_empty() => {
            let p = PathBuf::from(p.trim());
            if p.is_absolute() { p } else { dir.join(p) }
        }
        _ => dir.join("hooks"),
    })
}

fn write_hook(hook: &Path, exe: &Path) -> Result<()> {
    let quoted = format!("'{}'", exe.display().to_string().replace('\'', r"'\''"));
    let script = format!(
        r#"#!/bin/sh
{MARK}
# Refuses, for refs/loopx/*: deletions, non-fast-forwards, and commits that
# `loopx verify` rejects. The hook that was here before runs first.
input=$(cat)
chained="$(dirname "$0")/{CHAINED}"
if [ -x "$chained" ]; then
	printf '%s\n' "$input" | "$chained" "$@" || exit $?
fi
# The pusher's loopx and git config variables never reach the guard (a
# file-path hub's hook runs in the pusher's environment): it judges with
# this hub's own config and this machine's clock.
for v in $(env | sed -n -e 's/^\(LOOPX_[A-Za-z0-9_]*\)=.*/\1/p' -e 's/^\(GIT_CONFIG[A-Za-z0-9_]*\)=.*/\1/p'); do
	unset "$v"
done
printf '%s\n' "$input" | exec {quoted} hub pre-receive
"#
    );
    let tmp = hook.with_extension("loopx-new");
    std::fs::write(&tmp, script).with_context(|| format!("writing {}", tmp.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))
            .with_context(|| format!("making {} executable", tmp.display()))?;
    }
    std::fs::rename(&tmp, hook).with_context(|| format!("writing {}", hook.display()))
}
