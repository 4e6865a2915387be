//! Who makes a request: on a protected front (`identity`), the principal its guard verified and
//! put in the HTTP request's extensions, which rmcp hands the handler with the request parts.

use rmcp::service::{RequestContext, RoleServer};

/// Who signed in for this request, on a protected gateway (`None`: no one signs in here).
pub(crate) fn principal(ctx: &RequestContext<RoleServer>) -> Option<switchboard::identity::Principal> {
    principal_in(&ctx.extensions)
}

/// The same, from a message's extensions (a notification's).
pub(crate) fn principal_in(extensions: &rmcp::model::Extensions) -> Option<switchboard::identity::Principal> {
    extensions.get::<http::request::Parts>()?.extensions.get::<switchboard::identity::Principal>().cloned()
}
