//! What the hub says of each server: [`ServerInfo`] (`Hub::servers`), and the status of a live
//! connection (its lists counted through the server's tool filter, the tools its transport
//! left out).

use std::path::PathBuf;

use serde::Serialize;

use super::slot::Slot;
use crate::catalog::{CompiledFilter, ServerLists};
use crate::config::{Scope, TransportConfig};
use crate::connection::Connection;
use crate::status::{Counts, ServerStatus};

/// One server as the hub sees it.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct ServerInfo {
    /// Its name.
    pub name: String,
    /// Where it was configured.
    pub scope: Scope,
    /// The file it came from.
    pub source: PathBuf,
    /// `stdio` or `http`.
    pub transport: &'static str,
    /// What runs or where it connects: the command line or URL as written in the file
    /// (`${VAR}` unexpanded), never env values or headers.
    pub target: String,
    /// Its status.
    pub status: ServerStatus,
    /// What the person can do so that it works (trust it, log in), from its status
    /// ([`ServerStatus::remedy`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remedy: Option<crate::Remedy>,
    /// Its tools are always given in full where a host defers tool definitions behind a
    /// search (`"always_load": true`, as Claude Code's `alwaysLoad`).
    pub always_load: bool,
    /// What screening its definitions found ([`crate::screen`]): hidden characters removed
    /// from its lists and instructions, with what they said, for the person.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<crate::screen::Finding>,
    /// Its sandbox (a stdio server's): on or off, what it may reach, what it was refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::sandbox::SandboxInfo>,
}

pub(super) fn info(slot: &Slot) -> ServerInfo {
    let entry = slot.entry();
    let (transport, target) = match slot.config() {
        Some(c) => (if matches!(c.transport, TransportConfig::Stdio(_)) { "stdio" } else { "http" }, c.target()),
        None => ("-", String::new()),
    };
    let (status, findings) = {
        let st = slot.state();
        (st.status.clone(), st.findings.to_vec())
    };
    ServerInfo {
        name: slot.name.clone(),
        scope: entry.scope(),
        source: entry.source().to_path_buf(),
        transport,
        target,
        remedy: status.remedy(&slot.name),
        status,
        always_load: slot.config().is_some_and(|c| c.always_load),
        findings,
        sandbox: slot.config().and_then(|c| match &c.transport {
            TransportConfig::Stdio(s) => Some(crate::sandbox::SandboxInfo::of(s.sandbox.as_ref(), &slot.refusals)),
            _ => None,
        }),
    }
}

fn counts(lists: &ServerLists, filter: &CompiledFilter) -> Counts {
    Counts {
        tools: lists.tools.iter().filter(|t| filter.allows(&t.name)).count(),
        resources: lists.resources.len(),
        resource_templates: lists.resource_templates.len(),
        prompts: lists.prompts.len(),
    }
}

pub(super) fn connected_status(conn: &Connection, lists: &ServerLists, filter: &CompiledFilter) -> ServerStatus {
    let id = &conn.identity;
    ServerStatus::Connected {
        protocol_version: id.protocol_version.clone(),
        server_name: id.name.clone(),
        server_version: id.version.clone(),
        instructions: id.instructions.clone(),
        counts: counts(lists, filter),
        diagnostics: left_out(conn),
    }
}

/// Each tool the transport left out, and why.
fn left_out(conn: &Connection) -> Vec<String> {
    let Some(left_out) = &conn.left_out else { return Vec::new() };
    left_out
        .tools()
        .into_iter()
        .map(|(tool, why)| {
            format!("tool `{tool}` left out: {why} (SEP-2243: it could not be called as its server expects)")
        })
        .collect()
}
