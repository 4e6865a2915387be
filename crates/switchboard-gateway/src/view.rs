//! What one downstream client sees of the catalog: which servers (`--only`, a profile), which
//! tools (a profile's globs), and under which names.
//!
//! Names: `short` (the default) gives `<server>__<tool>` within [`SHORT_LIMIT`] bytes, for
//! agents that put their own prefix before every name (Claude Code's `mcp__<entry>__`, Gemini
//! CLI's `mcp_<entry>_`, ...: see README, "Names"); `prefixed` gives the catalog's
//! model-visible names (`mcp__<server>__<tool>`); `bare` gives each upstream's own names, and a name two servers share is given the
//! catalog's (hashed) name instead, so a name always leads to one tool. Prompts follow the
//! same rule. Resource URIs are kept when only one server has them; a URI several servers
//! list is rewritten, for every one of them, to `switchboard://<server>/<uri>` (reversible:
//! the server is the first path segment, the rest is the original URI). A view is built per
//! catalog snapshot and shared by the sessions that see the same servers.

use std::collections::HashMap;
use std::sync::Arc;

use rmcp::model::{Prompt, Resource, ResourceTemplate, Tool};
use switchboard::ViewFilter;
use switchboard::catalog::Catalog;
use switchboard::catalog::naming;
use switchboard::config::{Profile, ToolFilter};

/// The resource listing every server and its status.
pub const SERVERS_URI: &str = "switchboard://servers";

/// The prefix of rewritten resource URIs.
pub const URI_PREFIX: &str = "switchboard://";

/// The default limit of short names, in bytes: 64 (the agents' cap) less the longest prefix
/// an agent puts before them for an entry named `switchboard` (`mcp__switchboard__`, 18, in
/// Claude Code and Qwen Code), less one for Qwen Code and Gemini CLI, which cap at 63.
pub const SHORT_LIMIT: usize = 45;

/// How tools and prompts are named downstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Names {
    /// `<server>__<tool>` within this many bytes (a longer one is cut and given a hash).
    Short(usize),
    /// The catalog's `mcp__<server>__<tool>` names.
    Prefixed,
    /// The upstream's own names; a collision gets the catalog's hashed name.
    Bare,
}

impl Default for Names {
    fn default() -> Self {
        Names::Short(SHORT_LIMIT)
    }
}

impl Names {
    /// `short` (the default limit), `short:N` (at most N bytes), `prefixed` or `bare`.
    pub fn parse(word: &str) -> Option<Names> {
        match word {
            "short" => Some(Names::default()),
            "prefixed" => Some(Names::Prefixed),
            "bare" => Some(Names::Bare),
            _ => {
                let limit: usize = word.strip_prefix("short:")?.parse().ok()?;
                (naming::Scheme::MIN_SHORT..=naming::MAX_NAME_LEN).contains(&limit).then_some(Names::Short(limit))
            }
        }
    }

    /// What [`Names::parse`] takes back (`short:45`, `prefixed`, `bare`).
    pub fn word(self) -> String {
        match self {
            Names::Short(limit) => format!("short:{limit}"),
            Names::Prefixed => "prefixed".into(),
            Names::Bare => "bare".into(),
        }
    }
}

/// Which servers and tools a client sees.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    /// Only these servers (`--only`); empty: all.
    pub only: Vec<String>,
    /// A profile's servers and tool filter.
    pub profile: Option<Profile>,
}

/// A compiled [`Scope`]: the library's [`ViewFilter`], so a gateway client sees exactly what
/// a [`switchboard::HubView`] of the same profile would.
#[derive(Debug)]
pub(crate) struct Filter(ViewFilter);

impl Filter {
    pub(crate) fn new(scope: &Scope) -> Filter {
        let mut f = ViewFilter::all();
        let nothing = || Profile::new(Some(Vec::new()), ToolFilter::default());
        if !scope.only.is_empty() {
            let only = Profile::new(Some(scope.only.clone()), ToolFilter::default());
            f = f.narrowed(&only).unwrap_or_default();
        }
        if let Some(profile) = &scope.profile {
            // Config validation checked every glob; a profile that still fails shows nothing.
            f = match f.narrowed(profile) {
                Ok(narrower) => narrower,
                Err(_) => f.narrowed(&nothing()).unwrap_or_default(),
            };
        }
        Filter(f)
    }

    /// Whether the client sees `server` at all.
    pub(crate) fn server(&self, server: &str) -> bool {
        self.0.server(server)
    }

    /// Whether the client sees a tool (by model-visible name and raw `server/tool`).
    fn tool(&self, server: &str, name: &str, raw: &str) -> bool {
        self.0.tool(server, name, raw)
    }

    /// Whether the answer depends on who asks (a profile or `--only` narrows it).
    pub(crate) fn narrows(&self) -> bool {
        self.0.narrows()
    }
}

/// A tool as exposed: its downstream definition and where it goes.
#[derive(Debug, Clone)]
pub(crate) struct ExposedTool {
    /// The definition sent downstream (the upstream's, renamed).
    pub tool: Tool,
    /// The catalog's name (what [`switchboard::Hub::call_tool`] takes).
    pub catalog_name: String,
}

/// A prompt as exposed.
#[derive(Debug, Clone)]
pub(crate) struct ExposedPrompt {
    pub prompt: Prompt,
    pub server: String,
    pub raw: String,
}

/// Where a resource URI goes.
#[derive(Debug, Clone)]
pub(crate) struct Owner {
    pub server: String,
    pub uri: String,
}

/// The client's view of one catalog snapshot.
#[derive(Debug, Default)]
pub(crate) struct View {
    pub tools: Vec<ExposedTool>,
    tool_index: HashMap<String, usize>,
    /// Tools the policy denies: not listed, found by name.
    denied: Vec<ExposedTool>,
    denied_index: HashMap<String, usize>,
    /// Catalog name -> position in `tools`.
    catalog_index: HashMap<String, usize>,
    /// Whether `--tool-search auto:N` defers this view's definitions (decided on first need).
    pub deferred: std::sync::OnceLock<bool>,
    pub prompts: Vec<ExposedPrompt>,
    prompt_index: HashMap<String, usize>,
    pub resources: Vec<Resource>,
    pub templates: Vec<ResourceTemplate>,
    uri_index: HashMap<String, Owner>,
    /// `(literal prefix of the template, server, exposed template)`, longest prefix first.
    template_prefixes: Vec<(String, String, String)>,
    /// Servers that offered anything in this view.
    pub servers: Vec<String>,
}

impl View {
    /// `repair`: a tool whose input schema is not an object schema (which the spec requires,
    /// and which makes some clients refuse the whole list) is given the catalog's normalised
    /// one; off for a transparent gateway, which passes everything as the server sent it.
    /// `denied`: tools the policy denies, left out of the list (a model is not given what it
    /// can only fail on) and still found by name, so that a call to one gets the rule.
    pub(crate) fn build(
        catalog: &Catalog,
        filter: &Filter,
        names: Names,
        repair: bool,
        denied: impl Fn(&switchboard::catalog::ToolEntry) -> bool,
    ) -> View {
        let mut view = View::default();
        // Tools.
        let entries: Vec<_> =
            catalog.tools().iter().filter(|e| filter.tool(&e.server, &e.name, &e.tool.name)).collect();
        let mut raw_count: HashMap<&str, usize> = HashMap::new();
        for e in &entries {
            *raw_count.entry(e.tool.name.as_ref()).or_default() += 1;
        }
        let short = match names {
            Names::Short(limit) => naming::assign_with(
                naming::Scheme::short(limit),
                entries.iter().map(|e| (e.server.as_str(), e.tool.name.as_ref())),
            ),
            _ => Vec::new(),
        };
        for (i, e) in entries.into_iter().enumerate() {
            let exposed = match names {
                Names::Short(_) => short.get(i).filter(|n| !n.is_empty()).cloned().unwrap_or_else(|| e.name.clone()),
                Names::Prefixed => e.name.clone(),
                Names::Bare if raw_count.get(e.tool.name.as_ref()) == Some(&1) => e.tool.name.to_string(),
                Names::Bare => e.name.clone(),
            };
            let mut tool = e.tool.clone();
            tool.name = exposed.clone().into();
            if repair && tool.input_schema.get("type").and_then(|t| t.as_str()) != Some("object") {
                tool.input_schema = e.input_schema.clone();
            }
            if denied(e) {
                view.denied_index.insert(exposed, view.denied.len());
                view.denied.push(ExposedTool { tool, catalog_name: e.name.clone() });
                continue;
            }
            view.tool_index.insert(exposed, view.tools.len());
            view.catalog_index.insert(e.name.clone(), view.tools.len());
            view.tools.push(ExposedTool { tool, catalog_name: e.name.clone() });
        }
        // Prompts: the same naming rule over (server, prompt).
        let prompts: Vec<_> = catalog.prompts().iter().filter(|p| filter.server(&p.server)).collect();
        let pairs = prompts.iter().map(|p| (p.server.as_str(), p.prompt.name.as_str()));
        let scheme = match names {
            Names::Short(limit) => naming::Scheme::short(limit),
            _ => naming::Scheme::CATALOG,
        };
        let prefixed = naming::assign_with(scheme, pairs);
        let mut prompt_count: HashMap<&str, usize> = HashMap::new();
        for p in &prompts {
            *prompt_count.entry(p.prompt.name.as_str()).or_default() += 1;
        }
        for (p, prefixed) in prompts.into_iter().zip(prefixed) {
            if prefixed.is_empty() {
                continue;
            }
            let exposed = match names {
                Names::Bare if prompt_count.get(p.prompt.name.as_str()) == Some(&1) => p.prompt.name.clone(),
                _ => prefixed,
            };
            let mut prompt = p.prompt.clone();
            prompt.name = exposed.clone();
            view.prompt_index.insert(exposed, view.prompts.len());
            view.prompts.push(ExposedPrompt { prompt, server: p.server.clone(), raw: p.prompt.name.clone() });
        }
        // Resources and templates: URIs kept when unique.
        let resources: Vec<_> = catalog.resources().iter().filter(|r| filter.server(&r.server)).collect();
        let mut uri_count: HashMap<&str, usize> = HashMap::new();
        for r in &resources {
            *uri_count.entry(r.resource.uri.as_str()).or_default() += 1;
        }
        for r in resources {
            let uri = r.resource.uri.clone();
            let exposed = if uri_count.get(uri.as_str()) == Some(&1) { uri.clone() } else { rewrite(&r.server, &uri) };
            let mut resource = r.resource.clone();
            resource.uri = exposed.clone();
            view.uri_index.insert(exposed, Owner { server: r.server.clone(), uri });
            view.resources.push(resource);
        }
        let templates: Vec<_> = catalog.resource_templates().iter().filter(|t| filter.server(&t.server)).collect();
        let mut template_count: HashMap<&str, usize> = HashMap::new();
        for t in &templates {
            *template_count.entry(t.template.uri_template.as_str()).or_default() += 1;
        }
        for t in templates {
            let raw = t.template.uri_template.clone();
            let exposed =
                if template_count.get(raw.as_str()) == Some(&1) { raw.clone() } else { rewrite(&t.server, &raw) };
            let literal = exposed.split('{').next().unwrap_or_default().to_string();
            view.template_prefixes.push((literal, t.server.clone(), exposed.clone()));
            let mut template = t.template.clone();
            template.uri_template = exposed;
            view.templates.push(template);
        }
        view.template_prefixes.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.cmp(b)));
        view.servers = catalog
            .tools()
            .iter()
            .map(|e| e.server.as_str())
            .chain(catalog.prompts().iter().map(|p| p.server.as_str()))
            .chain(catalog.resources().iter().map(|r| r.server.as_str()))
            .filter(|s| filter.server(s))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .map(str::to_string)
            .collect();
        view
    }

    /// Which lists differ from `older`: (tools, prompts, resources and templates).
    pub(crate) fn changes(&self, older: &View) -> (bool, bool, bool) {
        let tools = !self.tools.iter().map(|t| &t.tool).eq(older.tools.iter().map(|t| &t.tool));
        let prompts = !self.prompts.iter().map(|p| &p.prompt).eq(older.prompts.iter().map(|p| &p.prompt));
        // The servers' status resource is the gateway's own, listed by each gateway in a chain
        // (an attached one shows its hub's): not a change of the servers' lists.
        let ours = |r: &&Resource| r.uri != SERVERS_URI;
        let resources = !self.resources.iter().filter(ours).eq(older.resources.iter().filter(ours))
            || self.templates != older.templates;
        (tools, prompts, resources)
    }

    /// A digest of each list as [`View::changes`] compares them (`tools`, `prompts`,
    /// `resources`): what a session's memory keeps of what its client was given, so that a
    /// replica taking the session over can tell which lists differ now.
    pub(crate) fn digests(&self) -> [(&'static str, String); 3] {
        use sha2::Digest;
        fn of<T: serde::Serialize>(items: impl Iterator<Item = T>) -> String {
            let mut hash = sha2::Sha256::new();
            for item in items {
                hash.update(serde_json::to_vec(&item).unwrap_or_default());
                hash.update([0]);
            }
            hash.finalize().iter().take(16).map(|b| format!("{b:02x}")).collect()
        }
        let ours = |r: &&Resource| r.uri != SERVERS_URI;
        let resources = of(self
            .resources
            .iter()
            .filter(ours)
            .map(serde_json::to_value)
            .map(Result::unwrap_or_default)
            .chain(self.templates.iter().map(serde_json::to_value).map(Result::unwrap_or_default)));
        [
            ("tools", of(self.tools.iter().map(|t| &t.tool))),
            ("prompts", of(self.prompts.iter().map(|p| &p.prompt))),
            ("resources", resources),
        ]
    }

    /// A tool by its name in this view, listed or denied.
    pub(crate) fn tool(&self, name: &str) -> Option<&ExposedTool> {
        match self.tool_index.get(name) {
            Some(&i) => self.tools.get(i),
            None => self.denied_index.get(name).and_then(|&i| self.denied.get(i)),
        }
    }

    /// The name a catalog tool has in this view, if the view shows it.
    pub(crate) fn exposed_name(&self, catalog_name: &str) -> Option<&str> {
        self.catalog_index.get(catalog_name).and_then(|&i| self.tools.get(i)).map(|t| t.tool.name.as_ref())
    }

    pub(crate) fn prompt(&self, name: &str) -> Option<&ExposedPrompt> {
        self.prompt_index.get(name).map(|&i| &self.prompts[i])
    }

    /// The server and original URI behind an exposed URI: a listed resource, a rewritten URI,
    /// or one a template of a single server produces.
    pub(crate) fn resource_owner(&self, uri: &str) -> Option<Owner> {
        if let Some(owner) = self.uri_index.get(uri) {
            return Some(owner.clone());
        }
        if let Some((server, original)) = unrewrite(uri)
            && self.servers.iter().any(|s| s == server)
        {
            return Some(Owner { server: server.to_string(), uri: original.to_string() });
        }
        for (prefix, server, exposed) in &self.template_prefixes {
            if !prefix.is_empty() && uri.starts_with(prefix.as_str()) {
                let uri = match unrewrite(exposed) {
                    Some((_, _)) => unrewrite(uri).map_or(uri, |(_, o)| o),
                    None => uri,
                };
                return Some(Owner { server: server.clone(), uri: uri.to_string() });
            }
        }
        None
    }

    /// The server owning a template by its exposed URI template.
    pub(crate) fn template_owner(&self, exposed: &str) -> Option<Owner> {
        self.template_prefixes.iter().find(|(_, _, t)| t == exposed).map(|(_, server, t)| Owner {
            server: server.clone(),
            uri: unrewrite(t).map_or(t.as_str(), |(_, o)| o).to_string(),
        })
    }

    /// The URI a client knows for `(server, uri)`.
    pub(crate) fn exposed_uri(&self, server: &str, uri: &str) -> String {
        let rewritten = rewrite(server, uri);
        if self.uri_index.contains_key(&rewritten) { rewritten } else { uri.to_string() }
    }
}

/// `switchboard://<server>/<uri>`.
pub fn rewrite(server: &str, uri: &str) -> String {
    format!("{URI_PREFIX}{server}/{uri}")
}

/// The server and original URI of a rewritten URI.
pub fn unrewrite(uri: &str) -> Option<(&str, &str)> {
    let rest = uri.strip_prefix(URI_PREFIX)?;
    let (server, original) = rest.split_once('/')?;
    (!server.is_empty() && !original.is_empty()).then_some((server, original))
}

/// A view cached per catalog snapshot.
#[derive(Debug, Default)]
pub(crate) struct Cached {
    pub(crate) catalog: Option<Arc<Catalog>>,
    /// The names it was built with.
    pub(crate) names: Names,
    pub(crate) view: Arc<View>,
}

/// Views kept at most (one per profile, names and, where rules tell callers apart, caller).
pub(crate) const MAX_VIEWS: usize = 1024;

/// Makes room for `key` in `views`: past [`MAX_VIEWS`], views of an older catalog go first,
/// then all (a view dropped is built again when asked), so a gateway with many callers keeps
/// a bounded number.
pub(crate) fn make_room<K: Eq + std::hash::Hash>(
    views: &mut std::collections::HashMap<K, Cached>,
    key: &K,
    current: &Arc<Catalog>,
) {
    if views.len() < MAX_VIEWS || views.contains_key(key) {
        return;
    }
    views.retain(|_, c| c.catalog.as_ref().is_some_and(|kept| Arc::ptr_eq(kept, current)));
    if views.len() >= MAX_VIEWS {
        views.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back_what_they_write() {
        for names in [Names::default(), Names::Short(30), Names::Prefixed, Names::Bare] {
            assert_eq!(Names::parse(&names.word()), Some(names));
        }
        assert_eq!(Names::parse("short"), Some(Names::Short(SHORT_LIMIT)));
        assert_eq!(Names::parse("short:3"), None);
        assert_eq!(Names::parse("short:65"), None);
        assert_eq!(Names::parse("long"), None);
    }

    #[test]
    fn views_are_kept_up_to_a_bound_older_catalogs_first() {
        let (old, now) = (Arc::new(Catalog::default()), Arc::new(Catalog::default()));
        let cached = |c: &Arc<Catalog>| Cached { catalog: Some(c.clone()), ..Cached::default() };
        let mut views = std::collections::HashMap::new();
        for i in 0..MAX_VIEWS {
            views.insert(i, cached(if i % 2 == 0 { &old } else { &now }));
        }
        make_room(&mut views, &0, &now);
        assert_eq!(views.len(), MAX_VIEWS, "a key held already needs no room");
        make_room(&mut views, &MAX_VIEWS, &now);
        assert_eq!(views.len(), MAX_VIEWS / 2, "the older catalog's views went");
        assert!(views.values().all(|c| c.catalog.as_ref().is_some_and(|k| Arc::ptr_eq(k, &now))));
        for i in MAX_VIEWS..MAX_VIEWS * 2 {
            make_room(&mut views, &i, &now);
            views.insert(i, cached(&now));
        }
        assert!(views.len() <= MAX_VIEWS, "{}", views.len());
    }

    #[test]
    fn rewritten_uris_go_back() {
        let r = rewrite("docs", "file:///a/b");
        assert_eq!(r, "switchboard://docs/file:///a/b");
        assert_eq!(unrewrite(&r), Some(("docs", "file:///a/b")));
        assert_eq!(unrewrite("switchboard://servers"), None);
        assert_eq!(unrewrite("file:///x"), None);
    }

    #[test]
    fn filters_match_visible_and_raw_names() {
        let profile = Profile::new(
            Some(vec!["gh".into(), "docs".into()]),
            switchboard::config::ToolFilter::new(vec![], vec!["*delete*".into(), "docs/write".into()]),
        );
        let f = Filter::new(&Scope { only: vec![], profile: Some(profile) });
        assert!(f.tool("gh", "mcp__gh__create_issue", "create_issue"));
        assert!(!f.tool("gh", "mcp__gh__delete_repo", "delete_repo"));
        assert!(!f.tool("docs", "mcp__docs__write", "write"));
        assert!(f.tool("docs", "mcp__docs__read", "read"));
        assert!(!f.tool("other", "mcp__other__read", "read"));
        assert!(f.narrows());
        assert!(!Filter::new(&Scope::default()).narrows());
    }
}
