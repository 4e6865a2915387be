//! Small file helpers: atomic writes with a chosen mode.

use std::io::Write;
use std::path::Path;

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
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file().set_permissions(std::fs::Permissions::from_mode(mode))?;
    }
    tmp.write_all(bytes)?;
    if sync {
        tmp.as_file().sync_all()?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Creates `dir` (and parents) with mode 0700 for the last component.
pub(crate) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}
