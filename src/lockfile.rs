//! Opening a lock file under the git dir, for `flock`: the store's ref
//! lock (`store/lock.rs`) and the writers' queue (`queue.rs`).

use std::fs::File;
use std::io;
use std::path::Path;

/// Opens the lock file at `path` for reading and writing, without
/// truncating what a holder wrote there, creating it (and its folder, when
/// the first try fails) when missing.
pub fn open(path: &Path) -> io::Result<File> {
    let open = || {
        File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
    };
    open().or_else(|_| {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        open()
    })
}
