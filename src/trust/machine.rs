//! Machine keys (DESIGN §8, the agent layer; format 5): every agent tick
//! carries the signature of the machine (clone) that wrote it.
//!
//! Each clone has one ed25519 key, made in-process by `loopx machine
//! setup` and kept in its git dir (`<git-common-dir>/loopx/machine_ed25519`,
//! mode 0600). The key signs the same record a human's signature covers
//! ([`super::record`]: the op, the prior contents of the files it changes,
//! the state's identity), so a replayed tick keeps its signature and sync
//! never re-signs. Signing is in-process (no `ssh-keygen`, no prompt).
//!
//! A machine counts once a signed human act admits it (`machine.admit`),
//! for the agents its patterns match, until a signed human act revokes it.
//! [`check`] is the one check, pure, called by [`super::check_applied`] on
//! every path that applies ops: a signature present must verify; with the
//! policy `all` (`signer require --machines`) an agent tick unsigned, or
//! signed by an unadmitted or revoked machine, or by one not allowed to act
//! for its agent, is refused; before, it is accepted and `verify` reports it.
//! Every tick is judged against the state before it, so ticks signed before
//! a revocation, or written before enforcement, stay valid.

use std::path::{Path, PathBuf};

use std::os::fd::OwnedFd;

use anyhow::{Context, Result};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use ssh_key::{HashAlg, LineEnding, PrivateKey, PublicKey};

use super::{Binding, SignedBy};
use crate::error::{Code, Hint, N, Next, Refusal};
use crate::model::{State, machine::Machine};
use crate::op::{Change, MachinePropose, Op};
use crate::store::{Oid, Store};

/// The first format whose agent ticks carry a machine's signature.
pub const SINCE: u32 = 5;

/// Where a clone keeps its machine key.
pub fn key_path(common_dir: &Path) -> PathBuf {
    common_dir.join("loopx").join(KEY_FILE)
}

/// The clone's machine key, if it has one. Never read through a symbolic
/// link, the folder's (`.git/loopx`) or the file's: a key planted where a
/// link points would sign this clone's ticks.
pub fn load(common_dir: &Path) -> Result<Option<PrivateKey>> {
    let path = key_path(common_dir);
    let dir = path.parent().expect("a key path has a parent");
    let dirfd = match open_dir(dir) {
        Ok(Some(fd)) => fd,
        Ok(None) => return Ok(None),
        // A linked folder that holds no key gives nothing to read.
        Err(_) if std::fs::metadata(&path).is_err() => return Ok(None),
        Err(e) => return Err(e),
    };
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let file = match rustix::fs::openat(&dirfd, KEY_FILE, flags, Mode::empty()) {
        Ok(fd) => std::fs::File::from(fd),
        Err(Errno::NOENT) => return Ok(None),
        Err(Errno::LOOP) => return Err(linked_key(&path).into()),
        Err(e) => {
            return Err(std::io::Error::from(e))
                .with_context(|| format!("reading {}", path.display()));
        }
    };
    let mut text = String::new();
    let meta = file
        .metadata()
        .with_context(|| format!("reading {}", path.display()))?;
    if !meta.is_file() {
        return Err(linked_key(&path).into());
    }
    std::io::Read::read_to_string(&mut &file, &mut text)
        .with_context(|| format!("reading {}", path.display()))?;
    let key = PrivateKey::from_openssh(text.trim_start()).map_err(|e| {
        Refusal::error(
            Code::NoMachineKey,
            format!("the machine key {} is not usable: {e}", path.display()),
        )
        .with_hint(
            "move it away and run `loopx machine setup` to make a new one (then have it admitted)",
        )
    })?;
    Ok(Some(key))
}

/// The key file's name in the clone's `loopx` folder.
const KEY_FILE: &str = "machine_ed25519";

/// The clone's own `loopx` folder under its git dir, opened without
/// following a symbolic link (None: there is none): a link there is
/// refused, since the machine key would be written wherever it points (a
/// folder others may read or replace) and read back from there.
fn open_dir(dir: &Path) -> Result<Option<OwnedFd>> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match rustix::fs::open(dir, flags, Mode::empty()) {
        Ok(fd) => Ok(Some(fd)),
        Err(Errno::NOENT) => Ok(None),
        Err(Errno::LOOP | Errno::NOTDIR) => Err(linked_dir(dir).into()),
        Err(e) => {
            Err(std::io::Error::from(e)).with_context(|| format!("opening {}", dir.display()))
        }
    }
}

fn linked_dir(dir: &Path) -> Refusal {
    let to = std::fs::read_link(dir)
        .map(|t| format!(" (to {})", t.display()))
        .unwrap_or_default();
    Refusal::error(
        Code::NoMachineKey,
        format!(
            "{} is a symbolic link{to} or not a folder: loopx keeps the machine key only in the clone's own git dir, never where a link points",
            dir.display()
        ),
    )
    .with_hint(format!(
        "replace it with a folder of its own (`rm {0} && mkdir {0}`, moving anything you need from the link's target first), then run `loopx machine setup` again; no key was written",
        dir.display()
    ))
}

fn linked_key(path: &Path) -> Refusal {
    Refusal::error(
        Code::NoMachineKey,
        format!(
            "the machine key {} is a symbolic link or not a regular file: loopx reads the machine key only from a file of its own",
            path.display()
        ),
    )
    .with_hint("move it away and run `loopx machine setup` to make a new one (then have it admitted)")
}

/// Makes the clone's machine key (ed25519, from the OS's random source),
/// written with mode 0600 and never over an existing one, nor through a
/// symbolic link (`open_dir`).
pub fn create(common_dir: &Path) -> Result<PrivateKey> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| anyhow::anyhow!("no random source: {e}"))?;
    let pair = ssh_key::private::Ed25519Keypair::from_seed(&seed);
    let mut key = PrivateKey::from(pair);
    key.set_comment("loopx machine key");
    let text = key
        .to_openssh(LineEnding::LF)
        .map_err(|e| anyhow::anyhow!("encoding the machine key: {e}"))?;
    let path = key_path(common_dir);
    let dir = path.parent().expect("a key path has a parent");
    match std::fs::create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e).with_context(|| format!("creating {}", dir.display())),
    }
    let dirfd = open_dir(dir)?.with_context(|| format!("{} went away", dir.display()))?;
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(&dirfd, KEY_FILE, flags, Mode::from_raw_mode(0o600))
        .map_err(std::io::Error::from)
        .with_context(|| format!("creating {}", path.display()))?;
    let mut f = std::fs::File::from(fd);
    std::io::Write::write_all(&mut f, text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    f.sync_all().ok();
    Ok(key)
}

/// The public half as an OpenSSH line without comment.
pub fn public_line(key: &PrivateKey) -> String {
    let mut public = key.public_key().clone();
    public.set_comment("");
    public.to_openssh().expect("an ed25519 public key encodes")
}

/// Signs `record` in-process; the stored form (base64 of the SSHSIG blob).
pub fn sign(key: &PrivateKey, record: &[u8]) -> Result<String> {
    let sig = key
        .sign(super::NAMESPACE, HashAlg::Sha512, record)
        .map_err(|e| anyhow::anyhow!("signing with the machine key: {e}"))?;
    let armored = sig
        .to_pem(LineEnding::LF)
        .map_err(|e| anyhow::anyhow!("encoding the signature: {e}"))?;
    super::encode(&armored).map_err(|e| anyhow::anyhow!(e))
}

/// Signs an agent op this clone makes outside a live tick (sync's record
/// of a local op that lost, written in the agent's name) with the clone's
/// machine key, when it has one and the op is unsigned. Replayed ops are
/// never re-signed: they keep the signature they were written with.
pub fn sign_record(
    store: &Store,
    tip: &crate::store::Tip,
    before: &State,
    op: &mut Op,
) -> Result<()> {
    if op.signature.is_some() || op.actor.agent().is_none() {
        return Ok(());
    }
    let Some(key) = load(store.common_dir())? else {
        return Ok(());
    };
    let binding = Binding::live(state_id(store, Some(tip.commit))?);
    let mut after = before.clone();
    if crate::op::apply(&mut after, op).is_err() {
        return Ok(());
    }
    op.signature = Some(sign(&key, &super::record(before, &after, op, &binding))?);
    Ok(())
}

/// Whether `op` is an agent's tick that the state requires signed by an
/// allowed machine.
pub fn required(before: &State, op: &Op) -> bool {
    op.actor.agent().is_some() && before.meta.settings.signatures.machines()
}

/// Whether `op`'s signature is a machine's (an agent's op, format 5 on, or
/// any agent op once the policy requires it).
pub fn applies(before: &State, op: &Op, binding: &Binding) -> bool {
    op.actor.agent().is_some() && (binding.format >= SINCE || required(before, op))
}

fn same_key(m: &Machine, key: &PublicKey) -> bool {
    PublicKey::from_openssh(&m.key).is_ok_and(|k| k.key_data() == key.key_data())
}

/// The one check of an agent tick's machine signature (see the module).
/// `after` is `before` with the op applied. Ok(Some): signed by a machine
/// allowed to act for the agent; Ok(None): not (yet) required, which
/// `verify` reports as a warning.
pub fn check(
    before: &State,
    after: &State,
    op: &Op,
    binding: &Binding,
) -> Result<Option<SignedBy>, Refusal> {
    let enforced = required(before, op);
    let agent = op.actor.agent().expect("only agents' ops are checked here");
    let Some(text) = &op.signature else {
        if enforced {
            return Err(Refusal::rule(
                Code::Unsigned,
                format!(
                    "{} by {agent} is an agent tick and is not signed by a machine; the state requires every agent tick signed by an admitted machine allowed to act for its agent",
                    op.change.kind()
                ),
            )
            .with_hint(setup_hint()));
        }
        return Ok(None);
    };
    let sig = super::decode(text).map_err(|e| super::bad_signature(op, &e))?;
    super::verify(&sig, &super::record(before, after, op, binding))
        .map_err(|e| super::bad_signature(op, &e))?;
    admission(
        before,
        after,
        op,
        &PublicKey::from(sig.public_key().clone()),
    )
}

/// Whether the machine holding `key` may sign `op` (its signature already
/// checked, or just made here): the part of [`check`] after the
/// cryptography.
pub fn admission(
    before: &State,
    after: &State,
    op: &Op,
    key: &PublicKey,
) -> Result<Option<SignedBy>, Refusal> {
    let enforced = required(before, op);
    let agent = op.actor.agent().expect("only agents' ops are checked here");
    let fingerprint = key.fingerprint(HashAlg::Sha256).to_string();
    let held = |s: &State| {
        s.machines
            .values()
            .filter(|m| same_key(m, key))
            .max_by_key(|m| (m.admitted(), m.revoked_by.is_none()))
            .cloned()
    };
    let machine = held(before);
    if let Some(m) = &machine
        && m.may_act_for(agent)
    {
        return Ok(Some(SignedBy {
            principal: Some(format!("machine {}", m.name)),
            fingerprint,
        }));
    }
    // A proposal signed with the key it proposes proves it holds the key,
    // and admits nothing: allowed from an unadmitted machine.
    if let Change::MachinePropose(MachinePropose { machine: name, .. }) = &op.change
        && held(after).is_some_and(|m| m.name == *name)
    {
        return Ok(Some(SignedBy {
            principal: Some(format!("machine {name} (proposing itself)")),
            fingerprint,
        }));
    }
    if !enforced {
        return Ok(None);
    }
    Err(match machine {
        Some(m) if m.admitted() => Refusal::rule(
            Code::MachineNotAllowed,
            format!(
                "{} by {agent} is signed by machine {} ({fingerprint}), which is not allowed to act for {agent} (it may act for: {})",
                op.change.kind(),
                m.name,
                m.agents.join(", ")
            ),
        )
        .with_hint(Hint::new(
            format!(
                "if that machine runs {agent}, a human admits it for it: `loopx machine admit {} --fingerprint {fingerprint} --for {agent}` (with its other patterns); {N} shows who may act for whom",
                m.name
            ),
            [Next::List("machine".to_owned())],
        )),
        Some(m) => Refusal::rule(
            Code::MachineUnadmitted,
            format!(
                "{} by {agent} is signed by machine {} ({fingerprint}), which is {}",
                op.change.kind(),
                m.name,
                if m.revoked_by.is_some() {
                    "revoked"
                } else {
                    "proposed but not admitted"
                }
            ),
        )
        .with_hint(setup_hint()),
        None => Refusal::rule(
            Code::MachineUnadmitted,
            format!(
                "{} by {agent} is signed by {fingerprint}, a key the state knows as no machine",
                op.change.kind()
            ),
        )
        .with_hint(setup_hint()),
    })
}

fn setup_hint() -> Hint {
    Hint::new(
        format!(
            "run `loopx machine setup` on this machine (it makes and proposes its key), and have a human admit it with `loopx machine admit NAME --fingerprint FP --for PATTERN`; {N} shows the machines; nothing was changed"
        ),
        [Next::List("machine".to_owned())],
    )
}

/// The state's identity for a new tick on top of `tip`, cheaply: the root
/// remembered beside the cache with the tip it was found for is reused
/// when that tip is `tip` or one of its first 64 ancestors (a tick's usual
/// case), else looked up once ([`super::lineage::state_id`]). Derived and
/// disposable: a first-parent chain has one root.
pub fn state_id(store: &Store, tip: Option<Oid>) -> Result<Option<String>> {
    let Some(tip) = tip else { return Ok(None) };
    let file = store.common_dir().join("loopx").join("state-root");
    let remembered = std::fs::read_to_string(&file).ok().and_then(|t| {
        let mut l = t.lines();
        let root = l.next()?.strip_prefix("root ")?.to_owned();
        let at = store.oid(l.next()?.strip_prefix("tip ")?).ok()?;
        Some((root, at))
    });
    if let Some((root, at)) = &remembered {
        // The remembered tip, or an ancestor a few ticks back (other
        // writers' ticks, a small sync), keeps the same root.
        // Rewritten only every few ticks: a rename over the file costs
        // more than reading a few commits.
        let mut c = Some(tip);
        for steps in 0..=NEAR {
            match c {
                Some(x) if x == *at => {
                    if steps >= NEAR / 4 {
                        remember(&file, root, tip);
                    }
                    return Ok(Some(root.clone()));
                }
                Some(x) => c = store.first_parent(x)?,
                None => break,
            }
        }
    }
    let id = super::lineage::state_id(store, Some(tip))?;
    if let Some(root) = &id {
        remember(&file, root, tip);
    }
    Ok(id)
}

/// How many ticks back the remembered tip is looked for.
const NEAR: usize = 64;

fn remember(file: &Path, root: &str, tip: Oid) {
    let Some(dir) = file.parent() else { return };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let Ok(mut tmp) = tempfile::NamedTempFile::new_in(dir) else {
        return;
    };
    if std::io::Write::write_all(&mut tmp, format!("root {root}\ntip {tip}\n").as_bytes()).is_ok() {
        let _ = tmp.persist(file);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Actor, AgentId, GoalId, MachineName, OpId, Signatures};
    use crate::op;
    use crate::op::{AgentRegister, EvidenceAdd, Init, MachineAdmit, MachineRevoke};
    use crate::time::Timestamp;

    fn key() -> PrivateKey {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).unwrap();
        PrivateKey::from(ssh_key::private::Ed25519Keypair::from_seed(&seed))
    }

    fn ada() -> Actor {
        Actor::Human {
            name: "Ada".into(),
            email: "ada@example.com".into(),
        }
    }

    fn at(n: u32) -> Timestamp {
        Timestamp::parse(&format!("2026-11-30T09:{n:02}:00Z")).unwrap()
    }

    fn op(n: u32, actor: Actor, change: Change) -> Op {
        Op {
            id: OpId::from_hex(&format!("{n:016x}")),
            at: at(n),
            actor,
            signature: None,
            change,
        }
    }

    fn agent(id: &str) -> Actor {
        Actor::Agent(AgentId::new(id).unwrap())
    }

    fn add(n: u32, by: &str) -> Op {
        op(
            n,
            agent(by),
            Change::EvidenceAdd(EvidenceAdd::new(
                crate::model::EvidenceId::from_hex(&format!("{n:08x}")),
                GoalId::new("main").unwrap(),
                crate::model::EvidenceKind::Note,
                "checked",
            )),
        )
    }

    fn signed(k: &PrivateKey, before: &State, mut o: Op, binding: &Binding) -> Op {
        let mut after = before.clone();
        op::apply(&mut after, &o).unwrap();
        o.signature = Some(sign(k, &super::super::record(before, &after, &o, binding)).unwrap());
        o
    }

    fn verdict(before: &State, o: &Op, binding: &Binding) -> Result<Option<String>, Code> {
        let mut after = before.clone();
        op::apply(&mut after, o).map_err(|r| r.code)?;
        check(before, &after, o, binding)
            .map(|by| by.and_then(|b| b.principal))
            .map_err(|r| r.code)
    }

    /// Every verdict of the one check, judged from the state before each
    /// op: unsigned, unknown, proposed, admitted for another agent,
    /// allowed, altered, revoked; before and after the policy.
    #[test]
    fn an_agent_tick_counts_only_signed_by_a_machine_allowed_for_its_agent() {
        let binding = Binding {
            format: SINCE,
            state: Some("1111111111111111111111111111111111111111".into()),
        };
        let mut s = State::default();
        for (n, c) in [
            (
                1,
                Change::Init(Init {
                    goal: Some(GoalId::new("main").unwrap()),
                    objective: Some("Ship".into()),
                }),
            ),
            (
                2,
                Change::AgentRegister(AgentRegister {
                    agent: AgentId::new("agent-a").unwrap(),
                    runtime: crate::model::Runtime::Custom,
                    capabilities: Vec::new(),
                    goals: None,
                }),
            ),
            (
                3,
                Change::AgentRegister(AgentRegister {
                    agent: AgentId::new("agent-b").unwrap(),
                    runtime: crate::model::Runtime::Custom,
                    capabilities: Vec::new(),
                    goals: None,
                }),
            ),
        ] {
            op::apply(&mut s, &op(n, ada(), c)).unwrap();
        }
        let (m1, stranger) = (key(), key());
        // Unsigned, and no policy: valid, reported (None).
        assert_eq!(verdict(&s, &add(10, "agent-a"), &binding), Ok(None));
        // A proposal signed by the key it proposes proves possession.
        let propose = signed(
            &m1,
            &s,
            op(
                11,
                agent("agent-a"),
                Change::MachinePropose(MachinePropose {
                    machine: MachineName::new("m1").unwrap(),
                    key: public_line(&m1),
                }),
            ),
            &binding,
        );
        assert!(verdict(&s, &propose, &binding).unwrap().is_some());
        op::apply(&mut s, &propose).unwrap();
        // Proposed only: reported, not trusted.
        let by_m1 = signed(&m1, &s, add(12, "agent-a"), &binding);
        assert_eq!(verdict(&s, &by_m1, &binding), Ok(None));
        let fp = crate::trust::fingerprint(&public_line(&m1)).unwrap();
        let admit = op(
            13,
            ada(),
            Change::MachineAdmit(MachineAdmit {
                machine: MachineName::new("m1").unwrap(),
                fingerprint: fp,
                agents: vec!["agent-a".into()],
            }),
        );
        op::apply(&mut s, &admit).unwrap();
        assert_eq!(verdict(&s, &by_m1, &binding), Ok(Some("machine m1".into())));
        s.meta.settings.signatures = Signatures::All;
        assert_eq!(
            verdict(&s, &add(14, "agent-a"), &binding),
            Err(Code::Unsigned)
        );
        assert_eq!(
            verdict(
                &s,
                &signed(&stranger, &s, add(15, "agent-a"), &binding),
                &binding
            ),
            Err(Code::MachineUnadmitted)
        );
        assert_eq!(
            verdict(&s, &signed(&m1, &s, add(16, "agent-b"), &binding), &binding),
            Err(Code::MachineNotAllowed)
        );
        // Altered after signing, or moved into another state.
        let mut altered = signed(&m1, &s, add(17, "agent-a"), &binding);
        altered.at = at(18);
        assert_eq!(verdict(&s, &altered, &binding), Err(Code::BadSignature));
        let elsewhere = Binding {
            format: SINCE,
            state: Some("2222222222222222222222222222222222222222".into()),
        };
        let moved = signed(&m1, &s, add(19, "agent-a"), &binding);
        assert_eq!(verdict(&s, &moved, &elsewhere), Err(Code::BadSignature));
        // Signed before the revocation: valid against the state before it.
        let early = signed(&m1, &s, add(20, "agent-a"), &binding);
        let before_revoke = s.clone();
        op::apply(
            &mut s,
            &op(
                21,
                ada(),
                Change::MachineRevoke(MachineRevoke {
                    machine: MachineName::new("m1").unwrap(),
                }),
            ),
        )
        .unwrap();
        assert!(verdict(&before_revoke, &early, &binding).unwrap().is_some());
        let late = signed(&m1, &s, add(22, "agent-a"), &binding);
        assert_eq!(verdict(&s, &late, &binding), Err(Code::MachineUnadmitted));
    }

    #[test]
    fn a_key_is_made_once_with_tight_permissions_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load(dir.path()).unwrap().is_none());
        let made = create(dir.path()).unwrap();
        assert!(create(dir.path()).is_err(), "never over an existing key");
        let read = load(dir.path()).unwrap().unwrap();
        assert_eq!(public_line(&made), public_line(&read));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(key_path(dir.path()))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
