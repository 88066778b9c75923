//! One [`FunctionBuilder`] method per opcode of the op table, all going through
//! [`FunctionBuilder::inst`] (which types them from the table).

use super::function::FunctionBuilder;
use super::var::Var;
use crate::function::{Imm, TableId};
use crate::opcode::{CondCode, Opcode};
use crate::types::Type;

macro_rules! unary_ops {
    ($($name:ident => $op:ident),* $(,)?) => {
        impl FunctionBuilder {$(
            #[doc = concat!("Emit `", stringify!($name), " a` (opcode [`Opcode::", stringify!($op), "`]).")]
            pub fn $name<'a>(&'a self, a: Var<'a>) -> Var<'a> {
                self.op(Opcode::$op, &[a])
            }
        )*}
    };
}
macro_rules! binary_ops {
    ($($name:ident => $op:ident),* $(,)?) => {
        impl FunctionBuilder {$(
            #[doc = concat!("Emit `", stringify!($name), " a, b` (opcode [`Opcode::", stringify!($op), "`]).")]
            pub fn $name<'a>(&'a self, a: Var<'a>, b: Var<'a>) -> Var<'a> {
                self.op(Opcode::$op, &[a, b])
            }
        )*}
    };
}

unary_ops! {
    fneg => FNeg, sqrt => Sqrt, exp => Exp, ln => Ln, sin => Sin, cos => Cos, tan => Tan,
    tanh => Tanh, abs => Abs, log1p => Log1p, expm1 => Expm1, floor => Floor, ceil => Ceil,
    atan => Atan, asin => Asin, acos => Acos, sinh => Sinh, cosh => Cosh, sign => Sign,
    asinh => Asinh, acosh => Acosh, atanh => Atanh,
    exp2 => Exp2, log2 => Log2, log10 => Log10, cbrt => Cbrt, round => Round, trunc => Trunc,
    ineg => INeg, not => Not, itof => IToF, ftoi => FToI, len => Len, alloc => Alloc,
}
binary_ops! {
    fadd => FAdd, fsub => FSub, fmul => FMul, fmulsz => FMulSz, fdiv => FDiv, min => Min, max => Max, pow => Pow,
    atan2 => Atan2, hypot => Hypot, frem => FRem, powi => Powi, iadd => IAdd, isub => ISub, imul => IMul,
    idiv => IDiv, irem => IRem, and => And, or => Or, load => Load,
}

impl FunctionBuilder {
    /// Emit `fma a, b, c`: `a * b + c` with one rounding (opcode [`Opcode::Fma`]).
    pub fn fma<'a>(&'a self, a: Var<'a>, b: Var<'a>, c: Var<'a>) -> Var<'a> {
        self.op(Opcode::Fma, &[a, b, c])
    }
    /// An `f64` constant (`fconst`); the pair of [`int`](Self::int).
    pub fn float(&self, x: f64) -> Var<'_> {
        self.fconst(x)
    }
    /// An `f64` constant (`fconst`).
    pub fn fconst(&self, x: f64) -> Var<'_> {
        self.single(Opcode::FConst, &[], Imm::F64(x))
    }
    /// An `i64` constant (`iconst`).
    pub fn int(&self, k: i64) -> Var<'_> {
        self.iconst(k)
    }
    /// An `i64` constant (`iconst`).
    pub fn iconst(&self, k: i64) -> Var<'_> {
        self.single(Opcode::IConst, &[], Imm::I64(k))
    }
    /// A `bool` constant (`bconst`).
    pub fn bool(&self, b: bool) -> Var<'_> {
        self.bconst(b)
    }
    /// A `bool` constant (`bconst`).
    pub fn bconst(&self, b: bool) -> Var<'_> {
        self.single(Opcode::BConst, &[], Imm::Bool(b))
    }

    /// `fcmp cond a, b`.
    pub fn fcmp<'a>(&'a self, cond: CondCode, a: Var<'a>, b: Var<'a>) -> Var<'a> {
        self.single(Opcode::FCmp, &[a, b], Imm::Cond(cond))
    }
    /// `icmp cond a, b`.
    pub fn icmp<'a>(&'a self, cond: CondCode, a: Var<'a>, b: Var<'a>) -> Var<'a> {
        self.single(Opcode::ICmp, &[a, b], Imm::Cond(cond))
    }
    /// `icmp` for `i64` operands, `fcmp` otherwise.
    pub fn cmp<'a>(&'a self, cond: CondCode, a: Var<'a>, b: Var<'a>) -> Var<'a> {
        a.cmp(cond, b)
    }
    /// `select c, a, b`: `a` when `c`, else `b`.
    pub fn select<'a>(&'a self, c: Var<'a>, a: Var<'a>, b: Var<'a>) -> Var<'a> {
        self.op(Opcode::Select, &[c, a, b])
    }
    /// `store s, i, x`: `s[i] = x` (`s` must be an `mslice`).
    pub fn store<'a>(&'a self, s: Var<'a>, i: Var<'a>, x: Var<'a>) {
        self.inst(Opcode::Store, &[s, i, x], Imm::None);
    }
    /// `vload.f64xW s, i`: lanes `s[W*i .. W*i+W]` with `W = lanes`.
    pub fn vload<'a>(&'a self, lanes: u8, s: Var<'a>, i: Var<'a>) -> Var<'a> {
        let ty = self.vector_type(lanes);
        self.single(Opcode::VLoad, &[s, i], Imm::Type(ty))
    }
    /// `vstore s, i, v`: `v`'s lanes to `s[W*i .. W*i+W]`.
    pub fn vstore<'a>(&'a self, s: Var<'a>, i: Var<'a>, v: Var<'a>) {
        self.inst(Opcode::VStore, &[s, i, v], Imm::None);
    }
    /// `splat.f64xW x` with `W = lanes`: every lane equal to `x`.
    pub fn splat<'a>(&'a self, lanes: u8, x: Var<'a>) -> Var<'a> {
        let ty = self.vector_type(lanes);
        self.single(Opcode::Splat, &[x], Imm::Type(ty))
    }
    /// `extract v, lane`.
    pub fn extract<'a>(&'a self, v: Var<'a>, lane: u8) -> Var<'a> {
        self.single(Opcode::Extract, &[v], Imm::Lane(lane))
    }
    /// `insert v, lane, x`.
    pub fn insert<'a>(&'a self, v: Var<'a>, lane: u8, x: Var<'a>) -> Var<'a> {
        self.single(Opcode::Insert, &[v, x], Imm::Lane(lane))
    }
    /// `tpush x`: append `x` (`f64`, `i64` or `bool`) to the call's tape.
    pub fn tpush<'a>(&'a self, x: Var<'a>) {
        self.inst(Opcode::TPush, &[x], Imm::None);
    }
    /// `tpop.T`: step the tape's read cursor back one entry and read it as `ty` (`f64`, `i64`
    /// or `bool`).
    ///
    /// ```
    /// use jitdiff_ir::{Type, builder::ModuleBuilder};
    /// let mut mb = ModuleBuilder::new();
    /// mb.function("undo", &[], &[Type::F64], |f| {
    ///     let x = f.tpop(Type::F64);
    ///     f.ret(&[x]);
    /// })?;
    /// # Ok::<(), jitdiff_ir::builder::BuildError>(())
    /// ```
    pub fn tpop(&self, ty: Type) -> Var<'_> {
        self.single(Opcode::TPop, &[], Imm::Type(ty))
    }

    /// `table @name`: the module's read-only data table `table` (declared with
    /// [`ModuleBuilder::table`](crate::builder::ModuleBuilder::table)) as a `slice`.
    ///
    /// ```
    /// use jitdiff_ir::{Type, builder::ModuleBuilder};
    /// let mut mb = ModuleBuilder::new();
    /// let y = mb.table("y", &[1.0, 2.0, 4.0]);
    /// mb.function("sum_y", &[], &[Type::F64], |f| {
    ///     let t = f.table(y);
    ///     let [s] = f.for_range(0, f.len(t), [f.float(0.0)], |f, i, [acc]| [acc + f.load(t, i)]);
    ///     f.ret(&[s]);
    /// })?;
    /// let m = mb.finish()?;
    /// assert_eq!(jitdiff_ir::interpret(&m, "sum_y", &mut []).unwrap()[0].as_f64(), Some(7.0));
    /// # Ok::<(), jitdiff_ir::builder::BuildError>(())
    /// ```
    pub fn table(&self, table: TableId) -> Var<'_> {
        self.single(Opcode::Table, &[], Imm::Table(table))
    }

    /// The vector type with `lanes` lanes; an unsupported width is recorded as an error.
    fn vector_type(&self, lanes: u8) -> Type {
        Type::vector(lanes).unwrap_or_else(|| {
            self.fail(format!("f64x{lanes} is not a vector type: lanes must be 2, 4, 8 or 16"));
            Type::F64x(2)
        })
    }

    /// Emit an instruction with one result.
    fn single<'a>(&'a self, op: Opcode, args: &[Var<'a>], imm: Imm) -> Var<'a> {
        self.inst(op, args, imm).first().copied().unwrap_or_else(|| self.placeholder(Type::F64))
    }
}
