//! The Rust builder: structure of what it builds, agreement with plain Rust when interpreted,
//! the text round trip, and errors (never panics) on misuse.

use jitdiff_ir::builder::{BuildError, FunctionBuilder, ModuleBuilder, Var};
use jitdiff_ir::{
    ArgValue, Callee, CondCode, ExternRegistry, Imm, Interpreter, Module, OP_TABLE, Opcode, RuntimeValue, Shape, Type,
    parse_module, print_module, verify_module,
};

fn rosenbrock_module() -> Module {
    let mut mb = ModuleBuilder::new();
    mb.function("rosenbrock", &[("x", Type::Slice)], &[Type::F64], |f| {
        let x = f.param(0);
        let n = f.len(x);
        let [sum] = f.for_range(0, n - 1, [f.float(0.0)], |f, i, [acc]| {
            let (xi, xn) = (f.load(x, i), f.load(x, i + 1));
            [acc + 100.0 * (xn - xi * xi).powi(2) + (1.0 - xi).powi(2)]
        });
        f.ret(&[sum.named("sum")]);
    })
    .unwrap();
    mb.finish().unwrap()
}

fn rosenbrock_rust(x: &[f64]) -> f64 {
    let mut acc = 0.0;
    for i in 0..x.len().saturating_sub(1) {
        let (xi, xn) = (x[i], x[i + 1]);
        acc = acc + 100.0 * ((xn - xi * xi) * (xn - xi * xi)) + (1.0 - xi) * (1.0 - xi);
    }
    acc
}

/// Build, verify, and check that printing and parsing gives the module back.
fn checked(m: Module) -> Module {
    if let Err(e) = verify_module(&m) {
        panic!("{e}\n{}", print_module(&m));
    }
    assert_eq!(parse_module(&print_module(&m)).as_ref(), Ok(&m), "text round trip");
    m
}

fn call(m: &Module, name: &str, args: &mut [ArgValue]) -> Vec<RuntimeValue> {
    Interpreter::new(m).call(name, args).unwrap_or_else(|e| panic!("{e}\n{}", print_module(m)))
}

fn f64_of(results: &[RuntimeValue]) -> f64 {
    results[0].as_f64().expect("an f64 result")
}

fn labels(m: &Module, func: &str) -> Vec<String> {
    m.func_by_name(func).unwrap().blocks.iter().map(|b| b.name.clone()).collect()
}

#[test]
fn rosenbrock_has_a_loop_and_matches_plain_rust() {
    let m = checked(rosenbrock_module());
    assert_eq!(labels(&m, "rosenbrock"), ["entry", "loop_head", "loop_body", "loop_exit"]);
    let f = m.func_by_name("rosenbrock").unwrap();
    let head = f.block(f.block_by_name("loop_head").unwrap());
    assert_eq!(head.params.iter().map(|&v| f.ty(v)).collect::<Vec<_>>(), [Type::I64, Type::F64]);
    assert!(f.values.iter().any(|v| v.name.as_deref() == Some("sum")));
    let inputs: [&[f64]; 5] = [&[], &[1.0], &[1.0, 1.0], &[-1.2, 1.0, 0.5, 2.0], &[0.3, -0.7, 1.9, 1e3, -2.5, 0.0]];
    for x in inputs {
        let got = f64_of(&call(&m, "rosenbrock", &mut [ArgValue::Slice(x.to_vec())]));
        // Same operations in the same order: bit-identical.
        assert_eq!(got.to_bits(), rosenbrock_rust(x).to_bits(), "x = {x:?}");
    }
}

#[test]
fn nested_loops_thread_carried_values() {
    // sum_{i<n} sum_{j<=i} x[i] * x[j], and the number of inner iterations.
    let mut mb = ModuleBuilder::new();
    mb.function("pairs", &[("x", Type::Slice)], &[Type::F64, Type::I64], |f| {
        let x = f.param(0);
        let n = f.len(x);
        let (total, count) = f.for_range(0, n, (f.float(0.0), f.int(0)), |f, i, (acc, count)| {
            let xi = f.load(x, i);
            f.for_range(0, i + 1, (acc, count), |f, j, (acc, count)| (acc + xi * f.load(x, j), count + 1))
        });
        f.ret(&[total, count]);
    })
    .unwrap();
    let m = checked(mb.finish().unwrap());
    assert_eq!(
        labels(&m, "pairs"),
        ["entry", "loop_head", "loop_body", "loop_head1", "loop_body1", "loop_exit", "loop_exit1"]
    );
    let x = vec![0.5, -2.0, 3.25, 1.5];
    let got = call(&m, "pairs", &mut [ArgValue::Slice(x.clone())]);
    let mut acc = 0.0;
    for i in 0..x.len() {
        for j in 0..=i {
            acc += x[i] * x[j];
        }
    }
    assert_eq!(got, [RuntimeValue::F64(acc), RuntimeValue::I64(10)]);
}

#[test]
fn if_else_inside_a_loop_joins_values() {
    // Leaky ReLU summed over a slice, with a count of positive entries.
    let mut mb = ModuleBuilder::new();
    mb.function("leaky_sum", &[("x", Type::Slice)], &[Type::F64, Type::I64], |f| {
        let x = f.param(0);
        let (s, pos) = f.for_range(0, f.len(x), (f.float(0.0), f.int(0)), |f, i, (s, pos)| {
            let xi = f.load(x, i);
            let (y, p) = f.if_else(xi.gt(0.0), |_| (xi, pos + 1), |_| (-0.5 * xi, pos));
            (s + y, p)
        });
        f.ret(&[s, pos]);
    })
    .unwrap();
    let m = checked(mb.finish().unwrap());
    assert_eq!(labels(&m, "leaky_sum"), ["entry", "loop_head", "loop_body", "then", "else", "join", "loop_exit"]);
    let f = m.func_by_name("leaky_sum").unwrap();
    let join = f.block(f.block_by_name("join").unwrap());
    assert_eq!(join.params.iter().map(|&v| f.ty(v)).collect::<Vec<_>>(), [Type::F64, Type::I64]);
    let x = vec![1.5, -2.0, 0.0, 4.0, -0.25];
    let expected = x.iter().fold(0.0, |s, &v| s + if v > 0.0 { v } else { -0.5 * v });
    let got = call(&m, "leaky_sum", &mut [ArgValue::Slice(x)]);
    assert_eq!(got, [RuntimeValue::F64(expected), RuntimeValue::I64(2)]);
}

extern "C" fn triple(x: f64) -> f64 {
    3.0 * x
}

#[test]
fn calls_to_functions_externs_and_recursion() {
    let mut mb = ModuleBuilder::new();
    let ext = mb.declare_extern("triple", &[Type::F64], &[Type::F64]);
    let fact = mb.declare_function("fact", &[("n", Type::I64)], &[Type::I64]);
    mb.define(fact, |f| {
        let n = f.param(0);
        // An early return on one side: the join has the other side's values only.
        let rest = f.if_else(
            n.le(1),
            |f| {
                f.ret(&[f.int(1)]);
                vec![]
            },
            |f| f.call(fact, &[n - 1]),
        );
        f.ret(&[n * rest[0]]);
    })
    .unwrap();
    let sq = mb.function("sq", &[("x", Type::F64)], &[Type::F64], |f| f.ret(&[f.param(0) * f.param(0)])).unwrap();
    mb.function("main", &[("x", Type::F64), ("k", Type::I64)], &[Type::F64, Type::I64], |f| {
        let x = f.param(0);
        let y = f.call(sq, &[x])[0];
        let z = f.call(ext, &[y])[0];
        let k = f.call(fact, &[f.param(1)])[0];
        f.ret(&[z + 1.0, k]);
    })
    .unwrap();
    let m = checked(mb.finish().unwrap());
    let calls: Vec<Callee> = m
        .func_by_name("main")
        .unwrap()
        .blocks
        .iter()
        .flat_map(|b| &b.insts)
        .filter_map(|i| match i.imm {
            Imm::Callee(c) => Some(c),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 3);
    assert!(matches!(calls[1], Callee::Extern(_)));
    let mut reg = ExternRegistry::new();
    reg.register_f1("triple", triple);
    let interp = Interpreter::new(&m).with_externs(&reg);
    let got = interp.call("main", &mut [ArgValue::F64(1.5), ArgValue::I64(5)]).unwrap();
    assert_eq!(got, [RuntimeValue::F64(3.0 * 1.5 * 1.5 + 1.0), RuntimeValue::I64(120)]);
}

#[test]
fn multiple_results_and_integer_operators() {
    let mut mb = ModuleBuilder::new();
    mb.function("divmod", &[("a", Type::I64), ("b", Type::I64)], &[Type::I64, Type::I64, Type::F64, Type::Bool], |f| {
        let (a, b) = (f.param(0), f.param(1));
        let q = a / b;
        let r = a % b;
        let check = (q * b + r).eq(a) & !a.lt(0);
        f.ret(&[q, r, (2 * a - 1).itof() / 4.0, check]);
    })
    .unwrap();
    let m = checked(mb.finish().unwrap());
    let ops: Vec<Opcode> = m.functions[0].blocks[0].insts.iter().map(|i| i.op).collect();
    for op in
        [Opcode::IDiv, Opcode::IRem, Opcode::IMul, Opcode::ICmp, Opcode::And, Opcode::Not, Opcode::IToF, Opcode::FDiv]
    {
        assert!(ops.contains(&op), "{op} missing from {ops:?}");
    }
    let got = call(&m, "divmod", &mut [ArgValue::I64(17), ArgValue::I64(5)]);
    assert_eq!(
        got,
        [RuntimeValue::I64(3), RuntimeValue::I64(2), RuntimeValue::F64(33.0 / 4.0), RuntimeValue::Bool(true)]
    );
    let err = Interpreter::new(&m).call("divmod", &mut [ArgValue::I64(1), ArgValue::I64(0)]).unwrap_err();
    assert_eq!(err.kind_name(), "DivisionByZero");
}

#[test]
fn vectors_splat_load_store_extract_insert() {
    // out[2k..2k+2] = 2 * x[2k..2k+2] + 1 for each pair; returns lane 1 of the last pair, replaced.
    let mut mb = ModuleBuilder::new();
    mb.function("pairs2", &[("x", Type::Slice), ("out", Type::SliceMut)], &[Type::F64, Type::F64], |f| {
        let (x, out) = (f.param(0), f.param(1));
        let [last] = f.for_range(0, f.len(x) / 2, [f.splat(2, f.float(0.0))], |f, k, _| {
            let v = f.vload(2, x, k) * 2.0 + 1.0;
            f.vstore(out, k, v);
            [v]
        });
        let patched = last.insert(0, 7.0);
        f.ret(&[last.extract(1), patched.extract(0) + patched.extract(1)]);
    })
    .unwrap();
    let m = checked(mb.finish().unwrap());
    let f = &m.functions[0];
    assert!(f.values.iter().any(|v| v.ty == Type::F64x(2)));
    let mut args = [ArgValue::Slice(vec![1.0, 2.0, 3.0, 4.0, 5.0]), ArgValue::SliceMut(vec![0.0; 5])];
    let got = call(&m, "pairs2", &mut args);
    assert_eq!(got, [RuntimeValue::F64(9.0), RuntimeValue::F64(16.0)]);
    assert_eq!(args[1], ArgValue::SliceMut(vec![3.0, 5.0, 7.0, 9.0, 0.0]));
}

#[test]
fn scalar_stores_and_when() {
    // out[i] = max(x[i], 0) where x[i] > 0, others untouched; void function gets an implicit ret.
    let mut mb = ModuleBuilder::new();
    mb.function("clip", &[("x", Type::Slice), ("out", Type::SliceMut)], &[], |f| {
        let (x, out) = (f.param(0), f.param(1));
        f.for_range(0, f.len(x), (), |f, i, ()| {
            let xi = f.load(x, i);
            f.when(xi.gt(0.0), |f| f.store(out, i, xi.max(0.0)));
        });
    })
    .unwrap();
    let m = checked(mb.finish().unwrap());
    let mut args = [ArgValue::Slice(vec![1.0, -2.0, 3.0]), ArgValue::SliceMut(vec![9.0, 9.0, 9.0])];
    assert!(call(&m, "clip", &mut args).is_empty());
    assert_eq!(args[1], ArgValue::SliceMut(vec![1.0, 9.0, 3.0]));
}

#[test]
fn float_methods_and_literals_on_either_side() {
    let mut mb = ModuleBuilder::new();
    mb.function("mix", &[("x", Type::F64), ("y", Type::F64)], &[Type::F64], |f| {
        let (x, y) = (f.param(0), f.param(1));
        let mut acc = 2.0 * x - 1.0;
        acc += x.sin() * y.cos() + x.exp() - y.tanh() + (x * x + 1.0).ln() + (y * y).sqrt();
        acc -= x.abs().powf(y.hypot(1.0)) / x.atan2(y).max(0.5).min(3.0);
        acc *= (x.tan() + x.atan() + (x / 4.0).asin() + (y / 4.0).acos()).sinh().cosh().log1p().expm1();
        acc /= 1.0 + x.floor() * x.ceil() + x.sign() + x.powi(3);
        f.ret(&[-acc]);
    })
    .unwrap();
    let m = checked(mb.finish().unwrap());
    let (x, y) = (0.7_f64, -1.3_f64);
    let mut acc = 2.0 * x - 1.0;
    acc += x.sin() * y.cos() + x.exp() - y.tanh() + (x * x + 1.0).ln() + (y * y).sqrt();
    acc -= x.abs().powf(y.hypot(1.0)) / jitdiff_ir::math::min(jitdiff_ir::math::max(x.atan2(y), 0.5), 3.0);
    acc *= (x.tan() + x.atan() + (x / 4.0).asin() + (y / 4.0).acos()).sinh().cosh().ln_1p().exp_m1();
    acc /= 1.0 + x.floor() * x.ceil() + 1.0 + x * (x * x);
    let got = f64_of(&call(&m, "mix", &mut [ArgValue::F64(x), ArgValue::F64(y)]));
    assert_eq!(got.to_bits(), (-acc).to_bits());
}

/// Arguments for an instruction of `shape`, built from the function's parameters.
fn operands<'a>(f: &'a FunctionBuilder, op: Opcode) -> (Vec<Var<'a>>, Imm) {
    let (x, k, b, s, v) = (f.param(0), f.param(1), f.param(2), f.param(3), f.param(4));
    match op.shape() {
        Shape::Const => match op {
            Opcode::FConst => (vec![], Imm::F64(1.5)),
            Opcode::IConst => (vec![], Imm::I64(-3)),
            _ => (vec![], Imm::Bool(true)),
        },
        Shape::FloatUnary { .. } => (vec![x], Imm::None),
        Shape::FloatBinary { .. } => (vec![x, x], Imm::None),
        Shape::Powi => (vec![x, k], Imm::None),
        Shape::FloatTernary => (vec![x, x, x], Imm::None),
        Shape::IntUnary => (vec![k], Imm::None),
        Shape::IntBinary => (vec![k, k], Imm::None),
        Shape::BoolUnary => (vec![b], Imm::None),
        Shape::BoolBinary => (vec![b, b], Imm::None),
        Shape::FloatCompare => (vec![x, x], Imm::Cond(CondCode::Le)),
        Shape::FloatTest => (vec![x], Imm::None),
        Shape::IntCompare => (vec![k, k], Imm::Cond(CondCode::Ne)),
        Shape::Select => (vec![b, x, x], Imm::None),
        Shape::IntToFloat => (vec![k], Imm::None),
        Shape::FloatToInt => (vec![x], Imm::None),
        Shape::Len => (vec![s], Imm::None),
        Shape::Load => (vec![s, k], Imm::None),
        Shape::Store => (vec![s, k, x], Imm::None),
        Shape::VectorLoad => (vec![s, k], Imm::Type(Type::F64x(4))),
        Shape::VectorStore => (vec![s, k, v], Imm::None),
        Shape::Splat => (vec![x], Imm::Type(Type::F64x(8))),
        Shape::Extract => (vec![v], Imm::Lane(3)),
        Shape::Insert => (vec![v, x], Imm::Lane(1)),
        Shape::Call => (vec![x], Imm::Callee(Callee::Func(jitdiff_ir::FuncId::from_index(0)))),
        Shape::TapePush => (vec![b], Imm::None),
        Shape::TapePop => (vec![], Imm::Type(Type::I64)),
        Shape::TapeSplit => (vec![], Imm::None),
        Shape::TapeRejoin => (vec![k], Imm::None),
        Shape::Alloc => (vec![k], Imm::None),
        Shape::Table => (vec![], Imm::Table(jitdiff_ir::TableId::from_index(0))),
        Shape::Trap => (vec![], Imm::None),
    }
}

#[test]
fn every_opcode_of_the_table_can_be_emitted() {
    let mut mb = ModuleBuilder::new();
    mb.table("t", &[1.0, 2.0]);
    mb.function("id", &[("x", Type::F64)], &[Type::F64], |f| f.ret(&[f.param(0)])).unwrap();
    let params = [("x", Type::F64), ("k", Type::I64), ("b", Type::Bool), ("s", Type::SliceMut), ("v", Type::F64x(4))];
    mb.function("all_ops", &params, &[], |f| {
        for info in OP_TABLE {
            let (args, imm) = operands(f, info.opcode);
            f.inst(info.opcode, &args, imm);
        }
    })
    .unwrap();
    let m = checked(mb.finish().unwrap());
    let used: Vec<Opcode> = m.functions[1].blocks[0].insts.iter().map(|i| i.op).collect();
    assert_eq!(used, Opcode::all().collect::<Vec<_>>());
}

#[test]
fn value_names_are_unique_and_avoid_the_reserved_form() {
    let mut mb = ModuleBuilder::new();
    mb.function("names", &[("x", Type::F64)], &[Type::F64], |f| {
        let x = f.param(0);
        let a = f.name(x + 1.0, "acc");
        let b = (a * 2.0).named("acc");
        let c = (b - x).named("v3");
        f.ret(&[c]);
    })
    .unwrap();
    let m = checked(mb.finish().unwrap());
    let names: Vec<&str> = m.functions[0].values.iter().filter_map(|v| v.name.as_deref()).collect();
    assert_eq!(names, ["x", "acc", "acc_1", "v3_"]);
}

fn build_err(body: impl FnOnce(&FunctionBuilder)) -> BuildError {
    let mut mb = ModuleBuilder::new();
    let define_err = mb.function("f", &[("x", Type::F64), ("n", Type::I64), ("s", Type::Slice)], &[Type::F64], body);
    let finish_err = mb.finish().unwrap_err();
    assert_eq!(define_err.unwrap_err(), finish_err, "define and finish report the same first error");
    finish_err
}

fn type_message(e: &BuildError) -> &str {
    match e {
        BuildError::TypeMismatch { message, .. } => message,
        other => panic!("expected a type mismatch, got {other:?}"),
    }
}

#[test]
fn mixing_float_and_int_is_an_error_not_a_panic() {
    let e = build_err(|f| {
        let bad = f.param(0) + f.param(1);
        f.ret(&[bad]);
    });
    let msg = type_message(&e);
    assert!(msg.contains("fadd") && msg.contains("itof"), "{msg}");
    assert!(e.to_string().contains("@f, block entry"), "{e}");
    let e = build_err(|f| {
        let y = f.param(0) * 2;
        f.ret(&[y]);
    });
    assert!(type_message(&e).contains("fmul"));
}

#[test]
fn misuse_of_control_flow_is_reported() {
    let e = build_err(|f| {
        f.ret(&[f.param(0)]);
        let _ = f.param(0).sin();
    });
    assert!(matches!(&e, BuildError::AfterReturn { what, .. } if what == "sin"), "{e:?}");

    let e = build_err(|f| {
        let _ = f.param(0).sin();
    });
    assert!(matches!(e, BuildError::MissingReturn { expected: 1, .. }), "{e:?}");

    let e = build_err(|f| f.ret(&[f.param(1)]));
    assert!(type_message(&e).contains("ret gives (i64)"));

    let e = build_err(|f| {
        let r = f.for_range(0, f.param(0), [f.float(0.0)], |_, _, c| c);
        f.ret(&r);
    });
    assert!(type_message(&e).contains("bounds must be i64"));

    let e = build_err(|f| {
        let [r] = f.for_range(0, f.param(1), [f.float(0.0)], |_, i, _| [i]);
        f.ret(&[r]);
    });
    assert!(type_message(&e).contains("for_range body gives (i64)"));

    let e = build_err(|f| {
        let [r] = f.for_range(0, f.param(1), [f.param(2)], |_, _, c| c);
        f.ret(&[f.len(r).itof()]);
    });
    assert!(type_message(&e).contains("slices are only parameters"));

    let e = build_err(|f| {
        let r = f.if_else(f.param(1).gt(0), |f| f.float(1.0), |f| f.int(1));
        f.ret(&[r]);
    });
    assert!(type_message(&e).contains("else side"));

    let e = build_err(|f| {
        let r = f.if_else(f.param(0), |f| f.float(1.0), |f| f.float(2.0));
        f.ret(&[r]);
    });
    assert!(type_message(&e).contains("bool condition"));

    let e = build_err(|f| {
        let v = f.splat(3, f.param(0));
        f.ret(&[v.extract(0)]);
    });
    assert!(type_message(&e).contains("f64x3"));

    let e = build_err(|f| {
        f.store(f.param(2), f.param(1), f.param(0));
        f.ret(&[f.param(0)]);
    });
    assert!(type_message(&e).contains("store expects (mslice, i64, f64)"));
}

#[test]
fn module_level_errors() {
    let mut mb = ModuleBuilder::new();
    mb.declare_function("g", &[], &[Type::F64]);
    assert_eq!(mb.finish().unwrap_err(), BuildError::NotDefined { name: "g".into() });

    let mut mb = ModuleBuilder::new();
    mb.declare_extern("g", &[Type::F64], &[Type::F64]);
    assert!(mb.function("g", &[], &[], |_| {}).is_err_and(|e| e == BuildError::DuplicateName { name: "g".into() }));

    let mut mb = ModuleBuilder::new();
    mb.declare_function("bad name", &[], &[]);
    assert!(matches!(mb.finish(), Err(BuildError::InvalidName { .. })));

    let mut mb = ModuleBuilder::new();
    mb.declare_function("s", &[], &[Type::Slice]);
    assert!(matches!(mb.finish(), Err(BuildError::BadSignature { .. })));

    let mut mb = ModuleBuilder::new();
    let g = mb.function("g", &[], &[], |_| {}).unwrap();
    assert_eq!(mb.define(g, |_| {}), Err(BuildError::AlreadyDefined { name: "g".into() }));

    let mut mb = ModuleBuilder::new();
    let g = mb.function("g", &[("x", Type::F64)], &[Type::F64], |f| f.ret(&[f.param(0)])).unwrap();
    let e = mb.function("h", &[], &[Type::F64], |f| f.ret(&f.call(g, &[f.int(1), f.int(2)]))).unwrap_err();
    assert!(type_message(&e).contains("call @g passes (i64, i64) but it takes (f64)"));
}

#[test]
fn values_of_another_function_are_rejected() {
    let mut outer = ModuleBuilder::new();
    let e = outer
        .function("f", &[("x", Type::F64)], &[Type::F64], |f| {
            let mut inner = ModuleBuilder::new();
            let _ = inner.function("g", &[("y", Type::F64)], &[Type::F64], |g| {
                let mixed = g.param(0) + f.param(0);
                g.ret(&[mixed]);
            });
            assert!(matches!(inner.finish(), Err(BuildError::ForeignValue { .. })));
            f.ret(&[f.param(0)]);
        })
        .map(|_| ());
    assert_eq!(e, Ok(()));
}

#[test]
fn comparisons_pick_fcmp_or_icmp_by_type() {
    let mut mb = ModuleBuilder::new();
    mb.function("cmp", &[("x", Type::F64), ("n", Type::I64)], &[Type::Bool], |f| {
        let (x, n) = (f.param(0), f.param(1));
        let both = x.lt(1.0) | n.ge(3) & x.ne(x) | n.eq(0);
        f.ret(&[both]);
    })
    .unwrap();
    let m = checked(mb.finish().unwrap());
    let conds: Vec<(Opcode, Imm)> = m.functions[0].blocks[0]
        .insts
        .iter()
        .filter(|i| i.op == Opcode::FCmp || i.op == Opcode::ICmp)
        .map(|i| (i.op, i.imm))
        .collect();
    assert_eq!(
        conds,
        [
            (Opcode::FCmp, Imm::Cond(CondCode::Lt)),
            (Opcode::ICmp, Imm::Cond(CondCode::Ge)),
            (Opcode::FCmp, Imm::Cond(CondCode::Ne)),
            (Opcode::ICmp, Imm::Cond(CondCode::Eq)),
        ]
    );
    assert_eq!(call(&m, "cmp", &mut [ArgValue::F64(f64::NAN), ArgValue::I64(3)]), [RuntimeValue::Bool(true)]);
    assert_eq!(call(&m, "cmp", &mut [ArgValue::F64(2.0), ArgValue::I64(3)]), [RuntimeValue::Bool(false)]);
}
