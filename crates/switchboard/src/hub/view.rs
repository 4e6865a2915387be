//! Views: the same hub, narrowed for one caller (a sub-agent, a gateway client with a
//! profile). A view has the servers and tools a [`Profile`] lets through — servers by name,
//! tools by globs over the model-visible name, `server/tool` and the raw name — and nothing
//! else: calls, reads and prompts outside it fail with [`Error::OutsideView`] before anything
//! is sent. A view of a view passes only what both pass, so a view can never be wider than
//! the one it was made from. Views share the hub's connections, catalog and policy.

use std::sync::Arc;

use rmcp::model::{GetPromptResult, JsonObject, ReadResourceResult};

use super::{CallOptions, Hub, ServerInfo, ToolOutput};
use crate::catalog::ToolEntry;
use crate::config::Profile;
use crate::error::Error;
use crate::glob::GlobList;

/// One compiled [`Profile`].
#[derive(Debug)]
struct Compiled {
    servers: Option<Vec<String>>,
    allow: Option<GlobList>,
    deny: Option<GlobList>,
}

fn globs(list: &[String]) -> Result<Option<GlobList>, Error> {
    if list.is_empty() {
        return Ok(None);
    }
    GlobList::new(list).map(Some).map_err(|message| Error::Invalid { message: format!("tool globs: {message}") })
}

/// Which servers and tools a view lets through: every profile it was made of must.
#[derive(Debug, Clone, Default)]
pub struct ViewFilter {
    layers: Arc<Vec<Compiled>>,
}

impl ViewFilter {
    /// A filter that lets everything through.
    pub fn all() -> Self {
        ViewFilter::default()
    }

    /// This filter narrowed by `profile` (never widened). Fails on a glob that does not
    /// compile.
    pub fn narrowed(&self, profile: &Profile) -> Result<Self, Error> {
        let compiled = Compiled {
            servers: profile.servers.clone(),
            allow: globs(&profile.tools.allow)?,
            deny: globs(&profile.tools.deny)?,
        };
        let mut layers: Vec<Compiled> = Vec::with_capacity(self.layers.len() + 1);
        for l in self.layers.iter() {
            layers.push(Compiled { servers: l.servers.clone(), allow: l.allow.clone(), deny: l.deny.clone() });
        }
        layers.push(compiled);
        Ok(ViewFilter { layers: Arc::new(layers) })
    }

    /// Whether `server` is seen at all.
    pub fn server(&self, server: &str) -> bool {
        self.layers.iter().all(|l| l.servers.as_ref().is_none_or(|list| list.iter().any(|s| s == server)))
    }

    /// Whether a tool is seen: by its model-visible `name`, `server/raw` and `raw`.
    pub fn tool(&self, server: &str, name: &str, raw: &str) -> bool {
        if !self.server(server) {
            return false;
        }
        let qualified = format!("{server}/{raw}");
        let hit = |set: &GlobList| set.is_match(name) || set.is_match(&qualified) || set.is_match(raw);
        self.layers.iter().all(|l| l.allow.as_ref().is_none_or(hit) && !l.deny.as_ref().is_some_and(hit))
    }

    /// Whether a catalog entry is seen.
    pub fn entry(&self, entry: &ToolEntry) -> bool {
        self.tool(&entry.server, &entry.name, &entry.tool.name)
    }

    /// Whether it lets less than everything through.
    pub fn narrows(&self) -> bool {
        self.layers.iter().any(|l| l.servers.is_some() || l.allow.is_some() || l.deny.is_some())
    }
}

/// The hub as one caller may use it (a sub-agent, a gateway client with a profile): the servers
/// and tools its profiles let through and nothing else, sharing the hub's connections, catalog
/// and policy; made by [`Hub::view`].
#[derive(Clone)]
pub struct HubView {
    hub: Hub,
    filter: ViewFilter,
}

impl std::fmt::Debug for HubView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubView").field("filter", &self.filter).finish_non_exhaustive()
    }
}

impl Hub {
    /// A view of this hub with only what `profile` lets through (a gateway profile's shape:
    /// `servers` and tool globs).
    pub fn view(&self, profile: &Profile) -> Result<HubView, Error> {
        Ok(HubView { hub: self.clone(), filter: ViewFilter::all().narrowed(profile)? })
    }
}

impl HubView {
    /// A narrower view: only what this view and `profile` both let through.
    pub fn view(&self, profile: &Profile) -> Result<HubView, Error> {
        Ok(HubView { hub: self.hub.clone(), filter: self.filter.narrowed(profile)? })
    }

    /// What it lets through.
    pub fn filter(&self) -> &ViewFilter {
        &self.filter
    }

    /// The servers it sees, with their status.
    pub fn servers(&self) -> Vec<ServerInfo> {
        self.hub.servers().into_iter().filter(|s| self.filter.server(&s.name)).collect()
    }

    /// The tools it sees, in catalog order.
    pub fn tools(&self) -> Vec<ToolEntry> {
        self.hub.catalog().tools().iter().filter(|t| self.filter.entry(t)).cloned().collect()
    }

    /// Calls a tool it sees (as [`Hub::call_tool`]); any other fails with
    /// [`Error::OutsideView`], nothing sent.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        options: CallOptions,
    ) -> Result<ToolOutput, Error> {
        let catalog = self.hub.catalog();
        if let Some(entry) = catalog.tool(name)
            && !self.filter.entry(entry)
        {
            return Err(Error::OutsideView { what: format!("tool `{}`", entry.name) });
        }
        // Unknown names get the hub's own answer (with its suggestions), but only of tools
        // this view sees.
        if catalog.tool(name).is_none() {
            return Err(Error::UnknownTool { name: name.to_string(), meant: None });
        }
        self.hub.call_tool(name, arguments, options).await
    }

    /// Reads a resource of a server it sees.
    pub async fn read_resource(&self, server: &str, uri: &str) -> Result<ReadResourceResult, Error> {
        self.check_server(server)?;
        self.hub.read_resource(server, uri).await
    }

    /// Gets a prompt of a server it sees.
    pub async fn get_prompt(
        &self,
        server: &str,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<GetPromptResult, Error> {
        self.check_server(server)?;
        self.hub.get_prompt(server, name, arguments).await
    }

    fn check_server(&self, server: &str) -> Result<(), Error> {
        if self.filter.server(server) { Ok(()) } else { Err(Error::OutsideView { what: format!("server `{server}`") }) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ToolFilter;

    fn profile(servers: Option<&[&str]>, allow: &[&str], deny: &[&str]) -> Profile {
        let s = |l: &[&str]| l.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        Profile::new(servers.map(s), ToolFilter::new(s(allow), s(deny)))
    }

    #[test]
    fn a_view_of_a_view_is_never_wider() {
        let docs = ViewFilter::all().narrowed(&profile(Some(&["docs", "gh"]), &[], &["*delete*"])).unwrap_or_default();
        assert!(docs.tool("docs", "mcp__docs__search", "search"));
        assert!(!docs.tool("docs", "mcp__docs__delete_page", "delete_page"));
        assert!(!docs.server("fs"));
        // Asking for more (every server, every tool) gets no more.
        let wider = docs.narrowed(&profile(None, &["*"], &[])).unwrap_or_default();
        assert!(!wider.server("fs") && !wider.tool("docs", "mcp__docs__delete_page", "delete_page"));
        let narrower = docs.narrowed(&profile(Some(&["gh"]), &["gh/*"], &[])).unwrap_or_default();
        assert!(!narrower.server("docs") && narrower.tool("gh", "mcp__gh__issues", "issues"));
        assert!(!ViewFilter::all().narrows() && docs.narrows());
        assert!(ViewFilter::all().narrowed(&profile(None, &["a[", ""], &[])).is_err());
    }
}
