//! [`LocalArrays`]: the memory of `alloc` for an executor that cannot allocate per array (the
//! JIT). A stack of zeroed `f64` arrays in chunks that never move, so an array's address stays
//! valid while later arrays are allocated; a function takes a [`mark`](LocalArrays::mark) when
//! it starts and [`release`](LocalArrays::release)s back to it when it returns, and the chunks
//! are kept for the next call (no allocation per call once warm).

/// A stack allocator of zeroed `f64` arrays, kept with a [`Tape`](crate::Tape).
///
/// It is scratch memory, not part of the tape's value: clones start empty and every two compare
/// equal.
///
/// ```
/// use jitdiff_ir::LocalArrays;
/// let mut arrays = LocalArrays::default();
/// let mark = arrays.mark();
/// let a = arrays.alloc(3).unwrap();
/// a[1] = 2.0;
/// assert_eq!(a, &[0.0, 2.0, 0.0]);
/// arrays.release(mark);
/// assert_eq!(arrays.alloc(3).unwrap(), &[0.0; 3]);
/// assert!(arrays.alloc(usize::MAX).is_none());
/// ```
#[derive(Debug, Default)]
pub struct LocalArrays {
    /// Chunks `0..=current` hold live arrays (a chunk's unused tail is skipped); later chunks are
    /// free, kept for reuse.
    chunks: Vec<Vec<f64>>,
    current: usize,
    /// The first free element of chunk `current`.
    top: usize,
}

/// Bits of a [`LocalArrays::mark`] that hold the element offset within the chunk.
const TOP_BITS: u32 = 44;

/// Size of the first chunk, in elements (32 KiB).
const FIRST_CHUNK: usize = 4096;

impl LocalArrays {
    /// The current top of the stack, to [`release`](Self::release) back to.
    pub fn mark(&self) -> u64 {
        ((self.current as u64) << TOP_BITS) | self.top as u64
    }

    /// Free every array allocated since `mark` was taken (the memory is kept for reuse).
    pub fn release(&mut self, mark: u64) {
        let current = (mark >> TOP_BITS) as usize;
        let top = (mark & ((1 << TOP_BITS) - 1)) as usize;
        if current < self.chunks.len() || (current == 0 && top == 0) {
            self.current = current;
            self.top = top;
        }
    }

    /// A fresh array of `len` zeros, or `None` when the memory cannot be allocated.
    pub fn alloc(&mut self, len: usize) -> Option<&mut [f64]> {
        if len >= 1 << TOP_BITS {
            return None;
        }
        let fits = self.chunks.get(self.current).is_some_and(|c| self.top + len <= c.len());
        if !fits {
            // Move to the next chunk, replacing it if it is too small (it holds nothing live).
            let next = if self.chunks.is_empty() { 0 } else { self.current + 1 };
            if self.chunks.get(next).is_none_or(|c| c.len() < len) {
                let size = len.max(FIRST_CHUNK).max(self.chunks.last().map_or(0, |c| 2 * c.len()));
                let mut chunk = Vec::new();
                chunk.try_reserve_exact(size).ok()?;
                chunk.resize(size, 0.0);
                if next < self.chunks.len() {
                    self.chunks[next] = chunk;
                } else {
                    self.chunks.push(chunk);
                }
            }
            self.current = next;
            self.top = 0;
        }
        let start = self.top;
        self.top += len;
        let array = &mut self.chunks[self.current][start..start + len];
        array.fill(0.0);
        Some(array)
    }

    /// The memory held, in bytes.
    pub fn bytes(&self) -> usize {
        self.chunks.iter().map(|c| c.capacity() * std::mem::size_of::<f64>()).sum()
    }
}

impl Clone for LocalArrays {
    /// An empty allocator: the arrays are scratch memory of the calls that made them.
    fn clone(&self) -> LocalArrays {
        LocalArrays::default()
    }
}

impl PartialEq for LocalArrays {
    /// Always equal: scratch memory is not part of a tape's value.
    fn eq(&self, _: &LocalArrays) -> bool {
        true
    }
}

impl Eq for LocalArrays {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_do_not_move_and_release_reuses_memory() {
        let mut arrays = LocalArrays::default();
        let outer = arrays.mark();
        let first = arrays.alloc(10).unwrap().as_ptr();
        let inner = arrays.mark();
        // Larger than the first chunk: a new chunk; the first array stays where it was.
        arrays.alloc(3 * FIRST_CHUNK).unwrap()[0] = 1.0;
        let big = arrays.alloc(5).unwrap().as_ptr();
        assert_eq!(arrays.chunks[0].as_ptr(), first);
        arrays.release(inner);
        assert_eq!(arrays.alloc(3 * FIRST_CHUNK).unwrap()[0], 0.0, "reused and zeroed");
        assert_eq!(arrays.alloc(5).unwrap().as_ptr(), big);
        arrays.release(outer);
        assert_eq!(arrays.alloc(10).unwrap().as_ptr(), first);
        let bytes = arrays.bytes();
        arrays.release(outer);
        arrays.alloc(3 * FIRST_CHUNK).unwrap();
        assert_eq!(arrays.bytes(), bytes, "no new chunk once warm");
        assert_eq!(arrays.alloc(0).unwrap().len(), 0);
    }
}
