//! Reading the log back (`switchboard audit`, the API): the records, the lines that say
//! records were lost, and the lines that could not be read, each counted, none skipped in
//! silence.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Serialize;
use serde_json::Value;

use super::audit_dir;
use super::stamp::rfc3339;

/// What the log holds for a question.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct AuditRead {
    /// The records, oldest first.
    pub records: Vec<Value>,
    /// Records the log says it lost (the disk refused them), oldest first. They may be of
    /// any server and any caller: a filter does not leave them out.
    pub lost: Vec<Lost>,
    /// Lines that are not a record (a file damaged by something else), by file.
    pub unreadable: Vec<Unreadable>,
}

impl AuditRead {
    /// Records lost in all.
    pub fn lost_records(&self) -> u64 {
        self.lost.iter().map(|l| l.count).sum()
    }
}

/// A line of the log that says records were lost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Lost {
    /// How many.
    pub count: u64,
    /// The time of the first and the last of them (RFC 3339), when known.
    pub first: Option<String>,
    /// See `first`.
    pub last: Option<String>,
    /// Why they could not be written.
    pub error: String,
    /// When this was written in the log (`None`: not yet: the disk is still full, and
    /// `lost.json` holds the count).
    pub time: Option<String>,
}

/// Lines of one file that could not be read as records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Unreadable {
    /// The file.
    pub file: PathBuf,
    /// How many lines.
    pub lines: u64,
    /// The first such line's number (from 1).
    pub first_line: u64,
}

/// Which records to read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuditFilter {
    /// From this time on.
    pub since: Option<SystemTime>,
    /// One server's records.
    pub server: Option<String>,
    /// One person's records: those whose caller signed in with this subject (`key:<name>`
    /// for a service account).
    pub principal: Option<String>,
    /// Only the calls of callers who signed in with this issuer.
    pub issuer: Option<String>,
    /// At most this many records, the newest.
    pub limit: Option<usize>,
}

impl AuditFilter {
    /// Every record.
    pub fn new() -> AuditFilter {
        AuditFilter::default()
    }

    /// From `since` on.
    pub fn since(mut self, since: Option<SystemTime>) -> AuditFilter {
        self.since = since;
        self
    }

    /// `server`'s records only.
    pub fn server(mut self, server: Option<&str>) -> AuditFilter {
        self.server = server.map(str::to_string);
        self
    }

    /// The records of calls by the signed-in caller whose subject is `principal` only.
    pub fn principal(mut self, principal: Option<&str>) -> AuditFilter {
        self.principal = principal.map(str::to_string);
        self
    }

    /// The records of calls by callers of the issuer `issuer` only.
    pub fn issuer(mut self, issuer: Option<&str>) -> AuditFilter {
        self.issuer = issuer.map(str::to_string);
        self
    }

    /// At most `limit` records, the newest (losses are told all the same).
    pub fn limit(mut self, limit: Option<usize>) -> AuditFilter {
        self.limit = limit;
        self
    }

    fn holds(&self, record: &Value) -> bool {
        let text = |pointer: &str| record.pointer(pointer).and_then(Value::as_str);
        self.server.as_deref().is_none_or(|s| text("/server") == Some(s))
            && self.principal.as_deref().is_none_or(|p| text("/caller/principal/subject") == Some(p))
            && self.issuer.as_deref().is_none_or(|i| text("/caller/principal/issuer") == Some(i))
    }
}

/// Reads the log as `filter` asks (oldest first). Lost records are told whatever the filter:
/// they may be of anyone.
pub fn read(data_dir: &Path, filter: &AuditFilter) -> std::io::Result<AuditRead> {
    let dir = audit_dir(data_dir);
    let since_text = filter.since.map(rfc3339);
    let first_day = since_text.as_deref().and_then(|s| s.get(..10)).unwrap_or("");
    let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(r) => r
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .filter(|p| p.file_stem().and_then(|s| s.to_str()).is_some_and(|d| d >= first_day))
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(AuditRead::default()),
        Err(e) => return Err(e),
    };
    files.sort();
    let mut out = AuditRead::default();
    for file in files {
        let Some(bytes) = crate::fsutil::read_private(&file)? else { continue };
        let mut bad: Option<Unreadable> = None;
        for (n, line) in bytes.split(|b| *b == b'\n').enumerate() {
            if line.is_empty() {
                continue;
            }
            let parsed = serde_json::from_slice::<Value>(line).ok().filter(Value::is_object);
            let Some(v) = parsed else {
                let b = bad.get_or_insert(Unreadable { file: file.clone(), lines: 0, first_line: n as u64 + 1 });
                b.lines += 1;
                continue;
            };
            let time = v.get("time").and_then(Value::as_str).unwrap_or("");
            if since_text.as_deref().is_some_and(|s| time < s) {
                continue;
            }
            if let Some(count) = v.get("lost").and_then(Value::as_u64) {
                let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
                out.lost.push(Lost {
                    count,
                    first: text("first"),
                    last: text("last"),
                    error: text("error").unwrap_or_default(),
                    time: Some(time.to_string()),
                });
                continue;
            }
            if !filter.holds(&v) {
                continue;
            }
            out.records.push(v);
        }
        out.unreadable.extend(bad);
    }
    if let Some(limit) = filter.limit
        && out.records.len() > limit
    {
        out.records.drain(..out.records.len() - limit);
    }
    out.lost.extend(pending_lost(&dir));
    Ok(out)
}

/// The losses counted in `lost.json` and not yet said in the log, if any.
pub(super) fn pending_lost(dir: &Path) -> Option<Lost> {
    let pending = super::lost::peek(dir);
    (pending.lost > 0).then_some(Lost {
        count: pending.lost,
        first: pending.first,
        last: pending.last,
        error: pending.error,
        time: None,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_filter_picks_the_server_and_the_signed_in_person() {
        let dir = tempfile::tempdir().unwrap();
        let audit = audit_dir(dir.path());
        std::fs::create_dir_all(&audit).unwrap();
        let person = |subject: &str| json!({"kind": "gateway", "principal": {"subject": subject, "name": "Bob"}});
        let lines = [
            json!({"time": "2026-12-04T10:00:00Z", "server": "gh", "caller": person("alice")}),
            json!({"time": "2026-12-04T10:00:01Z", "server": "fs", "caller": person("alice")}),
            // Bob's display name is no subject: asking for "Bob" finds nothing.
            json!({"time": "2026-12-04T10:00:02Z", "server": "gh", "caller": person("bob")}),
            json!({"time": "2026-12-04T10:00:03Z", "server": "gh", "caller": {"kind": "cli"}}),
            json!({"time": "2026-12-04T10:00:04Z", "lost": 2, "error": "disk full"}),
        ];
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(audit.join("2026-12-04.jsonl"), text).unwrap();
        let servers = |f: AuditFilter| {
            let read = read(dir.path(), &f).unwrap();
            assert_eq!(read.lost_records(), 2, "losses are told whatever the filter");
            read.records.iter().map(|r| r["server"].as_str().unwrap_or("").to_string()).collect::<Vec<_>>()
        };
        assert_eq!(servers(AuditFilter::new()).len(), 4);
        assert_eq!(servers(AuditFilter::new().principal(Some("alice"))), ["gh", "fs"]);
        assert_eq!(servers(AuditFilter::new().principal(Some("alice")).server(Some("gh"))), ["gh"]);
        assert_eq!(servers(AuditFilter::new().principal(Some("bob"))), ["gh"]);
        assert!(servers(AuditFilter::new().principal(Some("Bob"))).is_empty());
        assert_eq!(servers(AuditFilter::new().server(Some("gh"))).len(), 3);
        // By issuer too: these people's tokens name none.
        assert!(servers(AuditFilter::new().principal(Some("alice")).issuer(Some("https://id.example"))).is_empty());
    }
}
