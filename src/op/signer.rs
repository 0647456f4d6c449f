//! Rules for the signed-authority ops: announcing a signer's key in the
//! state, and a human vouching for a todo's validation. Both are human
//! acts (`trust::is_human_act`): on a machine that trusts any signer they
//! apply only with a valid signature.

use sha2::{Digest, Sha256};
use ssh_key::{Algorithm, PublicKey};

use super::{Effect, Happened, Op, short, todo::vouch};
use crate::error::{Code, Hint, N, Next, Refusal};
use crate::model::{
    SignerName, State, Validation,
    signer::{PendingKey, Signer},
};
use crate::op::{SignerAnnounce, SignerApprove, SignerReclaim, SignerRequire, TodoTrust};

/// The format from which a key is announced only by its holder (the
/// announcement signed by the key it announces, `trust`), and a signer's
/// new key waits for approval.
pub const POSSESSION_SINCE: u32 = 7;

/// Key types loopx accepts: ed25519, ECDSA, and their FIDO forms.
pub fn supported(algorithm: &Algorithm) -> bool {
    matches!(
        algorithm,
        Algorithm::Ed25519
            | Algorithm::Ecdsa { .. }
            | Algorithm::SkEd25519
            | Algorithm::SkEcdsaSha2NistP256
    )
}

/// The fingerprint (`SHA256:…`) of an OpenSSH public key line.
pub fn fingerprint(key: &str) -> Result<String, String> {
    let key = PublicKey::from_openssh(key.trim()).map_err(|e| format!("{e}"))?;
    Ok(key.fingerprint(ssh_key::HashAlg::Sha256).to_string())
}

/// Checks an OpenSSH public key line and returns it as `type base64`,
/// without its comment (`trust::normalize_key`).
pub fn normalize_key(key: &str) -> Result<String, String> {
    let key = PublicKey::from_openssh(key.trim()).map_err(|e| format!("{e}"))?;
    if !supported(&key.algorithm()) {
        return Err(format!("{} keys are not accepted", key.algorithm()));
    }
    let mut plain = key.clone();
    plain.set_comment("");
    plain.to_openssh().map_err(|e| format!("{e}"))
}

/// `key` normalized, or the refusal that names `name`'s unusable key.
fn usable(name: &SignerName, key: &str) -> Result<String, Refusal> {
    normalize_key(key).map_err(|e| {
        Refusal::usage(Code::BadKey, format!("the key for {name} is not usable: {e}"))
            .with_hint("pass an ed25519 or ECDSA public key (or its sk- FIDO form), e.g. --key ~/.ssh/id_ed25519.pub")
    })
}

pub(super) fn announce(
    state: &mut State,
    op: &Op,
    c: &SignerAnnounce,
    format: u32,
) -> Result<Effect, Refusal> {
    let SignerAnnounce { name, key } = c;
    let key = usable(name, key)?;
    // A key names one human, and a signer's name stays with the human who
    // announced it: otherwise Bob could announce his own key as Ada's, or
    // replace hers, and sign acts as her (`trust`: the actor binding).
    if let Some(other) = state
        .signers
        .values()
        .find(|s| s.key == key && s.name != *name && !same_human(&s.announced_by, &op.actor))
    {
        return Err(Refusal::rule(
            Code::SignerTaken,
            format!(
                "this key is announced already as {} for {}; a key names one human",
                other.name, other.announced_by
            ),
        )
        .with_hint("announce your own key (`ssh-keygen -t ed25519` makes one)"));
    }
    if let Some(s) = state.signers.get(name)
        && !same_human(&s.announced_by, &op.actor)
    {
        return Err(Refusal::rule(
            Code::SignerTaken,
            format!(
                "signer {name} was announced by {}; only they may replace its key",
                s.announced_by
            ),
        )
        .with_hint("announce your key under a name of your own"));
    }
    let verb = match state.signers.get(name) {
        Some(s) if s.key == key => {
            return Err(Refusal::rule(
                Code::AlreadyAnnounced,
                format!("{name} is already announced with this key"),
            )
            .with_hint(Hint::new(
                format!("trust it on a machine with {N}"),
                [Next::TrustSigner(name.to_string())],
            )));
        }
        // From format 7 a new key waits: a tick carries one signature, the
        // new key's, so the old key (or another human) approves it.
        Some(s) if format >= POSSESSION_SINCE => {
            if s.pending.as_ref().is_some_and(|p| p.key == key) {
                return Err(Refusal::rule(
                    Code::AlreadyAnnounced,
                    format!("{name}'s new key is announced already and waits for approval"),
                )
                .with_hint(approve_hint(name)));
            }
            let algo = key.split(' ').next().unwrap_or_default().to_owned();
            let s = state.signers.get_mut(name).expect("looked up above");
            s.pending = Some(PendingKey {
                key,
                announced_at: op.at,
                signature: op.signature.clone(),
            });
            return Ok(Effect::new(
                Happened::SignerAnnounced { name: name.clone() },
                format!("signer announces a new key for {name} ({algo}), waiting for approval"),
            ));
        }
        Some(_) => "replaces the key of",
        None => "announces",
    };
    state.signers.insert(
        name.clone(),
        Signer {
            name: name.clone(),
            key: key.clone(),
            announced_by: op.actor.clone(),
            announced_at: op.at,
            signature: op.signature.clone(),
            pending: None,
        },
    );
    let algo = key.split(' ').next().unwrap_or_default();
    Ok(Effect::new(
        Happened::SignerAnnounced { name: name.clone() },
        format!("signer {verb} {name} ({algo})"),
    ))
}

fn approve_hint(name: &SignerName) -> Hint {
    Hint::new(
        format!(
            "approve it with {N}, signed with {name}'s current key or by another announced human"
        ),
        [Next::ApproveSigner(name.to_string())],
    )
}

/// Format 7: signer `name`'s pending key replaces its key. Who may approve
/// (the old key, or another human's announced key) is the signature's to
/// say (`trust`); the rule checks what is approved.
pub(super) fn approve(state: &mut State, _op: &Op, c: &SignerApprove) -> Result<Effect, Refusal> {
    let SignerApprove { name, key } = c;
    let key = usable(name, key)?;
    let Some(s) = state.signers.get_mut(name) else {
        return Err(Refusal::error(
            Code::UnknownSignerName,
            format!("there is no signer {name} in the state"),
        )
        .with_hint(Hint::new(
            format!("{N} shows them"),
            [Next::List("signer".to_owned())],
        )));
    };
    match s.pending.take() {
        Some(p) if p.key == key => {
            s.key = p.key;
            s.announced_at = p.announced_at;
            s.signature = p.signature;
        }
        other => {
            let had = other.is_some();
            s.pending = other;
            return Err(Refusal::rule(
                Code::NothingPending,
                if had {
                    format!("{name}'s pending key is another key than the one approved")
                } else {
                    format!("{name} has no new key waiting for approval")
                },
            )
            .with_hint(Hint::new(
                format!("{N} shows each signer's pending key"),
                [Next::List("signer".to_owned())],
            )));
        }
    }
    let algo = key.split(' ').next().unwrap_or_default();
    Ok(Effect::new(
        Happened::SignerAnnounced { name: name.clone() },
        format!("signer approves the new key of {name} ({algo})"),
    ))
}

/// Format 7: the holder of `key` (the op is signed by it, `trust`) binds it
/// to their signer `name`; another human's announcement of the key (a
/// squat written before format 7) is removed from then on.
pub(super) fn reclaim(state: &mut State, op: &Op, c: &SignerReclaim) -> Result<Effect, Refusal> {
    let SignerReclaim { name, key } = c;
    let key = usable(name, key)?;
    if let Some(s) = state.signers.get(name)
        && !same_human(&s.announced_by, &op.actor)
    {
        return Err(Refusal::rule(
            Code::SignerTaken,
            format!(
                "signer {name} was announced by {}; reclaim your key under a name of your own",
                s.announced_by
            ),
        ));
    }
    if let Some(s) = state.signers.get(name)
        && s.key != key
    {
        return Err(Refusal::rule(
            Code::SignerTaken,
            format!(
                "signer {name} has another key: a reclaim takes back a key someone else announced, it does not replace your signer's key"
            ),
        )
        .with_hint(Hint::new(
            format!("announce the new key with {N}; the old key approves it"),
            [Next::AnnounceSigner(name.to_string())],
        )));
    }
    let squats: Vec<SignerName> = state
        .signers
        .values()
        .filter(|s| s.key == key && !same_human(&s.announced_by, &op.actor))
        .map(|s| s.name.clone())
        .collect();
    if squats.is_empty() && state.signers.get(name).is_some_and(|s| s.key == key) {
        return Err(Refusal::rule(
            Code::AlreadyAnnounced,
            format!("{name} is announced with this key already, and nobody else announces it"),
        ));
    }
    for s in &squats {
        state.signers.remove(s);
    }
    state.signers.insert(
        name.clone(),
        Signer {
            name: name.clone(),
            key,
            announced_by: op.actor.clone(),
            announced_at: op.at,
            signature: op.signature.clone(),
            pending: None,
        },
    );
    let voided = if squats.is_empty() {
        String::new()
    } else {
        format!(
            ", voiding {}",
            squats
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    Ok(Effect::new(
        Happened::SignerAnnounced { name: name.clone() },
        format!("signer reclaims its key as {name}{voided}"),
    ))
}

/// Whether two actors are the same human (name and email).
pub fn same_human(a: &crate::model::Actor, b: &crate::model::Actor) -> bool {
    a.is_human() && a == b
}

/// Sets the team's signing policy. Only a signed act may: `trust::check_op`
/// (on every path that applies ops) refuses it unsigned, and checks the
/// signature and its binding to the actor.
pub(super) fn require(state: &mut State, _op: &Op, c: &SignerRequire) -> Result<Effect, Refusal> {
    let signatures = c.signatures;
    if state.meta.settings.signatures == signatures {
        return Err(Refusal::rule(
            Code::NothingToSet,
            format!("the signing policy is {} already", signatures.as_str()),
        ));
    }
    if signatures.machines() {
        machines_cover_agents(state)?;
    }
    state.meta.settings.signatures = signatures;
    Ok(Effect::new(
        Happened::SigningRequired { signatures },
        if signatures.machines() {
            "signer require --machines: every human act and every agent tick must be signed"
                .to_owned()
        } else if signatures.humans() {
            "signer require: every human act must be signed".to_owned()
        } else {
            "signer require --off: human acts need a signature only where a machine trusts signers"
                .to_owned()
        },
    ))
}

/// Agent ticks can be required signed only once every active agent has an
/// admitted machine that may act for it: otherwise that agent's next tick
/// would be refused everywhere.
fn machines_cover_agents(state: &State) -> Result<(), Refusal> {
    let orphans: Vec<&str> = state
        .agents
        .values()
        .filter(|a| a.status == crate::model::AgentStatus::Active)
        .filter(|a| !state.machines.values().any(|m| m.may_act_for(&a.id)))
        .map(|a| a.id.as_str())
        .collect();
    let admitted = state.machines.values().any(crate::model::Machine::admitted);
    if orphans.is_empty() && admitted {
        return Ok(());
    }
    let why = if admitted {
        format!(
            "no admitted machine may act for {} (an active agent)",
            orphans.join(", ")
        )
    } else {
        "no machine is admitted yet".to_owned()
    };
    Err(Refusal::rule(
        Code::MachinesMissing,
        format!("agent ticks cannot be required signed yet: {why}"),
    )
    .with_hint(Hint::new(
        format!(
            "run {N} on every machine, admit each with {N} (or retire agents no longer used); {N} shows them; nothing was changed"
        ),
        [
            Next::SetupMachine(None),
            Next::AdmitMachine("NAME".to_owned(), "FP".to_owned()),
            Next::List("machine".to_owned()),
        ],
    )))
}

pub(super) fn trust_todo(state: &mut State, op: &Op, c: &TodoTrust) -> Result<Effect, Refusal> {
    let TodoTrust { todo: id, digest } = c;
    let todo = state.todos.get(id).ok_or_else(|| {
        Refusal::error(Code::UnknownTodo, format!("there is no live todo {id}"))
            .with_hint(Hint::new(format!("{N} shows the todos"), [Next::AllTodos]))
    })?;
    let Some(v) = &todo.validate else {
        return Err(Refusal::rule(
            Code::NoValidation,
            format!("{id} has no validation command to trust"),
        ));
    };
    if validation_digest(v) != *digest {
        return Err(Refusal::conflict(
            Code::ValidationChanged,
            format!(
                "{id}'s validation changed to `{}` since it was shown for trust",
                v.argv.join(" ")
            ),
        )
        .with_hint(Hint::new(
            format!("look at it again with {N}, then {N}"),
            [
                Next::ShowTodo(id.to_string()),
                Next::TrustTodo(id.to_string()),
            ],
        )));
    }
    let title = short(&todo.title);
    let t = state.todos.get_mut(id).expect("checked above");
    t.validate_from = Some(vouch(op, "trust"));
    t.updated_at = op.at;
    Ok(Effect::new(
        Happened::Trusted { todo: id.clone() },
        format!("trust {id} \"{title}\" validation"),
    ))
}

/// The digest a `todo.trust` names: SHA-256 of the validation's canonical
/// TOML (argv and timeout), as `sha256:<hex>`.
pub fn validation_digest(v: &Validation) -> String {
    let bytes = crate::model::files::encode(v);
    let hash = Sha256::digest(&bytes);
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

#[cfg(test)]
mod tests;
