//! How a hub runs ([`HubOptions`]): its paths, who answers servers' questions, the limits on
//! results and notifications, whether it is short-lived, which servers it starts.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::retry::Reconnect;
use crate::elicitation::Elicitor;
use crate::output::ResultBudget;
use crate::paths::Paths;
use crate::sampling::Sampler;

/// How the hub runs.
#[derive(Clone)]
#[non_exhaustive]
pub struct HubOptions {
    /// The user's config file and data folder (trust records, spilled results).
    pub paths: Paths,
    /// Limits on results given to a model.
    pub budget: ResultBudget,
    /// The host environment servers draw their default variables from.
    pub host_env: HashMap<String, String>,
    /// Start only these servers (others are left out of the hub); `None` starts all.
    pub only: Option<BTreeSet<String>>,
    /// The longest any call may take, progress or not, unless the call says otherwise.
    pub max_call_time: Duration,
    /// Who answers servers' requests for input (`elicitation/create`); without one the
    /// capability is not declared and such requests are declined.
    pub elicitor: Option<Arc<dyn Elicitor>>,
    /// Who answers servers' requests for a completion (`sampling/createMessage`); without
    /// one the capability is not declared.
    pub sampler: Option<Arc<dyn Sampler>>,
    /// Who decides a tool call the policy asks about (a call may bring its own:
    /// [`CallOptions::approver`](crate::CallOptions::approver)); without one such calls are denied, saying why.
    pub approver: Option<Arc<dyn crate::policy::Approver>>,
    /// The folders offered to servers as roots; `None`: the project root.
    pub roots: Option<Vec<PathBuf>>,
    /// Who decides the roots instead (a gateway asks its client); `None`: `roots`.
    pub roots_source: Option<Arc<dyn crate::roots::RootsSource>>,
    /// How servers that go away are tried again (default: on timers, for a long-running host).
    pub reconnect: Reconnect,
    /// Kept outputs (`<data>/results`) older than this are removed at start (default 7 days).
    pub results_keep: Duration,
    /// At start, the oldest kept outputs are removed until they hold at most this (500 MB).
    pub results_max_bytes: u64,
    /// Notifications a second taken from one server (progress, logs, resource updates;
    /// `list_changed` always): beyond it, after a burst of twice as many, they are dropped and
    /// said (`Event::Dropped`). Default 1000; 0 takes every one.
    pub notification_rate: u32,
    /// Whether hidden characters are removed from what servers say or only found
    /// (default: removed; see [`Screening`](crate::screen::Screening)).
    pub screening: crate::screen::Screening,
    /// Callers sign in (a gateway or `serve` with `identity`): a server whose `sharing` says
    /// so ([`ServerConfig::per_person`](crate::config::ServerConfig::per_person)) gets a
    /// connection of each person's own ([`Hub::person`](crate::Hub::person)) and none of the
    /// host's. Default false: one person, every server shared.
    pub team: bool,
    /// How the hub of one person's own servers ([`Hub::person`](crate::Hub::person)) is
    /// told apart from the host's: who answers their servers' questions. Without it their
    /// servers ask no one (no elicitor, sampler or roots of the host's reach them).
    pub person_options: Option<PersonOptions>,
    /// How the config was loaded, so that each person's hub loads it again with their own
    /// input values (`${input:ID}`, kept in `<data>/people/<key>/inputs.json`,
    /// [`Hub::give_input`](crate::Hub::give_input)); without it a person's hub takes the
    /// host's config as it is (the host's input values).
    pub person_config: Option<crate::config::LoadOptions>,
    /// A team's store ([`Database`](crate::store::db::Database)): upstream logins (the host's
    /// and each person's) are kept there, sealed, instead of in the data folder, and so are the
    /// people's records. `None` (the default): the data folder.
    pub store: Option<crate::store::db::Database>,
    /// Where the hub counts what it does ([`crate::metrics`]); shared with the hubs made from
    /// it (each person's), so one registry shows them all.
    pub metrics: crate::metrics::Metrics,
    /// Each server's lists are remembered in the data folder (`<data>/lists/`, keyed by what
    /// its entry launches) and stand in for them while it starts again, so a host's first list
    /// has every server's tools at once ([`Hub::remembered`](crate::Hub::remembered)); its own
    /// lists replace them the moment it is up, and nothing of it stays if it fails. Default
    /// true. A short-lived host ([`HubOptions::short_lived`]) keeps them but does not stand in
    /// with them: it waits for its servers.
    pub remember_lists: bool,
}

/// Makes a person's hub's options from the host's ([`HubOptions::person_options`]).
pub type PersonOptions = Arc<dyn Fn(&crate::identity::Principal, HubOptions) -> HubOptions + Send + Sync + 'static>;

impl std::fmt::Debug for HubOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubOptions")
            .field("paths", &self.paths)
            .field("budget", &self.budget)
            .field("only", &self.only)
            .field("max_call_time", &self.max_call_time)
            .field("elicitor", &self.elicitor.is_some())
            .field("sampler", &self.sampler.is_some())
            .field("approver", &self.approver.is_some())
            .field("roots", &self.roots)
            .field("reconnect", &self.reconnect)
            .field("screening", &self.screening)
            .field("team", &self.team)
            .field("store", &self.store.as_ref().map(|d| d.shown()))
            .finish_non_exhaustive()
    }
}

impl HubOptions {
    /// Options with the given paths and the host environment.
    pub fn new(paths: Paths) -> Self {
        HubOptions {
            paths,
            budget: ResultBudget::default(),
            host_env: crate::config::host_env(),
            only: None,
            max_call_time: Duration::from_secs(3600),
            elicitor: None,
            sampler: None,
            approver: None,
            roots: None,
            roots_source: None,
            reconnect: Reconnect::default(),
            results_keep: Duration::from_secs(7 * 24 * 3600),
            results_max_bytes: 500 * 1000 * 1000,
            notification_rate: crate::transport::flood::DEFAULT_RATE,
            screening: crate::screen::Screening::Remove,
            team: false,
            person_options: None,
            person_config: None,
            store: None,
            metrics: crate::metrics::Metrics::new(),
            remember_lists: true,
        }
    }

    /// For a short-lived host (one command): servers that went away are tried again only when
    /// a call needs them, with no timer and no health checks.
    pub fn short_lived(mut self) -> Self {
        self.reconnect.background = false;
        self
    }

    /// With this reconnection policy.
    pub fn reconnect(mut self, reconnect: Reconnect) -> Self {
        self.reconnect = reconnect;
        self
    }

    /// With someone to answer servers' requests for input.
    pub fn elicitor(mut self, elicitor: Arc<dyn Elicitor>) -> Self {
        self.elicitor = Some(elicitor);
        self
    }
    /// With an approver for calls the policy asks about.
    pub fn approver(mut self, approver: Arc<dyn crate::policy::Approver>) -> Self {
        self.approver = Some(approver);
        self
    }

    /// With a model to answer servers' requests for a completion.
    pub fn sampler(mut self, sampler: Arc<dyn Sampler>) -> Self {
        self.sampler = Some(sampler);
        self
    }

    /// With the roots decided by `source` (see [`crate::roots`]).
    pub fn roots_source(mut self, source: Arc<dyn crate::roots::RootsSource>) -> Self {
        self.roots_source = Some(source);
        self
    }
    /// With hidden characters removed from what servers say, or only found and told
    /// ([`Screening::Keep`](crate::screen::Screening::Keep)).
    pub fn screening(mut self, screening: crate::screen::Screening) -> Self {
        self.screening = screening;
        self
    }

    /// For callers who sign in: servers shared or each person's own as their `sharing` says.
    pub fn team(mut self, team: bool) -> Self {
        self.team = team;
        self
    }

    /// With who answers the questions of each person's own servers.
    pub fn person_options(mut self, f: PersonOptions) -> Self {
        self.person_options = Some(f);
        self
    }

    /// With each person's own input values, from the config loaded again with `options`.
    pub fn person_config(mut self, options: crate::config::LoadOptions) -> Self {
        self.person_config = Some(options);
        self
    }

    /// With a team's store for logins and people's records ([`HubOptions::store`]).
    pub fn store(mut self, db: crate::store::db::Database) -> Self {
        self.store = Some(db);
        self
    }

    /// Whether servers' lists are remembered and stand in while they start
    /// ([`HubOptions::remember_lists`]).
    pub fn remember_lists(mut self, on: bool) -> Self {
        self.remember_lists = on;
        self
    }

    /// With these folders offered as roots instead of the project root.
    pub fn roots(mut self, roots: Vec<PathBuf>) -> Self {
        self.roots = Some(roots);
        self
    }
}
