//! Who decides which roots (folders) a server sees when it asks (`roots/list`, or a `roots/list`
//! in a 2026-07-28 `input_required` round). By default the hub offers its own
//! ([`HubOptions::roots`](crate::HubOptions::roots), else the project root); a host that
//! stands for another client, such as a gateway, gives a [`RootsSource`] that asks that client.

// Roots are deprecated by SEP-2577 (2026-07-28), and still what servers of every revision ask.
#![allow(deprecated)]

use std::future::Future;
use std::pin::Pin;

use rmcp::model::ListRootsResult;

/// Answers servers' `roots/list`.
pub trait RootsSource: Send + Sync + 'static {
    /// The roots `server` may see now; `None`: the hub's own. `input_key` is the server's key
    /// when the request is part of an `input_required` round.
    fn roots(
        &self,
        server: &str,
        input_key: Option<String>,
    ) -> Pin<Box<dyn Future<Output = Option<ListRootsResult>> + Send + '_>>;
}
