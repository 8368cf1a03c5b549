//! Small helpers shared by decoders and table builders.

/// `n` and a noun in the number it needs: `1 profile`, `0 profiles`, `3 files` (`one` + `s`).
pub fn count(n: impl Into<u64>, one: &str) -> String {
    let n = n.into();
    format!("{n} {one}{}", if n == 1 { "" } else { "s" })
}

/// `Eq` and `Ord` for `$t` by the value its `key(&self)` method returns (a heap entry ordered by
/// a key that is unique, e.g. (start, file offset), rather than by all its fields).
macro_rules! ord_by_key {
    ($t:ty) => {
        impl PartialEq for $t {
            fn eq(&self, other: &Self) -> bool {
                self.key() == other.key()
            }
        }
        impl Eq for $t {}
        impl PartialOrd for $t {
            fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }
        impl Ord for $t {
            #[inline]
            fn cmp(&self, other: &Self) -> std::cmp::Ordering {
                self.key().cmp(&other.key())
            }
        }
    };
}
pub(crate) use ord_by_key;

/// The first `n` bytes of `b` as lowercase hex pairs split by spaces (`e0 8f 53`), for
/// messages that show what stands where something else was expected.
pub fn hex_bytes(b: &[u8], n: usize) -> String {
    let pairs: Vec<String> = b.iter().take(n).map(|x| format!("{x:02x}")).collect();
    pairs.join(" ")
}

/// Lowercase hex of `b`.
pub fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push_str(&format!("{x:02x}"));
    }
    s
}

/// serde helper: serialise a byte array as lowercase hex.
pub fn ser_hex<S: serde::Serializer, const N: usize>(
    b: &[u8; N],
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(&hex(b))
}

/// A file-system-safe version of `s` (for download and output names): path separators and
/// unusual characters become `_`.
pub fn safe_name(s: &str) -> String {
    let t: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if t.is_empty() {
        "_".into()
    } else {
        t
    }
}

/// `v` as an int32 cell: null when absent or out of range (a value that does not fit is never
/// wrapped or clamped).
pub fn i32_cell<T: TryInto<i32>>(v: Option<T>) -> Option<i32> {
    v.and_then(|v| v.try_into().ok())
}

/// `f` over every item on up to `threads` threads (natively): item `i` runs on thread
/// `thread_of(i) % threads`, thread 0 being this one; the results in the items' order. `what`
/// names the work in the error of a thread that panicked. Errors: the first error of the items,
/// in order, then a panicked thread's.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn on_threads<T: Send, R: Send>(
    items: Vec<T>,
    threads: usize,
    thread_of: impl Fn(usize) -> usize,
    what: &str,
    f: impl Fn(T) -> crate::error::Result<R> + Sync,
) -> crate::error::Result<Vec<R>> {
    use crate::error::{Error, Result};
    let n = items.len();
    let threads = threads.clamp(1, n.max(1));
    let mut groups: Vec<Vec<(usize, T)>> = (0..threads).map(|_| Vec::new()).collect();
    for (i, item) in items.into_iter().enumerate() {
        if let Some(g) = groups.get_mut(thread_of(i) % threads) {
            g.push((i, item));
        }
    }
    let run = |g: Vec<(usize, T)>| -> Vec<(usize, Result<R>)> {
        g.into_iter().map(|(i, item)| (i, f(item))).collect()
    };
    let mut groups = groups.into_iter();
    let first = groups.next().unwrap_or_default();
    let mut all: Vec<(usize, Result<R>)> = std::thread::scope(|s| {
        let handles: Vec<_> = groups.map(|g| s.spawn(|| run(g))).collect();
        let mut all = run(first);
        for h in handles {
            match h.join() {
                Ok(r) => all.extend(r),
                Err(_) => all.push((n, Err(Error::Other(format!("{what} thread panicked"))))),
            }
        }
        all
    });
    all.sort_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, r)| r).collect()
}

/// wasm32 has no threads: every item on this one, in order.
#[cfg(target_arch = "wasm32")]
pub(crate) fn on_threads<T, R>(
    items: Vec<T>,
    _threads: usize,
    _thread_of: impl Fn(usize) -> usize,
    _what: &str,
    f: impl Fn(T) -> crate::error::Result<R>,
) -> crate::error::Result<Vec<R>> {
    items.into_iter().map(f).collect()
}

/// The thread of each item for [`on_threads`] when the items' costs are known (`weights`): the
/// heaviest first, each to the least loaded of `threads` threads (ties: the lower thread).
pub(crate) fn least_loaded(weights: &[u64], threads: usize) -> Vec<usize> {
    let mut load = vec![0u64; threads.max(1)];
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(weights[i]));
    let mut thread = vec![0; weights.len()];
    for i in order {
        let t = (0..load.len()).min_by_key(|&t| load[t]).unwrap_or(0);
        load[t] = load[t].saturating_add(weights[i]);
        thread[i] = t;
    }
    thread
}

#[cfg(test)]
mod tests {
    use super::{least_loaded, on_threads};

    /// Results come back in the items' order whatever thread each item ran on; an item's error
    /// is the one returned.
    #[test]
    fn on_threads_keeps_item_order() {
        let items: Vec<u64> = (0..7).collect();
        let want: Vec<u64> = items.iter().map(|i| i * i + 1).collect();
        for threads in 0..5 {
            for spread in [|i: usize| i, |i: usize| 6 - i, |_| 0] {
                let got = on_threads(items.clone(), threads, spread, "t", |i| Ok(i * i + 1));
                assert_eq!(got.unwrap(), want, "{threads} threads");
            }
        }
        let none = on_threads(Vec::<u64>::new(), 2, |i| i, "t", Ok).unwrap();
        assert!(none.is_empty());
        let err = on_threads(
            items,
            2,
            |i| i,
            "t",
            |i| {
                if i == 3 {
                    Err(crate::error::Error::Other(format!("item {i}")))
                } else {
                    Ok(i)
                }
            },
        );
        assert!(format!("{:?}", err.unwrap_err()).contains("item 3"));
    }

    /// Heaviest first, each to the least loaded thread.
    #[test]
    fn least_loaded_balances_heaviest_first() {
        let weights = [5u64, 90, 0, 40, 40, 1, 7];
        let thread = least_loaded(&weights, 2);
        assert_eq!(thread, [1, 0, 0, 1, 1, 0, 1]);
        let load =
            |t: usize| -> u64 { (0..7).filter(|&i| thread[i] == t).map(|i| weights[i]).sum() };
        assert_eq!((load(0), load(1)), (91, 92));
        assert_eq!(least_loaded(&weights, 0), vec![0; 7]);
        assert!(least_loaded(&[], 3).is_empty());
    }
}
