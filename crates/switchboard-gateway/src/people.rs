//! What the gateway does for each person who signs in, beyond their calls: asks their
//! sessions to sign in to their own servers (or give their values) when a session starts or a
//! server comes to need it, says an error of their own server that needs them as `-32042`
//! with the sign-in, and lists the `sign_in` tool while any of their servers waits for them
//! (see [`crate::signin`] for the sign-ins themselves).

use rmcp::service::{Peer, RequestContext, RoleServer};
use switchboard::Hub;

use crate::{Shared, caller, servers, signin};

impl Shared {
    /// Asks `principal`'s sessions that take URL elicitation (`to`, a session that just
    /// started, else all of theirs) to sign in to each of their own servers that needs a login
    /// (all of theirs only for a sign-in not under way already: each is asked once).
    pub(crate) async fn ask_sign_ins(
        &self,
        principal: &switchboard::identity::Principal,
        to: Option<Peer<RoleServer>>,
    ) {
        let Some(person) = self.hub.person(principal) else { return };
        let key = principal.key();
        let fresh_only = to.is_none();
        let peers: Vec<_> = match to {
            Some(peer) => vec![peer],
            None => self
                .sessions()
                .values()
                .filter(|s| s.caller.as_ref().is_some_and(|c| c.key() == key))
                .filter_map(|s| s.peer.clone())
                .collect(),
        };
        let peers: Vec<_> =
            peers.into_iter().filter(|p| p.peer_info().is_some_and(|i| i.protocol_version.has_initialize())).collect();
        if peers.is_empty() {
            return;
        }
        let mut asks = Vec::new();
        let missing = person.inputs_missing();
        if !missing.is_empty() {
            asks.extend(self.signins.start_inputs(&person, principal, missing).await);
        }
        for server in person.servers().into_iter().filter(|s| signin::needs_login(&s.status)) {
            asks.extend(self.signins.start(&person, principal, &server.name).await);
        }
        for started in asks.iter().filter(|s| s.new || !fresh_only) {
            for peer in &peers {
                self.signins.ask(peer, started).await;
            }
        }
    }

    /// What `principal` has to do before their own servers work: each server that needs their
    /// login, and their servers that wait for their values (by server).
    fn sign_ins_needed(&self, principal: &switchboard::identity::Principal) -> Option<(Hub, Vec<String>, Vec<String>)> {
        let person = self.hub.person(principal)?;
        let logins: Vec<String> =
            person.servers().into_iter().filter(|s| signin::needs_login(&s.status)).map(|s| s.name).collect();
        let mut waiting: Vec<String> = person.inputs_missing().into_iter().flat_map(|m| m.servers).collect();
        waiting.sort();
        waiting.dedup();
        (!logins.is_empty() || !waiting.is_empty()).then_some((person, logins, waiting))
    }

    /// The `sign_in` tool, for a caller who has something to do before their own servers work.
    pub(crate) fn sign_in_tool(
        &self,
        principal: Option<&switchboard::identity::Principal>,
    ) -> Option<rmcp::model::Tool> {
        let (_, logins, waiting) = self.sign_ins_needed(principal?)?;
        Some(signin::tool(&logins, &waiting))
    }

    /// A call of the `sign_in` tool: the addresses to open, each sign-in (or request for
    /// values) started; the session is told as each is done.
    pub(crate) async fn sign_in_call(&self, ctx: &RequestContext<RoleServer>) -> rmcp::model::CallToolResult {
        let Some(principal) = caller::principal(ctx) else { return signin::nothing_to_do() };
        // Their servers still starting (their hub made just now, at this replica) are waited
        // for, within the bound a request naming something not yet there waits (`START_WAIT`):
        // whether one needs their login is known then.
        if let Some(person) = self.hub.person(&principal) {
            let _ = tokio::time::timeout(crate::START_WAIT, person.ready()).await;
        }
        let Some((person, logins, waiting)) = self.sign_ins_needed(&principal) else { return signin::nothing_to_do() };
        let mut started = Vec::new();
        if !waiting.is_empty() {
            let missing = person.inputs_missing();
            started.extend(self.signins.start_inputs(&person, &principal, missing).await);
        }
        for server in &logins {
            started.extend(self.signins.start(&person, &principal, server).await);
        }
        for s in &started {
            self.signins.told(s, &ctx.peer);
        }
        signin::result(&started)
    }

    /// An error of a request as its client gets it: a server of the caller's own that needs
    /// their login is `-32042` with the sign-in (see [`signin`]).
    pub(crate) async fn said_error(&self, e: switchboard::Error, ctx: &RequestContext<RoleServer>) -> rmcp::ErrorData {
        match self.sign_in_error(&e, ctx).await {
            Some(signin) => signin,
            None => servers::error(e),
        }
    }

    /// `-32042` with the sign-in, for an error that says the caller's own server needs their
    /// login (or their values); the session is told when it is done.
    pub(crate) async fn sign_in_error(
        &self,
        e: &switchboard::Error,
        ctx: &RequestContext<RoleServer>,
    ) -> Option<rmcp::ErrorData> {
        let caller = caller::principal(ctx);
        let principal = caller.as_ref()?;
        let started = self.sign_in_for(e, principal).await?;
        self.signins.told(&started, &ctx.peer);
        Some(started.error())
    }

    /// The sign-in (or the request for values) an error of `principal`'s own server calls for.
    async fn sign_in_for(
        &self,
        e: &switchboard::Error,
        principal: &switchboard::identity::Principal,
    ) -> Option<signin::Started> {
        match (e.remedy(), e) {
            (Some(switchboard::Remedy::Login { server }), _) if self.hub.is_personal(&server) => {
                let person = self.hub.person(principal)?;
                self.signins.start(&person, principal, &server).await
            }
            // Their server waits for values only they have.
            (_, switchboard::Error::NotConnected { server, .. }) if self.hub.is_personal(server) => {
                let person = self.hub.person(principal)?;
                let missing: Vec<_> =
                    person.inputs_missing().into_iter().filter(|m| m.servers.contains(server)).collect();
                if missing.is_empty() {
                    return None;
                }
                self.signins.start_inputs(&person, principal, missing).await
            }
            _ => None,
        }
    }
}
