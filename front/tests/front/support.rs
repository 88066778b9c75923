//! Shared helpers: one copy of each test function as Rust and as source text (`dual!`), the
//! conversions between Rust values and interpreter values, bitwise comparison, random inputs.

use jitdiff_ir::{ArgValue, ExternRegistry, Interpreter, Module, RuntimeValue};

/// Define items as real Rust and keep their text: `dual! { SRC: fn f(...) -> f64 { ... } }`
/// compiles `f` and defines `const SRC: &str` holding the same tokens.
#[macro_export]
macro_rules! dual {
    ($src:ident: $($item:item)+) => {
        $($item)+
        pub(crate) const $src: &str = stringify!($($item)+);
    };
}

/// Lower a source, panicking with the error (a test failure) if it does not lower. The module
/// also survives the text format: printed and parsed back, it is the same module. Lowered with
/// its functions as written, it is the same module, and those verify with a source position
/// inside the source for every instruction.
pub fn lower(source: &str) -> Module {
    let module = match jitdiff_front::lower_source(source) {
        Ok(module) => module,
        Err(e) => panic!("{e}\nsource:\n{source}"),
    };
    check_as_written(source, &module);
    let text = jitdiff_ir::print_module(&module);
    assert_eq!(
        jitdiff_ir::parse_module(&text).as_ref(),
        Ok(&module),
        "the printed module does not parse back:\n{text}"
    );
    module
}

/// `lower_source_as_written` gives `module` and its functions as written, which verify and have
/// a position within `source` for each instruction.
pub fn check_as_written(source: &str, module: &Module) {
    let lowered = jitdiff_front::lower_source_as_written(source).expect("lowers as lower_source did");
    assert_eq!(&lowered.module, module, "source:\n{source}");
    let (written, spans) = lowered.as_written.expect("the functions as written verify");
    assert!(jitdiff_ir::verify_module(&written).is_ok());
    let lines = source.split('\n').count() as u32;
    for (f, function) in written.functions.iter().enumerate() {
        for (b, block) in function.blocks.iter().enumerate() {
            for i in 0..block.insts.len() {
                let pos = spans.inst(f, b, i).unwrap_or_else(|| panic!("no position: @{} {b} {i}", function.name));
                assert!(pos.line >= 1 && pos.line <= lines && pos.col >= 1, "{pos} outside the source:\n{source}");
            }
        }
    }
}

/// Run `name` of `module` on `args` in the reference interpreter (with a step limit, so a
/// lowering bug that loops fails instead of hanging).
pub fn run(module: &Module, name: &str, args: &mut [ArgValue]) -> Vec<RuntimeValue> {
    run_with(module, name, args, None)
}

pub fn run_with(
    module: &Module,
    name: &str,
    args: &mut [ArgValue],
    externs: Option<&ExternRegistry>,
) -> Vec<RuntimeValue> {
    let mut interp = Interpreter::new(module).with_step_limit(50_000_000);
    if let Some(registry) = externs {
        interp = interp.with_externs(registry);
    }
    match interp.call(name, args) {
        Ok(values) => values,
        Err(e) => panic!("@{name} failed: {e}\n{}", jitdiff_ir::print_module(module)),
    }
}

/// A Rust value as an interpreter argument.
pub trait ToArg {
    fn to_arg(&self) -> ArgValue;
}

impl ToArg for f64 {
    fn to_arg(&self) -> ArgValue {
        ArgValue::F64(*self)
    }
}
impl ToArg for bool {
    fn to_arg(&self) -> ArgValue {
        ArgValue::Bool(*self)
    }
}
macro_rules! int_args {
    ($($t:ty),*) => {$(
        impl ToArg for $t {
            fn to_arg(&self) -> ArgValue {
                ArgValue::I64(*self as i64)
            }
        }
    )*};
}
int_args!(i64, i32, u32, usize, isize, u64);
impl ToArg for &[f64] {
    fn to_arg(&self) -> ArgValue {
        ArgValue::Slice(self.to_vec())
    }
}
impl ToArg for Vec<f64> {
    fn to_arg(&self) -> ArgValue {
        ArgValue::Slice(self.clone())
    }
}
impl<const N: usize> ToArg for [f64; N] {
    fn to_arg(&self) -> ArgValue {
        ArgValue::Slice(self.to_vec())
    }
}
impl<const N: usize> ToArg for &[f64; N] {
    fn to_arg(&self) -> ArgValue {
        ArgValue::Slice(self.to_vec())
    }
}

/// A Rust result as the interpreter's result list.
pub trait ToResults {
    fn to_results(self) -> Vec<RuntimeValue>;
}
impl ToResults for f64 {
    fn to_results(self) -> Vec<RuntimeValue> {
        vec![RuntimeValue::F64(self)]
    }
}
impl ToResults for bool {
    fn to_results(self) -> Vec<RuntimeValue> {
        vec![RuntimeValue::Bool(self)]
    }
}
impl ToResults for () {
    fn to_results(self) -> Vec<RuntimeValue> {
        vec![]
    }
}
macro_rules! int_results {
    ($($t:ty),*) => {$(
        impl ToResults for $t {
            fn to_results(self) -> Vec<RuntimeValue> {
                vec![RuntimeValue::I64(self as i64)]
            }
        }
    )*};
}
int_results!(i64, i32, u32, usize, isize, u64);
impl<A: ToResults, B: ToResults> ToResults for (A, B) {
    fn to_results(self) -> Vec<RuntimeValue> {
        let mut v = self.0.to_results();
        v.extend(self.1.to_results());
        v
    }
}
impl<A: ToResults, B: ToResults, C: ToResults> ToResults for (A, B, C) {
    fn to_results(self) -> Vec<RuntimeValue> {
        let mut v = self.0.to_results();
        v.extend(self.1.to_results());
        v.extend(self.2.to_results());
        v
    }
}

/// `same!(module, f(a, b))`: the interpreter on `@f` gives bit for bit what rustc's `f` gives.
#[macro_export]
macro_rules! same {
    ($module:expr, $f:ident ( $($arg:expr),* $(,)? )) => {{
        #[allow(unused_imports)]
        use $crate::support::{ToArg, ToResults};
        let want = $f($($arg),*).to_results();
        let mut args = vec![$(($arg).to_arg()),*];
        let got = $crate::support::run(&$module, stringify!($f).trim_start_matches("r#"), &mut args);
        let shown: Vec<String> = vec![$(format!("{:?}", $arg)),*];
        assert_eq!(got, want, "{}({}) differs: interpreter {:?}, rustc {:?}", stringify!($f), shown.join(", "), got, want);
    }};
}

/// Distance in units in the last place between two finite floats of the same sign (0 for
/// identical bits, including identical NaNs).
pub fn ulps(a: f64, b: f64) -> u64 {
    if a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()) {
        return 0;
    }
    if a.is_sign_negative() != b.is_sign_negative() {
        return u64::MAX;
    }
    a.to_bits().abs_diff(b.to_bits())
}

/// SplitMix64: small, seedable, good enough for test inputs.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in [lo, hi).
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.uniform()
    }
    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let u = self.uniform().max(1e-300);
        let v = self.uniform();
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
    pub fn normals(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.normal()).collect()
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// Interesting floats: zeros of both signs, infinities, NaN, tiny and huge values, and some
/// ordinary ones.
pub const SPECIAL: [f64; 14] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    -2.5,
    3.75,
    1e-310,
    -1e300,
    1e300,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
    std::f64::consts::PI,
];
