//! Following the config files in use while the hub runs: every file the load looked at (found
//! or not, so a project file created later counts) and the managed file. Their folders are
//! watched (an editor's save by atomic rename replaces the file; a watch on the file itself
//! would be lost), events are debounced (a burst of saves is one reload), and the config is
//! loaded again and applied with [`Hub::reload`]. An edit that leaves a file unreadable or
//! not JSON is not applied: what runs keeps running, and [`Event::ConfigRejected`] says why.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use notify::{RecursiveMode, Watcher};
use tokio::sync::mpsc;

use super::Hub;
use crate::config::{self, Diagnostic, LoadOptions, LoadedConfig, Severity};
use crate::error::Error;
use crate::events::Event;

/// How long the files must stay quiet before a reload.
pub const DEBOUNCE: Duration = Duration::from_millis(250);

/// The files being followed; dropping it stops following them.
pub struct ConfigWatch {
    _watcher: Arc<Mutex<notify::RecommendedWatcher>>,
    task: tokio::task::AbortHandle,
    files: Arc<Mutex<BTreeSet<PathBuf>>>,
}

impl std::fmt::Debug for ConfigWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigWatch").field("files", &self.files).finish_non_exhaustive()
    }
}

impl ConfigWatch {
    /// The files followed now (a reload that includes another file follows it too).
    pub fn files(&self) -> Vec<PathBuf> {
        self.files.lock().map(|f| f.iter().cloned().collect()).unwrap_or_default()
    }
}

impl Drop for ConfigWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The files a load depends on: those it looked at (included ones too), the env files its
/// servers read, and the managed file.
fn files_of(loaded: &LoadedConfig, options: &LoadOptions) -> BTreeSet<PathBuf> {
    let mut files: BTreeSet<PathBuf> = loaded.files.iter().map(|f| f.path.clone()).collect();
    for entry in loaded.servers.values() {
        if let config::ServerEntry::Valid(c) = entry
            && let config::TransportConfig::Stdio(s) = &c.transport
            && let Some(f) = &s.env_file
        {
            files.insert(f.clone());
        }
    }
    if let Some(m) = &options.managed_file {
        files.insert(m.clone());
    }
    if let Some(m) = &loaded.managed {
        files.insert(m.file.clone());
    }
    files
}

/// Watches the folders of `files` not watched yet (`folders`: those watched). A folder that
/// does not exist yet (`~/.cursor` before Cursor is installed) is waited for from the nearest
/// one that does: its creation triggers a load, after which it is watched itself.
fn watch_folders(
    watcher: &Mutex<notify::RecommendedWatcher>,
    folders: &mut BTreeSet<PathBuf>,
    files: &BTreeSet<PathBuf>,
) {
    let Ok(mut watcher) = watcher.lock() else { return };
    for folder in files.iter().filter_map(|f| f.ancestors().skip(1).find(|a| a.is_dir())) {
        if folders.contains(folder) {
            continue;
        }
        match watcher.watch(folder, RecursiveMode::NonRecursive) {
            Ok(()) => {
                folders.insert(folder.to_path_buf());
            }
            Err(e) => tracing::warn!("cannot watch {} for config changes: {e}", folder.display()),
        }
    }
}

/// Diagnostics that make a load unusable as a whole: a file that cannot be read or is not
/// JSON (its servers would look removed).
fn file_errors(loaded: &LoadedConfig) -> Vec<Diagnostic> {
    loaded
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error && d.server.is_none() && d.field.is_none())
        .filter(|d| ["not valid JSON", "not valid TOML", "cannot read"].iter().any(|m| d.message.starts_with(m)))
        .cloned()
        .collect()
}

impl Hub {
    /// Follows the config files of `loaded` (loaded with `options`) and reloads when they
    /// change, publishing [`Event::ConfigReloaded`] or [`Event::ConfigRejected`]. Stops when
    /// the returned [`ConfigWatch`] is dropped.
    pub fn watch_config(&self, options: LoadOptions, loaded: &LoadedConfig) -> Result<ConfigWatch, Error> {
        let files = Arc::new(Mutex::new(files_of(loaded, &options)));
        let (tx, mut rx) = mpsc::unbounded_channel::<()>();
        let watched = files.clone();
        let handler = move |event: notify::Result<notify::Event>| {
            // Reading the files (the reload itself) is no change: only writes, creations,
            // renames and removals count.
            let Ok(event) = event else { return };
            if matches!(event.kind, notify::EventKind::Access(_) | notify::EventKind::Other) {
                return;
            }
            let Ok(watched) = watched.lock() else { return };
            // A followed file changed, or a folder on the way to one came (or went).
            let concerns =
                |p: &PathBuf| watched.contains(p) || watched.iter().any(|w| same_file(w, p) || w.starts_with(p));
            if event.paths.iter().any(concerns) {
                let _ = tx.send(());
            }
        };
        let storage = |e: notify::Error| Error::storage(format!("watching the config files: {e}"), e);
        let watcher = Arc::new(Mutex::new(notify::recommended_watcher(handler).map_err(storage)?));
        let mut folders = BTreeSet::new();
        // A copy, the lock let go first: the handler takes it on notify's thread, and `watch`
        // waits for that thread (an event in between would wait for this lock forever).
        let now = files.lock().map(|f| f.clone()).unwrap_or_default();
        watch_folders(&watcher, &mut folders, &now);
        let hub = self.clone();
        let (follow_files, follow_watcher) = (files.clone(), watcher.clone());
        // Another process on the team's store saw its config change ([`super::signals`]).
        let mut remote = self.inner.remote_reload.subscribe();
        let task = tokio::spawn(async move {
            loop {
                let from_files = tokio::select! {
                    got = rx.recv() => match got {
                        Some(()) => true,
                        None => return,
                    },
                    told = remote.changed() => match told {
                        Ok(()) => false,
                        Err(_) => return,
                    },
                };
                // Quiet for a moment: one reload for a burst of saves.
                if from_files {
                    loop {
                        match tokio::time::timeout(DEBOUNCE, rx.recv()).await {
                            Ok(Some(())) => continue,
                            Ok(None) => return,
                            Err(_) => break,
                        }
                    }
                }
                let load_options = options.clone();
                let Ok(loaded) = tokio::task::spawn_blocking(move || config::load(&load_options)).await else {
                    continue;
                };
                let rejected = file_errors(&loaded);
                if !rejected.is_empty() {
                    for d in &rejected {
                        tracing::warn!("config not reloaded: {d}");
                    }
                    hub.inner.events.send(Event::ConfigRejected { diagnostics: rejected });
                    continue;
                }
                // An `include` added, an env file named: followed from now on.
                let now = files_of(&loaded, &options);
                watch_folders(&follow_watcher, &mut folders, &now);
                if let Ok(mut f) = follow_files.lock() {
                    *f = now;
                }
                let report = hub.reload(&loaded).await;
                if report.changed() && from_files {
                    // The other replicas read theirs again (a config map reaches each at its
                    // own time).
                    hub.inner.tell(crate::store::signals::Signal::Reload).await;
                }
                if report.changed() {
                    tracing::info!(
                        "config reloaded: {} added, {} removed, {} restarted, {} updated",
                        report.added.len(),
                        report.removed.len(),
                        report.restarted.len(),
                        report.updated.len()
                    );
                }
                hub.inner
                    .events
                    .send(Event::ConfigReloaded { report: Box::new(report), diagnostics: loaded.diagnostics.clone() });
            }
        });
        self.inner.track(task.abort_handle());
        Ok(ConfigWatch { _watcher: watcher, task: task.abort_handle(), files })
    }
}

/// Whether `event` names `watched` by another spelling (a symlinked folder, `..`).
fn same_file(watched: &Path, event: &Path) -> bool {
    watched.file_name() == event.file_name()
        && match (
            watched.parent().and_then(|p| p.canonicalize().ok()),
            event.parent().and_then(|p| p.canonicalize().ok()),
        ) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        }
}
