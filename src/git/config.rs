//! Reading git's configuration through the system git, and the push
//! settings sync follows.

use super::*;

/// Every `(key, value)` of the git config whose key matches `pattern` (a
/// regular expression, as `git config --get-regexp` takes it).
pub fn config_matching(git_dir: &Path, pattern: &str) -> Result<Vec<(String, String)>> {
    let out = git()
        .arg("--git-dir")
        .arg(git_dir)
        .args(["config", "--get-regexp", pattern])
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running git config --get-regexp {pattern}"))?;
    match out.status.code() {
        Some(0) => Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once(' '))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()),
        Some(1) => Ok(Vec::new()),
        _ => bail!(
            "git config --get-regexp {pattern} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
    }
}

/// Every value of a multi-valued git config key (none when it is unset).
pub fn config_values(git_dir: &Path, key: &str) -> Result<Vec<String>> {
    let out = git()
        .arg("--git-dir")
        .arg(git_dir)
        .args(["config", "--get-all", key])
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running git config --get-all {key}"))?;
    values_of(&out, &format!("git config --get-all {key}"))
}

/// The values a `git config --get-all` printed, one per line; none when
/// it exited 1 (the key is not set, or there is no such file).
fn values_of(out: &std::process::Output, what: &str) -> Result<Vec<String>> {
    match out.status.code() {
        Some(0) => Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect()),
        Some(1) => Ok(Vec::new()),
        _ => bail!(
            "{what} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
    }
}

/// What git reads to decide where a `git push` without a refspec goes:
/// the current branch (None: detached HEAD) and the whole config, as
/// `(key, value)` pairs in git's order (section and key lowercased,
/// subsection as written).
#[derive(Debug, Default, Clone)]
pub struct PushConfig {
    pub branch: Option<String>,
    pub config: Vec<(String, String)>,
}

impl PushConfig {
    /// The last value of `key`, as git reads a single-valued key.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.config
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of a multi-valued key, in order.
    pub fn all(&self, key: &str) -> Vec<&str> {
        self.config
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// Reads [`PushConfig`] in `dir` (None: the current directory), read-only,
/// for the tool guard.
pub fn push_config(dir: Option<&Path>) -> Result<PushConfig> {
    let here = |args: &[&str]| {
        let mut c = git();
        if let Some(d) = dir {
            c.current_dir(d);
        }
        c.args(args);
        c
    };
    let args = ["config", "--list", "-z"];
    let listed = stdout_of(here(&args), &args)?;
    let config = listed
        .split('\0')
        .filter(|e| !e.is_empty())
        .map(|e| match e.split_once('\n') {
            Some((k, v)) => (k.to_owned(), v.to_owned()),
            // A key without `=` is a boolean true.
            None => (e.to_owned(), "true".to_owned()),
        })
        .collect();
    let out = here(&["symbolic-ref", "-q", "HEAD"])
        .output()
        .context("running git symbolic-ref HEAD")?;
    let branch = String::from_utf8_lossy(&out.stdout)
        .trim()
        .strip_prefix("refs/heads/")
        .map(str::to_owned)
        .filter(|_| out.status.success());
    Ok(PushConfig { branch, config })
}

/// Every value of a multi-valued key of the user's global git config
/// (`~/.gitconfig`, or where `GIT_CONFIG_GLOBAL`, `XDG_CONFIG_HOME` and
/// `HOME` put it, as git decides: the child git reads them), none when it
/// is unset or there is no such file.
pub fn global_values(key: &str) -> Result<Vec<String>> {
    let out = global(&["--get-all", key])?;
    values_of(&out, &format!("git config --global --get-all {key}"))
}

/// Adds `value` to the multi-valued global key `key` (git creates the file).
pub fn global_add(key: &str, value: &str) -> Result<()> {
    let out = global(&["--add", key, value])?;
    if !out.status.success() {
        bail!(
            "git config --global --add {key} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Removes every value of the global key `key` equal to `value` (matched
/// literally, not as a pattern).
pub fn global_remove(key: &str, value: &str) -> Result<()> {
    let out = global(&["--fixed-value", "--unset-all", key, value])?;
    // 5: nothing matched (already gone).
    if !matches!(out.status.code(), Some(0 | 5)) {
        bail!(
            "git config --global --unset-all {key} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// `git config --global ARGS`, run from the root directory so no
/// repository's own config or `safe.directory` question comes into it.
fn global(args: &[&str]) -> Result<std::process::Output> {
    git()
        .current_dir("/")
        .args(["config", "--global"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running git config --global {}", args.join(" ")))
}
