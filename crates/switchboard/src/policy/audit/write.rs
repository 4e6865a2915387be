//! Writing the log: a record is whole in its file or absent from it, and a record that could
//! not be written is held and written later, or counted as lost and said so.
//!
//! - A batch is appended with one `write_all`; when it fails (a full disk, a file-size
//!   limit, an I/O error) the file is cut back to its length before the batch, so no torn
//!   line stays for the next batch to be appended onto. A file that ends inside a line when
//!   it is first written by this process (a host killed in the middle of a write, an older
//!   version) is cut back to its last whole line first, and the cut line is counted as lost.
//! - The records of a failed batch are held in memory, as the bytes they were going to be,
//!   up to [`HELD_MAX`]; the next flush writes them first. Past that bound the oldest held
//!   are dropped and counted as lost.
//! - Lost records are counted in `lost.json` ([`super::lost`]: a file of fixed size rewritten
//!   in place, so a full disk does not stop the count), and said in the log itself by a line
//!   `{"time", "lost", "first", "last", "error"}` before the next records that are written.
//! - [`Health`] says, at any moment, whether the log is being written, what failed, and how
//!   many records are held and lost; with `audit.required` the hub refuses calls while it
//!   cannot write.

use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Serialize;

use super::AuditRecord;
use super::lost::{self, Summary};
use super::stamp::{first_ten, stamp};

/// Bytes of records held in memory while the disk refuses them (8 MiB: some 25,000 calls'
/// records without arguments).
pub(crate) const HELD_MAX: usize = 8 * 1024 * 1024;

/// Room [`Writer::probe`] asks for (a few records with their arguments).
const PROBE: u64 = 64 * 1024;

/// How the log is doing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Health {
    /// Why the last write failed, while the log cannot be written (`None`: it is written).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failing: Option<String>,
    /// Records waiting in memory for the disk.
    pub held: u64,
    /// Records lost since this log opened (never written, or cut from a torn end).
    pub lost: u64,
}

/// Bytes of whole lines for one day, and how many records they are.
struct Batch {
    day: [u8; 10],
    bytes: Vec<u8>,
    records: u64,
    /// The times of the first and the last record in it.
    first: SystemTime,
    last: SystemTime,
}

/// What the writing thread keeps between flushes.
pub(crate) struct Writer {
    files: Files,
    max: u64,
    /// The day last written, to prune when a new one begins.
    day: [u8; 10],
    /// Batches a failed write left, oldest first.
    held: Vec<Batch>,
    held_bytes: usize,
    /// Losses `lost.json` could not take (it could not be made): said from memory instead.
    unsaid: Summary,
    /// Why the last write failed.
    error: String,
    health: Health,
}

impl Writer {
    pub(crate) fn new(dir: PathBuf, max: u64) -> Writer {
        Writer {
            files: Files { dir, checked: Vec::new(), torn: 0 },
            max,
            day: [0; 10],
            held: Vec::new(),
            held_bytes: 0,
            unsaid: Summary::default(),
            error: String::new(),
            health: Health::default(),
        }
    }

    pub(crate) fn health(&self) -> Health {
        self.health.clone()
    }

    /// Whether records wait for the disk.
    pub(crate) fn has_held(&self) -> bool {
        !self.held.is_empty()
    }

    /// At shutdown: what is still held is lost; the log says so if it can, stderr does.
    pub(crate) fn close(&mut self) {
        for batch in std::mem::take(&mut self.held) {
            self.lose(batch.records, batch.first, batch.last);
        }
        self.held_bytes = 0;
        self.health.held = 0;
        if self.health.lost > 0 {
            let day = first_ten(&stamp(SystemTime::now()));
            let said = self.say_lost(&day);
            tracing::error!(
                "the audit log {}: {} record(s) could not be written ({}){}",
                self.files.dir.display(),
                self.health.lost,
                self.error,
                match said {
                    Ok(()) => String::from("; the log says so"),
                    Err(_) if self.unsaid.lost == 0 =>
                        String::from("; counted in lost.json, which `switchboard audit` shows"),
                    Err(e) => format!("; and this could not be recorded: {e}"),
                }
            );
        }
    }

    /// Makes the folder and `lost.json` and prunes old days (when the log opens).
    pub(crate) fn open(&mut self) {
        let made = crate::fsutil::create_private_dir(&self.files.dir).and_then(|()| lost::make(&self.files.dir));
        if let Err(e) = made {
            tracing::warn!("the audit log {}: {e}", self.files.dir.display());
        }
        prune(&self.files.dir, self.max, None);
    }

    /// Whether the log can take records now, for a log that must be written
    /// (`audit.required`) before the first call: losses not yet said are said now, and room
    /// for [`PROBE`] bytes is reserved at the end of today's file (`fallocate`, keeping its
    /// size: the space is there for the next records, and a full disk shows before a call
    /// is made rather than after).
    pub(crate) fn probe(&mut self) {
        let day = first_ten(&stamp(SystemTime::now()));
        let result = self.say_lost(&day).and_then(|()| self.files.reserve(&day, PROBE));
        match result {
            Ok(()) => self.health.failing = None,
            Err(e) => {
                self.error = e.to_string();
                self.health.failing = Some(e.to_string());
            }
        }
    }

    /// Writes `records` (after whatever is held), each day's lines in one append.
    pub(crate) fn write(&mut self, records: &mut Vec<AuditRecord>) {
        let mut batches: Vec<Batch> = Vec::new();
        for record in records.drain(..) {
            let day = first_ten(&stamp(record.time));
            if batches.last().is_none_or(|b| b.day != day) {
                batches.push(Batch {
                    day,
                    bytes: Vec::with_capacity(320),
                    records: 0,
                    first: record.time,
                    last: record.time,
                });
            }
            if let Some(batch) = batches.last_mut()
                && serde_json::to_writer(&mut batch.bytes, &record).is_ok()
            {
                batch.bytes.push(b'\n');
                batch.records += 1;
                batch.last = record.time;
            }
        }
        let mut queue = std::mem::take(&mut self.held);
        self.held_bytes = 0;
        queue.extend(batches);
        let mut queue = queue.into_iter();
        while let Some(batch) = queue.next() {
            if batch.day != self.day {
                if self.day != [0; 10] {
                    prune(&self.files.dir, self.max, Some(&day_name(&batch.day)));
                }
                self.day = batch.day;
            }
            // A torn end is cut (and counted) first, so the count comes before the records.
            let written = self
                .append(&batch.day, b"")
                .and_then(|()| self.say_lost(&batch.day))
                .and_then(|()| self.append(&batch.day, &batch.bytes));
            if let Err(e) = written {
                self.failed(&e, batch);
                for rest in queue.by_ref() {
                    self.hold(rest);
                }
                break;
            }
        }
        if self.held.is_empty() && self.health.failing.take().is_some() {
            tracing::info!("the audit log {} is written again", self.files.dir.display());
            let _ = lost::make(&self.files.dir);
        }
        self.health.held = self.held.iter().map(|b| b.records).sum();
    }

    fn failed(&mut self, e: &std::io::Error, batch: Batch) {
        let why = e.to_string();
        if self.health.failing.as_deref() != Some(why.as_str()) {
            tracing::warn!(
                "the audit log {} cannot be written: {why} (records are held and written when it can be)",
                self.files.dir.display()
            );
        }
        self.error.clone_from(&why);
        self.health.failing = Some(why);
        self.hold(batch);
    }

    /// Keeps `batch` for the next flush, dropping the oldest held past [`HELD_MAX`].
    fn hold(&mut self, batch: Batch) {
        self.held_bytes += batch.bytes.len();
        self.held.push(batch);
        while self.held_bytes > HELD_MAX && !self.held.is_empty() {
            let dropped = self.held.remove(0);
            self.held_bytes -= dropped.bytes.len();
            self.lose(dropped.records, dropped.first, dropped.last);
        }
    }

    /// `records` made from `first` to `last` are lost: counted in `lost.json`, or in memory
    /// when it cannot take them.
    fn lose(&mut self, records: u64, first: SystemTime, last: SystemTime) {
        if records == 0 {
            return;
        }
        self.health.lost += records;
        let mut more = Summary::default();
        more.add(records, first, last, &self.error);
        if lost::add(&self.files.dir, &more).is_err() {
            self.unsaid.add(records, first, last, &self.error);
        }
    }

    /// Appends to `day`'s file, counting a torn end it cut as a record lost.
    fn append(&mut self, day: &[u8; 10], bytes: &[u8]) -> std::io::Result<()> {
        let result = self.files.append(day, bytes);
        let torn = std::mem::take(&mut self.files.torn);
        if torn > 0 {
            let now = SystemTime::now();
            let why =
                std::mem::replace(&mut self.error, String::from("a write was cut short (the host ended during it)"));
            self.lose(torn, now, now);
            self.error = why;
        }
        result
    }

    /// Writes the line that says records were lost, if some were and it is not written yet.
    fn say_lost(&mut self, day: &[u8; 10]) -> std::io::Result<()> {
        if self.unsaid.lost > 0 {
            let line = self.unsaid.line();
            self.append(day, &line)?;
            self.unsaid = Summary::default();
        }
        let dir = self.files.dir.clone();
        lost::settle(&dir, |line| self.files.append(day, line))
    }
}

/// The day files, appended to whole lines at a time.
struct Files {
    dir: PathBuf,
    /// Files whose end this process has checked for a torn line.
    checked: Vec<String>,
    /// Torn lines cut since last asked.
    torn: u64,
}

impl Files {
    /// Appends whole lines to `day`'s file, or nothing: a failed write is cut back.
    fn append(&mut self, day: &[u8; 10], bytes: &[u8]) -> std::io::Result<()> {
        crate::fsutil::create_private_dir(&self.dir)?;
        let name = format!("{}.jsonl", day_name(day));
        let path = self.dir.join(&name);
        let mut file = std::fs::OpenOptions::new().create(true).read(true).append(true).mode(0o600).open(&path)?;
        let mut len = file.metadata()?.len();
        if !self.checked.contains(&name) {
            len = self.cut_torn_end(&mut file, len)?;
            self.checked.push(name);
        }
        if bytes.is_empty() {
            return Ok(());
        }
        match file.write_all(bytes) {
            Ok(()) => Ok(()),
            Err(e) => {
                // What went out of this batch is cut off again: a record is whole or absent.
                if let Err(cut) = file.set_len(len) {
                    tracing::warn!("the audit log {}: a failed write could not be cut back: {cut}", path.display());
                }
                Err(e)
            }
        }
    }

    /// Reserves `bytes` past the end of `day`'s file without changing its size.
    fn reserve(&mut self, day: &[u8; 10], bytes: u64) -> std::io::Result<()> {
        crate::fsutil::create_private_dir(&self.dir)?;
        let path = self.dir.join(format!("{}.jsonl", day_name(day)));
        let file = std::fs::OpenOptions::new().create(true).read(true).append(true).mode(0o600).open(&path)?;
        let len = i64::try_from(file.metadata()?.len()).unwrap_or(i64::MAX);
        let want = i64::try_from(bytes).unwrap_or(0);
        match nix::fcntl::fallocate(&file, nix::fcntl::FallocateFlags::FALLOC_FL_KEEP_SIZE, len, want) {
            Ok(()) => Ok(()),
            // A file system without it says nothing either way.
            Err(nix::errno::Errno::EOPNOTSUPP) => Ok(()),
            Err(e) => Err(std::io::Error::from(e)),
        }
    }

    /// Cuts a file that ends inside a line back to its last whole line (counted in `torn`).
    /// Returns the length after.
    fn cut_torn_end(&mut self, file: &mut std::fs::File, len: u64) -> std::io::Result<u64> {
        if len == 0 {
            return Ok(0);
        }
        let mut last = [0u8; 1];
        file.seek(SeekFrom::Start(len - 1))?;
        file.read_exact(&mut last)?;
        if last[0] == b'\n' {
            return Ok(len);
        }
        // Back to the last newline, 64 KiB at a time.
        let mut end = len;
        let mut keep = 0;
        let mut chunk = vec![0u8; 64 * 1024];
        while end > 0 {
            let start = end.saturating_sub(chunk.len() as u64);
            let n = usize::try_from(end - start).unwrap_or(0);
            file.seek(SeekFrom::Start(start))?;
            file.read_exact(&mut chunk[..n])?;
            if let Some(i) = chunk[..n].iter().rposition(|b| *b == b'\n') {
                keep = start + i as u64 + 1;
                break;
            }
            end = start;
        }
        file.set_len(keep)?;
        tracing::warn!("the audit log ended inside a record (a write cut short): {} bytes of it removed", len - keep);
        self.torn += 1;
        Ok(keep)
    }
}

fn day_name(day: &[u8; 10]) -> String {
    String::from_utf8_lossy(day).into_owned()
}

/// Removes the oldest days while the log holds more than `max` bytes (never `keep`).
pub(crate) fn prune(dir: &Path, max: u64, keep: Option<&str>) {
    let Ok(read) = std::fs::read_dir(dir) else { return };
    let mut days: Vec<(String, u64)> = read
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let day = name.strip_suffix(".jsonl")?.to_string();
            Some((day, e.metadata().ok()?.len()))
        })
        .collect();
    days.sort();
    let mut total: u64 = days.iter().map(|d| d.1).sum();
    for (day, len) in days {
        if total <= max || keep == Some(day.as_str()) {
            break;
        }
        if std::fs::remove_file(dir.join(format!("{day}.jsonl"))).is_ok() {
            total = total.saturating_sub(len);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::policy::audit::{AuditFilter, AuditLog, read, sample as record};

    #[test]
    fn records_the_log_cannot_take_are_held_then_counted_in_lost_json_then_said() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let data = dir.path();
        let audit = super::super::audit_dir(data);
        let now = SystemTime::now();
        let day = super::super::stamp::rfc3339(now)[..10].to_string();
        let file = audit.join(format!("{day}.jsonl"));
        let mut w = Writer::new(audit.clone(), u64::MAX);
        w.open();
        // Today's file cannot be written (a folder stands in its place).
        std::fs::create_dir_all(&file).unwrap_or_else(|e| panic!("{e}"));
        w.write(&mut vec![record(now), record(now)]);
        let h = w.health();
        assert!(h.failing.is_some(), "{h:?}");
        assert_eq!((h.held, h.lost), (2, 0), "held, not lost yet");
        // Ended while it still cannot: lost, counted in lost.json, shown by `read`.
        w.close();
        assert_eq!(w.health().lost, 2);
        let r = read(data, &AuditFilter::new()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.lost_records(), 2, "{r:?}");
        assert!(r.lost[0].time.is_none(), "not in the log yet: {r:?}");
        // Another process, with room again: the count becomes a line of the log, once.
        std::fs::remove_dir(&file).unwrap_or_else(|e| panic!("{e}"));
        let log = AuditLog::open(data, crate::config::AuditConfig::default(), None);
        if let Some(log) = &log {
            log.record(record(now + Duration::from_millis(5)));
        }
        drop(log);
        let r = read(data, &AuditFilter::new()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((r.records.len(), r.lost_records()), (1, 2), "{r:?}");
        assert!(r.lost[0].time.is_some(), "said in the log: {r:?}");
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        assert!(text.lines().next().is_some_and(|l| l.contains("\"lost\":2")), "{text}");
        assert!(lost::peek(&audit).lost == 0, "lost.json is emptied");
    }

    #[test]
    fn a_torn_end_is_cut_and_counted_before_the_next_records() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let audit = dir.path().join("audit");
        let now = SystemTime::now();
        let day = super::super::stamp::rfc3339(now)[..10].to_string();
        std::fs::create_dir_all(&audit).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(audit.join(format!("{day}.jsonl")), b"{\"whole\":1}\n{\"torn\":")
            .unwrap_or_else(|e| panic!("{e}"));
        let mut w = Writer::new(audit.clone(), u64::MAX);
        w.open();
        w.write(&mut vec![record(now)]);
        let text = std::fs::read_to_string(audit.join(format!("{day}.jsonl"))).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "the whole line, the count of the torn one, the record: {text}");
        assert_eq!(lines[0], "{\"whole\":1}");
        assert!(lines[1].contains("\"lost\":1") && lines[1].contains("cut short"), "{text}");
        assert!(lines[2].contains("\"server\":\"s\""), "{text}");
        assert_eq!(w.health().lost, 1);
    }
}
