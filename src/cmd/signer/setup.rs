//! `loopx signer setup`: the one onboarding step a human runs once per
//! clone, so validations written by the team's humans run on the team's
//! machines (docs/gates.md, "Onboarding").

use std::io::{BufRead, IsTerminal};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

use crate::cmd::slug;
use crate::cmd::tx;
use crate::ctx::{Caller, Ctx};
use crate::error::{Code, Exit, Refusal};
use crate::model::SignerName;
use crate::op::{Change, SignerAnnounce};
use crate::trust::{self, AllowedSigners};

/// Set up your signing key here and trust your teammates' keys (once per clone)
///
/// 1. Your key: `--key FILE.pub` (its private half next to it or in
///    ssh-agent), `--create-key FILE` (a new ed25519 key without a
///    passphrase), the signing key git config already names, or, at a
///    terminal, a key ssh-agent holds or a new one it offers to create. It
///    becomes git config `loopx.signingKey` here, is trusted here, and is
///    announced in the state so teammates can find it.
/// 2. Your teammates' announced keys, one at a time, each only once you
///    typed the fingerprint that teammate gave you over a channel you trust
///    (`--trust NAME=SHA256:…` does it unattended). An announcement alone
///    is never enough: anyone, an agent too, can announce a key.
///
/// From then on your `todo add … -- CMD` is signed and runs on every clone
/// that trusts you. With a hub, the state is synced before and after.
/// `--no-key` skips step 1, for a clone where only agents work.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  loopx signer setup ada
  loopx signer setup ada --key ~/.ssh/id_ed25519.pub --trust bob=SHA256:…
  loopx signer setup --no-key --trust ada=SHA256:…")]
pub struct Args {
    /// Your signer name (a slug, e.g. ada); needed unless --no-key
    #[arg(required_unless_present = "no_key")]
    name: Option<String>,
    /// Your public key file (ed25519 or ECDSA)
    #[arg(long, value_name = "FILE.pub", conflicts_with_all = ["create_key", "no_key"])]
    key: Option<PathBuf>,
    /// Create a new ed25519 key at FILE (and FILE.pub) and use it
    #[arg(long, value_name = "FILE", conflicts_with = "no_key")]
    create_key: Option<PathBuf>,
    /// Set up no key of your own: only trust teammates' keys
    #[arg(long)]
    no_key: bool,
    /// Trust teammate NAME's announced key if its fingerprint is this one (repeatable)
    #[arg(long, value_name = "NAME=SHA256:…")]
    trust: Vec<String>,
}

#[derive(Serialize, Default)]
struct Wire {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    /// Your key's fingerprint.
    #[serde(skip_serializing_if = "Option::is_none")]
    fingerprint: Option<String>,
    /// Whether this run announced it (false: it was announced already).
    announced: bool,
    /// Teammates trusted by this run.
    trusted: Vec<String>,
    /// Announced teammates still not trusted here, and why.
    untrusted: Vec<Untrusted>,
    allowed_signers_file: Option<String>,
}

#[derive(Serialize)]
struct Untrusted {
    name: String,
    fingerprint: String,
    why: String,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    if *ctx.caller() != Caller::Human {
        return Err(Refusal::rule(
            Code::HumansOnly,
            "only a human may set up signing keys, and this process is an agent",
        )
        .with_hint("ask a human to run `loopx signer setup NAME` from their own shell")
        .into());
    }
    let name = args
        .name
        .as_deref()
        .map(|n| slug("signer", n, SignerName::new))
        .transpose()?;
    let mut expected = Vec::new();
    for t in &args.trust {
        let Some((who, fp)) = t.split_once('=') else {
            return Err(Refusal::usage(
                Code::BadKey,
                format!("--trust {t:?} is not NAME=SHA256:…"),
            )
            .with_hint("pass the teammate's name and the fingerprint they read from `ssh-keygen -lf KEY.pub`")
            .into());
        };
        expected.push((slug("signer", who, SignerName::new)?, fp.trim().to_owned()));
    }
    let hub = crate::cmd::syncs(ctx, false, false)?;
    if hub && let Err(e) = crate::cmd::sync_remote(ctx, None) {
        ctx.out.warn(&format!(
            "could not sync with the hub first: {e:#}; going on with this clone's state"
        ));
    }
    let mut wire = Wire {
        name: name.as_ref().map(ToString::to_string),
        ..Wire::default()
    };
    if let Some(name) = &name
        && !args.no_key
    {
        let public = own_key(ctx, args)?;
        // The settings just written take effect in a fresh context.
        let fresh = Ctx::with(Some(ctx.cwd.clone()), ctx.out.format, None)?;
        let signers = AllowedSigners::load(fresh.repo()?)?;
        let added = super::trust::add_key(&fresh, &signers, name, &public)?;
        wire.allowed_signers_file = Some(added.path.display().to_string());
        let fresh = Ctx::with(Some(ctx.cwd.clone()), ctx.out.format, None)?;
        let state = tx::load(&fresh)?.state;
        if state
            .signers
            .get(name)
            .is_none_or(|s| s.key != public && s.pending.as_ref().is_none_or(|p| p.key != public))
        {
            tx::start(&fresh)?.run(|_| {
                Ok(tx::op(
                    &fresh,
                    Change::SignerAnnounce(SignerAnnounce {
                        name: name.clone(),
                        key: public.clone(),
                    }),
                )?)
            })?;
            wire.announced = true;
        }
        wire.fingerprint = Some(trust::fingerprint(&public).map_err(|e| anyhow::anyhow!(e))?);
    }
    // Teammates, one at a time.
    let fresh = Ctx::with(Some(ctx.cwd.clone()), ctx.out.format, None)?;
    let state = tx::load(&fresh)?.state;
    for (who, _) in &expected {
        if !state.signers.contains_key(who) {
            return Err(Refusal::error(
                Code::UnknownSignerName,
                format!("no signer {who} is announced in the state, so --trust {who}=… names nobody"),
            )
            .with_hint("they announce their key with `loopx signer setup NAME` on their own clone; sync, then run this again")
            .into());
        }
    }
    let interactive = std::io::stdin().is_terminal() && !ctx.out.is_json();
    for s in state.signers.values() {
        if Some(&s.name) == name.as_ref() {
            continue;
        }
        let signers = AllowedSigners::load(fresh.repo()?)?;
        if signers.trusts(&s.key).is_some() {
            continue;
        }
        let fingerprint = trust::fingerprint(&s.key).map_err(|e| anyhow::anyhow!(e))?;
        let given = match expected.iter().find(|(w, _)| w == &s.name) {
            Some((_, fp)) => Some(fp.clone()),
            None if interactive => {
                ctx.out.status(&format!(
                    "{} announced a key (by {} at {}). Type the fingerprint {} gave you out of band (they read it with `ssh-keygen -lf KEY.pub`), or press Enter to skip:",
                    s.name,
                    s.announced_by.name(),
                    s.announced_at,
                    s.name
                ));
                let mut line = String::new();
                std::io::stdin().lock().read_line(&mut line)?;
                Some(line.trim().to_owned()).filter(|l| !l.is_empty())
            }
            None => None,
        };
        let why = match given {
            Some(fp) if fp == fingerprint => {
                super::trust::add_key(&fresh, &signers, &s.name, &s.key)?;
                wire.trusted.push(s.name.to_string());
                continue;
            }
            Some(fp) => format!(
                "the fingerprint given ({fp}) is not the announced key's: the announcement may not be theirs, so nothing was trusted"
            ),
            None => format!(
                "not confirmed: check it with them, then `loopx signer setup --no-key --trust {}={fingerprint}`",
                s.name
            ),
        };
        wire.untrusted.push(Untrusted {
            name: s.name.to_string(),
            fingerprint,
            why,
        });
    }
    if wire.allowed_signers_file.is_none() {
        wire.allowed_signers_file = AllowedSigners::load(fresh.repo()?)?
            .path
            .map(|p| p.display().to_string());
    }
    if hub && let Err(e) = crate::cmd::sync_remote(&fresh, None) {
        ctx.out.warn(&format!(
            "could not push to the hub: {e:#}; your announcement goes with the next `loopx sync`"
        ));
    }
    let mismatch = wire
        .untrusted
        .iter()
        .any(|u| expected.iter().any(|(w, _)| w.as_str() == u.name));
    ctx.out.emit(&wire, || human(&wire))?;
    if mismatch {
        return Err(Refusal::rule(
            Code::FingerprintMismatch,
            "a fingerprint given with --trust does not match the announced key: that key was not trusted",
        )
        .with_hint("ask the signer for `ssh-keygen -lf KEY.pub` again over a channel you trust")
        .into());
    }
    Ok(Exit::Ok)
}

fn human(w: &Wire) -> String {
    let mut out = Vec::new();
    if let (Some(n), Some(fp)) = (&w.name, &w.fingerprint) {
        out.push(format!(
            "Your key {n} ({fp}) signs here and is trusted here{}.",
            if w.announced {
                "; announced in the state for your teammates"
            } else {
                ""
            }
        ));
        out.push(format!(
            "Tell your teammates its fingerprint over a channel you trust; they run `loopx signer setup --trust {n}={fp}` on their clones."
        ));
    }
    for t in &w.trusted {
        out.push(format!("Trusted {t} here."));
    }
    for u in &w.untrusted {
        out.push(format!(
            "Not trusted: {} ({}): {}.",
            u.name, u.fingerprint, u.why
        ));
    }
    if let Some(f) = &w.allowed_signers_file {
        out.push(format!("This clone's trusted keys are in {f}."));
    }
    out.join("\n")
}

/// Your public key (OpenSSH text), after pointing git config
/// `loopx.signingKey` at it when it was not already.
fn own_key(ctx: &Ctx, args: &Args) -> Result<String> {
    let dir = ctx.store()?.common_dir().to_path_buf();
    let set = |value: &str| -> Result<()> {
        crate::git::output(&dir, &["config", "--local", "loopx.signingKey", value])?;
        Ok(())
    };
    let abs = |p: &Path| {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            ctx.cwd.join(p)
        }
    };
    if let Some(path) = &args.create_key {
        let path = abs(path);
        if path.exists() {
            return Err(Refusal::usage(
                Code::BadKey,
                format!("{} exists already: nothing was created", path.display()),
            )
            .with_hint("use it with `--key FILE.pub`, or name a new file")
            .into());
        }
        return create(ctx, &path, &set);
    }
    if let Some(path) = &args.key {
        let path = abs(path);
        let public = super::announce::read_public(&path)?;
        // The private half next to it, else ssh-agent holds it.
        let private = path.with_extension("");
        let value = if path.extension().is_some_and(|e| e == "pub") && private.is_file() {
            private
        } else {
            path
        };
        set(&value.display().to_string())?;
        return Ok(public);
    }
    match crate::trust::sign::configured(ctx.repo()?) {
        Some(crate::trust::sign::SigningKey::Literal(k)) => {
            trust::normalize_key(&k).map_err(|e| anyhow::anyhow!("git config's signing key: {e}"))
        }
        Some(crate::trust::sign::SigningKey::File(p)) => {
            let public = if p.extension().is_some_and(|e| e == "pub") {
                p
            } else {
                pub_of(&p)
            };
            super::announce::read_public(&public)
        }
        None => offer_key(ctx, &set),
    }
}

/// At a terminal: a key ssh-agent holds, else a new one. Elsewhere:
/// refuses with the flags that say it.
fn offer_key(ctx: &Ctx, set: &dyn Fn(&str) -> Result<()>) -> Result<String> {
    if !std::io::stdin().is_terminal() {
        return Err(Refusal::usage(
            Code::ConfirmFingerprint,
            "no signing key is configured and there is no terminal to ask which one to use",
        )
        .with_hint("pass `--key ~/.ssh/id_ed25519.pub`, or `--create-key ~/.ssh/loopx_ed25519` for a new one")
        .into());
    }
    let ask = |q: &str| -> Result<bool> {
        ctx.out.status(q);
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line)?;
        Ok(matches!(line.trim(), "y" | "Y" | "yes"))
    };
    let agent_keys = std::process::Command::new("ssh-add")
        .arg("-L")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    for line in agent_keys.lines() {
        let Ok(key) = trust::normalize_key(line) else {
            continue;
        };
        let fp = trust::fingerprint(&key).unwrap_or_default();
        if ask(&format!(
            "ssh-agent holds {} {fp}. Sign your loopx acts with it? [y/N]",
            key.split(' ').next().unwrap_or_default()
        ))? {
            set(&format!("key::{key}"))?;
            return Ok(key);
        }
    }
    let home = ctx.home().unwrap_or_else(|| PathBuf::from("."));
    let path = home.join(".ssh").join("loopx_ed25519");
    if !path.exists()
        && ask(&format!(
            "Create a new ed25519 key at {} (no passphrase; add one later with `ssh-keygen -p`)? [y/N]",
            path.display()
        ))?
    {
        return create(ctx, &path, set);
    }
    Err(
        Refusal::rule(Code::NotConfirmed, "no key was chosen: nothing was set up")
            .with_hint("pass `--key FILE.pub` or `--create-key FILE`")
            .into(),
    )
}

/// Creates a new key at `path`, makes it the signing key here, and returns
/// its public half.
fn create(ctx: &Ctx, path: &Path, set: &dyn Fn(&str) -> Result<()>) -> Result<String> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    keygen(ctx, path)?;
    set(&path.display().to_string())?;
    super::announce::read_public(&pub_of(path))
}

fn pub_of(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".pub");
    PathBuf::from(s)
}

fn keygen(ctx: &Ctx, path: &Path) -> Result<()> {
    let comment = format!(
        "loopx signer {}",
        ctx.actor().map(|a| a.name().to_owned()).unwrap_or_default()
    );
    let out = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", &comment, "-f"])
        .arg(path)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| {
            Refusal::error(Code::SigningFailed, format!("cannot run ssh-keygen: {e}"))
                .with_hint("install OpenSSH's ssh-keygen (package openssh-client)")
        })?;
    if !out.status.success() {
        return Err(Refusal::error(
            Code::SigningFailed,
            format!(
                "ssh-keygen could not create {}: {}",
                path.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        )
        .into());
    }
    Ok(())
}
