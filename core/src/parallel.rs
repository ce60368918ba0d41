//! Work spread over the cores with scoped threads: independent items (parts of a manifest,
//! tools, provider files, parts of `tools.rs`), each taken by whichever thread is free next.

use std::sync::atomic::{AtomicUsize, Ordering};

/// The cores this process may use.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The items not taken yet.
#[derive(Debug)]
pub struct Queue {
    next: AtomicUsize,
}

impl Queue {
    fn take(&self) -> usize {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// Every thread stops after its current item (the result is abandoned anyway).
    pub fn stop(&self) {
        self.next.store(usize::MAX / 2, Ordering::Relaxed);
    }
}

/// Runs `work` for the indexes `0..count` on up to `threads` threads, each taking the next index
/// when it is free, with state that each thread makes for itself with `init` (so it never
/// crosses threads). Returns the results in index order: all of them, or after [`Queue::stop`]
/// those of the items that were done. With one thread (or one item) it runs on the caller's
/// thread and spawns nothing. A panic in a thread is raised again here.
pub fn each_index<S, R: Send>(
    count: usize,
    threads: usize,
    init: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, usize, &Queue) -> R + Sync,
) -> Vec<(usize, R)> {
    let queue = Queue {
        next: AtomicUsize::new(0),
    };
    let run = || {
        let mut state = init();
        let mut done = Vec::new();
        loop {
            let i = queue.take();
            if i >= count {
                break done;
            }
            done.push((i, work(&mut state, i, &queue)));
        }
    };
    let threads = threads.clamp(1, count.max(1));
    let mut results: Vec<(usize, R)> = if threads == 1 {
        run()
    } else {
        // The caller's thread is one of the workers: one thread fewer to start, and its
        // allocator heap, which lives on after the call, takes a share of the work's memory
        // (a finished thread's heap is only reclaimed later).
        std::thread::scope(|scope| {
            let handles: Vec<_> = (1..threads).map(|_| scope.spawn(run)).collect();
            let mut results = run();
            for handle in handles {
                results.extend(
                    handle
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                );
            }
            results
        })
    };
    results.sort_by_key(|(i, _)| *i);
    results
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_index_once_in_order_with_state_per_thread() {
        for threads in [1, 2, 5] {
            let results = each_index(
                100,
                threads,
                || 0usize,
                |seen, i, _| {
                    *seen += 1;
                    i * 2
                },
            );
            let expected: Vec<(usize, usize)> = (0..100).map(|i| (i, i * 2)).collect();
            assert_eq!(results, expected, "{threads} threads");
        }
        assert!(each_index(0, 4, || (), |_, i, _| i).is_empty());
    }

    #[test]
    fn a_stop_ends_the_work_early() {
        // On one thread the order is fixed: nothing after the stopping item is taken.
        let results = each_index(
            1000,
            1,
            || (),
            |_, i, queue| {
                if i == 3 {
                    queue.stop();
                }
                i
            },
        );
        let indexes: Vec<usize> = results.into_iter().map(|(i, _)| i).collect();
        assert_eq!(indexes, [0, 1, 2, 3]);
    }

    #[test]
    #[should_panic(expected = "item 7")]
    fn a_panic_in_a_thread_reaches_the_caller() {
        each_index(
            20,
            2,
            || (),
            |_, i, _| {
                if i == 7 {
                    panic!("item 7");
                }
            },
        );
    }
}
