//! Where switchboard keeps its files. Resolved once from the environment by the binary, or
//! given explicitly by an embedder or a test: the library never reads globals behind your back.

use std::path::PathBuf;

/// The user's config file and data folder.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Paths {
    /// The user config file (`$XDG_CONFIG_HOME/switchboard/config.json`, or
    /// `SWITCHBOARD_CONFIG`).
    pub config_file: PathBuf,
    /// The data folder (`$XDG_DATA_HOME/switchboard`, or `SWITCHBOARD_DATA_DIR`): trust
    /// records, spilled tool results.
    pub data_dir: PathBuf,
}

impl Paths {
    /// Explicit paths.
    pub fn new(config_file: impl Into<PathBuf>, data_dir: impl Into<PathBuf>) -> Self {
        Paths { config_file: config_file.into(), data_dir: data_dir.into() }
    }

    /// Paths from the environment: `SWITCHBOARD_CONFIG`, `SWITCHBOARD_DATA_DIR`, then the XDG
    /// base directories (through `directories`), then `~/.config` and `~/.local/share`.
    pub fn from_env() -> Self {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        let dirs = directories::ProjectDirs::from("", "", "switchboard");
        let home = var("HOME").unwrap_or_else(|| PathBuf::from("."));
        let config_file = var("SWITCHBOARD_CONFIG").unwrap_or_else(|| {
            var("XDG_CONFIG_HOME")
                .map(|d| d.join("switchboard"))
                .or_else(|| dirs.as_ref().map(|d| d.config_dir().to_path_buf()))
                .unwrap_or_else(|| home.join(".config/switchboard"))
                .join("config.json")
        });
        let data_dir = var("SWITCHBOARD_DATA_DIR").unwrap_or_else(|| {
            var("XDG_DATA_HOME")
                .map(|d| d.join("switchboard"))
                .or_else(|| dirs.as_ref().map(|d| d.data_dir().to_path_buf()))
                .unwrap_or_else(|| home.join(".local/share/switchboard"))
        });
        Paths { config_file, data_dir }
    }
}

/// `~/x` as a path under the home folder; anything else as it is.
pub(crate) fn expand_home(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(path),
    }
}
