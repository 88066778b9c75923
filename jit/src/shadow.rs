//! Shadow slices: a compile-time declaration that one slice parameter of a function holds
//! `lanes` entries per element of another (a tangent slice and its primal). Native code checks
//! the declared lengths once, when the function is entered, and can then skip the bounds check
//! of an access to one slice at an index already checked against the other.

use crate::error::JitError;
use jitdiff_ir::{Module, Type, VECTOR_WIDTHS};

/// "Parameter `shadow` of `@function` holds `lanes` entries per element of parameter `primal`":
/// `len(shadow) == lanes * len(primal)`. See [`JitOptions::shadow_slice`](crate::JitOptions::shadow_slice).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ShadowSlice {
    /// The function (without `@`).
    pub function: String,
    /// The 0-based index of the shadow slice parameter.
    pub shadow: usize,
    /// The 0-based index of the primal slice parameter.
    pub primal: usize,
    /// Entries of `shadow` per element of `primal`: 1, 2, 4, 8 or 16.
    pub lanes: u8,
}

/// A validated declaration, by parameter index, for one function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shadow {
    pub shadow: usize,
    pub primal: usize,
    pub lanes: u8,
}

/// How many slice-access bounds checks the JIT emitted in one function, and how many it left out
/// because an earlier check (on the same slice or, through a [`ShadowSlice`] declaration, on its
/// primal or shadow) already proved the access in bounds; the loops it versioned, and those it
/// rotated (which changes no check).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BoundsCheckStats {
    /// Accesses compiled with a bounds check.
    pub emitted: usize,
    /// Accesses compiled without one, proved in bounds by a dominating check.
    pub elided: usize,
    /// Counted loops compiled twice: a copy with the checks above and a fast copy entered when a
    /// check before the loop proves the accesses below in bounds for all its iterations.
    pub versioned_loops: usize,
    /// Accesses of those fast copies compiled without a check (the counts above are of the
    /// checked code only).
    pub unchecked_in_fast_copies: usize,
    /// Loops of the compiled code (each copy of a versioned loop counts) whose header's test was
    /// copied to the end of the loop, so that an iteration ends in one conditional branch back.
    pub rotated_loops: usize,
    /// Values copied at the edge of a loop that makes no call, so that the loop keeps them in
    /// registers while the code after it keeps them on the stack across its calls.
    pub copied_loop_values: usize,
    /// Versioned loops with a third copy running two iterations at a time, their shared
    /// arithmetic in `f64x2` lanes (each such copy is one more loop, rotated like the others).
    pub paired_loops: usize,
}

/// Check every declaration against `module` and group them by function index.
pub(crate) fn resolve(module: &Module, declarations: &[ShadowSlice]) -> Result<Vec<Vec<Shadow>>, JitError> {
    let mut by_function = vec![Vec::new(); module.functions.len()];
    for d in declarations {
        let bad = |reason: String| JitError::Shadow { function: d.function.clone(), reason };
        let index = module
            .functions
            .iter()
            .position(|f| f.name == d.function)
            .ok_or_else(|| bad("the module has no such function".into()))?;
        let params = module.functions[index].param_types();
        for (what, p) in [("shadow", d.shadow), ("primal", d.primal)] {
            match params.get(p) {
                Some(Type::Slice | Type::SliceMut) => {}
                Some(t) => return Err(bad(format!("{what} parameter {p} is a {t}, not a slice"))),
                None => return Err(bad(format!("{what} parameter {p} does not exist: it has {}", params.len()))),
            }
        }
        if d.shadow == d.primal {
            return Err(bad(format!("parameter {} cannot be its own shadow", d.shadow)));
        }
        if d.lanes != 1 && !VECTOR_WIDTHS.contains(&d.lanes) {
            return Err(bad(format!("{} lanes per element: use 1, 2, 4, 8 or 16", d.lanes)));
        }
        let list: &mut Vec<Shadow> = &mut by_function[index];
        if list.iter().any(|s| s.shadow == d.shadow) {
            return Err(bad(format!("parameter {} is declared the shadow of two parameters", d.shadow)));
        }
        list.push(Shadow { shadow: d.shadow, primal: d.primal, lanes: d.lanes });
    }
    Ok(by_function)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declarations_are_checked_against_the_module() {
        let m = jitdiff_ir::parse_module("func @f(x: slice, d: slice, k: i64) {\nentry:\n    ret\n}\n").unwrap();
        let decl =
            |function: &str, shadow, primal, lanes| ShadowSlice { function: function.into(), shadow, primal, lanes };
        let ok = resolve(&m, &[decl("f", 1, 0, 4)]).unwrap();
        assert_eq!(ok, vec![vec![Shadow { shadow: 1, primal: 0, lanes: 4 }]]);
        for (bad, needle) in [
            (decl("g", 1, 0, 1), "no such function"),
            (decl("f", 2, 0, 1), "is a i64"),
            (decl("f", 1, 5, 1), "does not exist"),
            (decl("f", 1, 1, 1), "its own shadow"),
            (decl("f", 1, 0, 3), "3 lanes"),
        ] {
            let e = resolve(&m, &[bad]).unwrap_err().to_string();
            assert!(e.contains(needle), "{e}");
        }
        let twice = resolve(&m, &[decl("f", 1, 0, 1), decl("f", 1, 0, 2)]).unwrap_err();
        assert!(twice.to_string().contains("two parameters"));
    }
}
