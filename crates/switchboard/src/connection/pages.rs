//! Listing every page of a server's tools, resources, templates or prompts, bounded: a server
//! that pages on without end (or hands back a cursor it gave before) cannot hold the host in a
//! loop or fill its memory. At most [`MAX_ITEMS`] items and [`MAX_PAGES`] pages per list;
//! beyond that the listing stops with [`Paged::cut`] saying why.

use rmcp::model::PaginatedRequestParams;
use rmcp::service::ServiceError;

/// The most items one list takes from a server.
pub const MAX_ITEMS: usize = 100_000;
/// The most pages one list follows.
pub const MAX_PAGES: usize = 10_000;

/// A list, and why it stopped short if it did.
pub(crate) struct Paged<T> {
    pub items: Vec<T>,
    pub cut: Option<String>,
}

/// Follows `page` (a request for one page: its items and the next cursor) from the first page
/// to the last, within the bounds. `what` names the list for the message.
pub(crate) async fn all_pages<T, F, Fut>(what: &str, mut page: F) -> Result<Paged<T>, ServiceError>
where
    F: FnMut(Option<PaginatedRequestParams>) -> Fut,
    Fut: std::future::Future<Output = Result<(Vec<T>, Option<String>), ServiceError>>,
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
        let looping = block(all_pages("tools/list", |_| async { Ok((vec![1], Some("again".to_string()))) })).ok();
        let looping = looping.unwrap_or_else(|| panic!("listed"));
        assert_eq!(looping.items.len(), 2);
        assert!(looping.cut.is_some_and(|c| c.contains("loop")));
        // New cursors without end.
        let mut n = 0u64;
        let endless = block(all_pages("prompts/list", move |_| {
            n += 1;
            let page = n;
            async move { Ok((vec![0u8; 7], Some(page.to_string()))) }
        }))
        .ok()
        .unwrap_or_else(|| panic!("listed"));
        assert!(endless.items.len() <= MAX_ITEMS && endless.cut.is_some());
        // Too many items in one page.
        let big = block(all_pages("resources/list", |_| async { Ok((vec![0u8; MAX_ITEMS + 5], None)) }))
            .ok()
            .unwrap_or_else(|| panic!("listed"));
        assert_eq!(big.items.len(), MAX_ITEMS);
        assert!(big.cut.is_some_and(|c| c.contains("more than 100000")));
        // A normal list.
        let normal = block(all_pages("tools/list", |c: Option<PaginatedRequestParams>| async move {
            Ok(match c.and_then(|c| c.cursor) {
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
