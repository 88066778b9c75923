//! Where each derivative quantity of a call lives: the differentiated parameters of the derived
//! functions (the user's plus every `mslice`, see [`UserFunction::derivation_wrt`]) against the
//! flat input and output vectors the public API uses.

use crate::user::{Sizes, UserFunction};
use jitdiff_ir::Type;
use jitdiff_jit::Arg;
use smallvec::SmallVec;

/// One differentiated parameter of a derived function.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Part {
    /// Scalars: 1 for an `f64`, the length of a slice.
    pub len: usize,
    /// Where its entries start in the flat inputs, when the user differentiates it.
    pub input: Option<usize>,
    /// Where its final contents start in the flat outputs, for an `mslice`.
    pub output: Option<usize>,
    /// Is it a slice (with a differential slice), or an `f64` (with a cotangent result)?
    pub slice: bool,
}

/// The parts of one call, in parameter order.
#[derive(Debug, Default)]
pub(crate) struct Layout {
    pub parts: SmallVec<[Part; 8]>,
    /// Number of inputs (differentiated scalars).
    pub inputs: usize,
    /// Number of outputs (`f64` results, then `mslice` elements).
    pub outputs: usize,
    /// Number of `f64` results.
    pub float_results: usize,
}

impl Layout {
    /// The layout of a call of `user`'s derivative with `args` (already checked).
    #[inline]
    pub fn of(user: &UserFunction, args: &[Arg<'_>]) -> Layout {
        let sizes: Sizes = user.scalar_sizes(args);
        let derivation = user.derivation_wrt();
        let float_results = user.float_results();
        let (mut inputs, mut outputs) = (0, float_results);
        let mut parts = SmallVec::new();
        for (param, &on) in derivation.iter().enumerate() {
            if !on {
                continue;
            }
            let len = sizes[param];
            let input = user.wrt[param].then(|| {
                inputs += len;
                inputs - len
            });
            let output = (user.params[param] == Type::SliceMut).then(|| {
                outputs += len;
                outputs - len
            });
            parts.push(Part { len, input, output, slice: user.params[param].is_slice() });
        }
        Layout { parts, inputs, outputs, float_results }
    }

    /// The slice parts (each has a differential slice), in order.
    pub fn slices(&self) -> impl Iterator<Item = &Part> {
        self.parts.iter().filter(|p| p.slice)
    }

    /// The `f64` parts (each has a cotangent result), in order.
    pub fn scalars(&self) -> impl Iterator<Item = &Part> {
        self.parts.iter().filter(|p| !p.slice)
    }
}
