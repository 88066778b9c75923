//! The Rust types of the subset ([`Ty`]), how they are spelled in source and which IR type each
//! becomes. Every integer type is an IR `i64`; the front end still tracks which one a value has,
//! so that it rejects what rustc rejects (`usize + i64`, indexing with an `i64`).

use crate::error::{Result, unsupported};
use jitdiff_ir::Type;
use std::fmt;
use syn::spanned::Spanned;

/// An integer type of the subset. `Literal` is an unsuffixed integer literal (or a variable bound
/// to one) whose type Rust would infer from its uses: it fits any integer type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum IntKind {
    I64,
    I32,
    Isize,
    U64,
    U32,
    Usize,
    Literal,
}

impl IntKind {
    pub(crate) fn from_name(name: &str) -> Option<IntKind> {
        Some(match name {
            "i64" => IntKind::I64,
            "i32" => IntKind::I32,
            "isize" => IntKind::Isize,
            "u64" => IntKind::U64,
            "u32" => IntKind::U32,
            "usize" => IntKind::Usize,
            _ => return None,
        })
    }
    pub(crate) fn name(self) -> &'static str {
        match self {
            IntKind::I64 => "i64",
            IntKind::I32 => "i32",
            IntKind::Isize => "isize",
            IntKind::U64 => "u64",
            IntKind::U32 => "u32",
            IntKind::Usize => "usize",
            IntKind::Literal => "{integer}",
        }
    }
    /// The values the type holds, as far as an IR `i64` can hold them.
    pub(crate) fn range(self) -> (i128, i128) {
        match self {
            IntKind::I32 => (i32::MIN.into(), i32::MAX.into()),
            IntKind::U32 => (0, u32::MAX.into()),
            IntKind::U64 | IntKind::Usize => (0, i64::MAX.into()),
            IntKind::I64 | IntKind::Isize | IntKind::Literal => (i64::MIN.into(), i64::MAX.into()),
        }
    }
    pub(crate) fn is_unsigned(self) -> bool {
        matches!(self, IntKind::U64 | IntKind::U32 | IntKind::Usize)
    }
    /// The common type of two integer operands, or `None` when Rust would reject mixing them.
    pub(crate) fn unify(self, other: IntKind) -> Option<IntKind> {
        match (self, other) {
            (IntKind::Literal, k) | (k, IntKind::Literal) => Some(k),
            (a, b) if a == b => Some(a),
            _ => None,
        }
    }
}

/// A type of the subset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Ty {
    F64,
    Int(IntKind),
    Bool,
    /// `&[f64]`, `&mut [f64]`, `[f64; N]`, `&[f64; N]`: an IR `slice` or `mslice`.
    Slice {
        mutable: bool,
    },
    Unit,
    Tuple(Vec<Ty>),
    /// A struct of the source (`structs.rs`): a value is its scalar fields, flattened.
    Struct(std::rc::Rc<crate::structs::StructTy>),
    /// The type of `return`, `break`, `continue` and loops without `break`: no value ever.
    Never,
}

impl Ty {
    pub(crate) fn is_scalar(&self) -> bool {
        matches!(self, Ty::F64 | Ty::Int(_) | Ty::Bool)
    }
    /// The IR type of a scalar or slice.
    pub(crate) fn ir(&self) -> Option<Type> {
        match self {
            Ty::F64 => Some(Type::F64),
            Ty::Int(_) => Some(Type::I64),
            Ty::Bool => Some(Type::Bool),
            Ty::Slice { mutable: false } => Some(Type::Slice),
            Ty::Slice { mutable: true } => Some(Type::SliceMut),
            Ty::Unit | Ty::Tuple(_) | Ty::Struct(_) | Ty::Never => None,
        }
    }
    /// The IR types of a value of type `self` passed or returned: one per scalar of a struct.
    pub(crate) fn ir_parts(&self) -> Vec<Type> {
        match self {
            Ty::Struct(s) => s.leaves().iter().filter_map(Ty::ir).collect(),
            other => other.ir().into_iter().collect(),
        }
    }
    /// The IR result types of a function returning `self`.
    pub(crate) fn ir_results(&self) -> Vec<Type> {
        match self {
            Ty::Tuple(items) => items.iter().filter_map(Ty::ir).collect(),
            Ty::Unit | Ty::Never => vec![],
            other => other.ir_parts(),
        }
    }
    /// Does a value of type `self` fit where `expected` is wanted (integer literals fit every
    /// integer type)?
    pub(crate) fn fits(&self, expected: &Ty) -> bool {
        match (self, expected) {
            (Ty::Int(a), Ty::Int(b)) => a.unify(*b).is_some(),
            (Ty::Slice { mutable: m }, Ty::Slice { mutable: want }) => *m || !*want,
            (Ty::Tuple(a), Ty::Tuple(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.fits(y)),
            (Ty::Never, _) => true,
            (a, b) => a == b,
        }
    }
    /// The common type of two branch results (`if`/`else`, `break` values), if any.
    pub(crate) fn unify(&self, other: &Ty) -> Option<Ty> {
        match (self, other) {
            (Ty::Never, t) | (t, Ty::Never) => Some(t.clone()),
            (Ty::Int(a), Ty::Int(b)) => a.unify(*b).map(Ty::Int),
            (Ty::Tuple(a), Ty::Tuple(b)) if a.len() == b.len() => {
                a.iter().zip(b).map(|(x, y)| x.unify(y)).collect::<Option<Vec<_>>>().map(Ty::Tuple)
            }
            (a, b) if a == b => Some(a.clone()),
            _ => None,
        }
    }
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::F64 => f.write_str("f64"),
            Ty::Int(k) => f.write_str(k.name()),
            Ty::Bool => f.write_str("bool"),
            Ty::Slice { mutable: false } => f.write_str("&[f64]"),
            Ty::Slice { mutable: true } => f.write_str("&mut [f64]"),
            Ty::Unit => f.write_str("()"),
            Ty::Never => f.write_str("!"),
            Ty::Struct(s) => f.write_str(&s.name),
            Ty::Tuple(items) => {
                f.write_str("(")?;
                for (k, t) in items.iter().enumerate() {
                    if k > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{t}")?;
                }
                f.write_str(")")
            }
        }
    }
}

/// Where a type is written: parameters may be slices, results and locals may not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TypePlace {
    Parameter,
    Result,
    Local,
    /// A struct's field: slices by reference, with a lifetime (`&'a [f64]`).
    Field,
}

/// The subset type a written type denotes.
pub(crate) fn parse_type(ty: &syn::Type, place: TypePlace) -> Result<Ty> {
    match ty {
        syn::Type::Path(p) if p.qself.is_none() => {
            let Some(ident) = p.path.get_ident() else {
                // `let v: Vec<f64> = ...;`: a local array (from `vec!`, `collect`, `to_vec`).
                if place == TypePlace::Local && is_vec_of_f64(ty, true) {
                    return Ok(Ty::Slice { mutable: true });
                }
                // A `Vec<f64>` field (`struct Model { weights: Vec<f64>, .. }`): a slice the
                // caller owns, as a `&'a [f64]` field is, read-only.
                if place == TypePlace::Field && is_vec_of_f64(ty, false) {
                    return Ok(Ty::Slice { mutable: false });
                }
                // `Data<'a>`, `Data<'_>`: a struct holding slices, its lifetimes written.
                if let Some(s) = struct_with_lifetimes(&p.path) {
                    return struct_in(place, s, ty);
                }
                return Err(named_type_error(ty, &path_text(&p.path)));
            };
            let name = crate::types::name_of(ident);
            match name.as_str() {
                "f64" => Ok(Ty::F64),
                "bool" => Ok(Ty::Bool),
                _ => match IntKind::from_name(&name) {
                    Some(kind) => Ok(Ty::Int(kind)),
                    None => match crate::structs::lookup(&name) {
                        Some(s) => struct_in(place, s, ty),
                        None => Err(named_type_error(ty, &name)),
                    },
                },
            }
        }
        syn::Type::Paren(p) => parse_type(&p.elem, place),
        syn::Type::Group(g) => parse_type(&g.elem, place),
        syn::Type::Tuple(t) if t.elems.is_empty() => Ok(Ty::Unit),
        syn::Type::Tuple(t) => {
            if !matches!(place, TypePlace::Result | TypePlace::Local) {
                return Err(unsupported(
                    ty.span(),
                    "tuple-typed parameters and fields",
                    "pass the components separately, and destructure tuple results with `let (a, b) = f(...)`",
                ));
            }
            let mut items = vec![];
            for elem in &t.elems {
                let item = parse_type(elem, TypePlace::Local)?;
                if !item.is_scalar() {
                    return Err(unsupported(
                        elem.span(),
                        "tuple components other than `f64`, integers and `bool`",
                        "return slices' contents through a `&mut [f64]` parameter",
                    ));
                }
                items.push(item);
            }
            Ok(Ty::Tuple(items))
        }
        syn::Type::Reference(r) => {
            if r.lifetime.is_some() && place != TypePlace::Field {
                return Err(unsupported(r.span(), "lifetimes", "remove the lifetime (`&[f64]`)"));
            }
            let mutable = r.mutability.is_some();
            if let Ok(Ty::Struct(s)) = parse_type(&r.elem, TypePlace::Parameter) {
                // `&State`: read the fields as from a value (a struct is copied, never aliased).
                return if mutable || place != TypePlace::Parameter {
                    Err(unsupported(
                        r.span(),
                        "references to structs other than `&Struct` parameters",
                        "take the struct by value or by `&`, and return the new struct instead of writing through `&mut`",
                    ))
                } else {
                    Ok(Ty::Struct(s))
                };
            }
            match &*r.elem {
                syn::Type::Slice(s) if is_f64(&s.elem) || is_f64_array(&s.elem) => slice_in(place, mutable, ty),
                // `&Vec<f64>`, `&mut Vec<f64>`: a slice (the caller's `Vec` cannot grow here).
                elem if is_vec_of_f64(elem, false) => slice_in(place, mutable, ty),
                syn::Type::Array(a) if is_f64(&a.elem) || is_f64_array(&a.elem) => slice_in(place, mutable, ty),
                syn::Type::Slice(_) | syn::Type::Array(_) => Err(unsupported(
                    r.elem.span(),
                    "slices of anything but `f64`",
                    "use `&[f64]` (integers can be stored as `f64`)",
                )),
                _ => Err(unsupported(
                    r.span(),
                    "references to scalars",
                    "pass the value (`x: f64`) and return the new value instead of writing through a reference",
                )),
            }
        }
        // `[f64; N]`, and `[[f64; C]; R]` (an array of arrays, flat: see `rows.rs`).
        syn::Type::Array(a) if is_f64(&a.elem) || is_f64_array(&a.elem) => match place {
            TypePlace::Parameter => Ok(Ty::Slice { mutable: false }),
            // `let mut a: [f64; 3] = [0.0; 3];`: a local array, writable if the binding is `mut`.
            TypePlace::Local => Ok(Ty::Slice { mutable: true }),
            TypePlace::Result => Err(unsupported(
                ty.span(),
                "array results other than a free function's `[f64; N]` (`N` from 2 to 64, a literal or a `const`)",
                "return a tuple (`-> (f64, f64)`, destructured by the caller: `let (a, b) = f(x);`), or take a `&mut [f64]` parameter and write the result into it",
            )),
            TypePlace::Field => {
                Err(unsupported(ty.span(), "array fields", "hold a slice (`&'a [f64]`) of an array the caller owns"))
            }
        },
        syn::Type::Slice(_) => {
            Err(unsupported(ty.span(), "unsized slice types", "take the slice by reference: `&[f64]` or `&mut [f64]`"))
        }
        syn::Type::Never(_) => Err(unsupported(ty.span(), "never types (`!`)", "return a value")),
        syn::Type::Infer(_) => Err(unsupported(ty.span(), "inferred types (`_`)", "write the type out")),
        syn::Type::ImplTrait(_) | syn::Type::TraitObject(_) => {
            Err(unsupported(ty.span(), "traits", "write separate `fn`s for `f64`"))
        }
        syn::Type::BareFn(_) => {
            Err(unsupported(ty.span(), "function pointers", "call the function by name; write one `fn` per variant"))
        }
        syn::Type::Ptr(_) => Err(unsupported(ty.span(), "raw pointers", "use `&[f64]` or `&mut [f64]`")),
        _ => Err(unsupported(
            ty.span(),
            "types of this kind",
            "use `f64`, an integer type, `bool`, `&[f64]` or `&mut [f64]`",
        )),
    }
}

/// The struct a path with only lifetime arguments names (`Data<'a>`).
fn struct_with_lifetimes(path: &syn::Path) -> Option<std::rc::Rc<crate::structs::StructTy>> {
    let [segment] = path.segments.iter().collect::<Vec<_>>()[..] else { return None };
    let syn::PathArguments::AngleBracketed(args) = &segment.arguments else { return None };
    if !args.args.iter().all(|a| matches!(a, syn::GenericArgument::Lifetime(_))) {
        return None;
    }
    crate::structs::lookup(&name_of(&segment.ident))
}

/// A struct type written at `place`: one holding slices is not a result (an IR function
/// returns no slices; its slices are the caller's anyway).
fn struct_in(place: TypePlace, s: std::rc::Rc<crate::structs::StructTy>, ty: &syn::Type) -> Result<Ty> {
    if place == TypePlace::Result && s.holds_slices() {
        return Err(unsupported(
            ty.span(),
            format!("results of structs holding slices (`{}`)", s.name),
            "return the numbers, and keep the slices where the caller has them",
        ));
    }
    Ok(Ty::Struct(s))
}

fn slice_in(place: TypePlace, mutable: bool, ty: &syn::Type) -> Result<Ty> {
    if matches!(place, TypePlace::Parameter | TypePlace::Field) {
        Ok(Ty::Slice { mutable })
    } else {
        Err(unsupported(
            ty.span(),
            if place == TypePlace::Result { "slice results" } else { "slice-typed variables with a written type" },
            if place == TypePlace::Result {
                "take a `&mut [f64]` parameter and write the result into it"
            } else {
                "bind the slice without a type annotation (`let v = x;`), or use the parameter directly"
            },
        ))
    }
}

/// `Vec<f64>` (`Vec<_>` too where `infer`).
pub(crate) fn is_vec_of_f64(ty: &syn::Type, infer: bool) -> bool {
    let syn::Type::Path(p) = ty else { return false };
    let [segment] = p.path.segments.iter().collect::<Vec<_>>()[..] else { return false };
    let syn::PathArguments::AngleBracketed(args) = &segment.arguments else { return false };
    segment.ident == "Vec"
        && p.qself.is_none()
        && args.args.len() == 1
        && matches!(args.args.first(), Some(syn::GenericArgument::Type(t)) if is_f64(t) || (infer && matches!(t, syn::Type::Infer(_))))
}

/// `[f64; C]`.
fn is_f64_array(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Array(a) if is_f64(&a.elem))
}

fn is_f64(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(p) if p.qself.is_none() && p.path.is_ident("f64"))
}

pub(crate) fn path_text(path: &syn::Path) -> String {
    path.segments.iter().map(|s| crate::types::name_of(&s.ident)).collect::<Vec<_>>().join("::")
}

fn named_type_error(ty: &syn::Type, name: &str) -> crate::error::FrontError {
    let span = ty.span();
    match name {
        "f32" => unsupported(span, "`f32` values", "use `f64`"),
        "i8" | "i16" | "i128" | "u8" | "u16" | "u128" => unsupported(
            span,
            format!("`{name}` values"),
            "use `i64`, `i32`, `isize`, `u64`, `u32` or `usize` (all are 64-bit integers in the IR)",
        ),
        "Vec" => unsupported(
            span,
            "`Vec` values",
            "take `&[f64]`, `&Vec<f64>` or `&mut [f64]` parameters and write results into a `&mut [f64]`; in the body, `Vec<f64>` from `vec!`, `collect` or `to_vec` is a local array",
        ),
        "String" | "str" | "char" => unsupported(span, "strings and characters", "compute with `f64` values only"),
        "Option" | "Result" | "Box" => unsupported(
            span,
            format!("`{name}` values"),
            "return plain values (use `f64::NAN` or a `bool` flag for \"no value\")",
        ),
        _ => unsupported(
            span,
            format!(
                "named types other than the structs of the same source (here `{name}`: an enum, an alias or a struct defined elsewhere)"
            ),
            "define the struct, with named fields, in the same source (with the attributes: inside the `#[jitdiff::module]`), or use `f64`, an integer type, `bool` and slices",
        ),
    }
}

/// The name an identifier denotes (`r#match` is `match`).
pub(crate) fn name_of(ident: &syn::Ident) -> String {
    let text = ident.to_string();
    match text.strip_prefix("r#") {
        Some(raw) => raw.to_string(),
        None => text,
    }
}
