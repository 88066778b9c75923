//! Structured control flow: counted loops with carried values and two-way branches with joined
//! results. These create the blocks, their parameters and the jumps between them.

use super::function::{FunctionBuilder, type_list};
use super::var::{Operand, Var, VarList};
use crate::function::{Block, Terminator};
use crate::opcode::CondCode;
use crate::types::Type;

impl FunctionBuilder {
    /// A loop `for i in start..end` (step 1, `i64` bounds) that threads `carried` values through
    /// the iterations: `body(f, i, current)` returns the next values; the final values are
    /// returned. Emits
    ///
    /// ```text
    ///     jump loop_head(start, carried...)
    /// loop_head(i: i64, c...):
    ///     more = icmp lt i, end
    ///     br more, loop_body, loop_exit(c...)
    /// loop_body:
    ///     ... body ...
    ///     inext = iadd i, 1
    ///     jump loop_head(inext, next...)
    /// loop_exit(r...):
    /// ```
    ///
    /// `end` is evaluated once, before the loop. Carried values may be `f64`, `i64`, `bool` or
    /// vectors (not slices); the body must return the same number and types.
    ///
    /// ```
    /// use jitdiff_ir::{Type, builder::ModuleBuilder};
    /// let mut mb = ModuleBuilder::new();
    /// // sum of i * x for i in 0..n, and the count of iterations
    /// mb.function("tri", &[("x", Type::F64), ("n", Type::I64)], &[Type::F64, Type::I64], |f| {
    ///     let (x, n) = (f.param(0), f.param(1));
    ///     let (s, k) = f.for_range(0, n, (f.float(0.0), f.int(0)), |_, i, (s, k)| (s + i.itof() * x, k + 1));
    ///     f.ret(&[s, k]);
    /// })?;
    /// # Ok::<(), jitdiff_ir::builder::BuildError>(())
    /// ```
    pub fn for_range<'a, C: VarList<'a>>(
        &'a self,
        start: impl Operand<'a>,
        end: impl Operand<'a>,
        carried: C,
        body: impl FnOnce(&'a FunctionBuilder, Var<'a>, C) -> C,
    ) -> C {
        let Some(pre) = self.open_block("for_range") else {
            return carried;
        };
        let start = start.into_var(self, Type::I64);
        let end = end.into_var(self, Type::I64);
        let init = carried.to_vars();
        if start.ty() != Type::I64 || end.ty() != Type::I64 {
            self.fail(format!("for_range bounds must be i64, got {} and {}", start.ty(), end.ty()));
            return carried;
        }
        if !self.check_carriable("for_range", &init) {
            return carried;
        }

        let head = self.new_block("loop_head");
        let i = self.add_block_param(head, Type::I64);
        let params: Vec<Var<'a>> = init.iter().map(|v| self.add_block_param(head, v.ty())).collect();
        let mut entry_args = vec![start];
        entry_args.extend(&init);
        self.set_terminator(pre, Terminator::Jump(Self::block_call(head, &entry_args)));

        self.switch_to(Some(head));
        let more = self.icmp(CondCode::Lt, i, end);
        let body_block = self.new_block("loop_body");
        self.switch_to(Some(body_block));
        let next = body(self, i, C::from_vars(&params)).to_vars();
        if self.is_open() {
            if self.check_same_types("the for_range body", &next, &params) {
                let inext = i + 1;
                let mut back = vec![inext];
                back.extend(&next);
                self.terminate(Terminator::Jump(Self::block_call(head, &back)));
            } else {
                self.switch_to(None);
            }
        }

        let exit = self.new_block("loop_exit");
        let outs: Vec<Var<'a>> = params.iter().map(|p| self.add_block_param(exit, p.ty())).collect();
        self.set_terminator(
            head,
            Terminator::Branch {
                cond: more.value(),
                then_dest: Self::block_call(body_block, &[]),
                else_dest: Self::block_call(exit, &params),
            },
        );
        self.switch_to(Some(exit));
        C::from_vars(&outs)
    }

    /// A two-way branch on the `bool` `cond`. Each closure builds its side and returns the
    /// side's results (the same shape and types on both sides); they arrive as parameters of a
    /// `join` block and are returned. A side may end in [`ret`](Self::ret) instead; its
    /// results are then ignored (if both sides return, nothing follows the branch).
    ///
    /// ```
    /// use jitdiff_ir::{Type, builder::ModuleBuilder};
    /// let mut mb = ModuleBuilder::new();
    /// mb.function("relu", &[("x", Type::F64)], &[Type::F64], |f| {
    ///     let x = f.param(0);
    ///     let y = f.if_else(x.gt(0.0), |_| x, |f| f.float(0.0));
    ///     f.ret(&[y]);
    /// })?;
    /// let module = mb.finish()?;
    /// let labels: Vec<&str> = module.functions[0].blocks.iter().map(|b| b.name.as_str()).collect();
    /// assert_eq!(labels, ["entry", "then", "else", "join"]);
    /// # Ok::<(), jitdiff_ir::builder::BuildError>(())
    /// ```
    pub fn if_else<'a, R: VarList<'a>>(
        &'a self,
        cond: Var<'a>,
        then_side: impl FnOnce(&'a FunctionBuilder) -> R,
        else_side: impl FnOnce(&'a FunctionBuilder) -> R,
    ) -> R {
        let pre = self.open_block("if_else");
        let cond_ok = self.owns(cond)
            && (cond.ty() == Type::Bool || {
                self.fail(format!("if_else needs a bool condition, got {}", cond.ty()));
                false
            });
        let Some(pre) = pre.filter(|_| cond_ok) else {
            // Keep the closures' code out of the function but still produce their results.
            self.switch_to(None);
            return then_side(self);
        };

        let then_block = self.new_block("then");
        self.switch_to(Some(then_block));
        let then_result = then_side(self);
        let then_vals = then_result.to_vars();
        let then_end = self.current();

        let else_block = self.new_block("else");
        self.switch_to(Some(else_block));
        let else_vals = else_side(self).to_vars();
        let else_end = self.current();

        self.set_terminator(
            pre,
            Terminator::Branch {
                cond: cond.value(),
                then_dest: Self::block_call(then_block, &[]),
                else_dest: Self::block_call(else_block, &[]),
            },
        );

        let arms: Vec<(Block, &[Var<'a>])> = [(then_end, &then_vals[..]), (else_end, &else_vals[..])]
            .into_iter()
            .filter_map(|(end, vals)| end.map(|b| (b, vals)))
            .collect();
        let Some(&(_, shape)) = arms.first() else {
            self.switch_to(None);
            return then_result;
        };
        if !self.check_carriable("if_else", shape) {
            self.switch_to(None);
            return then_result;
        }
        if let [(_, a), (_, b)] = arms[..]
            && !self.check_same_types("the else side of if_else", b, a)
        {
            self.switch_to(None);
            return then_result;
        }
        let join = self.new_block("join");
        let outs: Vec<Var<'a>> = shape.iter().map(|v| self.add_block_param(join, v.ty())).collect();
        for (end, vals) in arms {
            self.set_terminator(end, Terminator::Jump(Self::block_call(join, vals)));
        }
        self.switch_to(Some(join));
        R::from_vars(&outs)
    }

    /// `if cond { then_side }` with no results.
    pub fn when<'a>(&'a self, cond: Var<'a>, then_side: impl FnOnce(&'a FunctionBuilder)) {
        self.if_else(cond, then_side, |_| ());
    }

    /// The open block, or record that `what` came after `ret`.
    fn open_block(&self, what: &str) -> Option<Block> {
        if self.require_open(what) { self.current() } else { None }
    }

    /// Slices cannot be block parameters; foreign values cannot be used at all.
    fn check_carriable(&self, what: &str, vars: &[Var<'_>]) -> bool {
        if !vars.iter().all(|&v| self.owns(v)) {
            return false;
        }
        if let Some(v) = vars.iter().find(|v| v.ty().is_slice()) {
            self.fail(format!(
                "{what} cannot carry a {} value: slices are only parameters; use the parameter directly",
                v.ty()
            ));
            return false;
        }
        true
    }

    /// Do `got` values match `want` in number and types?
    fn check_same_types(&self, what: &str, got: &[Var<'_>], want: &[Var<'_>]) -> bool {
        if !got.iter().all(|&v| self.owns(v)) {
            return false;
        }
        let g: Vec<Type> = got.iter().map(|v| v.ty()).collect();
        let w: Vec<Type> = want.iter().map(|v| v.ty()).collect();
        if g != w {
            self.fail(format!("{what} gives ({}) but ({}) is expected", type_list(&g), type_list(&w)));
            return false;
        }
        true
    }
}
