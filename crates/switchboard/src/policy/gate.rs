//! What the hub's gate keeps ([`Gate`]): the policy in effect (replaced by a reload), the
//! rate limits' buckets (replaced by a reload that changes the limits), the audit log, the answers given "for this session", the approvals file as last read, and, per
//! catalog snapshot, each tool's decision and its compiled input schema. The catalog holds
//! none of it: a snapshot is known by its `Arc` (held weakly, so it is never mistaken for a
//! later one), and an entry by being that snapshot's own (`std::ptr::eq`); an entry of an older
//! snapshot, or a copy, is decided afresh and not kept.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};
use std::time::SystemTime;

use super::approvals::ApprovalStore;
use super::audit::AuditLog;
use super::rate::RateLimiter;
use super::validate::Checker;
use super::{Decision, Policy};
use crate::catalog::{Catalog, ToolEntry};
use crate::config::LoadedConfig;

/// A tool's decision, with its rule as text.
pub(crate) type Decided = Arc<(Decision, String)>;

/// Whether remembered approvals as last read are still current.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stamp {
    /// The file's modification time and length (`None`: no file): changed since it was read?
    File(Option<(SystemTime, u64)>),
    /// When a team's store was read (read again after [`STORE_KEEP`]).
    Read(std::time::Instant),
}

/// How long approvals read from a team's store are used before it is read again (an approval
/// revoked on one gateway reaches the others within it).
pub(crate) const STORE_KEEP: std::time::Duration = std::time::Duration::from_secs(2);

/// What the hub keeps for the gate.
pub(crate) struct Gate {
    /// Decisions and checkers of the current catalog snapshot.
    snapshot: Mutex<Snapshot>,
    /// Replaced by a reload.
    policy: RwLock<Arc<Policy>>,
    /// The rate limits and their buckets; replaced by a reload that changes the limits.
    limiter: RwLock<Arc<RateLimiter>>,
    pub(crate) audit: Option<AuditLog>,
    /// "For this session" answers: caller's session key, server, tool, definition digest.
    pub(crate) session: Mutex<HashSet<(String, String, String, String)>>,
    /// The remembered approvals as last read, with whether they are current.
    pub(crate) remembered: Mutex<Option<(Stamp, Arc<ApprovalStore>)>>,
}

impl Gate {
    pub(crate) fn new(
        config: &LoadedConfig,
        data_dir: &std::path::Path,
        store: Option<&crate::store::db::Database>,
    ) -> Gate {
        let managed_error = config.managed.as_ref().and_then(|m| m.error.as_ref().map(|e| (m.file.clone(), e.clone())));
        Gate {
            policy: RwLock::new(Arc::new(Policy::new(&config.policy, managed_error))),
            limiter: RwLock::new(Arc::new(RateLimiter::new(&config.policy))),
            audit: AuditLog::open(data_dir, config.audit, store),
            session: Mutex::new(HashSet::new()),
            remembered: Mutex::new(None),
            snapshot: Mutex::new(Snapshot::default()),
        }
    }

    /// The rate limits in effect.
    pub(crate) fn limiter(&self) -> Arc<RateLimiter> {
        self.limiter.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The policy in effect.
    pub(crate) fn policy(&self) -> Arc<Policy> {
        self.policy.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The policy of `config` from now on (a reload); calls decided already keep theirs.
    pub(crate) fn set_policy(&self, config: &LoadedConfig) {
        let managed_error = config.managed.as_ref().and_then(|m| m.error.as_ref().map(|e| (m.file.clone(), e.clone())));
        *self.policy.write().unwrap_or_else(PoisonError::into_inner) =
            Arc::new(Policy::new(&config.policy, managed_error));
        let mut limiter = self.limiter.write().unwrap_or_else(PoisonError::into_inner);
        if !limiter.same_as(&config.policy) {
            *limiter = Arc::new(RateLimiter::new(&config.policy));
        }
        self.snapshot.lock().unwrap_or_else(PoisonError::into_inner).decided.clear();
    }

    /// `entry`'s decision (made by `decide`), kept for the tool while `catalog` is the hub's
    /// snapshot and the policy stays.
    pub(crate) fn decided(
        &self,
        catalog: &Arc<Catalog>,
        entry: &ToolEntry,
        decide: impl FnOnce() -> Decision,
    ) -> Decided {
        let make = || {
            let d = decide();
            let text = d.rule.to_string();
            Arc::new((d, text))
        };
        self.kept(catalog, entry, |s| &mut s.decided, make)
    }

    /// `entry`'s input-schema checker (compiled on its first check), kept for the tool while
    /// `catalog` is the hub's snapshot.
    pub(crate) fn checker(&self, catalog: &Arc<Catalog>, entry: &ToolEntry) -> Arc<Checker> {
        self.kept(catalog, entry, |s| &mut s.checkers, Arc::default)
    }

    fn kept<T: Clone>(
        &self,
        catalog: &Arc<Catalog>,
        entry: &ToolEntry,
        table: impl Fn(&mut Snapshot) -> &mut HashMap<String, T>,
        make: impl FnOnce() -> T,
    ) -> T {
        if !catalog.tool(&entry.name).is_some_and(|own| std::ptr::eq(own, entry)) {
            return make();
        }
        // Nothing is made under the lock: deciding reads the slot's state and the trust store.
        {
            let mut snapshot = self.snapshot.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(kept) = table(snapshot.of(catalog)).get(&entry.name) {
                return kept.clone();
            }
        }
        let made = make();
        let mut snapshot = self.snapshot.lock().unwrap_or_else(PoisonError::into_inner);
        table(snapshot.of(catalog)).entry(entry.name.clone()).or_insert(made).clone()
    }

    pub(crate) async fn flush(&self) {
        if let Some(a) = &self.audit {
            a.flush().await;
        }
    }

    /// At the host's end ([`AuditLog::close`]).
    pub(crate) async fn close(&self) {
        if let Some(a) = &self.audit {
            a.close().await;
        }
    }
}

/// What the gate keeps of one catalog snapshot, by catalog name.
#[derive(Default)]
struct Snapshot {
    catalog: Weak<Catalog>,
    decided: HashMap<String, Decided>,
    checkers: HashMap<String, Arc<Checker>>,
}

impl Snapshot {
    /// What is kept of `catalog`: emptied first when it is not the snapshot kept so far.
    fn of(&mut self, catalog: &Arc<Catalog>) -> &mut Snapshot {
        if !self.catalog.upgrade().is_some_and(|c| Arc::ptr_eq(&c, catalog)) {
            *self = Snapshot { catalog: Arc::downgrade(catalog), ..Snapshot::default() };
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use rmcp::model::{JsonObject, Tool};

    use super::*;
    use crate::catalog::{CompiledFilter, ServerLists};
    use crate::config::ToolFilter;
    use crate::policy::ToolRef;

    fn catalog() -> Arc<Catalog> {
        let lists = ServerLists {
            tools: vec![Tool::new("read".to_string(), "", Arc::new(JsonObject::new()))],
            ..ServerLists::default()
        };
        Arc::new(Catalog::build([("fs", &lists, &CompiledFilter::new(&ToolFilter::default()))]))
    }

    #[test]
    fn a_decision_is_kept_per_snapshot_and_policy_and_never_for_a_copy() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let gate = Gate::new(&LoadedConfig::default(), dir.path(), None);
        let made = Cell::new(0);
        let decide = || {
            made.set(made.get() + 1);
            gate.policy().decide(ToolRef::new("mcp__fs__read", "fs", "read"))
        };
        let first = catalog();
        let Some(entry) = first.tool("mcp__fs__read") else { panic!("no tool") };
        gate.decided(&first, entry, decide);
        gate.decided(&first, entry, decide);
        assert_eq!(made.get(), 1, "kept for the snapshot");
        let copy = entry.clone();
        gate.decided(&first, &copy, decide);
        assert_eq!(made.get(), 2, "a copy is decided afresh");
        let second = catalog();
        let Some(newer) = second.tool("mcp__fs__read") else { panic!("no tool") };
        gate.decided(&second, newer, decide);
        assert_eq!(made.get(), 3, "a new snapshot decides again");
        gate.set_policy(&LoadedConfig::default());
        gate.decided(&second, newer, decide);
        assert_eq!(made.get(), 4, "a new policy decides again");
        let a = gate.checker(&second, newer);
        assert!(Arc::ptr_eq(&a, &gate.checker(&second, newer)), "one checker per tool and snapshot");
    }
}
