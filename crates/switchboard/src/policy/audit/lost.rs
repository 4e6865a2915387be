//! The count of records lost and not yet said in the log, kept where a full disk cannot stop
//! it being kept: `lost.json`, a file of [`SIZE`] bytes made when the log opens (while there
//! is room) and always rewritten in place, so updating it needs no new block. Every process
//! that writes the log adds its losses to it under a lock; the first write that finds room
//! again turns it into a line of the log (`{"time", "lost", "first", "last", "error"}`) and
//! empties it. [`super::read`] shows what it holds too, so losses are said even while the
//! disk is still full.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use super::stamp::rfc3339;

/// The file's size: room for the summary, whatever its error text.
pub(crate) const SIZE: usize = 4096;

/// Records lost: how many, when, and why.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Summary {
    #[serde(default)]
    pub(crate) lost: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) first: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) last: Option<String>,
    #[serde(default)]
    pub(crate) error: String,
}

impl Summary {
    /// `count` more, made from `first` to `last`, for `error`.
    pub(crate) fn add(&mut self, count: u64, first: SystemTime, last: SystemTime, error: &str) {
        self.lost += count;
        let (first, last) = (rfc3339(first), rfc3339(last));
        if self.first.as_ref().is_none_or(|f| first < *f) {
            self.first = Some(first);
        }
        if self.last.as_ref().is_none_or(|l| last > *l) {
            self.last = Some(last);
        }
        self.error = crate::text::excerpt(error, 300);
    }

    /// The line of the log that says it.
    pub(crate) fn line(&self) -> Vec<u8> {
        let mut v = serde_json::json!({"time": rfc3339(SystemTime::now())});
        if let (Some(obj), Ok(serde_json::Value::Object(me))) = (v.as_object_mut(), serde_json::to_value(self)) {
            obj.extend(me);
        }
        let mut bytes = serde_json::to_vec(&v).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }
}

pub(crate) fn path(dir: &Path) -> PathBuf {
    dir.join("lost.json")
}

/// Makes the file if it is missing (at its full size, so later updates need no room).
pub(crate) fn make(dir: &Path) -> std::io::Result<()> {
    let path = path(dir);
    if std::fs::metadata(&path).is_ok_and(|m| m.len() >= SIZE as u64) {
        return Ok(());
    }
    let mut file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).mode(0o600).open(&path)?;
    let made = put(&mut file, &Summary::default()).and_then(|()| file.sync_data());
    if made.is_err() {
        // Half made: better absent (the next open tries again) than short.
        let _ = std::fs::remove_file(&path);
    }
    made
}

/// What the file holds (nothing lost when it is absent or unreadable).
pub(crate) fn peek(dir: &Path) -> Summary {
    let mut bytes = Vec::new();
    match File::open(path(dir)).and_then(|mut f| f.read_to_end(&mut bytes)) {
        Ok(_) => serde_json::from_slice(trim(&bytes)).unwrap_or_default(),
        Err(_) => Summary::default(),
    }
}

/// Adds `more` to the file, under its lock. Fails when the file is missing (it could not be
/// made): the caller keeps the count in memory then.
pub(crate) fn add(dir: &Path, more: &Summary) -> std::io::Result<()> {
    let Some(mut file) = crate::fsutil::lock_in_place(&path(dir), false, Duration::from_secs(5))? else {
        return Err(std::io::Error::new(std::io::ErrorKind::NotFound, "lost.json is missing"));
    };
    let mut now = get(&mut file)?;
    now.lost += more.lost;
    for (mine, theirs, earlier) in [(&mut now.first, &more.first, true), (&mut now.last, &more.last, false)] {
        if let Some(t) = theirs
            && mine.as_ref().is_none_or(|m| if earlier { t < m } else { t > m })
        {
            *mine = Some(t.clone());
        }
    }
    if !more.error.is_empty() {
        now.error.clone_from(&more.error);
    }
    put(&mut file, &now)?;
    file.sync_data()
}

/// When the file counts lost records: `write` is given the line that says so, and the file is
/// emptied if it wrote it (all under the lock, so no other process says the same twice).
pub(crate) fn settle(dir: &Path, write: impl FnOnce(&[u8]) -> std::io::Result<()>) -> std::io::Result<()> {
    let Some(mut file) = crate::fsutil::lock_in_place(&path(dir), false, Duration::from_secs(5))? else {
        return Ok(());
    };
    let now = get(&mut file)?;
    if now.lost == 0 {
        return Ok(());
    }
    write(&now.line())?;
    put(&mut file, &Summary::default())
}

fn get(file: &mut File) -> std::io::Result<Summary> {
    let mut bytes = vec![0u8; SIZE];
    file.seek(SeekFrom::Start(0))?;
    let n = file.read(&mut bytes)?;
    Ok(serde_json::from_slice(trim(&bytes[..n])).unwrap_or_default())
}

/// Writes `summary` over the file's first [`SIZE`] bytes, padded with spaces.
fn put(file: &mut File, summary: &Summary) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(summary).map_err(std::io::Error::other)?;
    if bytes.len() >= SIZE {
        let short = Summary { error: crate::text::excerpt(&summary.error, 100), ..summary.clone() };
        bytes = serde_json::to_vec(&short).map_err(std::io::Error::other)?;
    }
    bytes.resize(SIZE - 1, b' ');
    bytes.push(b'\n');
    file.seek(SeekFrom::Start(0))?;
    file.write_all(&bytes)
}

fn trim(bytes: &[u8]) -> &[u8] {
    let end = bytes.iter().rposition(|b| !b.is_ascii_whitespace() && *b != 0).map_or(0, |i| i + 1);
    &bytes[..end]
}
