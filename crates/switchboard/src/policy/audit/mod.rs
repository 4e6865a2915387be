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
//!
//! It is a security record, so a record is whole in it or absent, and records that could not
//! be written are said, with how many ([`write`]); [`read`] gives the records back with those
//! counts. [`AuditLog::health`] says how the writing goes now (the dashboard shows it; with a
//! managed `audit.required: true` the hub refuses calls while the log cannot be written).

mod lost;
mod read;
mod stamp;
mod store;
mod write;

pub use read::{AuditFilter, AuditRead, Lost, Unreadable, read};
pub use stamp::rfc3339;
use store::StoreWriter;
pub use write::Health;
use write::Writer;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use rmcp::model::JsonObject;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{Approval, Caller, Verdict};
use crate::config::AuditConfig;
use crate::store::db::Database;

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
    /// Over a rate limit (`policy.rate_limits`); nothing was sent.
    RateLimited,
    /// Any other failure (the server went away, refused the request...).
    Failed,
}

impl Outcome {
    /// `ok`, `tool_error`, `timeout`, … (as in the record).
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::ToolError => "tool_error",
            Outcome::Timeout => "timeout",
            Outcome::Cancelled => "cancelled",
            Outcome::Denied => "denied",
            Outcome::InvalidArguments => "invalid_arguments",
            Outcome::RateLimited => "rate_limited",
            Outcome::Failed => "failed",
        }
    }
}

/// One line of the log.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct AuditRecord {
    /// When the call was made (RFC 3339, UTC, milliseconds).
    #[serde(serialize_with = "stamp::ser_time")]
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
    /// Hidden characters removed from the result ([`crate::screen`]), decoded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hidden: Option<crate::screen::Hidden>,
    /// Secrets taken out of the result (`policy.secrets`): their kinds and counts, never the
    /// values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<crate::screen::secrets::Redaction>,
    /// The trace the call was made in (32 hex digits), when it was traced
    /// ([`crate::telemetry`]): where to look for its spans.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

struct Shared {
    pending: Vec<AuditRecord>,
    /// The vector last written, emptied, to take the next records (its capacity kept: a busy
    /// host would otherwise grow a new one, copying it, after every write).
    spare: Vec<AuditRecord>,
    /// How the writing went, as of the last flush.
    health: Health,
    /// How many records were pushed (the number of the last one).
    pushed: u64,
}

/// The log of one hub.
pub struct AuditLog {
    config: AuditConfig,
    shared: Arc<Mutex<Shared>>,
    sink: Sink,
}

/// Where the records go, and what writes them there.
enum Sink {
    /// The day files: a thread of its own, which the log's drop joins.
    Files {
        writer: Arc<Mutex<Writer>>,
        stop: Arc<std::sync::atomic::AtomicBool>,
        worker: Mutex<Option<std::thread::JoinHandle<()>>>,
        /// Whether the thread was started (by the first record).
        started: std::sync::atomic::AtomicBool,
    },
    /// A team's store: a task on the hub's runtime, which ends with a last flush when the log
    /// is dropped.
    Store {
        writer: Arc<tokio::sync::Mutex<StoreWriter>>,
        stop: tokio_util::sync::CancellationToken,
        /// Whether [`AuditLog::ready`] asked the store (calls after it do not wait for the
        /// writer).
        probed: std::sync::atomic::AtomicBool,
        /// Wakes the writer: a record waits for it.
        wake: Arc<tokio::sync::Notify>,
        /// The number of the last record the writer has dealt with (inserted, or held when the
        /// store refused it).
        handled: tokio::sync::watch::Receiver<u64>,
    },
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog").field("config", &self.config).finish()
    }
}

/// The log folder in `data_dir`.
pub fn audit_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("audit")
}

impl AuditLog {
    /// Opens the log in `<data_dir>/audit`, or in `store` when a team's store is given and
    /// this runs on a tokio runtime (`None` when turned off).
    pub fn open(data_dir: &Path, config: AuditConfig, store: Option<&Database>) -> Option<AuditLog> {
        if !config.enabled {
            return None;
        }
        if let Some(db) = store {
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => return Some(AuditLog::in_store(&runtime, db, audit_dir(data_dir), config)),
                Err(_) => {
                    tracing::warn!("the audit log goes to {}: no runtime to write to the store on", data_dir.display())
                }
            }
        }
        let mut first = Writer::new(audit_dir(data_dir), config.max_bytes);
        let mut health = Health::default();
        if config.required {
            // Known before the first call, not learnt from its record.
            first.open();
            first.probe();
            health = first.health();
        }
        let shared = Arc::new(Mutex::new(Shared { pending: Vec::new(), spare: Vec::new(), health, pushed: 0 }));
        let writer = Arc::new(Mutex::new(first));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        // The thread starts with the first record (a hub that makes no call, or not yet,
        // does not pay for it at its start).
        let sink =
            Sink::Files { writer, stop, worker: Mutex::new(None), started: std::sync::atomic::AtomicBool::new(false) };
        Some(AuditLog { config, shared, sink })
    }

    /// The day files' thread: opens the day's file, then writes what is pending every 100 ms
    /// until told to stop.
    fn start_worker(&self) {
        let Sink::Files { writer, stop, worker, started } = &self.sink else { return };
        if started.swap(true, std::sync::atomic::Ordering::AcqRel) {
            return;
        }
        let (shared2, writer2, stop2) = (self.shared.clone(), writer.clone(), stop.clone());
        let handle = std::thread::Builder::new()
            .name("switchboard-audit".into())
            .spawn(move || {
                if let Ok(mut w) = writer2.lock() {
                    w.open();
                }
                loop {
                    std::thread::park_timeout(Duration::from_millis(100));
                    let done = stop2.load(std::sync::atomic::Ordering::Acquire);
                    flush(&shared2, &writer2);
                    if done {
                        return;
                    }
                }
            })
            .map_err(|e| tracing::warn!("the audit log's thread: {e}; records are written at the end"))
            .ok();
        if let Ok(mut w) = worker.lock() {
            *w = handle;
        }
    }

    fn in_store(runtime: &tokio::runtime::Handle, db: &Database, dir: PathBuf, config: AuditConfig) -> AuditLog {
        let shared = Arc::new(Mutex::new(Shared {
            pending: Vec::new(),
            spare: Vec::new(),
            health: Health::default(),
            pushed: 0,
        }));
        let writer = Arc::new(tokio::sync::Mutex::new(StoreWriter::new(db.clone(), dir, config.max_bytes)));
        let stop = tokio_util::sync::CancellationToken::new();
        let wake = Arc::new(tokio::sync::Notify::new());
        let (told, handled) = tokio::sync::watch::channel(0u64);
        let (shared2, writer2, stop2, wake2) = (shared.clone(), writer.clone(), stop.clone(), wake.clone());
        // Written as soon as a record comes (records that come meanwhile go in the next
        // insert, so a busy gateway makes one insert per round trip, not per record), and
        // every 100 ms while the store refuses what is held.
        runtime.spawn(async move {
            loop {
                tokio::select! {
                    () = stop2.cancelled() => break,
                    () = wake2.notified() => {}
                    () = tokio::time::sleep(Duration::from_millis(100)) => {}
                }
                let _ = told.send(flush_store(&shared2, &writer2).await);
            }
            let _ = told.send(flush_store(&shared2, &writer2).await);
            writer2.lock().await.close();
        });
        let probed = std::sync::atomic::AtomicBool::new(false);
        AuditLog { config, shared, sink: Sink::Store { writer, stop, probed, wake, handled } }
    }

    /// Whether arguments are kept.
    pub fn keeps_arguments(&self) -> bool {
        self.config.arguments
    }

    /// Whether calls must be refused while the log cannot be written (`audit.required`).
    pub fn required(&self) -> bool {
        self.config.required
    }

    /// Adds a line (written within 100 ms, by the log's thread: the call pays for a push).
    pub fn record(&self, record: AuditRecord) {
        self.push(record);
    }

    fn push(&self, record: AuditRecord) -> u64 {
        let pushed = {
            let Ok(mut shared) = self.shared.lock() else { return 0 };
            shared.pending.push(record);
            shared.pushed += 1;
            shared.pushed
        };
        if pushed == 1 {
            self.start_worker();
        }
        pushed
    }

    /// Adds a line and, in a team's store, waits until it is written there (or held, when
    /// the store refuses it: then it is counted as [`AuditLog::record`]'s would be), at most
    /// [`COMMIT_WAIT`], and not at all while the store refuses records: a call's record
    /// outlives a crash of the process that made it, which several replicas behind one
    /// balancer need. The day files are written within 100 ms.
    pub async fn record_written(&self, record: AuditRecord) {
        let number = self.push(record);
        if let Sink::Store { wake, handled, .. } = &self.sink {
            wake.notify_one();
            // While the store refuses records, calls do not wait for it (theirs are held).
            if self.health().failing.is_some() {
                return;
            }
            let mut handled = handled.clone();
            let _ = tokio::time::timeout(COMMIT_WAIT, handled.wait_for(|h| *h >= number)).await;
        }
    }

    /// Before a call of a log that must be written: a team's store is asked once whether it
    /// takes records (the day files were asked when the log opened).
    pub async fn ready(&self) {
        if let Sink::Store { writer, probed, .. } = &self.sink
            && !probed.load(std::sync::atomic::Ordering::Acquire)
        {
            let mut w = writer.lock().await;
            w.probe().await;
            probed.store(true, std::sync::atomic::Ordering::Release);
            let health = w.health();
            if let Ok(mut s) = self.shared.lock() {
                s.health = health;
            }
        }
    }

    /// How the writing goes, as of the last flush (at most 100 ms old).
    pub fn health(&self) -> Health {
        self.shared.lock().map(|s| s.health.clone()).unwrap_or_default()
    }

    /// At the host's end: writes what is pending and, with a team's store, counts what it
    /// still refuses as lost (in `<data>/audit/lost.json`, said in the store by the next
    /// writer on this machine) without waiting for the runtime to run the writer's task
    /// again (a command's runtime ends right after). Records made later are still written by
    /// that task while the runtime runs.
    pub async fn close(&self) {
        match &self.sink {
            Sink::Files { writer, .. } => flush(&self.shared, writer),
            Sink::Store { writer, .. } => {
                flush_store(&self.shared, writer).await;
                writer.lock().await.close();
            }
        }
    }

    /// Writes what is pending now.
    pub async fn flush(&self) {
        match &self.sink {
            Sink::Files { writer, .. } => flush(&self.shared, writer),
            Sink::Store { writer, .. } => {
                flush_store(&self.shared, writer).await;
            }
        }
    }
}

impl Drop for AuditLog {
    fn drop(&mut self) {
        match &self.sink {
            Sink::Files { writer, stop, worker, .. } => {
                stop.store(true, std::sync::atomic::Ordering::Release);
                if let Ok(mut w) = worker.lock()
                    && let Some(handle) = w.take()
                {
                    handle.thread().unpark();
                    let _ = handle.join();
                }
                flush(&self.shared, writer);
                // What the disk still refuses now is lost: said in the log if the reserve lets
                // it be, and on stderr.
                if let Ok(mut w) = writer.lock() {
                    w.close();
                }
            }
            // The task flushes what is pending and ends (the hub's shutdown flushed already).
            Sink::Store { stop, .. } => stop.cancel(),
        }
    }
}

fn flush(shared: &Mutex<Shared>, writer: &Mutex<Writer>) {
    // One flush at a time (the thread's, or one at shutdown), in the order records came.
    let Ok(mut w) = writer.lock() else { return };
    let mut records = {
        let Ok(mut s) = shared.lock() else { return };
        if s.pending.is_empty() && !w.has_held() {
            return;
        }
        let spare = std::mem::take(&mut s.spare);
        std::mem::replace(&mut s.pending, spare)
    };
    w.write(&mut records);
    if let Ok(mut s) = shared.lock() {
        s.health = w.health();
        // The emptied vector takes the next records, unless a bigger one grew meanwhile.
        if records.capacity() > s.spare.capacity() {
            s.spare = records;
        }
    }
}

/// Writes what is pending in the store; the number of the last record it dealt with.
async fn flush_store(shared: &Mutex<Shared>, writer: &tokio::sync::Mutex<StoreWriter>) -> u64 {
    let mut w = writer.lock().await;
    let (mut records, upto) = {
        let Ok(mut s) = shared.lock() else { return 0 };
        if s.pending.is_empty() && !w.has_held() {
            return s.pushed;
        }
        let spare = std::mem::take(&mut s.spare);
        (std::mem::replace(&mut s.pending, spare), s.pushed)
    };
    w.write(&mut records).await;
    if let Ok(mut s) = shared.lock() {
        s.health = w.health();
        if records.capacity() > s.spare.capacity() {
            s.spare = records;
        }
    }
    upto
}

/// How long a call waits for its record to be written in a team's store.
pub const COMMIT_WAIT: Duration = Duration::from_secs(2);

/// Why the log could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The day files.
    #[error("the audit log {dir}: {source}")]
    Files {
        /// Their folder.
        dir: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The team's store.
    #[error("the audit log: {0}")]
    Store(#[from] crate::store::StoreError),
}

/// Reads the log as `filter` asks (oldest first): the team's store's when `store` is given,
/// else the day files of `data_dir` (on a blocking thread: a day's log can be large).
pub async fn read_from(
    data_dir: &Path,
    store: Option<&Database>,
    filter: &AuditFilter,
) -> Result<AuditRead, ReadError> {
    let dir = audit_dir(data_dir);
    if let Some(db) = store {
        return Ok(store::read_store(db, &dir, filter).await?);
    }
    let (data, filter) = (data_dir.to_path_buf(), filter.clone());
    match tokio::task::spawn_blocking(move || read(&data, &filter)).await {
        Ok(result) => result.map_err(|source| ReadError::Files { dir, source }),
        Err(e) => Err(ReadError::Files { dir, source: std::io::Error::other(e.to_string()) }),
    }
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

/// A record of a call of `s`'s `t` at `time`, for tests.
#[cfg(test)]
pub(crate) fn sample(time: SystemTime) -> AuditRecord {
    AuditRecord {
        time,
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
        hidden: None,
        secrets: Vec::new(),
        trace_id: None,
    }
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
        let config = AuditConfig { enabled: true, arguments: false, max_bytes: 1024, required: false };
        let log = AuditLog::open(&data, config, None);
        let record = sample(SystemTime::now());
        let today = rfc3339(record.time)[..10].to_string();
        if let Some(log) = &log {
            log.record(record.clone());
            log.record(record);
        }
        drop(log);
        let lines = read(&data, &AuditFilter::new().server(Some("s"))).unwrap_or_default().records;
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["outcome"], "ok");
        assert!(!audit.join("2020-01-01.jsonl").exists(), "the old day beyond the cap is removed");
        use std::os::unix::fs::PermissionsExt;
        let today = audit.join(format!("{today}.jsonl"));
        let mode = std::fs::metadata(&today).map(|m| m.permissions().mode() & 0o777).unwrap_or(0);
        assert_eq!(mode, 0o600);
        assert!(
            read(&data, &AuditFilter::new().since(Some(SystemTime::now() + Duration::from_secs(60))))
                .unwrap_or_default()
                .records
                .is_empty()
        );
    }
}
