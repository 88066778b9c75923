//! Constructs of generated programs: if/else with joined values, counted loops with carried
//! values, and calls to earlier functions — with their costs charged and reserved so the step
//! bound holds.

use super::generate::{Env, F, Generator, PER_VALUE};
use crate::builder::{FunctionBuilder, Var};
use crate::types::Type;
use std::cell::RefCell;

impl Generator<'_> {
    /// The type of a join or loop-carried value.
    fn carried_type(&mut self, env: &Env<'_>) -> Type {
        let mut kinds = vec![(Some(Type::F64), 6), (Some(Type::I64), 2), (Some(Type::Bool), 1)];
        if self.cfg.allow_vectors {
            kinds.push((None, 1));
        }
        match self.weighted(&kinds) {
            Some(t) => t,
            None => match env.vecs.first() {
                Some(v) if self.chance(50) => v.v.ty(),
                _ => Type::F64x(self.width()),
            },
        }
    }

    /// If/else yielding 0-2 joined values; rarely the then side returns early instead.
    pub(super) fn branch<'a>(&mut self, f: &'a FunctionBuilder, env: &mut Env<'a>, depth: usize, mult: u64) {
        let count = self.below(3);
        let types: Vec<Type> = (0..count).map(|_| self.carried_type(env)).collect();
        let early_return = self.chance(5);
        // Set aside what each side emits after its statements: its values, or the early return.
        let tail = PER_VALUE * count as u64;
        let then_tail = if early_return { self.ret_cost() } else { tail };
        let reserve = (tail + then_tail).saturating_mul(mult);
        // The condition, three blocks and the join.
        if !self.fits(reserve.saturating_add(8u64.saturating_mul(mult))) {
            return;
        }
        let cond = self.bool(f, env);
        self.charge(f, mult);
        self.reserved += reserve;
        let state = RefCell::new((&mut *self, &mut *env, Vec::<f64>::new()));
        let outs = {
            let side = |f: &'a FunctionBuilder, ret: bool| -> Vec<Var<'a>> {
                let mut st = state.borrow_mut();
                let (g, env, bounds) = &mut *st;
                g.charge(f, mult);
                let mark = env.mark();
                let side_tail = if ret { then_tail } else { tail }.saturating_mul(mult);
                g.region(f, env, depth + 1, mult);
                g.reserved -= side_tail;
                g.open_record();
                let mut out = vec![];
                if f.is_open() {
                    if ret {
                        g.emit_ret(f, env, mult);
                    } else {
                        for &t in &types {
                            out.push(g.result_value(f, env, t));
                        }
                        g.charge(f, mult);
                    }
                }
                if bounds.is_empty() {
                    *bounds = out.iter().map(|x| x.bound).collect();
                } else {
                    bounds.iter_mut().zip(&out).for_each(|(b, x)| *b = b.max(x.bound));
                }
                env.reset(mark);
                out.iter().map(|x| x.v).collect()
            };
            f.if_else(cond, |f| side(f, early_return), |f| side(f, false))
        };
        let (_, env, bounds) = state.into_inner();
        for (v, b) in outs.into_iter().zip(bounds) {
            env.push(v, b);
        }
    }

    pub(super) fn counted_loop<'a>(&mut self, f: &'a FunctionBuilder, env: &mut Env<'a>, depth: usize, mult: u64) {
        let k = self.cfg.max_trip.max(0);
        let mut kinds = vec![0, 1];
        if !env.slices.is_empty() {
            kinds.push(2);
            if self.cfg.allow_vectors {
                kinds.push(3);
            }
        }
        let kind = kinds[self.below(kinds.len())];
        let const_trip = self.below(k as usize + 1) as i64;
        let trip = if kind == 0 { const_trip } else { k };
        let start = if self.chance(15) { 1 } else { 0 };
        let count = self.below(4);
        let types: Vec<Type> = (0..count).map(|_| self.carried_type(env)).collect();

        // Costs: bounds and initial values once; the header (icmp and two blocks) trip + 1 times;
        // per iteration the counter update and the next values; the exit block once.
        let trips = trip.max(1) as u64;
        let values = PER_VALUE * count as u64;
        let inner = mult.saturating_mul(trips);
        let body_tail = (2 + values).saturating_mul(inner);
        let fixed = (12 + values).saturating_mul(mult).saturating_add((3 * (trips + 1)).saturating_mul(mult));
        if !self.fits(fixed.saturating_add(body_tail)) {
            return;
        }
        let clamp = |n: Var<'a>| {
            let kk = f.int(k);
            f.select(n.lt(kk), n, kk)
        };
        let (end, valid) = match kind {
            0 => (f.int(const_trip), None),
            1 => (clamp(self.int(f, env)), None),
            _ => {
                let s = env.slices[self.below(env.slices.len())];
                let lanes = if kind == 3 { self.width() } else { 1 };
                let n = f.len(s);
                let count = if lanes == 1 { n } else { n / i64::from(lanes) };
                (clamp(count), Some((s, lanes)))
            }
        };
        let mut init: Vec<Var<'a>> = vec![];
        for &t in &types {
            let x = self.value_of(f, env, t);
            init.push(self.tame(x, self.iface()).v);
        }
        self.charge(f, mult);
        self.reserved += body_tail;
        let outs = f.for_range(start, end, init, |f, i, cur| {
            self.charge(f, mult.saturating_mul(trips + 1));
            let mark = env.mark();
            let iface = self.iface();
            env.push(i, 0.0);
            for &c in &cur {
                env.push(c, iface);
            }
            if let Some((s, lanes)) = valid {
                env.valid.push((s, lanes, i));
            }
            self.region(f, env, depth + 1, inner);
            self.reserved -= body_tail;
            self.open_record();
            let mut next = vec![];
            for &c in &cur {
                let x = self.next_carried(f, env, F { v: c, bound: iface });
                next.push(self.tame(x, iface).v);
            }
            // The counter update `for_range` appends after this closure.
            self.charge(f, inner);
            self.cost = self.cost.saturating_add(2u64.saturating_mul(inner));
            env.reset(mark);
            next
        });
        let iface = self.iface();
        for v in outs {
            env.push(v, iface);
        }
    }

    /// A call to an earlier function whose slice parameters this function can supply (each of
    /// its slices passed at most once, so no call aliases memory). False if there is none.
    pub(super) fn call<'a>(&mut self, f: &'a FunctionBuilder, env: &mut Env<'a>, mult: u64) -> bool {
        let avail_mut = env.slices.iter().filter(|s| s.ty() == Type::SliceMut).count();
        let callable: Vec<usize> = (0..self.funcs.len())
            .filter(|&i| {
                let fi = &self.funcs[i];
                let need_mut = fi.params.iter().filter(|&&t| t == Type::SliceMut).count();
                let need_all = fi.params.iter().filter(|t| t.is_slice()).count();
                let args = PER_VALUE * fi.params.len() as u64 + 1;
                need_mut <= avail_mut
                    && need_all <= env.slices.len()
                    && self.fits((fi.cost + args).saturating_mul(mult))
            })
            .collect();
        if callable.is_empty() {
            return false;
        }
        let pick = callable[self.below(callable.len())];
        let fi = self.funcs[pick].clone();
        let mut unused: Vec<Var<'a>> = env.slices.clone();
        let mut args: Vec<Option<Var<'a>>> = vec![None; fi.params.len()];
        // Mutable slices first, so read-only parameters cannot use up the mutable ones.
        for want in [Type::SliceMut, Type::Slice] {
            for (k, &t) in fi.params.iter().enumerate() {
                if t != want {
                    continue;
                }
                let fitting: Vec<usize> = (0..unused.len()).filter(|&j| unused[j].ty().coerces_to(t)).collect();
                let j = fitting[self.below(fitting.len())];
                args[k] = Some(unused.remove(j));
            }
        }
        let args: Vec<Var<'a>> = fi
            .params
            .iter()
            .zip(args)
            .map(|(&t, a)| match a {
                Some(s) => s,
                None => {
                    let x = self.value_of(f, env, t);
                    self.tame(x, self.iface()).v
                }
            })
            .collect();
        let results = f.call(fi.id, &args);
        self.cost = self.cost.saturating_add(fi.cost.saturating_mul(mult));
        for (r, b) in results.into_iter().zip(fi.ret_bounds) {
            self.keep(env, r, b);
        }
        true
    }
}
