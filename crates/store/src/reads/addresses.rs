//! GET /api/addresses/{address} (docs/design.md §4): one probe of the index.

use lendex_wire::addresses::AddressKind;

use crate::error::DbResult;
use crate::handle::Store;
use crate::queries;

/// What the index knows an address as: its kind, and the pool and owner it
/// names; None when it knows nothing of it.
pub async fn lookup(
    store: &Store,
    cluster: &str,
    address: &str,
) -> DbResult<Option<(AddressKind, Option<String>, Option<String>)>> {
    let session = store.session().await?;
    let client = session.client();
    let stmt = client.prepare_cached(queries::LOOKUP_ADDRESS).await?;
    let row = client.query_opt(&stmt, &[&cluster, &address]).await?;
    Ok(row.and_then(|row| Some((AddressKind::named(row.get(0))?, row.get(1), row.get(2)))))
}
