//! Every public fallible entry point, driven into each error it can report: a table of
//! (entry point, error variant, what the message must name). Each row must fail — a row that
//! succeeds fails the test — with the named variant (checked on the `Debug` form, which spells the
//! variant path, e.g. `Call(Runtime(OutOfBounds {`) and a message containing every listed piece.
//!
//! Parse and verify errors have their own corpus (`tests/bad_input/`, one file per kind, with
//! positions); the rows here cover one of each stage and everything after it. Not driven here:
//! `TapeAllocation` (needs a failing allocator: jit/tests/tape_memory.rs), `JitError::Isa`,
//! `Codegen` and `Module` (host or Cranelift failures), `JitError::UnsupportedExtern` and
//! `InterpError::Malformed` (unreachable from IR that verifies and externs that the registry
//! checked), `AdError::DerivedInvalid` (a transform bug by definition).

use jitdiff::ad::{derive_forward, derive_reverse};
use jitdiff::ir::builder::ModuleBuilder;
use jitdiff::ir::{
    ArgValue, ExternRegistry, Interpreter, Module, RuntimeValue, Tape, Type, parse_module, verify_module,
};
use jitdiff::jit::{Arg, JitOptions, compile};
use jitdiff::{ForwardFn, GradientFn, PrimalFn};

const PROGRAMS: &str = "
extern @ext1(f64) -> f64

func @f(x: f64, s: slice, k: i64) -> f64 {
entry:
    v = load s, k
    r = fmul v, x
    ret r
}

func @div(a: i64, b: i64) -> i64 {
entry:
    q = idiv a, b
    ret q
}

func @rec(x: f64) -> f64 {
entry:
    y = call @rec(x)
    ret y
}

func @pop() -> f64 {
entry:
    x = tpop.f64
    ret x
}

func @scale_into(src: slice, dst: mslice, k: f64) {
entry:
    zero = iconst 0
    v = load src, zero
    w = fmul v, k
    store dst, zero, w
    ret
}

func @in_place(y: mslice, k: f64) -> f64 {
entry:
    call @scale_into(y, y, k)
    zero = iconst 0
    r = load y, zero
    ret r
}

func @tape_user(x: f64) -> f64 {
entry:
    y = call @pop()
    r = fmul y, x
    ret r
}

func @spin(n: i64) -> i64 {
entry:
    jump head(n)
head(i: i64):
    jump head(i)
}

func @use_ext(x: f64) -> f64 {
entry:
    y = call @ext1(x)
    ret y
}

func @lanes(x: f64) -> f64 {
entry:
    v = splat.f64x2 x
    y = extract v, 0
    ret y
}

func @keep(x: f64, out: mslice) {
entry:
    zero = iconst 0
    store out, zero, x
    ret
}

func @vecarg(v: f64x2) -> f64 {
entry:
    y = extract v, 0
    ret y
}

func @two(a: slice, b: slice) -> f64 {
entry:
    zero = iconst 0
    x = load a, zero
    y = load b, zero
    r = fadd x, y
    ret r
}
";

/// Parses, but stores into a read-only slice: the verifier rejects it.
const UNVERIFIED: &str =
    "func @ro(s: slice) {\nentry:\n    z = iconst 0\n    c = fconst 1.0\n    store s, z, c\n    ret\n}\n";

fn programs() -> Module {
    parse_module(PROGRAMS).expect("the table's programs parse")
}

extern "C" fn twice(x: f64) -> f64 {
    2.0 * x
}

fn externs() -> ExternRegistry {
    let mut r = ExternRegistry::new();
    r.register_f1("ext1", twice);
    r
}

fn failing_externs() -> ExternRegistry {
    let mut r = ExternRegistry::new();
    r.register_closure("ext1", vec![Type::F64], vec![Type::F64], |_| Err("the sensor is unplugged".into()));
    r
}

/// `(Debug, Display)` of the error of a call that must fail.
macro_rules! fails {
    ($e:expr) => {
        match $e {
            Ok(_) => panic!("expected an error from `{}`", stringify!($e)),
            Err(e) => (format!("{e:?}"), e.to_string()),
        }
    };
}

struct Row {
    entry: &'static str,
    variant: &'static str,
    needles: &'static [&'static str],
    run: fn() -> (String, String),
}

const fn row(
    entry: &'static str,
    variant: &'static str,
    needles: &'static [&'static str],
    run: fn() -> (String, String),
) -> Row {
    Row { entry, variant, needles, run }
}

fn interp_call(
    m: &Module,
    name: &str,
    args: &mut [ArgValue],
) -> Result<Vec<RuntimeValue>, Box<jitdiff::ir::InterpError>> {
    let externs = externs();
    Interpreter::new(m).with_externs(&externs).with_step_limit(10_000).call(name, args).map_err(Box::new)
}

fn native(name: &str, args: &mut [Arg<'_>]) -> Result<Vec<RuntimeValue>, jitdiff::jit::CallError> {
    compile(&programs(), &externs(), &JitOptions::new()).unwrap().function(name).unwrap().call(args)
}

fn table() -> Vec<Row> {
    vec![
        // ---- text and verifier (one each; the full set is tests/bad_input/) ----
        row("parse_module", "UnknownOpcode", &["3:9", "unknown opcode `fmull`"], || {
            fails!(parse_module("func @f(x: f64) -> f64 {\n    entry:\n    y = fmull x, x\n    ret y\n}"))
        }),
        row("parse_module", "UnknownValue", &["unknown value `z`"], || {
            fails!(parse_module("func @f(x: f64) -> f64 {\nentry:\n    ret z\n}"))
        }),
        row("verify_module", "StoreToReadOnly", &["@ro", "read-only slice", "mslice"], || {
            fails!(verify_module(&parse_module(UNVERIFIED).unwrap()))
        }),
        // ---- builder ----
        row("ModuleBuilder::finish", "DuplicateName", &["@g", "declared twice"], || {
            let mut mb = ModuleBuilder::new();
            mb.declare_function("g", &[], &[Type::F64]);
            mb.declare_function("g", &[], &[Type::F64]);
            fails!(mb.finish())
        }),
        row("ModuleBuilder::finish", "NotDefined", &["@g", "never defined"], || {
            let mut mb = ModuleBuilder::new();
            mb.declare_function("g", &[], &[Type::F64]);
            fails!(mb.finish())
        }),
        row("ModuleBuilder::define", "MissingReturn", &["@g", "does not end in a return"], || {
            let mut mb = ModuleBuilder::new();
            let g = mb.declare_function("g", &[], &[Type::F64]);
            fails!(mb.define(g, |_| {}))
        }),
        // ---- extern registry ----
        row("ExternRegistry::check_module", "NotRegistered", &["@ext1", "(f64) -> f64", "not registered"], || {
            fails!(ExternRegistry::new().check_module(&programs()))
        }),
        row("ExternRegistry::check_module", "SignatureMismatch", &["@ext1", "(f64, f64) -> f64"], || {
            extern "C" fn add(a: f64, b: f64) -> f64 {
                a + b
            }
            let mut r = ExternRegistry::new();
            r.register_f2("ext1", add);
            fails!(r.check_module(&programs()))
        }),
        // ---- interpreter ----
        row("Interpreter::call", "UnknownFunction", &["@nope"], || fails!(interp_call(&programs(), "nope", &mut []))),
        row("Interpreter::call", "ArgCount", &["@f", "3", "1"], || {
            fails!(interp_call(&programs(), "f", &mut [ArgValue::F64(1.0)]))
        }),
        row("Interpreter::call", "ArgType", &["argument 1 of @f", "slice"], || {
            fails!(interp_call(&programs(), "f", &mut [ArgValue::F64(1.0), ArgValue::F64(2.0), ArgValue::I64(0)]))
        }),
        row("Interpreter::call", "OutOfBounds", &["index 5", "length 2", "@f, block entry, inst 0"], || {
            fails!(interp_call(
                &programs(),
                "f",
                &mut [ArgValue::F64(1.0), ArgValue::Slice(vec![1.0, 2.0]), ArgValue::I64(5)]
            ))
        }),
        row("Interpreter::call", "DivisionByZero", &["division by zero", "@div"], || {
            fails!(interp_call(&programs(), "div", &mut [ArgValue::I64(1), ArgValue::I64(0)]))
        }),
        row("Interpreter::call", "CallDepthExceeded", &["call depth", "@rec"], || {
            fails!(interp_call(&programs(), "rec", &mut [ArgValue::F64(1.0)]))
        }),
        row("Interpreter::call", "TapeUnderflow", &["tape underflow", "@pop"], || {
            fails!(interp_call(&programs(), "pop", &mut []))
        }),
        row("Interpreter::call", "StepLimitExceeded", &["step limit of 10000"], || {
            fails!(interp_call(&programs(), "spin", &mut [ArgValue::I64(0)]))
        }),
        row("Interpreter::call", "ExternNotRegistered", &["@ext1", "not registered", "with_externs"], || {
            fails!(Interpreter::new(&programs()).call("use_ext", &mut [ArgValue::F64(1.0)]))
        }),
        row("Interpreter::call", "ExternFailed", &["@ext1", "the sensor is unplugged"], || {
            let (m, r) = (programs(), failing_externs());
            fails!(Interpreter::new(&m).with_externs(&r).call("use_ext", &mut [ArgValue::F64(1.0)]))
        }),
        // ---- JIT: compiling and looking functions up ----
        row("jit::compile", "Verify", &["does not verify", "read-only slice"], || {
            fails!(compile(&parse_module(UNVERIFIED).unwrap(), &ExternRegistry::new(), &JitOptions::new()))
        }),
        row("jit::compile", "Extern(NotRegistered", &["@ext1", "not registered"], || {
            fails!(compile(&programs(), &ExternRegistry::new(), &JitOptions::new()))
        }),
        row("jit::compile", "Shadow", &["@two", "shadow"], || {
            fails!(compile(&programs(), &externs(), &JitOptions::new().shadow_slice("two", 7, 0, 2)))
        }),
        row("CompiledModule::function", "UnknownFunction", &["@nope", "it has", "use_ext"], || {
            fails!(compile(&programs(), &externs(), &JitOptions::new()).unwrap().function("nope"))
        }),
        row("CompiledFn::typed", "TypedSignature", &["@div", "(i64, i64) -> i64"], || {
            let f = compile(&programs(), &externs(), &JitOptions::new()).unwrap().function("div").unwrap();
            fails!(f.typed::<(f64,), f64>())
        }),
        // ---- JIT: calls ----
        row("CompiledFn::call", "ArgCount", &["@f takes 3 argument(s), but 1 were given"], || {
            fails!(native("f", &mut [Arg::F64(1.0)]))
        }),
        row("CompiledFn::call", "ArgType", &["argument 1 of @f", "Arg::Slice", "Arg::F64"], || {
            fails!(native("f", &mut [Arg::F64(1.0), Arg::F64(2.0), Arg::I64(0)]))
        }),
        row("CompiledFn::call", "ArgType", &["argument 1 of @keep", "Arg::SliceMut", "Arg::Slice was given"], || {
            fails!(native("keep", &mut [Arg::F64(1.0), Arg::Slice(&[0.0])]))
        }),
        row("CompiledFn::call", "VectorLength", &["argument 0 of @vecarg", "f64x2", "2 lanes", "1 were given"], || {
            fails!(native("vecarg", &mut [Arg::Vector(&[1.0])]))
        }),
        row("CompiledFn::call_into", "ResultCount", &["@div returns 1 value(s)", "room for 0"], || {
            let f = compile(&programs(), &externs(), &JitOptions::new()).unwrap().function("div").unwrap();
            fails!(f.call_into(&mut [Arg::I64(1), Arg::I64(1)], &mut []))
        }),
        row("CompiledFn::call", "Runtime(OutOfBounds", &["index 5", "length 2", "@f, block entry, inst 0"], || {
            fails!(native("f", &mut [Arg::F64(1.0), Arg::Slice(&[1.0, 2.0]), Arg::I64(5)]))
        }),
        row("CompiledFn::call", "Runtime(OutOfBounds", &["index -1", "length 0"], || {
            fails!(native("f", &mut [Arg::F64(1.0), Arg::Slice(&[]), Arg::I64(-1)]))
        }),
        row("CompiledFn::call", "Runtime(DivisionByZero", &["division by zero at @div"], || {
            fails!(native("div", &mut [Arg::I64(1), Arg::I64(0)]))
        }),
        row("CompiledFn::call", "Runtime(CallDepthExceeded", &["call depth", "@rec"], || {
            fails!(native("rec", &mut [Arg::F64(1.0)]))
        }),
        row("CompiledFn::call_with_tape", "Runtime(TapeUnderflow", &["tape underflow at @pop"], || {
            let f = compile(&programs(), &externs(), &JitOptions::new()).unwrap().function("pop").unwrap();
            fails!(f.call_with_tape(&mut [], &mut Tape::new()))
        }),
        row("CompiledFn::call", "ShadowLength", &["needs length 4", "has 3"], || {
            let options = JitOptions::new().shadow_slice("two", 1, 0, 2);
            let f = compile(&programs(), &externs(), &options).unwrap().function("two").unwrap();
            fails!(f.call(&mut [Arg::Slice(&[1.0, 2.0]), Arg::Slice(&[1.0, 2.0, 3.0])]))
        }),
        row("CompiledFn::call", "Runtime(ExternFailed", &["@ext1", "the sensor is unplugged", "@use_ext"], || {
            let f = compile(&programs(), &failing_externs(), &JitOptions::new()).unwrap().function("use_ext").unwrap();
            fails!(f.call(&mut [Arg::F64(1.0)]))
        }),
        // ---- AD transforms ----
        row("derive_forward", "Verify", &["does not verify", "read-only slice"], || {
            fails!(derive_forward(&parse_module(UNVERIFIED).unwrap(), "ro", &[true], 1))
        }),
        row("derive_forward", "UnknownFunction", &["@nope"], || fails!(derive_forward(&programs(), "nope", &[], 1))),
        row("derive_reverse", "WrongMaskLength", &["@f has 3 parameters", "1 differentiation flags"], || {
            fails!(derive_reverse(&programs(), "f", &[true]))
        }),
        row("derive_reverse", "NotDifferentiable", &["parameter 2 of @f", "i64"], || {
            fails!(derive_reverse(&programs(), "f", &[true, true, true]))
        }),
        row("derive_forward", "BadWidth", &["width 3", "1, 2, 4, 8 or 16"], || {
            fails!(derive_forward(&programs(), "f", &[true, false, false], 3))
        }),
        row("derive_forward", "StoreIntoInactiveSlice", &["@keep", "`out`", "differentiate that slice"], || {
            fails!(derive_forward(&programs(), "keep", &[true, false], 1))
        }),
        row("derive_reverse", "StoreIntoInactiveSlice", &["@keep", "`out`"], || {
            fails!(derive_reverse(&programs(), "keep", &[true, false]))
        }),
        row("derive_reverse", "TapeInReverseMode", &["@pop, block entry, inst 0", "`tpop`", "reverse mode"], || {
            fails!(derive_reverse(&programs(), "tape_user", &[true]))
        }),
        row(
            "derive_reverse",
            "AliasedSlices",
            &["@in_place, block entry, inst 0", "@scale_into", "`y`", "copy"],
            || fails!(derive_reverse(&programs(), "in_place", &[true, true])),
        ),
        row("derive_forward", "AliasedSlices", &["@scale_into", "`y`", "read-only"], || {
            fails!(derive_forward(&programs(), "in_place", &[true, false], 1))
        }),
        row("GradientFn::builder", "TapeInReverseMode", &["@pop", "`tpop`", "local array"], || {
            fails!(GradientFn::builder(&programs(), "tape_user").wrt_mask(&[true]).build())
        }),
        row("derive_reverse", "NoRule", &["@use_ext", "extern @ext1", "no differentiation rule"], || {
            fails!(derive_reverse(&programs(), "use_ext", &[true]))
        }),
        row("derive_forward", "Unsupported", &["@lanes", "`splat`"], || {
            fails!(derive_forward(&programs(), "lanes", &[true], 1))
        }),
        row("derive_reverse", "Unsupported", &["@lanes", "`splat`"], || {
            fails!(derive_reverse(&programs(), "lanes", &[true]))
        }),
        // ---- ForwardFn ----
        row("ForwardFn::builder", "UnknownFunction", &["no function @nope", "@f, @div"], || {
            fails!(ForwardFn::builder(&programs(), "nope").wrt_mask(&[]).width(1).build())
        }),
        row("ForwardFn::builder", "Ad(BadWidth", &["width 5"], || {
            fails!(ForwardFn::builder(&programs(), "f").wrt_mask(&[true, false, false]).width(5).build())
        }),
        row("ForwardFn::builder", "Ad(NoRule", &["extern @ext1", "no differentiation rule"], || {
            fails!(
                ForwardFn::builder(&programs(), "use_ext")
                    .wrt_mask(&[true])
                    .width(1)
                    .externs(&externs())
                    .options(&JitOptions::new())
                    .build()
            )
        }),
        row(
            "PrimalFn::builder",
            "Compile",
            &["cannot compile @use_ext", "@ext1", "not registered", "ExternRegistry::register"],
            || {
                // @use_ext calls the extern, and nothing implements it. (An extern that the
                // compiled functions do not call needs no implementation.)
                fails!(PrimalFn::builder(&programs(), "use_ext").build())
            },
        ),
        row(
            "ForwardFn::jvp",
            "BufferLength",
            &["tangents for @f", "hold 1 value(s)", "holds 0", "one per differentiated parameter: x"],
            || {
                let f = ForwardFn::builder(&programs(), "f")
                    .wrt_mask(&[true, false, false])
                    .width(1)
                    .externs(&externs())
                    .options(&JitOptions::new())
                    .build()
                    .unwrap();
                fails!(f.jvp(&mut [Arg::F64(1.0), Arg::Slice(&[1.0]), Arg::I64(0)], &[]))
            },
        ),
        row(
            "ForwardFn::jvp",
            "BufferLength",
            &["tangent of `s` for @f", "hold 6 value(s)", "holds 2", "2 lane(s) per element"],
            || {
                let f = ForwardFn::builder(&programs(), "f")
                    .wrt_mask(&[false, true, false])
                    .width(2)
                    .externs(&externs())
                    .options(&JitOptions::new())
                    .build()
                    .unwrap();
                fails!(f.jvp(&mut [Arg::F64(1.0), Arg::Slice(&[1.0, 2.0, 3.0]), Arg::I64(0)], &[&[1.0, 0.0]]))
            },
        ),
        row("ForwardFn::jvp", "Fault", &["@f", "index 3", "length 1"], || {
            let f = ForwardFn::builder(&programs(), "f")
                .wrt_mask(&[true, false, false])
                .width(1)
                .externs(&externs())
                .options(&JitOptions::new())
                .build()
                .unwrap();
            fails!(f.jvp(&mut [Arg::F64(1.0), Arg::Slice(&[1.0]), Arg::I64(3)], &[&[1.0]]))
        }),
        // ---- GradientFn and Pullback ----
        row(
            "GradientFn::builder",
            "Setting",
            &["wrt mask for @f", "1 flag(s)", "3 parameter(s) (x: f64, s: slice, k: i64)"],
            || fails!(GradientFn::builder(&programs(), "f").wrt_mask(&[true]).build()),
        ),
        row("GradientFn::builder", "NotDifferentiable", &["parameter `k` of @f is i64"], || {
            fails!(GradientFn::builder(&programs(), "f").wrt_mask(&[false, false, true]).build())
        }),
        row("GradientFn::builder", "Ad(NoRule", &["extern @ext1", "register one"], || {
            fails!(
                GradientFn::builder(&programs(), "use_ext")
                    .wrt_mask(&[true])
                    .externs(&externs())
                    .options(&JitOptions::new())
                    .build()
            )
        }),
        row(
            "GradientFn::value_and_grad",
            "BufferLength",
            &["gradient buffer for @f", "hold 3 value(s)", "holds 1", "1 for `x` + len(s)"],
            || {
                let g = GradientFn::builder(&programs(), "f")
                    .wrt_mask(&[true, true, false])
                    .externs(&externs())
                    .options(&JitOptions::new())
                    .build()
                    .unwrap();
                fails!(g.value_and_grad(&mut [Arg::F64(1.0), Arg::Slice(&[1.0, 2.0]), Arg::I64(0)], &mut [0.0]))
            },
        ),
        row("GradientFn::value_and_grad", "NoFloatResult", &["@keep returns no f64 result"], || {
            let g = GradientFn::builder(&programs(), "keep")
                .wrt_mask(&[true, true])
                .externs(&externs())
                .options(&JitOptions::new())
                .build()
                .unwrap();
            fails!(g.value_and_grad(&mut [Arg::F64(1.0), Arg::SliceMut(&mut [0.0])], &mut [0.0, 0.0]))
        }),
        row(
            "GradientFn::value_and_grad",
            "ArgumentCount",
            &["@f takes 3 argument(s) (x: f64, s: slice, k: i64), but 1 were given"],
            || {
                let g = GradientFn::builder(&programs(), "f")
                    .wrt_mask(&[true, false, false])
                    .externs(&externs())
                    .options(&JitOptions::new())
                    .build()
                    .unwrap();
                fails!(g.value_and_grad(&mut [Arg::F64(1.0)], &mut [0.0]))
            },
        ),
        row("GradientFn::value_and_grad", "Fault", &["@f", "index 2", "length 2"], || {
            let g = GradientFn::builder(&programs(), "f")
                .wrt_mask(&[true, true, false])
                .externs(&externs())
                .options(&JitOptions::new())
                .build()
                .unwrap();
            fails!(g.value_and_grad(&mut [Arg::F64(1.0), Arg::Slice(&[1.0, 2.0]), Arg::I64(2)], &mut [0.0; 3]))
        }),
        // What `#[jitdiff::function]`'s `primal().call` calls: errors in the user's terms,
        // also past its argument-frame fast path.
        row(
            "typed::call",
            "ArgumentCount",
            &["@two takes 2 argument(s) (a: slice, b: slice), but 1 were given"],
            || {
                let p = PrimalFn::builder(&programs(), "two").externs(&externs()).build().unwrap();
                fails!(jitdiff::typed::call::<f64>(&p, &mut [Arg::Slice(&[1.0])]))
            },
        ),
        row("typed::call", "ArgumentType", &["argument 1 of @two (`b: slice`)", "Arg::F64"], || {
            let p = PrimalFn::builder(&programs(), "two").externs(&externs()).build().unwrap();
            fails!(jitdiff::typed::call::<f64>(&p, &mut [Arg::Slice(&[1.0]), Arg::F64(2.0)]))
        }),
        row("typed::call", "Fault", &["@two", "index 0", "length 0"], || {
            let p = PrimalFn::builder(&programs(), "two").externs(&externs()).build().unwrap();
            fails!(jitdiff::typed::call::<f64>(&p, &mut [Arg::Slice(&[1.0]), Arg::Slice(&[])]))
        }),
        row("GradientFn::pullback", "ArgumentType", &["argument 2 of @f (`k: i64`)", "Arg::I64"], || {
            let g = GradientFn::builder(&programs(), "f")
                .wrt_mask(&[true, false, false])
                .externs(&externs())
                .options(&JitOptions::new())
                .build()
                .unwrap();
            fails!(g.pullback(&mut [Arg::F64(1.0), Arg::Slice(&[1.0]), Arg::F64(0.0)]))
        }),
        row("Pullback::apply", "BufferLength", &["output cotangents for @f", "hold 1 value(s)", "holds 2"], || {
            let g = GradientFn::builder(&programs(), "f")
                .wrt_mask(&[true, false, false])
                .externs(&externs())
                .options(&JitOptions::new())
                .build()
                .unwrap();
            let (_, mut pullback) = g.pullback(&mut [Arg::F64(1.0), Arg::Slice(&[1.0]), Arg::I64(0)]).unwrap();
            fails!(pullback.apply(&[1.0, 2.0]))
        }),
    ]
}

#[test]
fn every_error_names_the_problem() {
    let mut wrong = vec![];
    let rows = table();
    for r in &rows {
        let (debug, display) = (r.run)();
        let missing: Vec<&str> = r.needles.iter().copied().filter(|n| !display.contains(n)).collect();
        if !debug.contains(r.variant) || !missing.is_empty() || display.trim().is_empty() {
            wrong.push(format!(
                "{} -> expected {} naming {:?}\n    got {debug}\n    says \"{display}\" (missing {missing:?})",
                r.entry, r.variant, r.needles
            ));
        }
    }
    assert!(wrong.is_empty(), "{} of {} rows wrong:\n{}", wrong.len(), rows.len(), wrong.join("\n"));
}

/// The table reaches every entry point and every variant it claims to (so a row deleted by
/// mistake is noticed).
#[test]
fn the_table_covers_every_entry_point() {
    let rows = table();
    let entries: std::collections::BTreeSet<&str> = rows.iter().map(|r| r.entry).collect();
    for e in [
        "parse_module",
        "verify_module",
        "ModuleBuilder::finish",
        "ExternRegistry::check_module",
        "Interpreter::call",
        "jit::compile",
        "CompiledModule::function",
        "CompiledFn::typed",
        "CompiledFn::call",
        "CompiledFn::call_into",
        "derive_forward",
        "derive_reverse",
        "ForwardFn::builder",
        "ForwardFn::jvp",
        "GradientFn::builder",
        "GradientFn::value_and_grad",
        "GradientFn::pullback",
        "Pullback::apply",
        "typed::call",
    ] {
        assert!(entries.contains(e), "no row for {e}");
    }
    assert!(rows.len() >= 55, "{} rows", rows.len());
}

/// Before differentiating, constants are hoisted and loop-invariant work leaves loops; an error
/// still names the instruction by its position in the block as written.
#[test]
fn error_sites_count_instructions_as_written() {
    let src = "extern @ext1(f64) -> f64
func @f(x: f64, n: i64) -> f64 {
entry:
    zero = iconst 0
    jump head(zero, x)
head(i: i64, acc: f64):
    more = icmp lt i, n
    br more, body, exit
body:
    two = fconst 2.0
    y = fmul x, two
    z = call @ext1(y)
    acc2 = fadd acc, z
    one = iconst 1
    i2 = iadd i, one
    jump head(i2, acc2)
exit:
    ret acc
}
";
    let m = parse_module(src).unwrap();
    let forward = derive_forward(&m, "f", &[true, false], 1).unwrap_err().to_string();
    let reverse = derive_reverse(&m, "f", &[true, false]).unwrap_err().to_string();
    for message in [forward, reverse] {
        assert!(message.contains("block body, inst 2") && message.contains("@ext1"), "{message}");
    }
}

/// A dense Hessian or Jacobian that cannot be allocated is an error naming the function and the
/// size, not an aborted process.
#[test]
fn dense_results_too_large_are_errors() {
    use jitdiff::{Arg, Error, GradientFn, HvpFn, ir::parse_module};
    let m = parse_module(
        "func @f(x: slice, out: mslice) -> f64 {\nentry:\n    z = iconst 0\n    a = load x, z\n    s = fmul a, a\n    store out, z, s\n    ret s\n}\n",
    )
    .unwrap();
    let n = 1 << 22; // 2^44 entries of 8 bytes: 128 TiB
    let x = vec![1.0; n];
    let mut out = vec![0.0; n];
    let hvp = HvpFn::builder(&m, "f").wrt(["x"]).build().unwrap();
    let err = hvp.hessian(&mut [Arg::from(&x[..]), Arg::from(&mut out[..])]).unwrap_err();
    assert!(matches!(err, Error::TooLarge { what: "Hessian", rows, cols, .. } if rows == n && cols == n), "{err}");
    assert!(err.to_string().contains("@f"), "{err}");
    let g = GradientFn::builder(&m, "f").wrt(["x"]).build().unwrap();
    let err = g.jacobian(&mut [Arg::from(&x[..]), Arg::from(&mut out[..])]).unwrap_err();
    assert!(matches!(err, Error::TooLarge { what: "Jacobian", cols, .. } if cols == n), "{err}");
}

/// A run-time fault of a function written in Rust names its line and column in that source,
/// through every handle built with `rust_source`: an index (read and write), an integer
/// division, and an index inside a called function.
#[test]
fn rust_source_faults_name_the_source_line() {
    use jitdiff::front::lower_source_as_written;
    use jitdiff::{Arg, Error, GradientFn, HvpFn, PrimalFn};
    let source = "fn g(v: &[f64], k: usize) -> f64 {\n    v[k] * 2.0\n}\n\n\
                  fn f(x: &[f64], n: i64, out: &mut [f64]) -> f64 {\n    let m = 10 / n;\n    out[n as usize] = x[0];\n    g(x, 2 * n as usize) * x[1] + (m as f64)\n}\n";
    let lowered = lower_source_as_written(source).unwrap();
    let m = &lowered.module;
    let x = [1.0, 2.0];
    let message = |n: i64, e: Result<f64, Error>| {
        let e = e.unwrap_err();
        assert!(matches!(e, Error::Fault { in_derivative: false, .. }), "n = {n}: {e}");
        e.to_string()
    };
    let primal = PrimalFn::builder(m, "f").rust_source(&lowered).build().unwrap();
    let grad = GradientFn::builder(m, "f").wrt(["x"]).rust_source(&lowered).build().unwrap();
    let hvp = HvpFn::builder(m, "f").wrt(["x"]).rust_source(&lowered).build().unwrap();
    for (n, at) in [(0, "line 6, column 16"), (5, "line 7, column 5"), (1, "line 2, column 5 of @g")] {
        let mut out = [0.0; 3];
        let primal_error =
            message(n, primal.call(&mut [Arg::from(&x[..]), Arg::I64(n), Arg::from(&mut out[..])]).map(|_| 0.0));
        assert!(primal_error.contains(at), "primal, n = {n}: {primal_error}");
        let mut g = [0.0; 2];
        let grad_error =
            message(n, grad.value_and_grad(&mut [Arg::from(&x[..]), Arg::I64(n), Arg::from(&mut out[..])], &mut g));
        assert!(grad_error.contains(at), "gradient, n = {n}: {grad_error}");
        let (mut hv, dir) = ([0.0; 2], [1.0, 0.0]);
        let hvp_error =
            message(n, hvp.hvp(&mut [Arg::from(&x[..]), Arg::I64(n), Arg::from(&mut out[..])], &dir, &mut hv));
        assert!(hvp_error.contains(at), "hvp, n = {n}: {hvp_error}");
    }
    // Without `rust_source`, the fault is still reported, without a position.
    let plain = PrimalFn::builder(m, "f").build().unwrap();
    let mut out = [0.0; 3];
    let e = plain.call(&mut [Arg::from(&x[..]), Arg::I64(0), Arg::from(&mut out[..])]).unwrap_err();
    assert!(matches!(e, Error::Fault { position: None, .. }), "{e}");
}
