//! Reads of the module's data tables at constant indices, folded.

use crate::function::{Function, Imm, InstData, Table, TableId, Value};
use crate::opcode::Opcode;
use rustc_hash::FxHashMap as HashMap;

/// Replace `len t` of a table `t = table @y` by its length, and `load t, k` with a constant index
/// `k` inside the table by the value there (an `fconst` with the very bits of the table's entry).
/// A load at an index outside the table stays, and still fails at run time. Returns whether
/// something changed; run [`dce`](super::dce) afterwards to drop the unused `table`s.
///
/// `tables` are the tables of the function's module. A table with a NaN other than the canonical
/// one at the index read is not folded (the folded constant must print and parse back bit for
/// bit, as [`fold_constants`](super::fold_constants) requires of every constant it makes).
///
/// ```
/// use jitdiff_ir::{parse_module, passes, print_module};
/// let src = "const @y = [0.5, 2.5]\n\nfunc @f(x: f64) -> f64 {\nentry:\n    t = table @y\n    one = iconst 1\n    \
///            a = load t, one\n    n = len t\n    m = itof n\n    r = fmul a, m\n    ret r\n}\n";
/// let mut m = parse_module(src).unwrap();
/// let tables = m.tables.clone();
/// assert!(passes::fold_table_reads(&mut m.functions[0], &tables));
/// passes::optimize(&mut m);
/// assert!(print_module(&m).contains("fconst 5.0"), "{m}");
/// ```
pub fn fold_table_reads(func: &mut Function, tables: &[Table]) -> bool {
    if tables.is_empty() {
        return false;
    }
    let mut table_of: HashMap<Value, TableId> = HashMap::default();
    let mut int_of: HashMap<Value, i64> = HashMap::default();
    for inst in func.blocks.iter().flat_map(|b| &b.insts) {
        match (inst.op, inst.imm, inst.results.first()) {
            (Opcode::Table, Imm::Table(t), Some(&r)) => {
                table_of.insert(r, t);
            }
            (Opcode::IConst, Imm::I64(k), Some(&r)) => {
                int_of.insert(r, k);
            }
            _ => {}
        }
    }
    if table_of.is_empty() {
        return false;
    }
    let data = |v: Value| table_of.get(&v).and_then(|t| tables.get(t.index())).map(|t| &t.data);
    let mut changed = false;
    for inst in func.blocks.iter_mut().flat_map(|b| b.insts.iter_mut()) {
        let (Some(&s), Some(&result)) = (inst.args.first(), inst.results.first()) else { continue };
        let Some(values) = data(s) else { continue };
        let folded = match (inst.op, inst.args.get(1)) {
            (Opcode::Len, None) => Some((Opcode::IConst, Imm::I64(values.len() as i64))),
            (Opcode::Load, Some(index)) => int_of
                .get(index)
                .and_then(|&k| usize::try_from(k).ok())
                .and_then(|k| values.get(k))
                .filter(|x| !x.is_nan() || x.to_bits() == f64::NAN.to_bits())
                .map(|&x| (Opcode::FConst, Imm::F64(x))),
            _ => None,
        };
        if let Some((op, imm)) = folded {
            *inst = InstData { op, args: smallvec::smallvec![], imm, results: smallvec::smallvec![result] };
            changed = true;
        }
    }
    changed
}
