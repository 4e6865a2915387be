//! Files of ours: atomic writes with a chosen mode, private folders, state files that are
//! refused when someone else could have planted or changed them, and locks whose wait is
//! bounded and says which file it was.
//!
//! The data folder and every folder under it are 0700 whatever the umask (a looser one is
//! tightened, with a warning); files are 0600. A token or state file that is not owned by
//! this user, or that others can write, is refused with a message (one others can only read
//! is made 0600, with a warning).

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

use nix::fcntl::{Flock, FlockArg};

/// How long a lock is waited for before giving up (with a message naming the file).
pub(crate) const LOCK_WAIT: Duration = Duration::from_secs(10);

/// Writes `bytes` to `path` atomically: a temporary file in the same folder, flushed and
/// synced, then renamed over the target. With `mode`, the file gets that Unix mode before any
/// byte is written (so a secret is never readable by others, even briefly).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8], mode: Option<u32>) -> std::io::Result<()> {
    write_atomic_with(path, bytes, mode, true)
}

/// [`write_atomic`] without the sync: for state that only matters while the machine runs.
pub(crate) fn write_atomic_unsynced(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    write_atomic_with(path, bytes, Some(mode), false)
}

fn write_atomic_with(path: &Path, bytes: &[u8], mode: Option<u32>, sync: bool) -> std::io::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::Builder::new().prefix(".switchboard-").tempfile_in(dir)?;
    if let Some(mode) = mode {
        tmp.as_file().set_permissions(std::fs::Permissions::from_mode(mode))?;
    }
    tmp.write_all(bytes)?;
    if sync {
        tmp.as_file().sync_all()?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

fn uid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// A folder only this user can enter: created 0700 (parents too, whatever the umask); an
/// existing one others could enter is made 0700 with a warning; one owned by someone else is
/// refused.
pub(crate) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    match std::fs::metadata(dir) {
        Ok(meta) if !meta.is_dir() => Err(std::io::Error::other(format!("{} is not a folder", dir.display()))),
        Ok(meta) => {
            if meta.uid() != uid() {
                return Err(std::io::Error::other(format!(
                    "{} belongs to user {}, not to you: refusing to keep state in it",
                    dir.display(),
                    meta.uid()
                )));
            }
            let mode = meta.mode() & 0o777;
            if mode & 0o077 != 0 {
                std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
                tracing::warn!("{} was open to others (mode {mode:03o}): made 0700", dir.display());
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
            // The umask may have taken bits away; it cannot have added any, but say it exactly.
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        }
        Err(e) => Err(e),
    }
}

/// Why a state file is not used.
fn refused(path: &Path, why: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::PermissionDenied, format!("refusing {}: {why}", path.display()))
}

/// Checks an open state or token file: ours, and writable by no one else (readable by others:
/// made 0600 with a warning).
fn check_private(path: &Path, file: &File) -> std::io::Result<()> {
    let meta = file.metadata()?;
    if meta.uid() != uid() {
        return Err(refused(path, format!("it belongs to user {}, not to you (remove it)", meta.uid())));
    }
    let mode = meta.mode() & 0o777;
    if mode & 0o022 != 0 {
        return Err(refused(path, format!("others can write to it (mode {mode:03o}): remove it, or `chmod 600` it")));
    }
    if mode & 0o044 != 0 {
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        tracing::warn!("{} was readable by others (mode {mode:03o}): made 0600", path.display());
    }
    Ok(())
}

/// Reads a state or token file of ours (`None` if absent), refusing one that is not ours or
/// that others can write.
pub(crate) fn read_private(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    check_private(path, &file)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(Some(bytes))
}

/// An exclusive lock on the lock file `path` (created 0600 if missing), waited for at most
/// `wait`; released when dropped or when the process dies.
pub(crate) fn lock(path: &Path, wait: Duration) -> std::io::Result<Flock<File>> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    check_private(path, &file)?;
    lock_file(path, file, wait)
}

fn lock_file(path: &Path, mut file: File, wait: Duration) -> std::io::Result<Flock<File>> {
    let started = Instant::now();
    loop {
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(locked) => return Ok(locked),
            Err((back, nix::errno::Errno::EWOULDBLOCK)) if started.elapsed() < wait => {
                file = back;
                std::thread::sleep(Duration::from_millis(10));
            }
            Err((_, nix::errno::Errno::EWOULDBLOCK)) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!(
                        "waited {} s for the lock on {} (another switchboard holds it); try again",
                        wait.as_secs(),
                        path.display()
                    ),
                ));
            }
            Err((_, errno)) => return Err(std::io::Error::other(format!("locking {}: {errno}", path.display()))),
        }
    }
}

/// Locks the file `path` itself for a read-modify-write whose write replaces it by rename:
/// after the lock is taken, the file is checked to still be the one at `path` (a writer before
/// us may have renamed a new one over it; then the new one is locked instead). `None` when it
/// does not exist and `create` is false.
pub(crate) fn lock_in_place(path: &Path, create: bool, wait: Duration) -> std::io::Result<Option<Flock<File>>> {
    let started = Instant::now();
    loop {
        let opened =
            std::fs::OpenOptions::new().read(true).write(true).create(create).truncate(false).mode(0o600).open(path);
        let file = match opened {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !create => return Ok(None),
            Err(e) => return Err(std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
        };
        let left = wait.saturating_sub(started.elapsed());
        let locked = lock_file(path, file, left)?;
        let same = match (locked.metadata(), std::fs::metadata(path)) {
            (Ok(held), Ok(now)) => held.ino() == now.ino() && held.dev() == now.dev(),
            _ => false,
        };
        if same {
            return Ok(Some(locked));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_folders_are_made_and_made_private() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let data = dir.path().join("a/b/data");
        create_private_dir(&data).unwrap_or_else(|e| panic!("{e}"));
        let mode = |p: &Path| std::fs::metadata(p).map(|m| m.mode() & 0o777).unwrap_or(0);
        assert_eq!(mode(&data), 0o700);
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o777)).unwrap_or_else(|e| panic!("{e}"));
        create_private_dir(&data).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(mode(&data), 0o700, "tightened");
    }

    #[test]
    fn a_state_file_others_can_write_is_refused_and_one_they_can_read_is_tightened() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("serve-token");
        assert!(read_private(&path).is_ok_and(|b| b.is_none()));
        std::fs::write(&path, "x").unwrap_or_else(|e| panic!("{e}"));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap_or_else(|e| panic!("{e}"));
        let err = read_private(&path).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("refusing") && err.contains("serve-token") && err.contains("666"), "{err}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap_or_else(|e| panic!("{e}"));
        assert!(read_private(&path).is_ok_and(|b| b == Some(b"x".to_vec())));
        assert_eq!(std::fs::metadata(&path).map(|m| m.mode() & 0o777).unwrap_or(0), 0o600);
    }

    #[test]
    fn a_held_lock_times_out_naming_the_file() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("x.lock");
        let held = lock(&path, LOCK_WAIT).unwrap_or_else(|e| panic!("{e}"));
        let started = Instant::now();
        let err = lock(&path, Duration::from_millis(200)).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("x.lock") && err.contains("another switchboard"), "{err}");
        assert!(started.elapsed() >= Duration::from_millis(200));
        drop(held);
        assert!(lock(&path, Duration::from_millis(200)).is_ok());
        assert_eq!(std::fs::metadata(&path).map(|m| m.mode() & 0o777).unwrap_or(0), 0o600);
    }
}
