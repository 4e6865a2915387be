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

/// The access token the request carried (`Authorization: Bearer`), for a caller whose own
/// servers exchange it ([`switchboard::Hub::set_caller_token`]).
pub(crate) fn bearer(ctx: &RequestContext<RoleServer>) -> Option<&str> {
    let parts = ctx.extensions.get::<http::request::Parts>()?;
    let value = parts.headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}
