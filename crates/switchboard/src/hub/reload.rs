//! Reloading the config while the hub runs, server by server: an unchanged server keeps its
//! connection and process; a change to how it is reached (launch, transport, pinned protocol,
//! message bound, the kind of file it comes from) restarts that server alone; a change that
//! needs no restart (tool filters, timeouts, argument checks, shutdown grace) is applied in
//! place; `enabled` starts or stops it; a removed server stops, an added one starts (a project
//! server still waits for trust). An entry that turns invalid keeps what runs, with the
//! diagnostic in the report. The policy is replaced for calls from now on.

use std::sync::Arc;

use super::{Hub, Slot, connect, retry};
use crate::config::{LoadedConfig, Scope, ServerConfig, ServerEntry};
use crate::events::ReloadReport;
use crate::status::ServerStatus;

/// Whether going from `old` to `new` needs the server started again.
fn needs_restart(old: &ServerConfig, new: &ServerConfig) -> bool {
    old.transport != new.transport
        || old.protocol_version != new.protocol_version
        || old.max_message_bytes != new.max_message_bytes
        || old.scope != new.scope
        || old.sharing != new.sharing
}

impl Hub {
    /// Applies `config` (loaded again from the same files) to the running hub, server by
    /// server, and replaces the policy. Servers outside [`HubOptions::only`](super::HubOptions)
    /// stay out; a person's hub ([`Hub::person`]) holds only the servers each person gets
    /// their own of, and the people's hubs take the new config too.
    pub async fn reload(&self, config: &LoadedConfig) -> ReloadReport {
        let mut report = ReloadReport::default();
        let person = self.inner.person.is_some();
        let wanted = |name: &str, entry: &ServerEntry| super::wanted(&self.inner.options, person, name, entry);
        // The policy is the host's (a person's hub shares its gate).
        if !person {
            self.inner.gate.set_policy(config);
        }
        for slot in self.inner.all_slots() {
            let kept = config.servers.get(&slot.name).is_some_and(|e| wanted(&slot.name, e));
            if !kept && self.remove_server(&slot.name).await.is_ok() {
                report.removed.push(slot.name.clone());
            }
        }
        for (name, entry) in &config.servers {
            if !wanted(name, entry) {
                continue;
            }
            let Ok(slot) = self.inner.slot(name) else {
                if self.add_server(entry.clone()).await.is_ok() {
                    report.added.push(name.clone());
                }
                continue;
            };
            match (slot.entry().as_ref(), entry) {
                (old, new) if old == new => report.unchanged.push(name.clone()),
                (ServerEntry::Valid(_), ServerEntry::Invalid(bad)) => {
                    tracing::warn!(server = %name, "its entry turned invalid; it keeps running as it was: {}", bad.message);
                    report.kept.push((name.clone(), bad.message.clone()));
                }
                (ServerEntry::Valid(old), ServerEntry::Valid(new)) if !needs_restart(old, new) => {
                    let (was, is) = (old.enabled, new.enabled);
                    slot.replace(entry.clone());
                    if was && !is {
                        let _ = self.stop_disabled(&slot).await;
                    } else if !was && is {
                        self.start_again(&slot).await;
                    }
                    self.inner.rebuild_catalog();
                    self.inner.publish_catalog(&slot);
                    report.updated.push(name.clone());
                }
                _ => {
                    // A new way to reach it (or a fixed entry): started again from the new one.
                    let _guard = slot.connect_lock.lock().await;
                    let conn = slot.state().conn.take();
                    if let Some(conn) = conn {
                        conn.close().await;
                    }
                    slot.replace(entry.clone());
                    drop(_guard);
                    self.start_again(&slot).await;
                    self.inner.rebuild_catalog();
                    report.restarted.push(name.clone());
                }
            }
        }
        // The policy changed: decisions cached in the catalog's entries are made anew.
        self.inner.rebuild_catalog();
        self.inner.changed.send_modify(|n| *n += 1);
        self.inner.people.set_config(config);
        self.reload_people().await;
        report
    }

    /// Closes a server that is now disabled.
    async fn stop_disabled(&self, slot: &Arc<Slot>) -> Result<(), crate::Error> {
        let _guard = slot.connect_lock.lock().await;
        let conn = slot.state().conn.take();
        if let Some(conn) = conn {
            conn.close().await;
        }
        {
            let mut st = slot.state();
            st.lists = Arc::default();
            st.remembered = false;
        }
        self.inner.set_status(slot, ServerStatus::Disabled);
        Ok(())
    }

    /// Starts a server from its (new) entry: disabled, waiting for trust, or connecting.
    async fn start_again(&self, slot: &Arc<Slot>) {
        retry::reset(slot);
        let status = match (slot.entry().as_ref(), slot.config()) {
            (ServerEntry::Invalid(_), _) | (_, None) => return,
            (_, Some(c)) if !c.enabled => ServerStatus::Disabled,
            (_, Some(c)) if c.scope == Scope::Project && !self.is_trusted(&c) => ServerStatus::Untrusted,
            _ => ServerStatus::Connecting,
        };
        {
            let mut st = slot.state();
            st.lists = Arc::default();
            st.remembered = false;
        }
        let connecting = matches!(status, ServerStatus::Connecting);
        self.inner.set_status(slot, status);
        // Its new entry's lists as last seen stand in while it starts.
        if let Some(place) = self.inner.lists_place(slot) {
            slot.stand_in(&place);
            self.inner.rebuild_catalog();
        }
        if connecting {
            let _ = connect(&self.inner, slot).await;
        }
    }
}
