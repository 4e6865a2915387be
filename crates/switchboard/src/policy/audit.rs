//! The audit log: one JSON line per tool call through the hub, in
//! `<data>/audit/YYYY-MM-DD.jsonl` (UTC days; files 0600 in a 0700 folder).
//!
//! A line holds the time, who called (the [`Caller`]), server, tool, the policy's decision and
//! rule, the approval given if one was asked, the duration, the outcome, the result's size and
//! the SHA-256 of the arguments; the arguments themselves only with `"audit": {"arguments":
//! true}`, with the values of keys that look like secrets replaced. Lines are gathered in
//! memory and appended by one thread every 100 ms (and at shutdown), so a call does not wait
//! for the disk; a host killed with SIGKILL loses at most the last 100 ms of lines. Days
//! beyond `max_mb` in all are removed, oldest first, when the log opens and when a day begins.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use rmcp::model::JsonObject;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{Approval, Caller, Verdict};
use crate::config::AuditConfig;

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Outcome {
    /// A result that is not an error.
    Ok,
    /// A result with `isError: true`.
    ToolError,
    /// No answer in time.
    Timeout,
    /// The caller cancelled.
    Cancelled,
    /// Refused by the policy (or an approver); nothing was sent.
    Denied,
    /// The arguments did not match the input schema; nothing was sent.
    InvalidArguments,
    /// Any other failure (the server went away, refused the request...).
    Failed,
}

/// One line of the log.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct AuditRecord {
    /// When the call was made (RFC 3339, UTC, milliseconds).
    #[serde(serialize_with = "ser_time")]
    pub time: SystemTime,
    /// Who made it.
    pub caller: Caller,
    /// The server.
    pub server: String,
    /// The tool's own name.
    pub tool: String,
    /// The model-visible name.
    pub name: String,
    /// The policy's verdict.
    pub decision: Verdict,
    /// The rule that made it.
    pub rule: String,
    /// The answer, when someone was asked (or an earlier answer held).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<Approval>,
    /// How long the call took (milliseconds).
    pub duration_ms: u64,
    /// How it ended.
    pub outcome: Outcome,
    /// Why, for outcomes other than `ok` and `tool_error`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Bytes of the result's content (text, data, resources), when there was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_bytes: Option<usize>,
    /// SHA-256 of the arguments as sent (JSON), hex.
    pub arguments_sha256: String,
    /// The arguments, secrets redacted (only with `audit.arguments`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
}

struct Shared {
    pending: Vec<AuditRecord>,
    /// The vector last written, emptied, to take the next records (its capacity kept: a busy
    /// host would otherwise grow a new one, copying it, after every write).
    spare: Vec<AuditRecord>,
    /// The day last written, to prune when a new one begins.
    day: [u8; 10],
}

/// The log of one hub.
pub struct AuditLog {
    dir: PathBuf,
    config: AuditConfig,
    shared: Arc<Mutex<Shared>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    worker: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog").field("dir", &self.dir).field("config", &self.config).finish()
    }
}

/// The log folder in `data_dir`.
pub fn audit_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("audit")
}

impl AuditLog {
    /// Opens the log in `<data_dir>/audit` (`None` when turned off).
    pub fn open(data_dir: &Path, config: AuditConfig) -> Option<AuditLog> {
        if !config.enabled {
            return None;
        }
        let dir = audit_dir(data_dir);
        let shared = Arc::new(Mutex::new(Shared { pending: Vec::new(), spare: Vec::new(), day: [0; 10] }));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (dir2, shared2, stop2, max) = (dir.clone(), shared.clone(), stop.clone(), config.max_bytes);
        let worker = std::thread::Builder::new()
            .name("switchboard-audit".into())
            .spawn(move || {
                prune(&dir2, max, None);
                loop {
                    std::thread::park_timeout(Duration::from_millis(100));
                    let done = stop2.load(std::sync::atomic::Ordering::Acquire);
                    flush(&dir2, &shared2, max);
                    if done {
                        return;
                    }
                }
            })
            .ok();
        Some(AuditLog { dir, config, shared, stop, worker: Mutex::new(worker) })
    }

    /// Whether arguments are kept.
    pub fn keeps_arguments(&self) -> bool {
        self.config.arguments
    }

    /// Adds a line (written within 100 ms, by the log's thread: the call pays for a push).
    pub fn record(&self, record: AuditRecord) {
        if let Ok(mut shared) = self.shared.lock() {
            shared.pending.push(record);
        }
    }

    /// Writes what is pending now (at shutdown).
    pub fn flush(&self) {
        flush(&self.dir, &self.shared, self.config.max_bytes);
    }
}

impl Drop for AuditLog {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
        if let Ok(mut w) = self.worker.lock()
            && let Some(handle) = w.take()
        {
            handle.thread().unpark();
            let _ = handle.join();
        }
        self.flush();
    }
}

fn flush(dir: &Path, shared: &Mutex<Shared>, max: u64) {
    let (mut records, mut day) = {
        let Ok(mut s) = shared.lock() else { return };
        if s.pending.is_empty() {
            return;
        }
        let spare = std::mem::take(&mut s.spare);
        (std::mem::replace(&mut s.pending, spare), s.day)
    };
    let mut bytes = Vec::with_capacity(records.len() * 320);
    for record in records.drain(..) {
        let this_day = first_ten(&stamp(record.time));
        if this_day != day {
            if !bytes.is_empty() {
                append(dir, &day_name(&day), &std::mem::take(&mut bytes));
            }
            if day != [0; 10] {
                prune(dir, max, Some(&day_name(&this_day)));
            }
            day = this_day;
        }
        if serde_json::to_writer(&mut bytes, &record).is_ok() {
            bytes.push(b'\n');
        }
    }
    if !bytes.is_empty() {
        append(dir, &day_name(&day), &bytes);
    }
    if let Ok(mut s) = shared.lock() {
        s.day = day;
        // The emptied vector takes the next records, unless a bigger one grew meanwhile.
        if records.capacity() > s.spare.capacity() {
            s.spare = records;
        }
    }
}

fn first_ten(stamp: &[u8; 24]) -> [u8; 10] {
    let mut day = [0; 10];
    day.copy_from_slice(&stamp[..10]);
    day
}

fn day_name(day: &[u8; 10]) -> String {
    String::from_utf8_lossy(day).into_owned()
}

fn append(dir: &Path, day: &str, bytes: &[u8]) {
    if let Err(e) = crate::fsutil::create_private_dir(dir) {
        tracing::warn!("the audit log {}: {e}", dir.display());
        return;
    }
    let path = dir.join(format!("{day}.jsonl"));
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(&path);
    match file.and_then(|mut f| f.write_all(bytes)) {
        Ok(()) => {}
        Err(e) => tracing::warn!("the audit log {}: {e}", path.display()),
    }
}

/// Removes the oldest days while the log holds more than `max` bytes (never `keep`).
fn prune(dir: &Path, max: u64, keep: Option<&str>) {
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

fn ser_time<S: serde::Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    let buf = stamp(*t);
    s.serialize_str(std::str::from_utf8(&buf).unwrap_or("1970-01-01T00:00:00.000Z"))
}

/// `2026-12-01T21:24:26.123Z` for `t`.
pub fn rfc3339(t: SystemTime) -> String {
    String::from_utf8_lossy(&stamp(t)).into_owned()
}

/// The stamp's bytes, written digit by digit (a line per call: no formatting machinery).
fn stamp(t: SystemTime) -> [u8; 24] {
    let d = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (y, m, day) = civil(i64::try_from(secs / 86_400).unwrap_or(0));
    let rem = secs % 86_400;
    let mut out = *b"0000-00-00T00:00:00.000Z";
    let mut put = |at: usize, width: usize, mut v: u64| {
        for i in (at..at + width).rev() {
            out[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(0, 4, u64::try_from(y.clamp(0, 9999)).unwrap_or(0));
    put(5, 2, u64::from(m));
    put(8, 2, u64::from(day));
    put(11, 2, rem / 3600);
    put(14, 2, rem % 3600 / 60);
    put(17, 2, rem % 60);
    put(20, 3, u64::from(d.subsec_millis()));
    out
}

/// Days since 1970-01-01 → (year, month, day) (Howard Hinnant's `civil_from_days`).
fn civil(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// SHA-256 (hex) of the arguments as JSON (`{}` when absent).
pub fn arguments_digest(arguments: Option<&JsonObject>) -> String {
    let mut hasher = Sha256::new();
    match arguments {
        // Serialised straight into the hash: no string of the arguments is made.
        Some(a) => {
            let _ = serde_json::to_writer(HashWriter(&mut hasher), a);
        }
        None => hasher.update(b"{}"),
    }
    hex(&hasher.finalize())
}

struct HashWriter<'a>(&'a mut Sha256);

impl std::io::Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Lower-case hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    out
}

/// Whether a key names a secret (`password`, `api_key`, `token`, `Authorization`, ...).
pub fn looks_secret(key: &str) -> bool {
    let k = key.to_ascii_lowercase().replace(['-', '_'], "");
    [
        "password",
        "passwd",
        "secret",
        "token",
        "apikey",
        "authorization",
        "auth",
        "credential",
        "privatekey",
        "cookie",
        "session",
        "bearer",
    ]
    .iter()
    .any(|s| k.contains(s))
}

/// The arguments with the values of secret-looking keys replaced, at any depth.
pub fn redacted(arguments: &JsonObject) -> Value {
    fn walk(v: &Value) -> Value {
        match v {
            Value::Object(m) => Value::Object(
                m.iter()
                    .map(|(k, v)| {
                        (k.clone(), if looks_secret(k) { Value::String("<redacted>".into()) } else { walk(v) })
                    })
                    .collect(),
            ),
            Value::Array(a) => Value::Array(a.iter().map(walk).collect()),
            other => other.clone(),
        }
    }
    walk(&Value::Object(arguments.clone()))
}

/// Reads the log's lines from `since` on (oldest first), of `server` only if given.
pub fn read(data_dir: &Path, since: Option<SystemTime>, server: Option<&str>) -> std::io::Result<Vec<Value>> {
    let dir = audit_dir(data_dir);
    let since_text = since.map(rfc3339);
    let first_day = since_text.as_deref().and_then(|s| s.get(..10)).unwrap_or("");
    let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(r) => r
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .filter(|p| p.file_stem().and_then(|s| s.to_str()).is_some_and(|d| d >= first_day))
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let Some(bytes) = crate::fsutil::read_private(&file)? else { continue };
        for line in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let Ok(v) = serde_json::from_slice::<Value>(line) else { continue };
            let time = v.get("time").and_then(Value::as_str).unwrap_or("");
            if since_text.as_deref().is_some_and(|s| time < s) {
                continue;
            }
            if server.is_some_and(|s| v.get("server").and_then(Value::as_str) != Some(s)) {
                continue;
            }
            out.push(v);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc_days() {
        assert_eq!(rfc3339(SystemTime::UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1_796_160_266_123);
        assert_eq!(rfc3339(t), "2026-12-01T21:24:26.123Z");
        let leap = SystemTime::UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn secrets_are_redacted_at_any_depth() {
        let args = serde_json::json!({"query": "x", "apiKey": "k", "nested": {"Authorization": "Bearer t", "list": [{"password": "p"}]}});
        let Value::Object(args) = args else { return };
        let r = redacted(&args);
        assert_eq!(r["query"], "x");
        assert_eq!(r["apiKey"], "<redacted>");
        assert_eq!(r["nested"]["Authorization"], "<redacted>");
        assert_eq!(r["nested"]["list"][0]["password"], "<redacted>");
        assert_eq!(arguments_digest(Some(&args)).len(), 64);
        // The digest is of the arguments' JSON, as `sha256sum` would give it.
        let text = serde_json::to_string(&args).unwrap_or_default();
        assert_eq!(arguments_digest(Some(&args)), hex(&Sha256::digest(text.as_bytes())));
        assert_eq!(hex(&[0x00, 0xab, 0xff]), "00abff");
    }

    #[test]
    fn lines_land_in_a_private_file_per_day_and_old_days_go() {
        let dir = tempfile::tempdir().ok();
        let data = dir.as_ref().map(|d| d.path().to_path_buf()).unwrap_or_default();
        let audit = audit_dir(&data);
        std::fs::create_dir_all(&audit).ok();
        std::fs::write(audit.join("2020-01-01.jsonl"), vec![b'x'; 2048]).ok();
        let config = AuditConfig { enabled: true, arguments: false, max_bytes: 1024 };
        let log = AuditLog::open(&data, config);
        let record = AuditRecord {
            time: SystemTime::now(),
            caller: Caller::cli(),
            server: "s".into(),
            tool: "t".into(),
            name: "mcp__s__t".into(),
            decision: Verdict::Allow,
            rule: "no policy".into(),
            approval: None,
            duration_ms: 3,
            outcome: Outcome::Ok,
            error: None,
            result_bytes: Some(5),
            arguments_sha256: arguments_digest(None),
            arguments: None,
        };
        let today = rfc3339(record.time)[..10].to_string();
        if let Some(log) = &log {
            log.record(record.clone());
            log.record(record);
        }
        drop(log);
        let lines = read(&data, None, Some("s")).unwrap_or_default();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["outcome"], "ok");
        assert!(!audit.join("2020-01-01.jsonl").exists(), "the old day beyond the cap is removed");
        use std::os::unix::fs::PermissionsExt;
        let today = audit.join(format!("{today}.jsonl"));
        let mode = std::fs::metadata(&today).map(|m| m.permissions().mode() & 0o777).unwrap_or(0);
        assert_eq!(mode, 0o600);
        assert!(read(&data, Some(SystemTime::now() + Duration::from_secs(60)), None).unwrap_or_default().is_empty());
    }
}
