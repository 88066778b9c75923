//! Loop state the pullback computes instead of popping: where a counted loop ends, its
//! trip count (from its [`ExitTest`](crate::loops::ExitTest)), the final value of its
//! induction variables and its integer invariants (an offset computed in an enclosing loop) are
//! often integer arithmetic on values the reversed exit block has anyway — the enclosing loops'
//! induction variables and carried values, once-per-call values, constants. Then the forward
//! function records nothing when the loop ends, and the pullback enters the reversed loop with
//! values it computed. Only integers are derived this way: a float invariant would be
//! recomputed from memory reads, which cost as much as the tape entry they save.
//!
//! The same derivations give a loop's recurrence the steps it needs in the reversed latch when
//! a step is computed from the loop index (`col_start += d - (i + 1)`).

use super::{Carry, RECOMPUTE_LIMIT, StatePlan, Trial};
use crate::loops::Induction;
use jitdiff_ir::{Block, CondCode, Imm, Opcode, Type, Value};
use jitdiff_rules::{BlockEmitter, Emit};
use rustc_hash::FxHashMap as HashMap;

/// What the pullback computes, rather than pops, when it enters one reversed counted loop.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ExitPlan {
    /// The trip count.
    pub trip: bool,
    /// Per value the loop carries (in the order of `StatePlan::carried`).
    pub carried: Vec<bool>,
}

impl ExitPlan {
    /// Is carried value `i` computed rather than popped?
    pub fn derives(&self, i: usize) -> bool {
        self.carried.get(i).copied().unwrap_or(false)
    }
}

/// Where a derivation happens: at the end of a reversed block's restore (everything the block
/// restored is there), or in a reversed latch before it steps loop `k`'s recurrences back
/// (only popped and carried values, and none of loop `k`'s recurrences).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Scope {
    Restored,
    Latch(usize),
}

impl StatePlan {
    /// Decide, innermost loop first, what the pullback computes where each counted loop with an
    /// exit test ends. Call once every block is planned, before anything records loop state.
    pub fn plan_exits(&mut self) {
        let mut order: Vec<usize> = (0..self.loops.len()).collect();
        order.sort_by_key(|&k| self.loops[k].body.len());
        for k in order {
            let Some(test) = self.loops[k].exit_test else { continue };
            let (header, exit) = (self.loops[k].header, test.exit);
            // A loop that is not inside another runs once per call: its state is one tape entry
            // per call, and popping it is cheaper than computing it and keeping what that needs
            // live through the pullback.
            if !self.loops.iter().any(|l| l.header != header && l.body.contains(&header)) {
                continue;
            }
            // The exit edge must leave this loop alone, and not be an enclosing loop's back edge
            // (an exit straight to the outer header): the reversed exit block then runs in the
            // same iteration of every enclosing loop as the loop did.
            let leaves_others =
                self.loops.iter().any(|l| l.body.contains(&header) && l.header != header && !l.body.contains(&exit));
            let back_edge = self.loop_headers.get(&header).is_some_and(|around| around.contains(&exit));
            if leaves_others || back_edge {
                continue;
            }
            let mut trial = Trial::default();
            let trip = self.try_derive(exit, &[test.induction.init, test.bound], &mut trial);
            let carried: Vec<Carry> = self.carried[k].clone();
            let carried = carried
                .iter()
                .map(|carry| match *carry {
                    Carry::Invariant(v) => {
                        self.types.get(&v) == Some(&Type::I64) && self.try_derive(exit, &[v], &mut trial)
                    }
                    Carry::Recurrence { param, .. } => {
                        trip && self.inductions.get(&param).is_some_and(|&(h, Induction { init, step, .. })| {
                            h == header && self.try_derive(exit, &[init, step], &mut trial)
                        })
                    }
                })
                .collect();
            self.commit(trial);
            self.exits[k] = ExitPlan { trip, carried };
        }
    }

    /// Add to `trial` what deriving all of `values` at `b` needs, if that is possible; leave
    /// `trial` unchanged otherwise.
    fn try_derive(&self, b: Block, values: &[Value], trial: &mut Trial) -> bool {
        let mut attempt = Trial { global: trial.global.clone(), carried: trial.carried.clone(), ..Trial::default() };
        let ok = values.iter().all(|&v| self.derivable(b, v, Scope::Restored, &mut attempt, 0));
        if ok {
            *trial = attempt;
        }
        ok
    }

    /// Can the reverse of block `b` compute the integer `v` by integer arithmetic on what it
    /// has (see [`Scope`]), once-per-call values and values carried by the loops around `b`?
    /// Adds the once-per-call values and carried values that needs to `trial`.
    pub(super) fn derivable(&self, b: Block, v: Value, scope: Scope, trial: &mut Trial, depth: usize) -> bool {
        if depth > RECOMPUTE_LIMIT {
            return false;
        }
        // In a reversed latch, a recurrence of its loop still holds the next iteration's value;
        // only an induction variable is known there (from the trip count).
        let own_recurrence = |k: usize| self.loops[k].recurrences.iter().any(|r| r.0 == v);
        if let Scope::Latch(k) = scope
            && own_recurrence(k)
        {
            return self.derive_induction(b, v, trial);
        }
        let in_trial = trial.global.contains(&v)
            || trial.carried.iter().any(|(k, c)| c.value() == v && self.loops[*k].body.contains(&b));
        let restored = match scope {
            Scope::Restored => self.blocks.get(&b).is_some_and(|s| self.available(v, s)),
            Scope::Latch(_) => self.global.contains(&v),
        };
        if self.is_constant(v) || in_trial || restored || self.carried_in(b, v) {
            return true;
        }
        if self.is_global(b, v) {
            trial.global.push(v);
            return true;
        }
        if self.derive_induction(b, v, trial) {
            return true;
        }
        if scope == Scope::Restored
            && let Some((carries, global)) = self.recurrence(b, v)
        {
            trial.carried.extend(carries);
            trial.global.extend(global.into_iter().filter(|g| !self.global.contains(g)));
            return true;
        }
        if let Some(inst) = self.defs.get(&v)
            && matches!(inst.op, Opcode::IAdd | Opcode::ISub | Opcode::IMul | Opcode::INeg)
            && self.def_block.get(&v).is_some_and(|&d| self.same_iteration(d, b))
        {
            return inst.args.iter().all(|&a| self.derivable(b, a, scope, trial, depth + 1));
        }
        if self.types.get(&v) == Some(&Type::I64)
            && let Some(k) = self.invariant_loop(b, v)
        {
            trial.carried.push((k, Carry::Invariant(v)));
            return true;
        }
        false
    }

    /// If `v` is an induction variable of a loop around `b` with a constant or once-per-call
    /// start and step, add those to `trial`'s once-per-call values.
    fn derive_induction(&self, b: Block, v: Value, trial: &mut Trial) -> bool {
        let Some((init, step)) = self.induction(b, v) else { return false };
        for x in [init, step] {
            if !self.is_constant(x) && !self.global.contains(&x) && !trial.global.contains(&x) {
                trial.global.push(x);
            }
        }
        true
    }

    /// Does the block `def` dominate `b` within the same iteration of every loop around them
    /// (both are in the same natural loops)? Then a value `def` computes still holds when `b`
    /// runs, and `b`'s reverse can recompute it.
    fn same_iteration(&self, def: Block, b: Block) -> bool {
        if self.loop_headers.get(&def) != self.loop_headers.get(&b) {
            return false;
        }
        let mut at = b;
        loop {
            if at == def {
                return true;
            }
            match self.idom.get(&at) {
                Some(&up) => at = up,
                None => return false,
            }
        }
    }

    /// Emit the computation of the integer `v` planned by [`StatePlan::derivable`], from the
    /// restored values `env` and the trip counts `trips` of the loops around the block.
    pub fn derive(
        &self,
        em: &mut BlockEmitter<'_>,
        env: &HashMap<Value, Value>,
        trips: &HashMap<Block, Value>,
        v: Value,
    ) -> Value {
        if let Some(&r) = env.get(&v) {
            return r;
        }
        if let Some((op, imm)) = self.constant(v) {
            return em.emit(op, &[], imm);
        }
        if let Some(&(header, Induction { init, step, subtract, .. })) = self.inductions.get(&v)
            && let Some(&trip) = trips.get(&header)
        {
            let (init, step) = (self.derive(em, env, trips, init), self.derive(em, env, trips, step));
            let offset = em.emit(Opcode::IMul, &[trip, step], Imm::None);
            return em.emit(if subtract { Opcode::ISub } else { Opcode::IAdd }, &[init, offset], Imm::None);
        }
        let inst = self.defs.get(&v).expect("a derived value is restored, constant, an induction or arithmetic");
        let args: Vec<Value> = inst.args.iter().map(|&a| self.derive(em, env, trips, a)).collect();
        em.emit(inst.op, &args, inst.imm)
    }

    /// Does loop `k`'s formula for the trip count need no clamping at zero: is the start of its
    /// `iv < bound` test known to be at most the bound? That holds for a constant start and
    /// bound, and for the triangular pattern where the start is `j` or `j + 1` for the index `j`
    /// of an enclosing loop running while `j < bound`, with the same bound (`for i in j+1..n`).
    fn enters_or_ends_at_once(&self, k: usize) -> bool {
        let Some(test) = self.loops[k].exit_test else { return false };
        if !(test.up && test.cond == CondCode::Lt) {
            return false;
        }
        let (init, bound) = (test.induction.init, test.bound);
        let constant = |v: Value| match self.constant(v) {
            Some((Opcode::IConst, Imm::I64(c))) => Some(c),
            _ => None,
        };
        if let (Some(a), Some(b)) = (constant(init), constant(bound)) {
            return a <= b;
        }
        let index = match self.defs.get(&init) {
            Some(i) if i.op == Opcode::IAdd && matches!(constant(i.args[1]), Some(0 | 1)) => i.args[0],
            Some(i) if i.op == Opcode::IAdd && matches!(constant(i.args[0]), Some(0 | 1)) => i.args[1],
            _ => init,
        };
        let header = self.loops[k].header;
        self.loops.iter().any(|outer| {
            outer.header != header
                && outer.body.contains(&header)
                && outer
                    .exit_test
                    .is_some_and(|t| t.up && t.cond == CondCode::Lt && t.induction.iv == index && t.bound == bound)
        })
    }

    /// Emit, in the reversed block of loop `k`'s exit, what [`StatePlan::plan_exits`] planned
    /// to compute for the loop: its trip count and its carried values (`None` where popped).
    pub fn exit_values(
        &self,
        em: &mut BlockEmitter<'_>,
        env: &HashMap<Value, Value>,
        trips: &HashMap<Block, Value>,
        k: usize,
    ) -> (Option<Value>, Vec<Option<Value>>) {
        let plan = &self.exits[k];
        // The trip count, and the tested variable's final value, which is simply the bound (one
        // past it for `le`/`ge`) when the loop runs at all.
        let mut tested_final = None;
        let trip = self.loops[k].exit_test.filter(|_| plan.trip).map(|test| {
            let init = self.derive(em, env, trips, test.induction.init);
            let bound = self.derive(em, env, trips, test.bound);
            let (from, to) = if test.up { (init, bound) } else { (bound, init) };
            let distance = em.emit(Opcode::ISub, &[to, from], Imm::None);
            let one = em.emit(Opcode::IConst, &[], Imm::I64(1));
            let (runs, count, last) = match test.cond {
                CondCode::Ne => {
                    tested_final = Some(bound);
                    return distance;
                }
                CondCode::Lt | CondCode::Gt => (CondCode::Lt, distance, bound),
                cond => {
                    let past = if cond == CondCode::Le { Opcode::IAdd } else { Opcode::ISub };
                    (
                        CondCode::Le,
                        em.emit(Opcode::IAdd, &[distance, one], Imm::None),
                        em.emit(past, &[bound, one], Imm::None),
                    )
                }
            };
            if self.enters_or_ends_at_once(k) {
                tested_final = Some(last);
                return count;
            }
            let enters = em.emit(Opcode::ICmp, &[from, to], Imm::Cond(runs));
            let zero = em.emit(Opcode::IConst, &[], Imm::I64(0));
            tested_final = Some(em.emit(Opcode::Select, &[enters, last, init], Imm::None));
            em.emit(Opcode::Select, &[enters, count, zero], Imm::None)
        });
        let tested = self.loops[k].exit_test.map(|test| test.induction.iv);
        let carried = self.carried[k]
            .iter()
            .enumerate()
            .map(|(i, carry)| {
                if !plan.derives(i) {
                    return None;
                }
                Some(match *carry {
                    Carry::Invariant(v) => self.derive(em, env, trips, v),
                    Carry::Recurrence { param, .. } if Some(param) == tested => {
                        tested_final.expect("the trip count comes with the tested variable's final value")
                    }
                    Carry::Recurrence { param, .. } => {
                        let (_, Induction { init, step, subtract, .. }) = self.inductions[&param];
                        let (init, step) = (self.derive(em, env, trips, init), self.derive(em, env, trips, step));
                        let trip = trip.expect("a final induction value needs the trip count");
                        let offset = em.emit(Opcode::IMul, &[trip, step], Imm::None);
                        em.emit(if subtract { Opcode::ISub } else { Opcode::IAdd }, &[init, offset], Imm::None)
                    }
                })
            })
            .collect();
        (trip, carried)
    }
}
