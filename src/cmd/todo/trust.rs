//! `loopx todo trust`: a human vouches for a todo's validation as it is
//! now, so machines that trust the human's key run it.

use anyhow::Result;
use serde::Serialize;

use super::TodoRef;
use crate::cmd::TickWire;
use crate::ctx::Ctx;
use crate::error::{Code, Exit, Refusal};
use crate::op::Change;
use crate::op::signer::validation_digest;
use crate::trust::{self, AllowedSigners, validation::shell_words};
use crate::tx;

/// Trust a todo's validation command to run (a signed human act)
///
/// A validation from the shared state runs on a machine only if it was
/// written there, signed by a signer that machine trusts, or git config
/// `loopx.runValidations` is `all`. This records that you vouch for the
/// exact command shown, signed with your SSH key when signing is set up
/// (docs/gates.md). Any later change of the validation voids it.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The todo's id or a unique prefix
    id: String,
}

#[derive(Serialize)]
struct Wire<'a> {
    todo: TodoRef<'a>,
    argv: &'a [String],
    /// "signed by NAME (SHA256:…)", "signed by an untrusted key (…)" or
    /// "unsigned".
    signature: String,
    #[serde(flatten)]
    tick: TickWire,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let done = tx::commit(ctx, |state| {
        let todo = state.resolve_todo(&args.id)?;
        let Some(v) = &state.todos[&todo].validate else {
            return Err(Refusal::rule(
                Code::NoValidation,
                format!("{todo} has no validation command to trust"),
            )
            .into());
        };
        let digest = validation_digest(v);
        Ok(tx::op(ctx, Change::TodoTrust { todo, digest })?)
    })?;
    let id = done.op.change.todo().expect("names its todo");
    let t = &done.state.todos[id];
    let argv = t
        .validate
        .as_ref()
        .map(|v| v.argv.as_slice())
        .unwrap_or(&[]);
    let signers = AllowedSigners::load(ctx.repo()?)?;
    let signature = trust::describe(done.op.signature.as_deref(), &signers);
    ctx.out.emit(
        &Wire {
            todo: TodoRef::of(t),
            argv,
            signature: signature.clone(),
            tick: TickWire::of(&done),
        },
        || {
            format!(
                "Trusted the validation of {id} \"{}\": `{}` ({signature}).",
                t.title,
                shell_words(argv)
            )
        },
    )?;
    Ok(Exit::Ok)
}
