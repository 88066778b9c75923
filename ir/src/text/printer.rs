//! The printer: externs first, then tables, then functions, one blank line between items; labels
//! at column 0 and instructions indented by four spaces. Its output parses back to the same
//! module.
//!
//! Unverified IR (dangling value, block or callee indices, immediates that do not fit the
//! opcode) still prints without panicking, as something close to the text format.

use crate::function::{BlockCall, Callee, Function, Imm, InstData, Module, Table, TableId, Terminator, Value};
use crate::opcode::Shape;
use crate::types::Type;
use std::fmt::Write;

/// The text of a whole module.
///
/// ```
/// use jitdiff_ir::{parse_module, print_module};
/// let text = "extern @j0(f64) -> f64\n\nfunc @f(x: f64) -> f64 {\nentry:\n    y = call @j0(x)\n    ret y\n}\n";
/// assert_eq!(print_module(&parse_module(text).unwrap()), text);
/// ```
pub fn print_module(module: &Module) -> String {
    let mut items: Vec<String> = module
        .externs
        .iter()
        .map(|e| {
            let params: Vec<&str> = e.params.iter().map(|t| t.spelling()).collect();
            let derivative = e.derivative.as_ref().map(|d| format!(" = {}", d.spelling())).unwrap_or_default();
            format!("extern @{}({}){}{derivative}\n", e.name, params.join(", "), arrow(&e.returns))
        })
        .collect();
    items.extend(module.tables.iter().map(table));
    items.extend(module.functions.iter().map(|f| print_function(module, f)));
    items.join("\n")
}

/// Lines of a wrapped table are at most this long.
const TABLE_WIDTH: usize = 100;

/// `const @name = [v0, v1, ...]`: on one line when it fits, else one indented line of values
/// after another, each ending in a comma but the last.
fn table(t: &Table) -> String {
    let values: Vec<String> = t.data.iter().map(|&x| float_literal(x)).collect();
    let one_line = format!("const @{} = [{}]\n", t.name, values.join(", "));
    if one_line.len() <= TABLE_WIDTH + 1 {
        return one_line;
    }
    let mut out = format!("const @{} = [\n", t.name);
    let mut line = String::new();
    for (k, v) in values.iter().enumerate() {
        if !line.is_empty() && 4 + line.len() + 1 + v.len() + 1 > TABLE_WIDTH {
            let _ = writeln!(out, "    {}", line.trim_end());
            line.clear();
        }
        line.push_str(v);
        if k + 1 < values.len() {
            line.push_str(", ");
        }
    }
    let _ = writeln!(out, "    {}", line.trim_end());
    out.push_str("]\n");
    out
}

/// The text of one function of `module` (the module names the callees of its calls).
///
/// ```
/// use jitdiff_ir::{parse_module, print_function};
/// let m = parse_module("func @f() {\nentry:\n    ret\n}\nfunc @g() {\nentry:\n    ret\n}\n").unwrap();
/// assert_eq!(print_function(&m, &m.functions[1]), "func @g() {\nentry:\n    ret\n}\n");
/// ```
pub fn print_function(module: &Module, func: &Function) -> String {
    let mut out = String::new();
    let params: Vec<String> = func.params.iter().map(|&p| typed_value(func, p)).collect();
    let _ = writeln!(out, "func @{}({}){} {{", func.name, params.join(", "), arrow(&func.returns));
    for block in &func.blocks {
        out.push_str(&block.name);
        if !block.params.is_empty() {
            let params: Vec<String> = block.params.iter().map(|&p| typed_value(func, p)).collect();
            let _ = write!(out, "({})", params.join(", "));
        }
        out.push_str(":\n");
        for inst in &block.insts {
            let _ = writeln!(out, "    {}", instruction(module, func, inst));
        }
        if let Some(term) = &block.term {
            let _ = writeln!(out, "    {}", terminator(func, term));
        }
    }
    out.push_str("}\n");
    out
}

fn arrow(returns: &[Type]) -> String {
    if returns.is_empty() {
        String::new()
    } else {
        let types: Vec<&str> = returns.iter().map(|t| t.spelling()).collect();
        format!(" -> {}", types.join(", "))
    }
}

fn typed_value(func: &Function, v: Value) -> String {
    let ty = func.values.get(v.index()).map_or(Type::F64, |d| d.ty);
    format!("{}: {ty}", func.value_label(v))
}

fn value_list(func: &Function, values: &[Value]) -> String {
    let labels: Vec<String> = values.iter().map(|&v| func.value_label(v)).collect();
    labels.join(", ")
}

/// A float literal that reads back to the same bits: Rust's `{:?}`, which is exact for every
/// float but NaNs; a NaN other than `NaN` or `-NaN` is written as its bit pattern.
fn float_literal(x: f64) -> String {
    if x.is_nan() && x.to_bits() != f64::NAN.to_bits() && x.to_bits() != (-f64::NAN).to_bits() {
        format!("0x{:016x}", x.to_bits())
    } else if x.is_nan() && x.is_sign_negative() {
        "-NaN".into()
    } else {
        format!("{x:?}")
    }
}

/// The text of an immediate where the opcode expects one (for unverified IR whose immediate does
/// not fit its opcode).
fn imm_text(module: &Module, imm: &Imm) -> String {
    match imm {
        Imm::None => "?".into(),
        Imm::F64(x) => float_literal(*x),
        Imm::I64(n) => n.to_string(),
        Imm::Bool(b) => b.to_string(),
        Imm::Cond(c) => c.spelling().into(),
        Imm::Lane(k) => k.to_string(),
        Imm::Type(t) => t.spelling().into(),
        Imm::Callee(c) => format!("@{}", callee_name(module, *c)),
        Imm::Table(t) => format!("@{}", table_name(module, *t)),
    }
}

fn instruction(module: &Module, func: &Function, inst: &InstData) -> String {
    let mut out = String::new();
    if !inst.results.is_empty() {
        let _ = write!(out, "{} = ", value_list(func, &inst.results));
    }
    out.push_str(inst.op.spelling());
    let args = value_list(func, &inst.args);
    let imm = imm_text(module, &inst.imm);
    let with_args = |prefix: String| if args.is_empty() { prefix } else { format!("{prefix} {args}") };
    let rest = match inst.op.shape() {
        Shape::Const => format!(" {imm}"),
        Shape::FloatCompare | Shape::IntCompare => with_args(format!(" {imm}")),
        Shape::Splat | Shape::VectorLoad | Shape::TapePop => with_args(format!(".{imm}")),
        Shape::Extract | Shape::Insert => {
            let first = inst.args.first().map_or("?".into(), |&v| func.value_label(v));
            let more: String = inst.args.iter().skip(1).map(|&v| format!(", {}", func.value_label(v))).collect();
            format!(" {first}, {imm}{more}")
        }
        Shape::Call => {
            let callee = match inst.imm {
                Imm::Callee(c) => callee_name(module, c),
                _ => "?".into(),
            };
            format!(" @{callee}({args})")
        }
        Shape::Table => match inst.imm {
            Imm::Table(t) => format!(" @{}", table_name(module, t)),
            _ => " @?".into(),
        },
        _ => with_args(String::new()),
    };
    out.push_str(&rest);
    out
}

fn callee_name(module: &Module, callee: Callee) -> String {
    match callee {
        Callee::Func(id) if id.index() >= module.functions.len() => format!("bad_function_{}", id.0),
        Callee::Extern(id) if id.index() >= module.externs.len() => format!("bad_extern_{}", id.0),
        _ => module.callee_name(callee).to_string(),
    }
}

fn table_name(module: &Module, id: TableId) -> String {
    module.table(id).map_or_else(|| format!("bad_table_{}", id.index()), |t| t.name.clone())
}

fn destination(func: &Function, dest: &BlockCall) -> String {
    let label =
        func.blocks.get(dest.block.index()).map_or_else(|| format!("bad_block_{}", dest.block.0), |b| b.name.clone());
    if dest.args.is_empty() { label } else { format!("{label}({})", value_list(func, &dest.args)) }
}

fn terminator(func: &Function, term: &Terminator) -> String {
    match term {
        Terminator::Jump(dest) => format!("jump {}", destination(func, dest)),
        Terminator::Branch { cond, then_dest, else_dest } => format!(
            "br {}, {}, {}",
            func.value_label(*cond),
            destination(func, then_dest),
            destination(func, else_dest)
        ),
        Terminator::Return(values) if values.is_empty() => "ret".into(),
        Terminator::Return(values) => format!("ret {}", value_list(func, values)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::function::{BlockData, ExternId, FuncId, InstData, ValueData};
    use crate::opcode::{CondCode, Opcode};

    #[test]
    fn float_literals_keep_every_bit() {
        assert_eq!(float_literal(1.0), "1.0");
        assert_eq!(float_literal(-0.0), "-0.0");
        assert_eq!(float_literal(1e-7), "1e-7");
        assert_eq!(float_literal(f64::NEG_INFINITY), "-inf");
        assert_eq!(float_literal(f64::NAN), "NaN");
        assert_eq!(float_literal(-f64::NAN), "-NaN");
        assert_eq!(float_literal(f64::from_bits(0x7ff0_0000_0000_0001)), "0x7ff0000000000001");
    }

    #[test]
    fn items_are_separated_by_one_blank_line() {
        let mut m = Module::new();
        m.externs.push(crate::function::ExternDecl {
            name: "e".into(),
            params: vec![Type::Slice],
            returns: vec![],
            derivative: None,
        });
        m.functions.push(Function::new("f", vec![]));
        m.functions.push(Function::new("g", vec![Type::F64, Type::I64]));
        assert_eq!(print_module(&m), "extern @e(slice)\n\nfunc @f() {\n}\n\nfunc @g() -> f64, i64 {\n}\n");
    }

    #[test]
    fn unverified_ir_prints_without_panicking() {
        let mut m = Module::new();
        let mut f = Function::new("broken", vec![Type::F64]);
        f.values.push(ValueData { ty: Type::F64, name: Some("x".into()) });
        f.params = vec![Value(0), Value(7)];
        let inst = |op, args: Vec<u32>, imm, results: Vec<u32>| InstData {
            op,
            args: args.into_iter().map(Value).collect(),
            imm,
            results: results.into_iter().map(Value).collect(),
        };
        let insts = vec![
            inst(Opcode::FConst, vec![], Imm::None, vec![1]),
            inst(Opcode::FCmp, vec![0, 9], Imm::Lane(3), vec![2]),
            inst(Opcode::Extract, vec![], Imm::Cond(CondCode::Lt), vec![3]),
            inst(Opcode::Splat, vec![0], Imm::F64(1.0), vec![]),
            inst(Opcode::Call, vec![0], Imm::Callee(Callee::Func(FuncId(5))), vec![4]),
            inst(Opcode::Call, vec![], Imm::Callee(Callee::Extern(ExternId(2))), vec![]),
            inst(Opcode::Call, vec![], Imm::I64(1), vec![]),
        ];
        let jump = Terminator::Jump(BlockCall { block: crate::Block(9), args: smallvec::smallvec![Value(100)] });
        f.blocks.push(BlockData { name: "entry".into(), params: vec![Value(42)], insts, term: Some(jump) });
        m.functions.push(f);
        let text = print_module(&m);
        for expected in [
            "func @broken(x: f64, v7: f64) -> f64 {",
            "entry(v42: f64):",
            "    v1 = fconst ?",
            "    v2 = fcmp 3 x, v9",
            "    v3 = extract ?, lt",
            "    splat.1.0 x",
            "    v4 = call @bad_function_5(x)",
            "    call @bad_extern_2()",
            "    call @?()",
            "    jump bad_block_9(v100)",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
        }
    }
}
