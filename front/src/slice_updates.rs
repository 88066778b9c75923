//! The methods that write a mutable slice in place: `swap`, `fill`, `copy_from_slice`, `reverse`
//! and `sort_by`, each
//! lowered as the Rust it stands for — indexing and a loop over `iter_mut`, so bounds checks,
//! views (`let row = &mut w[a..b]; row.fill(0.0)`) and derivatives are those of that code:
//!
//! - `s.swap(i, j)` is `let t = s[i]; s[i] = s[j]; s[j] = t;` (out of bounds where Rust panics);
//! - `s.fill(v)` is `for e in s.iter_mut() { *e = v; }`;
//! - `d.copy_from_slice(src)` is `assert!(d.len() == src.len())` (Rust's panic for different
//!   lengths), then `for (a, b) in d.iter_mut().zip(src.iter()) { *a = *b; }`;
//! - `s.reverse()` swaps `s[i]` and `s[n - 1 - i]` for `i` below `n / 2`;
//! - `s.sort_by(cmp)` and `s.sort_unstable_by(cmp)` are an insertion sort by the comparator
//!   (the forms of `pick.rs`): stable, so `sort_by` puts equal items where Rust does (and
//!   derivatives follow them there); O(n^2) comparisons, for the short slices sorted in
//!   objective functions (medians, trimmed means). A NaN meeting `partial_cmp(..).unwrap()`
//!   is a `Panic` fault, as in Rust (any sort compares every item at least once).

use crate::error::{Result, invalid};
use crate::lower::{Lowered, Lowerer};
use syn::spanned::Spanned;

/// The method names this file lowers.
pub(crate) const SLICE_UPDATES: [&str; 6] =
    ["swap", "fill", "copy_from_slice", "reverse", "sort_by", "sort_unstable_by"];

impl Lowerer<'_> {
    /// `m`, a call of one of [`SLICE_UPDATES`] on a slice or a view.
    pub(crate) fn lower_slice_update(&mut self, m: &syn::ExprMethodCall) -> Result<Lowered> {
        let name = m.method.to_string();
        let span = m.span();
        let receiver = without_reference(&m.receiver);
        let expected = match name.as_str() {
            "swap" => 2,
            "reverse" => 0,
            _ => 1,
        };
        if m.args.len() != expected {
            let plural = if expected == 1 { "" } else { "s" };
            return Err(invalid(span, format!("`{name}` takes {expected} argument{plural}; pass {expected}")));
        }
        let block: syn::Block = match name.as_str() {
            "swap" => {
                let (i, j) = (&m.args[0], &m.args[1]);
                syn::parse_quote_spanned!(span=> {
                    let (first__, second__): (usize, usize) = (#i, #j);
                    let kept__ = #receiver[first__];
                    #receiver[first__] = #receiver[second__];
                    #receiver[second__] = kept__;
                })
            }
            "sort_by" | "sort_unstable_by" => {
                let Some(closure) = crate::iter::closure_or_function(&m.args[0], 2) else {
                    return Err(invalid(
                        m.args[0].span(),
                        format!(
                            "`{name}` takes a comparator written in place: `.{name}(|a, b| a.partial_cmp(b).unwrap())`"
                        ),
                    ));
                };
                let (earlier, key) = (syn::Ident::new("earlier__", span), syn::Ident::new("key__", span));
                let greater = crate::pick::greater_expr(&closure, &earlier, &key)?;
                syn::parse_quote_spanned!(span=> {
                    let count__: usize = #receiver.len();
                    for i__ in 1..count__ {
                        let key__: f64 = #receiver[i__];
                        let mut j__: usize = i__;
                        while j__ > 0 {
                            let earlier__: f64 = #receiver[j__ - 1];
                            if !(#greater) {
                                break;
                            }
                            #receiver[j__] = earlier__;
                            j__ -= 1;
                        }
                        #receiver[j__] = key__;
                    }
                })
            }
            "reverse" => syn::parse_quote_spanned!(span=> {
                let count__: usize = #receiver.len();
                for front__ in 0..count__ / 2 {
                    let kept__ = #receiver[front__];
                    #receiver[front__] = #receiver[count__ - 1 - front__];
                    #receiver[count__ - 1 - front__] = kept__;
                }
            }),
            "fill" => {
                let value = &m.args[0];
                syn::parse_quote_spanned!(span=> {
                    let value__: f64 = #value;
                    for element__ in #receiver.iter_mut() {
                        *element__ = value__;
                    }
                })
            }
            _ => {
                let source = without_reference(&m.args[0]);
                syn::parse_quote_spanned!(span=> {
                    assert!(#receiver.len() == #source.len());
                    for (to__, from__) in #receiver.iter_mut().zip(#source.iter()) {
                        *to__ = *from__;
                    }
                })
            }
        };
        self.lower_block(&block, None)?;
        Ok(if self.ssa.reachable { Lowered::Unit } else { Lowered::Never })
    }
}

/// `e` for `&e`, `&mut e` and `(&e)`, so that `e.iter()` reads as written (`&x[..4].iter()`
/// would take the reference of the iterator).
fn without_reference(expr: &syn::Expr) -> syn::Expr {
    match expr {
        syn::Expr::Reference(r) => without_reference(&r.expr),
        syn::Expr::Paren(p) if matches!(*p.expr, syn::Expr::Reference(_)) => without_reference(&p.expr),
        syn::Expr::Path(_) | syn::Expr::Field(_) | syn::Expr::Index(_) | syn::Expr::Paren(_) => expr.clone(),
        other => {
            let span = other.span();
            syn::parse_quote_spanned!(span=> (#other))
        }
    }
}
