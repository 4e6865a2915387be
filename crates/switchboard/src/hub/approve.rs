//! The gate every tool call passes before anything is sent (`Hub::gated`): the policy's
//! decision, the approver when it asks (answers kept for the session or, "always", in the data
//! folder), the arguments against the input schema; and the audit line after. What the gate
//! keeps (the policy, its decisions and schema checkers per catalog snapshot, the session's
//! answers, the audit log) is `policy::Gate`.

use std::sync::{Arc, PoisonError};
use std::time::{Instant, SystemTime};

use rmcp::model::JsonObject;

use super::{CallOptions, Hub, Slot, ToolOutput};
use crate::catalog::ToolEntry;
use crate::config::Scope;
use crate::error::Error;
use crate::policy::approvals::{ApprovalStore, Lookup, definition_digest};
use crate::policy::audit::{AuditLog, AuditRecord, Outcome, arguments_digest, redacted};
use crate::policy::gate::Decided;
use crate::policy::validate::Checked;
use crate::policy::{Approval, ApprovalRequest, Caller, Decision, ToolRef, Verdict};

/// What the gate let through, for the audit line.
struct Passed {
    decision: Verdict,
    rule: String,
    approval: Option<Approval>,
}

impl Hub {
    /// The decision for a catalog tool, as [`Hub::call_tool`] would make it (before asking)
    /// for a caller who did not sign in.
    pub fn decide(&self, entry: &ToolEntry) -> Decision {
        self.decide_for(entry, None)
    }

    /// The decision for a catalog tool called by `caller` (who signed in, if anyone): rules
    /// for some callers hold or not by it.
    pub fn decide_for(&self, entry: &ToolEntry, caller: Option<&crate::identity::Principal>) -> Decision {
        let trusted = self.inner.slot(&entry.server).is_ok_and(|s| is_trusted(self, &s));
        let tool = ToolRef::new(&entry.name, &entry.server, &entry.tool.name)
            .annotated(entry.tool.annotations.as_ref(), trusted)
            .by(caller);
        let policy = self.inner.gate.policy();
        let decision = policy.decide(tool);
        // `findings`: a tool whose definition (or its server's instructions) raised one is
        // asked about or denied, unless a rule already says more.
        match self.worst_finding(entry).and_then(|(worst, found)| policy.findings(worst, &found)) {
            Some(by_findings) if by_findings.verdict > decision.verdict => by_findings,
            _ => decision,
        }
    }

    /// The worst finding about a tool (its definition, or its server's instructions), with
    /// its rules as the person reads them (`high: instructions_to_model, secret_access`).
    fn worst_finding(&self, entry: &ToolEntry) -> Option<(crate::screen::Severity, String)> {
        use crate::screen::Target;
        let slot = self.inner.slot(&entry.server).ok()?;
        let st = slot.state();
        let about: Vec<&crate::screen::Finding> = st
            .findings
            .iter()
            .filter(|f| {
                matches!(&f.target, Target::Instructions) || f.target == Target::Tool(entry.tool.name.to_string())
            })
            .collect();
        let worst = about.iter().map(|f| f.severity).max()?;
        let mut rules: Vec<String> = about
            .iter()
            .filter(|f| f.severity == worst)
            .filter_map(|f| serde_json::to_value(f.rule).ok()?.as_str().map(String::from))
            .collect();
        rules.sort();
        rules.dedup();
        let word = serde_json::to_value(worst).ok()?.as_str().map(String::from).unwrap_or_default();
        Some((worst, format!("a {word} finding: {}", rules.join(", "))))
    }

    /// The decision for a tool of the catalog and its rule as text, made once per tool per
    /// catalog snapshot and policy (the gate keeps them), unless it depends on who calls.
    fn decided(&self, entry: &ToolEntry, caller: Option<&crate::identity::Principal>) -> Decided {
        if caller.is_some() && self.inner.gate.policy().depends_on_caller() {
            let d = self.decide_for(entry, caller);
            let text = d.rule.to_string();
            return Arc::new((d, text));
        }
        self.inner.gate.decided(&self.catalog(), entry, || self.decide(entry))
    }

    /// Whether the policy has rules for some callers only, so that decisions (and what a
    /// caller is shown) depend on who signed in.
    pub fn rules_depend_on_caller(&self) -> bool {
        self.inner.gate.policy().depends_on_caller()
    }

    /// The rule that denies a tool of the catalog, as text, if one does: such a tool is left
    /// out of what models are given (the gateway's lists, provider exports), and a call to it
    /// is refused naming this rule.
    pub fn denied_by(&self, entry: &ToolEntry) -> Option<String> {
        self.denied_by_for(entry, None)
    }

    /// [`Hub::denied_by`] for `caller` (who signed in, if anyone).
    pub fn denied_by_for(&self, entry: &ToolEntry, caller: Option<&crate::identity::Principal>) -> Option<String> {
        if !self.inner.gate.policy().is_active() {
            return None;
        }
        let decided = self.decided(entry, caller);
        let (decision, rule) = &*decided;
        (decision.verdict == Verdict::Deny).then(|| rule.clone())
    }

    /// How the audit log's writing goes (`None`: the log is off): records held for a disk
    /// that refuses them, records lost, and why, while it fails.
    pub fn audit_health(&self) -> Option<crate::policy::audit::Health> {
        self.inner.gate.audit.as_ref().map(AuditLog::health)
    }

    /// Every remembered "always" approval (`<data>/approvals.json`, or the team's store's).
    pub async fn remembered_approvals(&self) -> Result<Vec<crate::policy::approvals::Remembered>, Error> {
        Ok(self.approvals().await?.list().to_vec())
    }

    /// The remembered approvals: read again when the file changed, or every `STORE_KEEP` from
    /// a team's store.
    pub(super) async fn approvals(&self) -> Result<Arc<ApprovalStore>, Error> {
        use crate::policy::gate::{STORE_KEEP, Stamp};
        let dir = &self.inner.options.paths.data_dir;
        let stamp = match &self.inner.options.store {
            Some(_) => Stamp::Read(std::time::Instant::now()),
            None => Stamp::File(
                std::fs::metadata(ApprovalStore::path(dir)).ok().and_then(|m| Some((m.modified().ok()?, m.len()))),
            ),
        };
        {
            let cached = self.inner.gate.remembered.lock().unwrap_or_else(PoisonError::into_inner);
            let current = |s: &Stamp| match (s, &stamp) {
                (Stamp::Read(then), Stamp::Read(_)) => then.elapsed() < STORE_KEEP,
                (Stamp::File(Some(a)), Stamp::File(Some(b))) => a == b,
                _ => false,
            };
            if let Some((s, store)) = cached.as_ref()
                && current(s)
            {
                return Ok(store.clone());
            }
        }
        let store = match &self.inner.options.store {
            Some(db) => ApprovalStore::open_in(db).await,
            None => ApprovalStore::open(dir),
        };
        let store = Arc::new(store.map_err(|e| Error::storage(e.to_string(), e))?);
        *self.inner.gate.remembered.lock().unwrap_or_else(PoisonError::into_inner) = Some((stamp, store.clone()));
        Ok(store)
    }

    /// Runs a call through the gate, then `call`, and writes the audit line.
    pub(super) async fn gated<'o, F, Fut>(
        &self,
        entry: &ToolEntry,
        slot: &Arc<Slot>,
        mut arguments: Option<JsonObject>,
        options: &'o mut CallOptions,
        call: F,
    ) -> Result<ToolOutput, Error>
    where
        F: FnOnce(Option<JsonObject>, &'o mut CallOptions) -> Fut,
        Fut: std::future::Future<Output = Result<ToolOutput, Error>>,
    {
        let (time, started) = (SystemTime::now(), Instant::now());
        let passed = self.admit(entry, slot, &mut arguments, options).await;
        // Past the gate the call no longer needs to know who made it: the audit line takes the
        // caller as it is (no copy of its strings per call).
        let caller = std::mem::take(&mut options.caller);
        let audit = self.inner.gate.audit.as_ref();
        let watched = self.inner.events.wants_calls();
        if audit.is_none() && !watched {
            return match passed {
                Ok(_) => call(arguments, options).await,
                Err((e, _)) => Err(e),
            };
        }
        let digest = arguments_digest(arguments.as_ref());
        let kept = audit.is_some_and(AuditLog::keeps_arguments).then(|| arguments.as_ref().map(redacted)).flatten();
        let (result, passed, outcome) = match passed {
            Ok(p) => {
                let result = call(arguments, options).await;
                let outcome = match &result {
                    Ok(out) if out.raw.is_error == Some(true) => Outcome::ToolError,
                    Ok(_) => Outcome::Ok,
                    Err(Error::Timeout { .. }) => Outcome::Timeout,
                    Err(Error::Cancelled) => Outcome::Cancelled,
                    Err(_) => Outcome::Failed,
                };
                (result, p, outcome)
            }
            Err((e, p)) => {
                let outcome = match e {
                    Error::InvalidArguments { .. } => Outcome::InvalidArguments,
                    Error::RateLimited { .. } => Outcome::RateLimited,
                    // Cancelled while the approver was being asked.
                    Error::Cancelled => Outcome::Cancelled,
                    _ => Outcome::Denied,
                };
                (Err(e), p, outcome)
            }
        };
        let record = AuditRecord {
            time,
            caller,
            server: entry.server.clone(),
            tool: entry.tool.name.to_string(),
            name: entry.name.clone(),
            decision: passed.decision,
            rule: passed.rule,
            approval: passed.approval,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            outcome,
            error: result.as_ref().err().map(|e| crate::text::excerpt(&e.to_string(), 500)),
            result_bytes: result.as_ref().ok().map(|o| content_bytes(&o.raw)),
            arguments_sha256: digest,
            arguments: kept,
            hidden: result.as_ref().ok().and_then(|o| o.hidden.as_deref().cloned()),
            secrets: result.as_ref().ok().and_then(|o| o.secrets.as_deref().cloned()).unwrap_or_default(),
            trace_id: crate::telemetry::trace_id(&tracing::Span::current()),
        };
        self.inner.options.metrics.call(&record.server, record.outcome.as_str(), record.decision.as_str());
        if watched {
            self.inner.events.send(crate::events::Event::ToolCalled(Box::new(record.clone())));
        }
        if let Some(audit) = audit {
            audit.record_written(record).await;
        }
        result
    }

    /// The policy's decision, the approver if it asks, and the argument check.
    async fn admit(
        &self,
        entry: &ToolEntry,
        slot: &Arc<Slot>,
        arguments: &mut Option<JsonObject>,
        options: &CallOptions,
    ) -> Result<Passed, (Error, Passed)> {
        let gate = &self.inner.gate;
        let mut passed = Passed { decision: Verdict::Allow, rule: String::new(), approval: None };
        let required = gate.audit.as_ref().filter(|a| a.required());
        if let Some(audit) = required {
            audit.ready().await;
        }
        if let Some(audit) = required
            && let Some(why) = audit.health().failing
        {
            passed.decision = Verdict::Deny;
            passed.rule = String::from("audit.required");
            let message = format!(
                "`{}` is refused: the audit log cannot be written ({why}) and the configuration requires it \
                 (`audit.required`); calls are refused until it can be written",
                entry.name
            );
            let error = Error::Denied {
                name: entry.name.clone(),
                server: entry.server.clone(),
                rule: passed.rule.clone(),
                file: None,
                message,
                allowable: false,
            };
            return Err((error, passed));
        }
        if gate.policy().is_active() {
            let decided = self.decided(entry, options.caller.principal());
            let (decision, rule) = &*decided;
            passed.decision = decision.verdict;
            passed.rule = rule.clone();
            // A call the policy lets through (or would ask about) counts against the caller's
            // rate limits before anyone is asked.
            if decision.verdict != Verdict::Deny {
                let tool = ToolRef::new(&entry.name, &entry.server, &entry.tool.name).by(options.caller.principal());
                if let Err(limited) = gate.limiter().take(&tool, Instant::now()) {
                    return Err((rate_limited(entry, limited), passed));
                }
            }
            match decision.verdict {
                Verdict::Allow => {}
                Verdict::Deny => {
                    let message = format!("`{}` is denied by {}", entry.name, decision.rule);
                    return Err((denied(entry, decision, message, false), passed));
                }
                // Boxed: asking is rare, and its future would make every call's bigger.
                Verdict::Ask => match Box::pin(self.ask(entry, slot, arguments, options, decision)).await {
                    Ok(answer) => passed.approval = answer,
                    Err((e, answer)) => {
                        passed.approval = answer;
                        return Err((e, passed));
                    }
                },
            }
        } else {
            passed.rule = String::from("no policy");
        }
        let validate = slot.config().is_none_or(|c| c.validate_arguments);
        if validate {
            match gate.checker(&self.catalog(), entry).check(&entry.tool.input_schema, arguments) {
                Checked::Valid | Checked::Uncompiled(None) => {}
                Checked::Uncompiled(Some(why)) => tracing::warn!(
                    server = %entry.server,
                    "the input schema of `{}` cannot be compiled ({why}); its arguments are not checked",
                    entry.name
                ),
                Checked::Invalid(errors) => {
                    let error =
                        Error::InvalidArguments { name: entry.name.clone(), server: entry.server.clone(), errors };
                    return Err((error, passed));
                }
            }
        }
        Ok(passed)
    }

    /// An `ask`: satisfied by a person's own request (unless the managed file asks), by an
    /// earlier answer for the session or "always", or by the approver.
    async fn ask(
        &self,
        entry: &ToolEntry,
        slot: &Arc<Slot>,
        arguments: &Option<JsonObject>,
        options: &CallOptions,
        decision: &Decision,
    ) -> Result<Option<Approval>, (Error, Option<Approval>)> {
        if matches!(options.caller, Caller::Person { .. }) && !decision.managed {
            return Ok(None);
        }
        let definition = definition_digest(&entry.tool);
        let key = (options.caller.session_key(), entry.server.clone(), entry.tool.name.to_string(), definition.clone());
        if self.inner.gate.session.lock().unwrap_or_else(PoisonError::into_inner).contains(&key) {
            return Ok(Some(Approval::AllowSession));
        }
        let launch = slot.config().map(|c| crate::trust::launch_digest(&c)).unwrap_or_default();
        let changed = match self.approvals().await {
            Ok(store) => match store.lookup(&launch, &entry.tool.name, &definition) {
                Lookup::Approved => return Ok(Some(Approval::AllowAlways)),
                Lookup::Changed => true,
                _ => false,
            },
            Err(e) => {
                tracing::warn!("{e}; remembered approvals are not used");
                false
            }
        };
        // Nobody to ask: denied, saying why; allowing the tool is the fix.
        let nobody = |why: &str| {
            let message = format!("`{}` needs approval ({}) and {why}", entry.name, decision.rule);
            denied(entry, decision, message, true)
        };
        let Some(approver) = options.approver.clone().or_else(|| self.inner.options.approver.clone()) else {
            return Err((nobody("this host has no one to ask"), None));
        };
        if let Some(why) = approver.unavailable() {
            return Err((nobody(&why), None));
        }
        let request = ApprovalRequest {
            server: entry.server.clone(),
            tool: entry.tool.name.to_string(),
            name: entry.name.clone(),
            arguments: arguments.clone(),
            annotations: entry.tool.annotations.clone(),
            rule: decision.rule.clone(),
            changed,
            caller: options.caller.clone(),
        };
        let answer = match &options.cancel {
            Some(cancel) => tokio::select! {
                a = approver.consult(request) => a,
                _ = cancel.cancelled() => return Err((Error::Cancelled, None)),
            },
            None => approver.consult(request).await,
        };
        let answer = match answer {
            Ok(answer) => answer,
            Err(why) => return Err((nobody(&why), None)),
        };
        match answer {
            Approval::Deny => {
                let message = format!("`{}` was not approved (asked by {})", entry.name, decision.rule);
                Err((denied(entry, decision, message, false), Some(Approval::Deny)))
            }
            Approval::AllowOnce => Ok(Some(answer)),
            Approval::AllowSession => {
                self.inner.gate.session.lock().unwrap_or_else(PoisonError::into_inner).insert(key);
                Ok(Some(answer))
            }
            Approval::AllowAlways => {
                let dir = self.inner.options.paths.data_dir.clone();
                let (server, tool, name) = (entry.server.clone(), entry.tool.name.to_string(), entry.name.clone());
                let approved = crate::policy::approvals::definition_of(&entry.tool);
                let remember = move |s: &mut ApprovalStore| {
                    s.remember(&server, &launch, &tool, &name, &definition, Some(approved))
                };
                let saved = match &self.inner.options.store {
                    Some(db) => ApprovalStore::update_in(db, remember).await.map_err(|e| e.to_string()),
                    None => tokio::task::spawn_blocking(move || ApprovalStore::update(&dir, remember))
                        .await
                        .map_err(|e| e.to_string())
                        .and_then(|r| r.map_err(|e| e.to_string())),
                };
                if let Err(e) = saved {
                    tracing::warn!("remembering the approval: {e}; it holds for this call only");
                }
                // Read again at the next ask (this process changed them).
                *self.inner.gate.remembered.lock().unwrap_or_else(PoisonError::into_inner) = None;
                Ok(Some(answer))
            }
        }
    }
}

fn denied(entry: &ToolEntry, decision: &Decision, message: String, allowable: bool) -> Error {
    Error::Denied {
        name: entry.name.clone(),
        server: entry.server.clone(),
        rule: decision.rule.to_string(),
        file: decision.rule.file.clone(),
        message,
        allowable,
    }
}

/// Whether annotations of the server in `slot` are believed: user-file and `--config` servers,
/// and project servers the person trusted (the only ones that run).
fn is_trusted(hub: &Hub, slot: &Slot) -> bool {
    match slot.config() {
        Some(c) if c.scope == Scope::Project => crate::trust::TrustStore::open(&hub.inner.options.paths.data_dir)
            .is_ok_and(|t| t.is_trusted(&hub.inner.project_root, &c)),
        Some(_) => true,
        None => false,
    }
}

/// Bytes of a result's content: text, data, resources' text and blobs, structured content
/// as JSON.
fn content_bytes(raw: &rmcp::model::CallToolResult) -> usize {
    use rmcp::model::{ContentBlock, ResourceContents};
    let blocks: usize = raw
        .content
        .iter()
        .map(|c| match c {
            ContentBlock::Text(t) => t.text.len(),
            ContentBlock::Image(i) => i.data.len(),
            ContentBlock::Audio(a) => a.data.len(),
            ContentBlock::Resource(r) => match &r.resource {
                ResourceContents::TextResourceContents { text, .. } => text.len(),
                ResourceContents::BlobResourceContents { blob, .. } => blob.len(),
                _ => 0,
            },
            _ => 0,
        })
        .sum();
    blocks + raw.structured_content.as_ref().map_or(0, |s| serde_json::to_string(s).map_or(0, |t| t.len()))
}

/// The refusal of a call over a rate limit.
fn rate_limited(entry: &ToolEntry, limited: crate::policy::rate::Limited) -> Error {
    // Whole seconds, rounded up: "in 0 s" would invite a call that is refused again.
    let secs = limited.retry_after.as_millis().div_ceil(1000).max(1);
    let message =
        format!("`{}` is refused by {} ({}): try again in {secs} s", entry.name, limited.rule, limited.file.display());
    Error::RateLimited {
        name: entry.name.clone(),
        server: entry.server.clone(),
        rule: limited.rule,
        retry_after: limited.retry_after,
        message,
    }
}
