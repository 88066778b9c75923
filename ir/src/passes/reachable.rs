//! Module-level pruning: keep only the functions some root can call.

use crate::function::{Callee, ExternId, FuncId, Imm, Module, TableId};

/// The functions of `module` reachable through calls from the functions named in `roots`
/// (unknown names are ignored), in their original order, with calls renumbered, and the tables
/// they read and externs they call (each in their original order, renumbered too). Compiling a derivative needs its derived
/// functions and what they call, not every original function the module also holds.
///
/// ```
/// use jitdiff_ir::{parse_module, passes::retain_reachable};
/// let m = parse_module("func @a() -> f64 {\nentry:\n    r = call @b()\n    ret r\n}\nfunc @b() -> f64 {\nentry:\n    r = fconst 1.0\n    ret r\n}\nfunc @c() -> f64 {\nentry:\n    r = fconst 2.0\n    ret r\n}").unwrap();
/// let pruned = retain_reachable(&m, &["a"]);
/// assert_eq!(pruned.functions.len(), 2);
/// assert!(pruned.func_by_name("c").is_none());
/// ```
pub fn retain_reachable(module: &Module, roots: &[&str]) -> Module {
    let mut keep = vec![false; module.functions.len()];
    let mut stack: Vec<FuncId> = roots.iter().filter_map(|r| module.func_id(r)).collect();
    while let Some(id) = stack.pop() {
        if std::mem::replace(&mut keep[id.index()], true) {
            continue;
        }
        for inst in module.func(id).blocks.iter().flat_map(|b| &b.insts) {
            if let Imm::Callee(Callee::Func(callee)) = inst.imm
                && !keep[callee.index()]
            {
                stack.push(callee);
            }
        }
    }
    let mut new_id = vec![None; module.functions.len()];
    let mut next = 0u32;
    for (index, &k) in keep.iter().enumerate() {
        if k {
            new_id[index] = Some(FuncId(next));
            next += 1;
        }
    }
    let kept = || module.functions.iter().zip(&keep).filter(|(_, k)| **k).map(|(f, _)| f);
    let mut table_used = vec![false; module.tables.len()];
    let mut extern_used = vec![false; module.externs.len()];
    for inst in kept().flat_map(|f| &f.blocks).flat_map(|b| &b.insts) {
        let used = match inst.imm {
            Imm::Table(t) => table_used.get_mut(t.index()),
            Imm::Callee(Callee::Extern(e)) => extern_used.get_mut(e.index()),
            _ => None,
        };
        if let Some(used) = used {
            *used = true;
        }
    }
    let mut out = Module { externs: vec![], tables: vec![], functions: Vec::with_capacity(next as usize) };
    let mut new_extern = vec![None; module.externs.len()];
    for (k, decl) in module.externs.iter().enumerate() {
        if extern_used[k] {
            new_extern[k] = Some(out.push_extern(decl.clone()));
        }
    }
    let mut new_table = vec![None; module.tables.len()];
    for (k, table) in module.tables.iter().enumerate() {
        if table_used[k] {
            new_table[k] = Some(out.push_table(table.clone()));
        }
    }
    for f in kept() {
        let mut f = f.clone();
        for inst in f.blocks.iter_mut().flat_map(|b| b.insts.iter_mut()) {
            match &mut inst.imm {
                Imm::Callee(Callee::Func(callee)) => {
                    *callee = new_id[callee.index()].expect("a kept function only calls kept functions");
                }
                Imm::Callee(Callee::Extern(e)) => {
                    // As for tables: an index that names no extern is left as it is.
                    let fresh: Option<ExternId> = new_extern.get(e.index()).copied().flatten();
                    if let Some(fresh) = fresh {
                        *e = fresh;
                    }
                }
                Imm::Table(t) => {
                    // An index that names no table (unverified IR) is left as it is.
                    let fresh: Option<TableId> = new_table.get(t.index()).copied().flatten();
                    if let Some(fresh) = fresh {
                        *t = fresh;
                    }
                }
                _ => {}
            }
        }
        out.functions.push(f);
    }
    out
}
