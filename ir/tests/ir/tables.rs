//! Read-only data tables: `const @y = [...]` items read through `t = table @y` — the verifier,
//! the interpreter, the builder and the passes.

use jitdiff_ir::builder::{BuildError, ModuleBuilder};
use jitdiff_ir::{
    ArgValue, ExternArg, ExternRegistry, Fault, Function, Imm, InterpError, Interpreter, Module, Opcode, RuntimeValue,
    Site, Table, TableId, Type, Value, VerifyErrorKind, parse_module, parse_module_with_spans, passes, print_module,
    verify_module, verify_module_with_spans,
};

fn module(text: &str) -> Module {
    let m = parse_module(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    verify_module(&m).unwrap_or_else(|e| panic!("{e}\n{text}"));
    m
}

// The error type is the interpreter's own; tests only compare it.
#[allow(clippy::result_large_err)]
fn call(m: &Module, f: &str, args: &mut [ArgValue]) -> Result<Vec<RuntimeValue>, InterpError> {
    Interpreter::new(m).call(f, args)
}

/// `sum(k) = y[k] + len(y)` for `y = [0.5, 1.5, 2.5]`, and a callee reading the table it is given.
const READS: &str = "\
const @y = [0.5, 1.5, 2.5]

func @at(k: i64) -> f64 {
entry:
    t = table @y
    x = load t, k
    n = len t
    m = itof n
    r = fadd x, m
    ret r
}

func @sum_y() -> f64 {
entry:
    t = table @y
    s = call @sum(t)
    ret s
}

func @sum(s: slice) -> f64 {
entry:
    n = len s
    zero = iconst 0
    one = iconst 1
    acc0 = fconst 0.0
    jump head(zero, acc0)
head(i: i64, acc: f64):
    more = icmp lt i, n
    br more, body, exit
body:
    x = load s, i
    acc2 = fadd acc, x
    i2 = iadd i, one
    jump head(i2, acc2)
exit:
    ret acc
}
";

#[test]
fn the_interpreter_reads_tables_like_slices_and_checks_bounds() {
    let m = module(READS);
    for (k, want) in [(0, 3.5), (1, 4.5), (2, 5.5)] {
        assert_eq!(call(&m, "at", &mut [ArgValue::I64(k)]).unwrap(), vec![RuntimeValue::F64(want)]);
    }
    for k in [-1, 3, i64::MIN] {
        let err = call(&m, "at", &mut [ArgValue::I64(k)]).unwrap_err();
        let site = Site { func: "at".into(), block: "entry".into(), inst: 1 };
        assert_eq!(err, InterpError::Fault(Fault::OutOfBounds { site, index: k, len: 3 }));
    }
    assert_eq!(call(&m, "sum_y", &mut []).unwrap(), vec![RuntimeValue::F64(4.5)]);
}

#[test]
fn an_extern_closure_gets_a_table_as_a_read_only_slice() {
    let text = "extern @total(slice, slice) -> f64\n\nconst @y = [1.0, 2.0, 4.0]\n\n\
                func @f(x: slice) -> f64 {\nentry:\n    t = table @y\n    r = call @total(t, x)\n    \
                s = call @total(t, t)\n    u = fadd r, s\n    ret u\n}\n";
    let m = module(text);
    let mut reg = ExternRegistry::new();
    reg.register_closure("total", vec![Type::Slice, Type::Slice], vec![Type::F64], |args: &mut [ExternArg<'_>]| {
        let sum = |a: &ExternArg<'_>| a.as_slice().map_or(f64::NAN, |s| s.iter().sum::<f64>());
        Ok(vec![RuntimeValue::F64(sum(&args[0]) + 10.0 * sum(&args[1]))])
    });
    let out = Interpreter::new(&m).with_externs(&reg).call("f", &mut [ArgValue::Slice(vec![0.5])]).unwrap();
    assert_eq!(out, vec![RuntimeValue::F64(7.0 + 5.0 + 77.0)]);
}

#[test]
fn the_verifier_names_the_instruction_of_a_missing_table() {
    let mut m = module(READS);
    // Point `table @y` of @at's entry block at a table the module does not have.
    m.functions[0].blocks[0].insts[0].imm = Imm::Table(TableId::from_index(4));
    let err = verify_module(&m).unwrap_err();
    assert_eq!(err.kind, VerifyErrorKind::InvalidTable { table: "#4".into() });
    assert_eq!((err.func.as_str(), err.block.as_deref(), err.op), ("at", Some("entry"), Some("table")));
    assert_eq!(err.to_string().split(':').next(), Some("in @at, block entry, inst 0 (table)"));
    // With the parser's source map, at the instruction's line and column.
    let (mut m, spans) = parse_module_with_spans(READS).unwrap();
    m.tables.clear();
    let err = verify_module_with_spans(&m, Some(&spans)).unwrap_err();
    assert_eq!(err.pos.map(|p| (p.line, p.col)), Some((5, 5)));
    assert_eq!(err.kind_name(), "InvalidTable");
    // The wrong immediate kind, and a table immediate on another opcode.
    let mut m = module(READS);
    m.functions[0].blocks[0].insts[0].imm = Imm::None;
    assert_eq!(verify_module(&m).unwrap_err().kind_name(), "BadImmediate");
    let mut m = module(READS);
    m.functions[0].blocks[0].insts[2].imm = Imm::Table(TableId::from_index(0));
    assert_eq!(verify_module(&m).unwrap_err().kind_name(), "BadImmediate");
    // The interpreter reports unverified IR as malformed, never panics.
    let mut m = module(READS);
    m.functions[0].blocks[0].insts[0].imm = Imm::Table(TableId::from_index(4));
    assert_eq!(call(&m, "at", &mut [ArgValue::I64(0)]).unwrap_err().kind_name(), "Malformed");
}

#[test]
fn table_names_share_the_global_namespace_and_tables_are_read_only() {
    let mut m = module(READS);
    m.tables.push(Table::new("y", vec![]));
    assert_eq!(verify_module(&m).unwrap_err().kind, VerifyErrorKind::DuplicateTable { name: "y".into() });
    let mut m = module(READS);
    m.tables[0].name = "sum".into();
    assert_eq!(verify_module(&m).unwrap_err().kind_name(), "DuplicateTable");
    m.tables[0].name = "9y".into();
    assert_eq!(verify_module(&m).unwrap_err().kind_name(), "InvalidName");
    let store = "const @y = [1.0]\nfunc @f(x: f64) {\nentry:\n    t = table @y\n    k = iconst 0\n    \
                 store t, k, x\n    ret\n}\n";
    let err = verify_module(&parse_module(store).unwrap()).unwrap_err();
    assert_eq!(err.kind, VerifyErrorKind::StoreToReadOnlySlice { slice: "t".into() });
    let pass = "extern @fill(mslice)\nconst @y = [1.0]\nfunc @f() {\nentry:\n    t = table @y\n    \
                call @fill(t)\n    ret\n}\n";
    assert_eq!(verify_module(&parse_module(pass).unwrap()).unwrap_err().kind_name(), "TypeMismatch");
}

#[test]
fn the_builder_declares_tables_and_checks_their_use() {
    let mut mb = ModuleBuilder::new();
    let y = mb.table("y", &[2.0, 3.0]);
    mb.function("f", &[("k", Type::I64)], &[Type::F64], |f| {
        let t = f.table(y);
        f.ret(&[f.load(t, f.param(0)) * f.len(t).itof()]);
    })
    .unwrap();
    let m = mb.finish().unwrap();
    verify_module(&m).unwrap();
    assert_eq!(m.tables, vec![Table::new("y", vec![2.0, 3.0])]);
    assert_eq!(call(&m, "f", &mut [ArgValue::I64(1)]).unwrap(), vec![RuntimeValue::F64(6.0)]);
    assert_eq!(parse_module(&print_module(&m)).unwrap(), m);

    let mut mb = ModuleBuilder::new();
    mb.table("y", &[]);
    mb.function("y", &[], &[], |_| {}).unwrap_err();
    assert_eq!(mb.finish().unwrap_err(), BuildError::DuplicateName { name: "y".into() });
    let mut mb = ModuleBuilder::new();
    let err = mb
        .function("f", &[], &[Type::F64], |f| {
            let t = f.table(TableId::from_index(0));
            f.ret(&[f.load(t, f.int(0))]);
        })
        .unwrap_err();
    assert!(err.to_string().contains("was not declared"), "{err}");
}

#[test]
fn constant_reads_of_tables_fold_and_unused_tables_go() {
    let mut m = module(READS);
    let before = call(&m, "at", &mut [ArgValue::I64(2)]).unwrap();
    // Make the index of @at constant, then optimise: the load and the length fold.
    let f = &mut m.functions[0];
    let k = f.params[0];
    let two = f.new_value(Type::I64);
    f.blocks[0].insts.insert(
        0,
        jitdiff_ir::InstData {
            op: Opcode::IConst,
            args: smallvec::smallvec![],
            imm: Imm::I64(2),
            results: smallvec::smallvec![two],
        },
    );
    for inst in &mut f.blocks[0].insts {
        inst.args.iter_mut().filter(|a| **a == k).for_each(|a| *a = two);
    }
    f.canonicalize();
    passes::optimize(&mut m);
    verify_module(&m).unwrap();
    let at = m.func_by_name("at").unwrap();
    let ops: Vec<Opcode> = at.blocks.iter().flat_map(|b| &b.insts).map(|i| i.op).collect();
    assert_eq!(ops, vec![Opcode::FConst], "{m}");
    assert_eq!(call(&m, "at", &mut [ArgValue::I64(0)]).unwrap(), before);
    // An index outside the table stays a load, which still fails.
    let text = "const @y = [1.0]\nfunc @f() -> f64 {\nentry:\n    t = table @y\n    k = iconst 1\n    \
                x = load t, k\n    ret x\n}\n";
    let mut m = module(text);
    passes::optimize(&mut m);
    assert!(print_module(&m).contains("load t, k"), "{m}");
    assert_eq!(call(&m, "f", &mut []).unwrap_err().kind_name(), "OutOfBounds");
}

#[test]
fn tables_are_constants_for_hoisting_and_cse() {
    let text = "const @y = [1.0, 2.0]\nfunc @f(k: i64, c: bool) -> f64 {\nentry:\n    br c, a, b\na:\n    \
                t = table @y\n    x = load t, k\n    jump done(x)\nb:\n    u = table @y\n    z = load u, k\n    \
                jump done(z)\ndone(r: f64):\n    ret r\n}\n";
    let mut m = module(text);
    passes::optimize(&mut m);
    verify_module(&m).unwrap();
    let f = &m.functions[0];
    let tables: Vec<(usize, usize)> = f
        .blocks
        .iter()
        .enumerate()
        .flat_map(|(b, block)| block.insts.iter().enumerate().map(move |(i, inst)| (b, i, inst.op)))
        .filter(|(_, _, op)| *op == Opcode::Table)
        .map(|(b, i, _)| (b, i))
        .collect();
    assert_eq!(tables.len(), 1, "{m}");
    assert_eq!(tables[0].0, 0, "the table is hoisted to the entry block:\n{m}");
    // An unused `table` is dead code.
    let mut m = module("const @y = [1.0]\nfunc @f() {\nentry:\n    t = table @y\n    ret\n}\n");
    passes::dce(&mut m.functions[0]);
    assert!(m.functions[0].blocks[0].insts.is_empty());
}

#[test]
fn pruning_keeps_the_tables_reached_and_appending_carries_them() {
    let text = "const @a = [1.0]\nconst @b = [2.0]\nconst @c = [3.0]\n\
                func @f() -> f64 {\nentry:\n    t = table @c\n    k = iconst 0\n    x = load t, k\n    ret x\n}\n\
                func @g() -> f64 {\nentry:\n    t = table @a\n    n = len t\n    x = itof n\n    ret x\n}\n";
    let m = module(text);
    let pruned = passes::retain_reachable(&m, &["f"]);
    verify_module(&pruned).unwrap();
    assert_eq!(pruned.tables, vec![Table::new("c", vec![3.0])]);
    assert_eq!(call(&pruned, "f", &mut []).unwrap(), vec![RuntimeValue::F64(3.0)]);

    // Appending: a table of the same name and values is shared, a clash is renamed.
    let mut host = module("const @c = [9.0]\nconst @a = [1.0]\nfunc @h() {\nentry:\n    ret\n}\n");
    let ids = host.append(&m);
    verify_module(&host).unwrap();
    let names: Vec<&str> = host.tables.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["c", "a", "b", "c_2"]);
    assert_eq!(Interpreter::new(&host).call_id(ids[0], &mut []).unwrap(), vec![RuntimeValue::F64(3.0)]);
    assert_eq!(Interpreter::new(&host).call_id(ids[1], &mut []).unwrap(), vec![RuntimeValue::F64(1.0)]);
}

#[test]
fn a_function_built_by_hand_may_read_a_table_in_any_block() {
    let mut m = Module::new();
    let y = m.push_table(Table::new("y", vec![4.0]));
    let mut f = Function::new("f", vec![Type::F64]);
    let entry = f.add_block("entry");
    let next = f.add_block("next");
    let (t, k, x) = (f.new_value(Type::Slice), f.new_value(Type::I64), f.new_value(Type::F64));
    f.block_mut(entry).term =
        Some(jitdiff_ir::Terminator::Jump(jitdiff_ir::BlockCall { block: next, args: smallvec::smallvec![] }));
    let inst = |op, imm, args: Vec<Value>, r| jitdiff_ir::InstData {
        op,
        args: args.into(),
        imm,
        results: smallvec::smallvec![r],
    };
    f.block_mut(next).insts = vec![
        inst(Opcode::Table, Imm::Table(y), vec![], t),
        inst(Opcode::IConst, Imm::I64(0), vec![], k),
        inst(Opcode::Load, Imm::None, vec![t, k], x),
    ];
    f.block_mut(next).term = Some(jitdiff_ir::Terminator::Return(vec![x]));
    m.push_function(f);
    verify_module(&m).unwrap();
    assert_eq!(call(&m, "f", &mut []).unwrap(), vec![RuntimeValue::F64(4.0)]);
}
