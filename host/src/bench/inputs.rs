//! The inputs every benchmark draws from: a pool of normal random values, windows of it per input set.

use crate::reference;
use crate::verify::CheckValue;

/// Normal random values to fill input sets from. Drawing every element of a 16384² operand one at a time would
/// take seconds per set, so each operand is a window of this pool starting at its own offset, wrapping around.
/// The pool's length is odd, so the rows of an operand (whose length is a power of two or a multiple of one in
/// every suite shape) start at different points of the pool and are not copies of each other.
pub struct InputPool {
    values: Vec<f32>,
    pub seed: u64,
}

impl InputPool {
    pub const LEN: usize = (1 << 24) + 1021;

    pub fn new(seed: u64) -> InputPool {
        InputPool::with_len(Self::LEN, seed)
    }

    pub fn with_len(len: usize, seed: u64) -> InputPool {
        InputPool { values: reference::randn(len.max(1), 1.0, seed), seed }
    }

    /// `len` values starting at `offset` (modulo the pool's length), converted to `T`.
    pub fn fill<T: CheckValue>(&self, len: usize, offset: usize) -> Vec<T> {
        let mut out = Vec::with_capacity(len);
        let mut at = offset % self.values.len();
        while out.len() < len {
            let take = (len - out.len()).min(self.values.len() - at);
            out.extend(self.values[at..at + take].iter().map(|&v| T::from_f32(v)));
            at = 0;
        }
        out
    }

    /// `len` values starting at `offset` (modulo the pool's length), as f32.
    pub fn fill_f32(&self, len: usize, offset: usize) -> Vec<f32> {
        let mut out = Vec::with_capacity(len);
        let mut at = offset % self.values.len();
        while out.len() < len {
            let take = (len - out.len()).min(self.values.len() - at);
            out.extend_from_slice(&self.values[at..at + take]);
            at = 0;
        }
        out
    }

    /// The offset of operand `which` (0: A, 1: B) of input set `set`.
    pub fn offset(set: usize, which: usize) -> usize {
        (set * 2 + which) * 1_000_003
    }
}

#[cfg(test)]
mod tests {
    use half::bf16;

    use super::*;

    #[test]
    fn pool_windows_wrap_and_differ() {
        let pool = InputPool::with_len(101, 9);
        let a: Vec<bf16> = pool.fill(250, InputPool::offset(0, 0));
        let b: Vec<bf16> = pool.fill(250, InputPool::offset(0, 1));
        assert_eq!(a.len(), 250);
        assert_eq!(a[0], a[101]);
        assert_ne!(a, b);
        assert!(a.iter().all(|v| v.to_f32().is_finite()) && a.iter().any(|v| v.to_f32() != 0.0));
        assert_eq!(InputPool::LEN % 2, 1);
    }
}
