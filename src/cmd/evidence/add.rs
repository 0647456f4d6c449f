//! `loopx evidence add`: record a note, a review or an artifact.

use std::path::Path;

use anyhow::Result;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::cmd::TickWire;
use crate::ctx::Ctx;
use crate::error::{Code, Exit, Refusal};
use crate::model::{Evidence, EvidenceKind, evidence::Artifact};
use crate::service::evidence::code_now;

/// Record evidence: what was checked, reviewed or produced
///
/// An artifact is recorded with its SHA-256 and size. Every record carries
/// the code commit (HEAD, and whether the worktree was dirty).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// What it shows, in a line
    #[arg(long, value_name = "TEXT")]
    summary: String,
    /// The todo it is for
    #[arg(long, value_name = "T")]
    todo: Option<String>,
    /// The goal it is for [default: the todo's goal, or the only active goal]
    #[arg(long, value_name = "G")]
    goal: Option<String>,
    /// test, build, bench, review, note or artifact [default: note, or artifact with --artifact]
    #[arg(long, value_name = "KIND")]
    kind: Option<EvidenceKind>,
    /// A file it points at, hashed now
    #[arg(long, value_name = "PATH")]
    artifact: Option<String>,
}

#[derive(Serialize)]
struct Wire<'a> {
    evidence: &'a Evidence,
    #[serde(flatten)]
    tick: TickWire,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let artifact = args
        .artifact
        .as_deref()
        .map(|p| hash_file(ctx, p))
        .transpose()?;
    let kind = args.kind.unwrap_or(if artifact.is_some() {
        EvidenceKind::Artifact
    } else {
        EvidenceKind::Note
    });
    let done = super::record(
        ctx,
        (args.todo.as_deref(), args.goal.as_deref()),
        kind,
        &args.summary,
        code_now(ctx.store().ok()),
        None,
        artifact,
    )?;
    let e = super::recorded(&done);
    ctx.out.emit(
        &Wire {
            evidence: e,
            tick: TickWire::of(&done),
        },
        || e.id.to_string(),
    )?;
    ctx.out.status(&format!(
        "Recorded {} ({}): \"{}\".",
        e.id, e.kind, e.summary
    ));
    Ok(Exit::Ok)
}

/// Hashes a file given relative to where loopx runs; records its path
/// relative to the repository root when it is inside it.
fn hash_file(ctx: &Ctx, typed: &str) -> Result<Artifact> {
    let path = ctx.cwd.join(typed);
    let cannot = |why: String| {
        anyhow::Error::new(
            Refusal::usage(
                Code::BadArtifact,
                format!("cannot read the artifact {}: {why}", path.display()),
            )
            .with_hint("give the path of an existing file"),
        )
    };
    // A regular file, hashed as it streams by: memory stays bounded
    // whatever its size, and a device or a pipe (/dev/zero) is refused
    // before anything is read.
    let mut file = std::fs::File::open(&path).map_err(|e| cannot(e.to_string()))?;
    if !file
        .metadata()
        .map_err(|e| cannot(e.to_string()))?
        .is_file()
    {
        return Err(cannot("it is not a regular file".to_owned()));
    }
    let mut hash = Sha256::new();
    let mut size = 0u64;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        use std::io::Read as _;
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(cannot(e.to_string())),
        };
        hash.update(&buf[..n]);
        size += n as u64;
    }
    let shown = ctx
        .store()?
        .workdir()
        .and_then(|root| {
            let root = root.canonicalize().ok()?;
            let abs = path.canonicalize().ok()?;
            abs.strip_prefix(root).ok().map(Path::to_path_buf)
        })
        .unwrap_or(path.clone());
    Ok(Artifact {
        path: shown.to_string_lossy().into_owned(),
        sha256: crate::model::id::hex(&hash.finalize()),
        bytes: size,
    })
}
