//! Changing the set of servers while the hub runs: adding one (it starts at once, unless it
//! is a project server not trusted yet), removing one (its process tree ends), and trusting a
//! project server (the trust is recorded as `switchboard trust` records it, and it starts).

use std::sync::{Arc, PoisonError};

use super::{Hub, Slot, connect};
use crate::config::{Scope, ServerEntry};
use crate::error::Error;
use crate::events::Event;
use crate::status::ServerStatus;
use crate::trust::TrustStore;

impl Hub {
    /// Adds a server (parsed with [`crate::config::parse_server`]) and, if it is enabled and
    /// trusted, connects it. Returns its status once the start has settled.
    pub async fn add_server(&self, entry: ServerEntry) -> Result<ServerStatus, Error> {
        let name = entry.name().to_string();
        // Each person's own: their hubs get it too.
        let personal = (self.inner.person.is_none() && super::personal(&self.inner.options, &entry))
            .then(|| (entry.clone(), self.inner.people.all()));
        let slot = Arc::new(Slot::new(entry, |c| c.scope != Scope::Project || self.is_trusted(c)));
        let status = slot.state().status.clone();
        {
            let mut slots = self.inner.slots.write().unwrap_or_else(PoisonError::into_inner);
            if slots.contains_key(&name) {
                return Err(Error::Exists { name });
            }
            slots.insert(name.clone(), slot.clone());
        }
        self.inner.events.send(Event::StatusChanged {
            server: name.clone(),
            remedy: status.remedy(&name),
            status: status.clone(),
        });
        if matches!(status, ServerStatus::Connecting) {
            let _ = connect(&self.inner, &slot).await;
        }
        if let Some((entry, hubs)) = personal {
            for hub in hubs {
                let _ = Box::pin(hub.add_server(entry.clone())).await;
            }
        }
        Ok(slot.state().status.clone())
    }

    /// Removes a server from the hub: its connection closes and its process tree ends.
    pub async fn remove_server(&self, name: &str) -> Result<(), Error> {
        for hub in self.inner.people.all() {
            let _ = Box::pin(hub.remove_server(name)).await;
        }
        let slot = self
            .inner
            .slots
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(name)
            .ok_or_else(|| Error::unknown_server(name, []))?;
        let _guard = slot.connect_lock.lock().await;
        let conn = slot.state().conn.take();
        if let Some(conn) = conn {
            conn.close().await;
        }
        self.inner.rebuild_catalog();
        self.inner.events.send(Event::ServerRemoved { server: name.to_string() });
        self.inner.changed.send_modify(|n| *n += 1);
        Ok(())
    }

    /// Trusts a project server in this project (what would run is recorded, as
    /// `switchboard trust` records it) and starts it. Returns its status afterwards.
    pub async fn trust(&self, name: &str) -> Result<ServerStatus, Error> {
        let slot = self.inner.slot(name)?;
        let Some(config) = slot.config() else {
            return Err(Error::Invalid {
                message: format!("`{name}` is not a valid entry: {}", slot.state().status.summary()),
            });
        };
        if config.scope != Scope::Project {
            return Err(Error::Invalid {
                message: format!("`{name}` is not from a project file: user and --config servers are always trusted"),
            });
        }
        TrustStore::update(&self.inner.options.paths.data_dir, |store| store.trust(&self.inner.project_root, &config))
            .map_err(|e| Error::storage(e.to_string(), e))?;
        let untrusted = matches!(slot.state().status, ServerStatus::Untrusted);
        if untrusted && config.enabled {
            self.inner.set_status(&slot, ServerStatus::Connecting);
            let _ = connect(&self.inner, &slot).await;
        }
        Ok(slot.state().status.clone())
    }

    pub(super) fn is_trusted(&self, config: &crate::config::ServerConfig) -> bool {
        TrustStore::open(&self.inner.options.paths.data_dir)
            .is_ok_and(|t| t.is_trusted(&self.inner.project_root, config))
    }
}
