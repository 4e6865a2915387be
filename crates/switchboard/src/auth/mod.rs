//! OAuth 2.1 for remote servers. rmcp's `auth` feature does the protocol (metadata discovery,
//! client registration, PKCE, token exchange and refresh); this module is what a host adds:
//! the token store ([`store`]), the login flow with its loopback callback, and the
//! connection's authorised HTTP client.

pub mod callback;
pub(crate) mod connect;
pub mod dpop;
mod grants;
pub mod http;
mod list;
pub mod login;
pub mod store;

pub use callback::{CALLBACK_PATH, Callback, CallbackError, Responder, page};
pub use grants::client_credentials;
pub use list::{LoginInfo, forget_client, list_logins, logout};
pub use login::{Login, LoginError, begin};
pub use store::{ClientRecord, Entry, Secret, StoreError, TokenStore};

/// The `scope` a `WWW-Authenticate` challenge asks for (`Bearer error="insufficient_scope",
/// scope="files:read files:write"`), if it names one.
pub(crate) fn challenge_scope(challenge: &str) -> Option<String> {
    let mut from = 0;
    while let Some(i) = challenge[from..].find("scope=") {
        let at = from + i;
        from = at + "scope=".len();
        // `scope=` must start a parameter, not end another name such as `x_scope=`.
        if at > 0 && !challenge[..at].ends_with([' ', ',', '\t']) {
            continue;
        }
        let rest = &challenge[from..];
        let value = match rest.strip_prefix('"') {
            Some(quoted) => &quoted[..quoted.find('"')?],
            None => rest.split([',', ' ']).next().unwrap_or_default(),
        };
        return (!value.is_empty()).then(|| value.to_string());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::challenge_scope;

    #[test]
    fn the_scope_of_a_challenge() {
        let c = r#"Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="https://x/""#;
        assert_eq!(challenge_scope(c).as_deref(), Some("files:read files:write"));
        assert_eq!(challenge_scope("Bearer scope=admin, error=x").as_deref(), Some("admin"));
        assert_eq!(challenge_scope(r#"Bearer realm="a", x_scope="no""#), None);
        assert_eq!(challenge_scope(r#"Bearer x_scope="no", scope="yes""#).as_deref(), Some("yes"));
        assert_eq!(challenge_scope(r#"Bearer scope="unterminated"#), None);
        assert_eq!(challenge_scope("Bearer"), None);
    }
}
