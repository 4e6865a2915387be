//! OAuth 2.1 for remote servers. rmcp's `auth` feature does the protocol (metadata discovery,
//! client registration, PKCE, token exchange and refresh); this module is what a host adds:
//! the token store ([`store`]), the login flow with its loopback callback, and the
//! connection's authorised HTTP client.

pub mod callback;
mod list;
pub mod login;
pub mod store;

pub use callback::{CALLBACK_PATH, Callback, CallbackError, Responder, page};
pub use list::{LoginInfo, list_logins, logout};
pub use login::{Login, LoginError, begin, client_credentials};
pub use store::{ClientRecord, Entry, StoreError, TokenStore};
