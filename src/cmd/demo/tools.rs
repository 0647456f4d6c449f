//! The demo's tools: Ada's signing key, quiet git, the isolated
//! environment of every command it starts, and how a command is shown.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result};

use super::Demo;

impl Demo {
    /// Makes Ada's SSH key with ssh-keygen, gives her git the settings to
    /// sign with it, and points machine A at the workspace's own
    /// allowed-signers file. Returns the key's public file and fingerprint,
    /// or None when ssh-keygen is not installed.
    pub(super) fn make_key(&mut self) -> Result<Option<(PathBuf, String)>> {
        let dir = self.root.join("ada-keys");
        std::fs::create_dir_all(&dir)?;
        let key = dir.join("ada");
        let made = Command::new("ssh-keygen")
            .args([
                "-q",
                "-t",
                "ed25519",
                "-N",
                "",
                "-C",
                "ada@example.com",
                "-f",
            ])
            .arg(&key)
            .stdin(Stdio::null())
            .output();
        match made {
            Ok(o) if o.status.success() => {}
            _ => return Ok(None),
        }
        let public = dir.join("ada.pub");
        let listed = Command::new("ssh-keygen")
            .arg("-lf")
            .arg(&public)
            .output()
            .context("running ssh-keygen -lf")?;
        let fingerprint = String::from_utf8_lossy(&listed.stdout)
            .split_whitespace()
            .nth(1)
            .context("ssh-keygen -lf printed no fingerprint")?
            .to_owned();
        self.masks
            .push((fingerprint.clone(), "SHA256:<ada's key>".to_owned()));
        let cfg = dir.join("gitconfig");
        std::fs::write(
            &cfg,
            format!(
                "[gpg]\n\tformat = ssh\n[user]\n\tsigningKey = {}\n",
                public.display()
            ),
        )?;
        self.human_config = Some(cfg);
        let allowed = self.root.join("allowed_signers");
        self.git(
            &self.machine("machine-a"),
            &[
                "config",
                "loopx.allowedSignersFile",
                &allowed.to_string_lossy(),
            ],
        )?;
        Ok(Some((public, fingerprint)))
    }

    /// Runs git quietly (set-up steps nobody needs to read).
    pub(super) fn git(&self, dir: &Path, args: &[&str]) -> Result<String> {
        let mut c = crate::git::command_in(dir, args);
        self.isolate(&mut c);
        if let Some(now) = self.clock {
            c.env("GIT_AUTHOR_DATE", now.to_string())
                .env("GIT_COMMITTER_DATE", now.to_string());
        }
        crate::git::stdout_of(c, args)
    }

    /// Keeps the user's git config and agent-runtime markers out.
    pub(super) fn isolate(&self, c: &mut Command) {
        for k in crate::env::names() {
            if k.starts_with("LOOPX_")
                || k.starts_with("CLAUDE")
                || k.starts_with("CODEX_")
                || k.starts_with("GEMINI_")
                || k.starts_with("CURSOR_")
                || k.starts_with("GIT_")
            {
                c.env_remove(&k);
            }
        }
        c.env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null());
    }
}

/// An argument list as a person would type it: quoted where it has spaces.
pub(super) fn shown(args: &[&str]) -> String {
    args.iter()
        .map(|a| {
            if a.contains(' ') || a.is_empty() {
                format!("\"{a}\"")
            } else {
                (*a).to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
