//! Whether a todo's validation may run on this machine (DESIGN §8, layer
//! 3). A validation is code from the shared state; it runs only when
//!
//! 1. it was written on this clone (loopx remembers, under the git dir and
//!    outside the state, each validation it wrote here: the op id with a
//!    hash of the exact validation, its todo id, argv, timeout, environment
//!    and working directory, so no reused op id makes another command
//!    trusted);
//! 2. it was signed by a signer this machine trusts, the signature checked
//!    over the op that wrote it (`verify::vouched`; a signed `todo add` or
//!    `todo edit` by a human, or `loopx todo trust ID` after its last
//!    change); or
//! 3. local or global git config says `loopx.runValidations = all`.
//!
//! An actor name in the state is never enough. With the tool guard
//! installed, a validation the guard would deny (a `cargo publish` under an
//! open publish gate) is refused the same way.

use std::collections::BTreeSet;
use std::path::PathBuf;

use anyhow::{Context, Result};

use super::AllowedSigners;
use crate::error::{Code, Hint, N, Next, Refusal};
use crate::model::{State, Todo, TodoId, Validation};
use crate::op::Op;
use crate::repo::Repo;

/// The file of op ids that wrote validations on this clone.
fn written_here_path(repo: &Repo) -> Result<PathBuf> {
    Ok(repo
        .store()
        .common_dir()
        .join("loopx")
        .join("validations-written-here"))
}

/// Remembers that this clone wrote `op` (a todo add or edit with a
/// validation), before its tick lands: its op id and [`digest`] of what
/// it would run.
pub fn remember(repo: &Repo, op: &Op) -> Result<()> {
    use std::io::Write;
    let (crate::op::Change::TodoAdd(crate::op::TodoAdd {
        todo,
        validate: Some(v),
        ..
    })
    | crate::op::Change::TodoEdit(crate::op::TodoEdit {
        todo,
        validate: Some(v),
        ..
    })) = &op.change
    else {
        return Ok(());
    };
    let line = format!("{} {}", op.id, digest(repo, todo, v)?);
    let path = written_here_path(repo)?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    writeln!(f, "{line}").with_context(|| format!("writing {}", path.display()))
}

/// What a validation written here is remembered by: SHA-256 over the todo
/// id, the validation (argv and timeout, canonical TOML), the environment
/// it adds (none: it runs with the caller's) and the directory it runs in
/// (the repository root).
pub fn digest(repo: &Repo, todo: &TodoId, v: &Validation) -> Result<String> {
    let mut text = String::from("loopx validation written here 1\n");
    text.push_str(&format!("todo = {:?}\n", todo.as_str()));
    text.push_str(&String::from_utf8_lossy(&crate::model::files::encode(v)));
    text.push_str("env = []\n");
    text.push_str(&format!(
        "dir = {:?}\n",
        repo.store().root().to_string_lossy()
    ));
    Ok(super::sha256_hex(text.as_bytes()))
}

/// Whether this op writes a validation command.
pub fn writes_validation(op: &Op) -> bool {
    matches!(
        &op.change,
        crate::op::Change::TodoAdd(crate::op::TodoAdd {
            validate: Some(_),
            ..
        }) | crate::op::Change::TodoEdit(crate::op::TodoEdit {
            validate: Some(_),
            ..
        })
    )
}

fn written_here(repo: &Repo) -> Result<BTreeSet<String>> {
    Ok(std::fs::read_to_string(written_here_path(repo)?)
        .map(|t| t.lines().map(|l| l.trim().to_owned()).collect())
        .unwrap_or_default())
}

/// Whether a todo's validation is signed as it stands (`verify::vouched`:
/// the signature checked over the op that wrote or trusted it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Vouched {
    Signed(super::SignedBy),
    /// Not signed as it stands, and why.
    Not(String),
}

/// Why a validation may run here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Trusted {
    WrittenHere,
    Signed(super::SignedBy),
    ConfigAll,
}

impl std::fmt::Display for Trusted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Trusted::WrittenHere => f.write_str("written on this clone"),
            Trusted::Signed(by) => write!(f, "trusted: {by}"),
            Trusted::ConfigAll => f.write_str("git config loopx.runValidations is all"),
        }
    }
}

/// Decides whether `todo`'s validation may run here, or refuses with exit
/// 3, code `untrusted-validation`.
pub fn allow(
    repo: &Repo,
    state: &State,
    todo: &Todo,
    vouched: &dyn Fn(&Todo) -> Result<Vouched>,
) -> Result<Option<Trusted>> {
    match verdict(repo, state, todo, vouched)? {
        None => Ok(None),
        Some(Ok(t)) => Ok(Some(t)),
        Some(Err(refusal)) => Err(refusal.into()),
    }
}

/// Whether `todo`'s validation may run here (None: it has none), and if
/// not, the refusal that says why, for `allow` and `todo show`. `vouched`
/// checks a signature over the op that wrote or trusted the validation
/// (`verify::vouched`); a key looked up is not enough.
pub fn verdict(
    repo: &Repo,
    state: &State,
    todo: &Todo,
    vouched: &dyn Fn(&Todo) -> Result<Vouched>,
) -> Result<Option<Result<Trusted, Refusal>>> {
    let Some(v) = &todo.validate else {
        return Ok(None);
    };
    let signers = AllowedSigners::load(repo)?;
    let argv = shell_words(&v.argv);
    if guard_installed(repo)?
        && let Some(why) = crate::hook::guard::check(&argv, state, None)
    {
        return Ok(Some(Err(Refusal::rule(
            Code::UntrustedValidation,
            format!(
                "{}'s validation `{argv}` is one the tool guard denies: {why}",
                todo.id
            ),
        )
        .with_hint("answer the gate first (a human), or change the validation with `loopx todo edit ID -- COMMAND…`"))));
    }
    if repo.config().run_all_validations {
        return Ok(Some(Ok(Trusted::ConfigAll)));
    }
    let from = todo.validate_from.as_ref();
    if let Some(f) = from
        && written_here(repo)?.contains(&format!("{} {}", f.op, digest(repo, &todo.id, v)?))
    {
        return Ok(Some(Ok(Trusted::WrittenHere)));
    }
    let mut broken = None;
    if from.is_some_and(|f| f.signature.is_some()) {
        match vouched(todo)? {
            Vouched::Signed(by) if by.principal.is_some() => {
                return Ok(Some(Ok(Trusted::Signed(by))));
            }
            Vouched::Signed(_) => {}
            Vouched::Not(why) => broken = Some(why),
        }
    }
    let who = match from {
        Some(f) => format!(
            "{} {} it ({} at {}, {})",
            f.by.name(),
            if f.how == "trust" {
                "vouched for"
            } else {
                "wrote"
            },
            f.how,
            f.at,
            match &broken {
                // The signature does not hold for this validation: its key
                // says nothing.
                Some(why) => format!("a signature that does not vouch for it: {why}"),
                None => super::describe(f.signature.as_deref(), &signers),
            }
        ),
        None => "it predates signed validations, so who wrote it is not recorded".to_owned(),
    };
    Ok(Some(Err(Refusal::rule(
        Code::UntrustedValidation,
        format!(
            "{}'s validation was not written on this clone nor signed by a signer this machine trusts, so it does not run here: `{argv}`; {who}",
            todo.id
        ),
    )
    .with_hint(Hint::new(
        format!(
            "if you would run that command yourself, trust it with {N} (a signed human act), or let every validation run with `git config loopx.runValidations all`; nothing was run"
        ),
        [Next::TrustTodo(todo.id.to_string())],
    )))))
}

/// Whether a runtime's tool guard is wired (in the project or the home
/// directory).
fn guard_installed(repo: &Repo) -> Result<bool> {
    let bases: Vec<PathBuf> = [
        Some(repo.store().root().to_path_buf()),
        repo.home().map(PathBuf::from),
    ]
    .into_iter()
    .flatten()
    .collect();
    Ok(crate::hook::Runtime::ALL.into_iter().any(|runtime| {
        bases.iter().any(|base| {
            crate::hook::installer::hook_file(runtime, base).is_some_and(|f| {
                !f.guard_event.is_empty()
                    && std::fs::read_to_string(&f.path).is_ok_and(|text| {
                        text.lines()
                            .any(|l| l.contains("loopx hook") && l.contains(f.guard_event))
                    })
            })
        })
    }))
}

/// The argv as one shell line, quoted where needed, as the guard reads
/// commands and as people copy them.
pub fn shell_words(argv: &[String]) -> String {
    argv.iter()
        .map(|w| {
            if !w.is_empty()
                && w.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b))
            {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv_is_quoted_only_where_a_shell_needs_it() {
        let argv: Vec<String> = ["sh", "-c", "id > PWNED", "it's"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        assert_eq!(shell_words(&argv), "sh -c 'id > PWNED' 'it'\\''s'");
    }
}
