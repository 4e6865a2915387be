//! Files that keep what was cut from a result, and their cleaning.

use std::path::{Path, PathBuf};

use super::Spill;

/// The longest label in a spill file's name (the rest of a longer one is a hash of it).
const LABEL_MAX: usize = 60;

/// Writes cut content to a new file (0600, in a 0700 folder) named after the label. `None`
/// without a spill folder; an error when the file could not be written (said to the model).
pub(super) fn spill_file(spill: Option<Spill<'_>>, ext: &str, parts: &[&[u8]]) -> Option<Result<PathBuf, String>> {
    let spill = spill?;
    let written = (|| -> std::io::Result<PathBuf> {
        crate::fsutil::create_private_dir(spill.dir)?;
        let mut label: String = spill
            .label
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
            .collect();
        if label.len() > LABEL_MAX {
            use sha2::Digest;
            let digest = sha2::Sha256::digest(spill.label.as_bytes());
            let hash: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
            label.truncate(LABEL_MAX - 9);
            label = format!("{label}-{hash}");
        }
        let file =
            tempfile::Builder::new().prefix(&format!("{label}-")).suffix(&format!(".{ext}")).tempfile_in(spill.dir)?;
        {
            use std::io::Write;
            let mut out = std::io::BufWriter::with_capacity(64 * 1024, file.as_file());
            for part in parts {
                out.write_all(part)?;
            }
            out.flush()?;
        }
        let (_, path) = file.keep().map_err(|e| e.error)?;
        Ok(path)
    })();
    Some(written.map_err(|e| {
        tracing::warn!("could not keep the full output in {}: {e}", spill.dir.display());
        e.to_string()
    }))
}

/// Removes kept outputs from `dir`: those older than `keep`, then the oldest until they hold
/// at most `max_bytes` in all. Returns how many were removed and how many bytes that freed.
pub fn clean_spills(dir: &Path, keep: std::time::Duration, max_bytes: u64) -> (usize, u64) {
    let Ok(entries) = std::fs::read_dir(dir) else { return (0, 0) };
    let now = std::time::SystemTime::now();
    let mut files: Vec<(std::time::SystemTime, u64, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let meta = e.metadata().ok().filter(|m| m.is_file())?;
            Some((meta.modified().unwrap_or(now), meta.len(), e.path()))
        })
        .collect();
    files.sort();
    let mut total: u64 = files.iter().map(|f| f.1).sum();
    let (mut removed, mut freed) = (0, 0);
    for (modified, len, path) in files {
        let old = now.duration_since(modified).is_ok_and(|age| age > keep);
        if (old || total > max_bytes) && std::fs::remove_file(&path).is_ok() {
            removed += 1;
            freed += len;
            total -= len;
        }
    }
    (removed, freed)
}
