//! Concurrent readers of one answer share one computation of it, per worker
//! thread. A change wakes every long poll held on an answer at once: without
//! this, ten thousand of them would each send the health cache a render (and
//! queue /api/health's check behind them) or each query the database; with
//! it, each worker computes the answer once and hands it to all of its polls.

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;

use futures_util::FutureExt;
use futures_util::future::{LocalBoxFuture, Shared};

use crate::domain::pubkey::Pubkey;
use crate::domain::view_key::ViewKey;
use crate::error::ApiResult;
use crate::serve::poll_answers::{Body, OwnerBody};
use crate::serve::render::Answer;

/// Which answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Key {
    Poll(Answer, ViewKey),
    Owner(Pubkey, OwnerBody, ViewKey),
    Pools,
}

type Flight = Shared<LocalBoxFuture<'static, ApiResult<Body>>>;

thread_local! {
    /// Computations in flight on this worker thread.
    static FLIGHTS: RefCell<HashMap<Key, Flight>> = RefCell::new(HashMap::new());
}

/// The answer of `key`: joins the computation in flight on this thread, or
/// starts `compute` (which leaves the table the moment it completes, so a later
/// reader computes afresh).
pub async fn once<F>(key: Key, compute: impl FnOnce() -> F) -> ApiResult<Body>
where
    F: Future<Output = ApiResult<Body>> + 'static,
{
    let flight = FLIGHTS.with(|flights| {
        flights
            .borrow_mut()
            .entry(key)
            .or_insert_with(|| {
                let computed = compute();
                async move {
                    let result = computed.await;
                    FLIGHTS.with(|flights| flights.borrow_mut().remove(&key));
                    result
                }
                .boxed_local()
                .shared()
            })
            .clone()
    });
    flight.await
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::rc::Rc;

    use bytes::Bytes;

    use super::*;

    #[actix_rt::test]
    async fn concurrent_readers_share_one_computation_and_later_ones_start_anew() {
        let runs = Rc::new(Cell::new(0));
        let counted = |runs: &Rc<Cell<u32>>, text: &'static str| {
            let runs = runs.clone();
            move || async move {
                runs.set(runs.get() + 1);
                Ok(Body::new(Bytes::from_static(text.as_bytes())))
            }
        };
        let (release, released) = tokio::sync::oneshot::channel::<()>();
        let slow = {
            let runs = runs.clone();
            move || async move {
                let _ = released.await;
                runs.set(runs.get() + 1);
                Ok(Body::new(Bytes::from_static(b"first")))
            }
        };
        // Polled in order: the first starts the computation, the second joins
        // it, the third is another answer; then the first is let finish.
        let (a, b, c, ()) = futures_util::join!(
            once(Key::Pools, slow),
            once(Key::Pools, counted(&runs, "second")),
            once(
                Key::Owner(
                    Pubkey::new_from_array([0; 32]),
                    OwnerBody::Detail,
                    ViewKey::CONFIRMED,
                ),
                counted(&runs, "other")
            ),
            async {
                tokio::task::yield_now().await;
                let _ = release.send(());
            },
        );
        assert_eq!(a.unwrap().bytes, "first");
        assert_eq!(
            b.unwrap().bytes,
            "first",
            "joined the computation in flight"
        );
        assert_eq!(c.unwrap().bytes, "other");
        assert_eq!(runs.get(), 2, "one computation per answer");
        let later = once(Key::Pools, counted(&runs, "later")).await.unwrap();
        assert_eq!(
            later.bytes, "later",
            "computed afresh once the first completed"
        );
    }
}
