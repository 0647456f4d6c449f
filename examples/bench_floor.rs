//! The benchmark's floor (`bench/run`): the least any loopx command must do
//! to answer from the state. It opens the repository as loopx does
//! (`Store::discover`, which also reads git config), resolves the state ref
//! to its commit and tree (`Store::tip`, one commit read), and reads the
//! tip's root tree (`Store::read_files_under` looks `loopx.toml` up in the
//! root tree; the entry is a file, not a folder, so it returns at once,
//! having read exactly the root tree object). It prints nothing.
//!
//! ```text
//! bench_floor [DIR]
//! ```

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use loopx::model::files::META;
use loopx::store::Store;

fn run() -> Result<()> {
    let dir = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| ".".into()));
    let store = Store::discover(&dir)?;
    let tip = store.tip()?.context("there is no loopx state here")?;
    store.read_files_under(tip.tree, META)?;
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "bench_floor: {e:#}");
            ExitCode::FAILURE
        }
    }
}
