//! Pure per-item work spread over the machine's cores (scoped threads, no pool
//! to keep): a price move re-scores and re-renders tens of thousands of owners,
//! and the liquidators' deadline is the last of them.

use std::num::NonZeroUsize;
use std::sync::OnceLock;

/// Below this many items one thread is faster than starting others.
const MIN_PER_THREAD: usize = 512;

fn threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| {
        std::thread::available_parallelism()
            .map(NonZeroUsize::get)
            .unwrap_or(1)
    })
}

/// `f` of every item, in the items' order.
pub fn par_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    par_chunks(items, |part| part.iter().map(&f).collect::<Vec<R>>())
        .into_iter()
        .flatten()
        .collect()
}

/// `f` of consecutive parts of `items`, one part per core (one part when there
/// are too few items to share), in the items' order.
pub fn par_chunks<T: Sync, R: Send>(items: &[T], f: impl Fn(&[T]) -> R + Sync) -> Vec<R> {
    let n = threads().min(items.len() / MIN_PER_THREAD).max(1);
    if n == 1 {
        return vec![f(items)];
    }
    let chunk = items.len().div_ceil(n);
    let f = &f;
    std::thread::scope(|scope| {
        let parts: Vec<_> = items
            .chunks(chunk)
            .map(|part| scope.spawn(move || f(part)))
            .collect();
        parts
            .into_iter()
            .map(|part| part.join().expect("pure work does not panic"))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_order_at_any_size() {
        for len in [0, 1, 511, 512, 1025, 10_000] {
            let items: Vec<usize> = (0..len).collect();
            let squares = par_map(&items, |i| i * i);
            assert_eq!(squares, items.iter().map(|i| i * i).collect::<Vec<_>>());
            let sums = par_chunks(&items, |part| part.iter().sum::<usize>());
            assert_eq!(sums.iter().sum::<usize>(), items.iter().sum::<usize>());
            assert!(len < 2 * MIN_PER_THREAD || sums.len() == threads().min(len / MIN_PER_THREAD));
        }
    }
}
