//! Listing every page of a server's tools, resources, templates or prompts, bounded: a server
//! that pages on without end (or hands back a cursor it gave before) cannot hold the host in a
//! loop or fill its memory. At most [`MAX_ITEMS`] items and [`MAX_PAGES`] pages per list;
//! beyond that the listing stops with [`Paged::cut`] saying why. One lister for the four lists
//! ([`list`]), whoever sends its pages: the start-up's connection under its deadline, the
//! hub's request path for a refresh.

use rmcp::model::{
    ClientRequest, ListPromptsRequest, ListResourceTemplatesRequest, ListResourcesRequest, ListToolsRequest,
    PaginatedRequestParams, Prompt, Resource, ResourceTemplate, ServerResult, Tool,
};

/// The most items one list takes from a server.
pub const MAX_ITEMS: usize = 100_000;
/// The most pages one list follows.
pub const MAX_PAGES: usize = 10_000;

/// A list, and why it stopped short if it did.
struct Paged<T> {
    pub items: Vec<T>,
    pub cut: Option<String>,
}

/// A kind of item a server lists in pages: the request for a page, and the page in its answer.
pub(crate) trait Listed: Sized {
    /// The method, for messages.
    const WHAT: &'static str;
    /// The request for the page after `params`' cursor (the first without).
    fn request(params: Option<PaginatedRequestParams>) -> ClientRequest;
    /// The items and the next cursor of an answer; `None` for an answer of another kind.
    fn page(result: ServerResult) -> Option<(Vec<Self>, Option<String>)>;
}

/// A request of rmcp's `RequestOptionalParam` shape for a page.
macro_rules! listed {
    ($item:ty, $what:literal, $request:ident, $result:ident, $field:ident) => {
        impl Listed for $item {
            const WHAT: &'static str = $what;
            fn request(params: Option<PaginatedRequestParams>) -> ClientRequest {
                let mut request = $request::default();
                request.params = params;
                ClientRequest::$request(request)
            }
            fn page(result: ServerResult) -> Option<(Vec<Self>, Option<String>)> {
                match result {
                    ServerResult::$result(r) => Some((r.$field, r.next_cursor)),
                    _ => None,
                }
            }
        }
    };
}

listed!(Tool, "tools/list", ListToolsRequest, ListToolsResult, tools);
listed!(Resource, "resources/list", ListResourcesRequest, ListResourcesResult, resources);
listed!(
    ResourceTemplate,
    "resources/templates/list",
    ListResourceTemplatesRequest,
    ListResourceTemplatesResult,
    resource_templates
);
listed!(Prompt, "prompts/list", ListPromptsRequest, ListPromptsResult, prompts);

/// Every page of `server`'s list of `T`, each page's request sent by `send`, within the
/// bounds (where it stopped short, said in the log); `unexpected` is the error for an answer
/// of another kind.
pub(crate) async fn list<T: Listed, E, F, Fut>(
    server: &str,
    mut send: F,
    unexpected: impl Fn() -> E,
) -> Result<Vec<T>, E>
where
    F: FnMut(ClientRequest) -> Fut,
    Fut: std::future::Future<Output = Result<ServerResult, E>>,
{
    let unexpected = &unexpected;
    let paged = all_pages(T::WHAT, |params| {
        let answer = send(T::request(params));
        async move { T::page(answer.await?).ok_or_else(unexpected) }
    })
    .await?;
    if let Some(why) = paged.cut {
        tracing::warn!(server = %server, "{why}");
    }
    Ok(paged.items)
}

/// Follows `page` (a request for one page: its items and the next cursor) from the first page
/// to the last, within the bounds. `what` names the list for the message.
async fn all_pages<T, E, F, Fut>(what: &str, mut page: F) -> Result<Paged<T>, E>
where
    F: FnMut(Option<PaginatedRequestParams>) -> Fut,
    Fut: std::future::Future<Output = Result<(Vec<T>, Option<String>), E>>,
{
    let mut items = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut cursor: Option<String> = None;
    for pages in 1.. {
        let params = cursor.clone().map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let (mut got, next) = page(params).await?;
        let room = MAX_ITEMS - items.len();
        if got.len() > room {
            got.truncate(room);
            items.extend(got);
            return Ok(Paged {
                items,
                cut: Some(format!("{what}: the server offers more than {MAX_ITEMS}: the rest are left out")),
            });
        }
        items.extend(got);
        let Some(next) = next else { return Ok(Paged { items, cut: None }) };
        if !seen.insert(next.clone()) {
            return Ok(Paged {
                items,
                cut: Some(format!("{what}: the server's pages loop (a cursor came back): stopped after {pages} pages")),
            });
        }
        if pages >= MAX_PAGES {
            return Ok(Paged { items, cut: Some(format!("{what}: more than {MAX_PAGES} pages: stopped")) });
        }
        cursor = Some(next);
    }
    Ok(Paged { items, cut: None })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block<F: std::future::Future>(f: F) -> F::Output {
        futures::executor::block_on(f)
    }

    #[test]
    fn endless_or_looping_pages_stop() {
        // A cursor that comes back.
        let looping =
            block(all_pages("tools/list", |_| async { Ok::<_, ()>((vec![1], Some("again".to_string()))) })).ok();
        let looping = looping.unwrap_or_else(|| panic!("listed"));
        assert_eq!(looping.items.len(), 2);
        assert!(looping.cut.is_some_and(|c| c.contains("loop")));
        // New cursors without end.
        let mut n = 0u64;
        let endless = block(all_pages("prompts/list", move |_| {
            n += 1;
            let page = n;
            async move { Ok::<_, ()>((vec![0u8; 7], Some(page.to_string()))) }
        }))
        .ok()
        .unwrap_or_else(|| panic!("listed"));
        assert!(endless.items.len() <= MAX_ITEMS && endless.cut.is_some());
        // Too many items in one page.
        let big = block(all_pages("resources/list", |_| async { Ok::<_, ()>((vec![0u8; MAX_ITEMS + 5], None)) }))
            .ok()
            .unwrap_or_else(|| panic!("listed"));
        assert_eq!(big.items.len(), MAX_ITEMS);
        assert!(big.cut.is_some_and(|c| c.contains("more than 100000")));
        // A normal list.
        let normal = block(all_pages("tools/list", |c: Option<PaginatedRequestParams>| async move {
            Ok::<_, ()>(match c.and_then(|c| c.cursor) {
                None => (vec![1, 2], Some("p2".to_string())),
                Some(_) => (vec![3], None),
            })
        }))
        .ok()
        .unwrap_or_else(|| panic!("listed"));
        assert_eq!(normal.items, vec![1, 2, 3]);
        assert!(normal.cut.is_none());
    }
}
