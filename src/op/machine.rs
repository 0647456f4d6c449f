//! Rules for machines (format 5): a clone proposes its key under a name;
//! a human's signed act admits it for some agents, changes them, or
//! revokes it. Which ticks a machine may sign is checked by
//! `trust::machine`, on every path that applies ops.

use super::{Effect, Happened, Op};
use crate::error::{Code, Hint, N, Next, Refusal};
use crate::model::{MachineName, State, machine::Machine};
use crate::op::{MachineAdmit, MachinePropose, MachineRevoke};

fn unknown(name: &MachineName) -> Refusal {
    Refusal::error(
        Code::UnknownMachine,
        format!("there is no machine {name} in the state"),
    )
    .with_hint(Hint::new(
        format!("{N} lists the machines; a clone proposes itself with {N}"),
        [Next::List("machine".to_owned()), Next::SetupMachine(None)],
    ))
}

pub(super) fn propose(state: &mut State, op: &Op, c: &MachinePropose) -> Result<Effect, Refusal> {
    let MachinePropose { machine: name, key } = c;
    let key = super::signer::normalize_key(key).map_err(|e| {
        Refusal::usage(
            Code::BadKey,
            format!("the key for machine {name} is not usable: {e}"),
        )
        .with_hint(Hint::new(
            format!("a machine's key is an ed25519 or ECDSA public key ({N} makes one)"),
            [Next::SetupMachine(None)],
        ))
    })?;
    if let Some(other) = state
        .machines
        .values()
        .find(|m| m.key == key && m.name != *name && m.revoked_by.is_none())
    {
        return Err(Refusal::rule(
            Code::MachineTaken,
            format!("this key is proposed already as machine {}", other.name),
        )
        .with_hint("a key names one machine"));
    }
    // An admitted name is never taken over by a proposal: a new key for a
    // machine is proposed under a new name, admitted, and the old one
    // revoked (rotation), so no clone can unseat another by proposing.
    if let Some(m) = state.machines.get(name) {
        if m.key == key && m.revoked_by.is_none() {
            return Err(Refusal::rule(
                Code::NothingToSet,
                format!("machine {name} is proposed with this key already"),
            ));
        }
        if m.admitted() {
            return Err(Refusal::rule(
                Code::MachineTaken,
                format!("machine {name} is admitted with another key"),
            )
            .with_hint(Hint::new(
                format!("propose the new key under a new name ({N}); a human then admits it and revokes the old one"),
                [Next::SetupMachine(Some("NEW".to_owned()))],
            )));
        }
    }
    state.machines.insert(
        name.clone(),
        Machine {
            name: name.clone(),
            key,
            proposed_by: op.actor.clone(),
            proposed_at: op.at,
            admitted_by: None,
            admitted_at: None,
            agents: Vec::new(),
            revoked_by: None,
            revoked_at: None,
        },
    );
    Ok(Effect::new(
        Happened::MachineChanged { name: name.clone() },
        format!("machine propose {name}"),
    ))
}

pub(super) fn admit(state: &mut State, op: &Op, c: &MachineAdmit) -> Result<Effect, Refusal> {
    let MachineAdmit {
        machine: name,
        fingerprint,
        agents,
    } = c;
    for p in agents {
        crate::model::machine::check_pattern(p).map_err(|e| Refusal::usage(Code::BadPattern, e))?;
    }
    if agents.is_empty() {
        return Err(Refusal::usage(
            Code::BadPattern,
            format!("admitting machine {name} names no agents it may act for"),
        )
        .with_hint("pass --for ID or --for 'PREFIX-*' once per agent or pattern"));
    }
    let m = state.machines.get(name).ok_or_else(|| unknown(name))?;
    if m.revoked_by.is_some() {
        return Err(Refusal::rule(
            Code::MachineUnadmitted,
            format!("machine {name} was revoked; a revoked key is never admitted again"),
        )
        .with_hint(Hint::new(
            format!("the machine proposes a new key under a new name ({N})"),
            [Next::SetupMachine(Some("NEW".to_owned()))],
        )));
    }
    let has = super::signer::fingerprint(&m.key).unwrap_or_default();
    if has != *fingerprint {
        return Err(Refusal::conflict(
            Code::FingerprintMismatch,
            format!(
                "machine {name}'s key is {has}, not {fingerprint}: what you checked is not what is proposed"
            ),
        )
        .with_hint(Hint::new(
            format!("compare with the machine's own {N} output, and look again with {N}"),
            [Next::SetupMachine(None), Next::List("machine".to_owned())],
        )));
    }
    if m.admitted() && m.agents == *agents {
        return Err(Refusal::rule(
            Code::NothingToSet,
            format!("machine {name} is admitted for these agents already"),
        ));
    }
    let m = state.machines.get_mut(name).expect("checked above");
    m.admitted_by = Some(op.actor.clone());
    m.admitted_at = Some(op.at);
    m.agents = agents.to_vec();
    Ok(Effect::new(
        Happened::MachineChanged { name: name.clone() },
        format!("machine admit {name} for {}", agents.join(", ")),
    ))
}

pub(super) fn revoke(state: &mut State, op: &Op, c: &MachineRevoke) -> Result<Effect, Refusal> {
    let name = &c.machine;
    let m = state.machines.get_mut(name).ok_or_else(|| unknown(name))?;
    if m.revoked_by.is_some() {
        return Err(Refusal::rule(
            Code::NothingToSet,
            format!("machine {name} is revoked already"),
        ));
    }
    m.revoked_by = Some(op.actor.clone());
    m.revoked_at = Some(op.at);
    Ok(Effect::new(
        Happened::MachineChanged { name: name.clone() },
        format!("machine revoke {name}"),
    ))
}
