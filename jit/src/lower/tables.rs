//! Data tables: each table a function reads is a read-only data object of the Cranelift module
//! (8-byte `f64`s, 16-byte aligned, in memory the compiled module owns and frees), and
//! `t = table @y` is the slice (address of that object, its length as a constant). A load from
//! it is bounds-checked like any slice's (the length being a constant, Cranelift folds the check
//! against a constant index).

use super::ModuleLowering;
use super::func::{FuncLowerer, Parts};
use crate::abi;
use crate::error::JitError;
use cranelift_codegen::ir::immediates::Imm64;
use cranelift_codegen::ir::{ExternalName, GlobalValueData, InstBuilder, UserExternalName};
use cranelift_module::{DataDescription, DataId, Module as _};
use jitdiff_ir::{Imm, Module, Opcode, TableId};

/// The alignment of table data: enough for the aligned scalar loads and the `F64X2` loads of
/// `vload`.
const TABLE_ALIGN: u64 = 16;

/// The data object of each table of `ir` that some function reads (`None` for the others).
pub(super) fn define_tables(m: &mut ModuleLowering, ir: &Module) -> Result<Vec<Option<DataId>>, JitError> {
    let mut read = vec![false; ir.tables.len()];
    for inst in ir.functions.iter().flat_map(|f| &f.blocks).flat_map(|b| &b.insts) {
        if let (Opcode::Table, Imm::Table(t)) = (inst.op, inst.imm)
            && let Some(r) = read.get_mut(t.index())
        {
            *r = true;
        }
    }
    let mut ids = Vec::with_capacity(ir.tables.len());
    for (table, &read) in ir.tables.iter().zip(&read) {
        if !read {
            ids.push(None);
            continue;
        }
        let module_error = |e: cranelift_module::ModuleError| JitError::Module(format!("table @{}: {e}", table.name));
        let id = m.jit.get().declare_anonymous_data(false, false).map_err(module_error)?;
        let bytes: Vec<u8> = table.data.iter().flat_map(|x| x.to_le_bytes()).collect();
        let mut data = DataDescription::new();
        data.define(bytes.into_boxed_slice());
        data.set_align(TABLE_ALIGN);
        m.jit.get().define_data(id, &data).map_err(module_error)?;
        ids.push(Some(id));
    }
    Ok(ids)
}

impl FuncLowerer<'_, '_> {
    /// `table @y`: the address of the table's data and its length.
    pub(super) fn lower_table(&mut self, table: TableId) -> Result<Parts, JitError> {
        let (Some(Some(id)), Some(data)) =
            (self.m.table_data.get(table.index()).copied(), self.m.ir.table(table).map(|t| t.data.len()))
        else {
            return Err(self.internal(format!("`table` of table #{}, which has no data", table.index())));
        };
        let gv = match self.table_refs.get(&id) {
            Some(&gv) => gv,
            None => {
                // Never "colocated" (a PC-relative reference): code and data of one module may be
                // mapped far apart; an absolute address always reaches (see `func_ref`).
                let name =
                    self.b.func.declare_imported_user_function(UserExternalName { namespace: 1, index: id.as_u32() });
                let gv = self.b.create_global_value(GlobalValueData::Symbol {
                    name: ExternalName::user(name),
                    offset: Imm64::new(0),
                    colocated: false,
                    tls: false,
                });
                self.table_refs.insert(id, gv);
                gv
            }
        };
        let ptr = self.b.ins().symbol_value(abi::PTR, gv);
        let len = self.iconst(data as i64);
        Ok(Parts::new(&[ptr, len]))
    }
}
