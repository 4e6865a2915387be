//! The audit log in a team's store: the same guarantees as the day files ([`super::write`])
//! with a database in place of the disk.
//!
//! - Each flush (every 100 ms) inserts what is pending in one statement: every record of it
//!   is in the table, or none is.
//! - When the database refuses (or does not answer within [`INSERT_WAIT`]) the records are held
//!   in memory, up to [`HELD_MAX`] bytes of them, and inserted first at the next flush; past
//!   that bound the oldest are dropped and counted as lost. The count is said by a row of
//!   kind `lost` (how many, the first and last time, why) inserted before the next records;
//!   a host that ends before the database comes back keeps it in `<data>/audit/lost.json`,
//!   which the next writer on that machine says in the store.
//! - [`Health`] says whether the store takes records now (the gate refuses calls while it does
//!   not, with `audit.required`), how many are held and lost.
//! - The table is kept under `max_mb` by whoever holds its prune lock, at the first flush and
//!   every [`PRUNE_EVERY`].

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use super::AuditRecord;
use super::lost::{self, Summary};
use super::read::{AuditFilter, AuditRead, Lost, pending_lost};
use super::write::{HELD_MAX, Health};
use crate::store::StoreError;
use crate::store::audit::{AuditQuery, AuditRow, AuditRowKind};
use crate::store::db::Database;

/// How long one insert may take before its records are held as refused.
pub(crate) const INSERT_WAIT: Duration = Duration::from_secs(5);

/// How often the table is pruned to its cap.
const PRUNE_EVERY: Duration = Duration::from_secs(600);

/// A row waiting for the database, with its record's time (to say when lost ones were made).
struct Held {
    row: AuditRow,
    time: SystemTime,
}

/// What the store's writing task keeps between flushes.
pub(crate) struct StoreWriter {
    db: Database,
    /// `<data>/audit`: where losses the store never took are counted.
    dir: PathBuf,
    max: u64,
    held: Vec<Held>,
    held_bytes: usize,
    /// Losses not yet said in the store.
    unsaid: Summary,
    /// Whether `lost.json` of this machine was looked at.
    settled: bool,
    pruned: Option<Instant>,
    /// Whether the store was asked if it takes records (for `audit.required`, before a call).
    probed: bool,
    error: String,
    health: Health,
}

impl StoreWriter {
    pub(crate) fn new(db: Database, dir: PathBuf, max: u64) -> StoreWriter {
        StoreWriter {
            db,
            dir,
            max,
            held: Vec::new(),
            held_bytes: 0,
            unsaid: Summary::default(),
            settled: false,
            pruned: None,
            probed: false,
            error: String::new(),
            health: Health::default(),
        }
    }

    pub(crate) fn health(&self) -> Health {
        self.health.clone()
    }

    pub(crate) fn has_held(&self) -> bool {
        !self.held.is_empty() || self.unsaid.lost > 0
    }

    /// For a log that must be written (`audit.required`), before the first call: whether the
    /// store takes records (its table is there and this role may insert into it). Once; the
    /// flushes tell from then on.
    pub(crate) async fn probe(&mut self) {
        if std::mem::replace(&mut self.probed, true) {
            return;
        }
        let asked = tokio::time::timeout(INSERT_WAIT, self.db.audit_writable()).await;
        let failing = match asked {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(e.to_string()),
            Err(_) => Some(format!("{}: no answer in {} s", self.db.shown(), INSERT_WAIT.as_secs())),
        };
        if let Some(why) = &failing {
            self.error.clone_from(why);
        }
        self.health.failing = failing;
    }

    /// Inserts what is held and `records`, in one statement.
    pub(crate) async fn write(&mut self, records: &mut Vec<AuditRecord>) {
        if !self.settled {
            self.settled = true;
            self.take_local_losses();
        }
        for record in records.drain(..) {
            if let Some(row) = row_of(&record) {
                self.hold(Held { row, time: record.time });
            }
        }
        if self.held.is_empty() && self.unsaid.lost == 0 {
            return;
        }
        let mut rows: Vec<AuditRow> = Vec::with_capacity(self.held.len() + 1);
        if self.unsaid.lost > 0 {
            let line = self.unsaid.line();
            let text = String::from_utf8_lossy(line.trim_ascii_end()).into_owned();
            rows.push(AuditRow::new(now_ms(), AuditRowKind::Lost, None, String::new(), text));
        }
        rows.extend(self.held.iter().map(|h| h.row.clone()));
        let inserted = match tokio::time::timeout(INSERT_WAIT, self.db.insert_audit(&rows)).await {
            Ok(result) => result.map_err(|e| e.to_string()),
            Err(_) => Err(format!("{}: no answer in {} s", self.db.shown(), INSERT_WAIT.as_secs())),
        };
        match inserted {
            Ok(()) => {
                self.held.clear();
                self.held_bytes = 0;
                self.unsaid = Summary::default();
                if self.health.failing.take().is_some() {
                    tracing::info!("the audit log in {} is written again", self.db.shown());
                }
            }
            Err(why) => {
                if self.health.failing.as_deref() != Some(why.as_str()) {
                    tracing::warn!(
                        "the audit log cannot be written: {why} (records are held and written when it can be)"
                    );
                }
                self.error.clone_from(&why);
                self.health.failing = Some(why);
            }
        }
        self.health.held = self.held.len() as u64;
        if self.health.failing.is_none() && self.pruned.is_none_or(|t| t.elapsed() >= PRUNE_EVERY) {
            self.pruned = Some(Instant::now());
            match self.db.prune_audit(self.max).await {
                Ok(0) => {}
                Ok(n) => tracing::info!("removed the {n} oldest audit record(s) beyond the log's cap"),
                Err(e) => tracing::warn!("the audit log's cap: {e}"),
            }
        }
    }

    /// Keeps `held` for the next insert, dropping the oldest past [`HELD_MAX`].
    fn hold(&mut self, held: Held) {
        self.held_bytes += held.row.record.len();
        self.held.push(held);
        if self.held_bytes <= HELD_MAX {
            return;
        }
        let mut cut = 0;
        while self.held_bytes > HELD_MAX && cut < self.held.len() {
            self.held_bytes -= self.held[cut].row.record.len();
            cut += 1;
        }
        let dropped: Vec<Held> = self.held.drain(..cut).collect();
        if let (Some(first), Some(last)) = (dropped.first(), dropped.last()) {
            self.unsaid.add(dropped.len() as u64, first.time, last.time, &self.error);
            self.health.lost += dropped.len() as u64;
        }
    }

    /// Losses an earlier host on this machine counted in `lost.json` are said in the store.
    fn take_local_losses(&mut self) {
        let mut taken: Option<Summary> = None;
        let settled = lost::settle(&self.dir, |line| {
            taken = serde_json::from_slice(line).ok();
            Ok(())
        });
        if let (Ok(()), Some(summary)) = (settled, taken) {
            self.merge(summary);
        }
    }

    fn merge(&mut self, more: Summary) {
        self.unsaid.lost += more.lost;
        if more.first.is_some() && (self.unsaid.first.is_none() || more.first < self.unsaid.first) {
            self.unsaid.first = more.first;
        }
        if more.last > self.unsaid.last {
            self.unsaid.last = more.last;
        }
        if !more.error.is_empty() {
            self.unsaid.error = more.error;
        }
    }

    /// At shutdown, after the last insert: what is still held is lost; counted in this
    /// machine's `lost.json` (said in the store by the next writer here) and on stderr.
    pub(crate) fn close(&mut self) {
        let held = std::mem::take(&mut self.held);
        self.held_bytes = 0;
        if let (Some(first), Some(last)) = (held.first(), held.last()) {
            self.unsaid.add(held.len() as u64, first.time, last.time, &self.error);
            self.health.lost += held.len() as u64;
        }
        self.health.held = 0;
        if self.unsaid.lost == 0 {
            return;
        }
        let kept = crate::fsutil::create_private_dir(&self.dir)
            .and_then(|()| lost::make(&self.dir))
            .and_then(|()| lost::add(&self.dir, &self.unsaid));
        tracing::error!(
            "the audit log in {}: {} record(s) could not be written ({}){}",
            self.db.shown(),
            self.unsaid.lost,
            self.error,
            match kept {
                Ok(()) => format!(
                    "; counted in {} and said in the store when it takes records again",
                    self.dir.join("lost.json").display()
                ),
                Err(e) => format!("; and this could not be recorded: {e}"),
            }
        );
        self.unsaid = Summary::default();
    }
}

fn now_ms() -> i64 {
    i64::try_from(crate::status::now_ms()).unwrap_or(i64::MAX)
}

/// The row of `record` (`None`: it does not serialise, which a record of ours always does).
fn row_of(record: &AuditRecord) -> Option<AuditRow> {
    let value = serde_json::to_value(record).ok()?;
    let subject = value.pointer("/caller/principal/subject").and_then(Value::as_str).map(str::to_string);
    let time = record.time.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
    Some(AuditRow::new(
        i64::try_from(time).unwrap_or(i64::MAX),
        AuditRowKind::Call,
        subject,
        record.server.clone(),
        value.to_string(),
    ))
}

/// Reads the store's log as `filter` asks (oldest first), with the losses it says and those
/// this machine still counts in `<data>/audit/lost.json`.
pub(crate) async fn read_store(db: &Database, dir: &Path, filter: &AuditFilter) -> Result<AuditRead, StoreError> {
    let since_ms = filter.since.map(|t| {
        let ms = t.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
        i64::try_from(ms).unwrap_or(i64::MAX)
    });
    let query = AuditQuery {
        since_ms,
        server: filter.server.clone(),
        subject: filter.principal.clone(),
        issuer: filter.issuer.clone(),
        limit: filter.limit.map(|n| i64::try_from(n).unwrap_or(i64::MAX)),
    };
    let (calls, lost_rows) = db.audit_rows(&query).await?;
    let mut out = AuditRead {
        records: calls.iter().filter_map(|c| serde_json::from_str::<Value>(c).ok()).collect(),
        ..AuditRead::default()
    };
    for row in &lost_rows {
        let Ok(v) = serde_json::from_str::<Value>(row) else { continue };
        let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        out.lost.push(Lost {
            count: v.get("lost").and_then(Value::as_u64).unwrap_or(0),
            first: text("first"),
            last: text("last"),
            error: text("error").unwrap_or_default(),
            time: text("time"),
        });
    }
    out.lost.extend(pending_lost(dir));
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::time::{Duration, SystemTime};

    use switchboard_testkit::postgres::Postgres;

    use super::super::{AuditFilter, AuditLog, read_from, sample};
    use crate::config::AuditConfig;
    use crate::identity::Principal;
    use crate::policy::Caller;
    use crate::store::db::Database;
    use crate::store::seal::KeyRing;

    fn record(n: u64, subject: &str, server: &str, pad: usize) -> super::AuditRecord {
        let mut r = sample(SystemTime::UNIX_EPOCH + Duration::from_millis(1_800_000_000_000 + n));
        let principal = Principal {
            subject: subject.into(),
            issuer: "https://id.example".into(),
            name: None,
            groups: Vec::new(),
            scopes: Vec::new(),
        };
        r.caller = Caller::Gateway {
            client: "test".into(),
            profile: None,
            session: None,
            principal: Some(Box::new(principal)),
        };
        r.server = server.into();
        r.arguments = Some(serde_json::json!({"pad": "x".repeat(pad), "n": n}));
        r
    }

    async fn read(dir: &std::path::Path, db: &Database, filter: AuditFilter) -> super::AuditRead {
        read_from(dir, Some(db), &filter).await.unwrap()
    }

    /// The log in a team's store: each flush's records are in the table whole, read back by
    /// caller, server and newest N; while the database refuses, records are held and the
    /// health says why (what `audit.required` refuses calls on), and written when it takes
    /// them again; past the bound in memory the oldest are counted as lost and said by a row;
    /// what a host ending meanwhile still held is counted in its `lost.json` and said in the
    /// store by the next writer there; the table is kept under its cap. Every record made is
    /// either in the table or counted as lost, none in silence.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn records_land_in_the_store_whole_or_counted_as_lost() {
        let pg = tokio::task::spawn_blocking(Postgres::start).await.unwrap();
        let keys = KeyRing::parse(&KeyRing::new_key_line("k1").unwrap()).unwrap();
        let db = Database::open(&pg.database("sb"), keys).await.unwrap();
        let data = tempfile::tempdir().unwrap();
        let config = AuditConfig { enabled: true, arguments: true, max_bytes: 100 * 1024 * 1024, required: true };
        let log = AuditLog::open(data.path(), config, Some(&db)).unwrap();
        for n in 0..300 {
            log.record(record(n, if n % 3 == 0 { "bob" } else { "alice" }, if n % 2 == 0 { "gh" } else { "fs" }, 0));
        }
        log.flush().await;
        let all = read(data.path(), &db, AuditFilter::new()).await;
        assert_eq!(all.records.len(), 300);
        assert_eq!(all.records[0]["arguments"]["n"], 0, "oldest first");
        assert_eq!(read(data.path(), &db, AuditFilter::new().principal(Some("bob"))).await.records.len(), 100);
        let gh = read(data.path(), &db, AuditFilter::new().principal(Some("alice")).server(Some("gh"))).await;
        assert_eq!(gh.records.len(), 100);
        assert!(gh.records.iter().all(|r| r["caller"]["principal"]["subject"] == "alice" && r["server"] == "gh"));
        let issued = |i: &str| AuditFilter::new().principal(Some("bob")).issuer(Some(i));
        assert_eq!(read(data.path(), &db, issued("https://id.example")).await.records.len(), 100);
        assert!(
            read(data.path(), &db, issued("https://other.example")).await.records.is_empty(),
            "another issuer's bob"
        );
        let newest = read(data.path(), &db, AuditFilter::new().limit(Some(10))).await;
        assert_eq!(newest.records.first().map(|r| r["arguments"]["n"].clone()), Some(serde_json::json!(290)));
        assert_eq!(newest.records.len(), 10);
        assert!(std::fs::read_dir(data.path().join("audit")).map(|d| d.count()).unwrap_or(0) == 0, "no day files");

        // The database refuses (its table is gone): held, and the health says so.
        pg.sql("sb", "ALTER TABLE switchboard_audit RENAME TO switchboard_audit_away");
        for n in 300..350 {
            log.record(record(n, "alice", "gh", 0));
        }
        log.flush().await;
        let health = log.health();
        assert!(health.failing.as_deref().unwrap_or("").contains("switchboard_audit"), "{health:?}");
        assert_eq!((health.held, health.lost), (50, 0));
        pg.sql("sb", "ALTER TABLE switchboard_audit_away RENAME TO switchboard_audit");
        log.flush().await;
        assert_eq!(log.health(), super::Health::default(), "written again, nothing lost");
        assert_eq!(read(data.path(), &db, AuditFilter::new()).await.records.len(), 350);

        // Refused for longer than memory holds (8 MiB): the oldest are counted as lost.
        pg.sql("sb", "ALTER TABLE switchboard_audit RENAME TO switchboard_audit_away");
        let made = 3_000u64;
        for n in 0..made {
            log.record(record(1_000 + n, "bob", "fs", 4_000));
            if n % 500 == 499 {
                log.flush().await;
            }
        }
        log.flush().await;
        let health = log.health();
        assert!(health.lost > 0 && health.held > 0, "{health:?}");
        assert_eq!(health.lost + health.held, made, "{health:?}");
        pg.sql("sb", "ALTER TABLE switchboard_audit_away RENAME TO switchboard_audit");
        log.flush().await;
        let after = read(data.path(), &db, AuditFilter::new()).await;
        assert_eq!(after.lost_records(), health.lost, "the loss is said: {:?}", after.lost);
        assert!(after.lost[0].error.contains("switchboard_audit"), "{:?}", after.lost);
        assert_eq!(after.records.len() as u64, 350 + made - health.lost);
        // Told whatever the filter: the lost records may be anyone's.
        assert_eq!(
            read(data.path(), &db, AuditFilter::new().principal(Some("carol"))).await.lost_records(),
            health.lost
        );

        // The host ends while the database refuses: what it held is counted on this machine
        // and said in the store by the next writer here.
        pg.sql("sb", "ALTER TABLE switchboard_audit RENAME TO switchboard_audit_away");
        for n in 0..10 {
            log.record(record(10_000 + n, "alice", "gh", 0));
        }
        drop(log);
        let dir = data.path().join("audit");
        let started = std::time::Instant::now();
        while super::lost::peek(&dir).lost != 10 {
            assert!(started.elapsed() < Duration::from_secs(10), "{:?}", super::lost::peek(&dir));
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        pg.sql("sb", "ALTER TABLE switchboard_audit_away RENAME TO switchboard_audit");
        let pending = read(data.path(), &db, AuditFilter::new()).await;
        assert_eq!(pending.lost.last().map(|l| (l.count, l.time.is_none())), Some((10, true)), "{:?}", pending.lost);
        // The next log here, with a small cap: it says the loss, and the oldest rows go.
        let small = AuditConfig { max_bytes: 200_000, ..config };
        let log = AuditLog::open(data.path(), small, Some(&db)).unwrap();
        log.record(record(20_000, "alice", "gh", 0));
        log.flush().await;
        let last = read(data.path(), &db, AuditFilter::new()).await;
        // The loss of 10 is said; the older one went with the oldest rows, beyond the cap.
        assert_eq!(last.lost.iter().map(|l| (l.count, l.time.is_some())).collect::<Vec<_>>(), [(10, true)]);
        assert_eq!(super::lost::peek(&dir).lost, 0, "said in the store, no longer pending here");
        let bytes: i64 = pg.sql("sb", "SELECT SUM(bytes) FROM switchboard_audit").trim().parse().unwrap();
        assert!(bytes <= 200_000, "{bytes}");
        assert_eq!(last.records.last().map(|r| r["arguments"]["n"].clone()), Some(serde_json::json!(20_000)));
        drop(log);

        // A log that must be written asks the store before the first call.
        pg.sql("sb", "ALTER TABLE switchboard_audit RENAME TO switchboard_audit_away");
        let log = AuditLog::open(data.path(), config, Some(&db)).unwrap();
        log.ready().await;
        let why = log.health().failing.unwrap_or_default();
        assert!(why.contains("switchboard_audit") && why.contains("does not exist"), "{why}");
        drop(log);
        pg.sql("sb", "ALTER TABLE switchboard_audit_away RENAME TO switchboard_audit");
        let log = AuditLog::open(data.path(), config, Some(&db)).unwrap();
        log.ready().await;
        assert_eq!(log.health().failing, None);
        drop(log);
        db.close().await;
    }
}
