//! One harness case: a generated (or saved) module, its entry arguments, which parameters are
//! differentiated and a seed for random directions — and the regression-file text format that
//! stores a case under `tests/regressions/`.

use jitdiff::ir::arbitrary::{ArgSpec, GenConfig, generate_case};
use jitdiff::ir::{Module, Type, parse_module, print_module};

/// Which generator configuration a case comes from; decides which checks apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Smooth programs: every check, forward mode against central differences included.
    Smooth,
    /// Smooth plus kinks (`abs min max floor ...`, float-dependent control flow): every check;
    /// finite differences skip points near a kink.
    Piecewise,
    /// Every scalar construct, NaN and infinities possible: every check but finite differences.
    General,
    /// Everything the generator makes (vectors, externs, run-time errors): interpreter vs JIT
    /// on the program and on whatever derived IR the transforms accept.
    Full,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::Smooth, Kind::Piecewise, Kind::General, Kind::Full];

    /// The kind of case `index`: the CI mix is 3 smooth, 2 piecewise, 2 general, 1 full in 8.
    pub fn of_case(index: u64) -> Kind {
        match index % 8 {
            0..=2 => Kind::Smooth,
            3 | 4 => Kind::Piecewise,
            5 | 6 => Kind::General,
            _ => Kind::Full,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Smooth => "smooth",
            Kind::Piecewise => "piecewise",
            Kind::General => "general",
            Kind::Full => "full",
        }
    }

    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == s)
    }

    pub fn config(self) -> GenConfig {
        match self {
            Kind::Smooth => GenConfig::smooth(),
            Kind::Piecewise => GenConfig::piecewise(),
            // Active vectors and extern calls have no derivative rules yet.
            Kind::General => GenConfig { allow_externs: false, allow_vectors: false, ..GenConfig::default() },
            Kind::Full => GenConfig::full(),
        }
    }

    /// Is the program smooth enough to compare with finite differences?
    pub fn smooth(self) -> bool {
        matches!(self, Kind::Smooth | Kind::Piecewise)
    }
}

/// A program with everything needed to check it.
#[derive(Clone, Debug)]
pub struct Case {
    pub kind: Kind,
    pub module: Module,
    pub entry: String,
    pub args: Vec<ArgSpec>,
    /// Bit `i % 64` set: parameter `i` is differentiated (if it is `f64` or a slice).
    pub wrt_bits: u64,
    /// Seeds the random tangent directions and cotangents.
    pub seed: u64,
    /// A regression file of a known, reported bug names the check it still fails.
    pub expect_fail: Option<String>,
}

impl Case {
    /// Decode a case from the generator's choice streams.
    pub fn generate(kind: Kind, streams: &[Vec<u32>], wrt_bits: u64, seed: u64) -> Case {
        let (module, entry, args) = generate_case(&kind.config(), streams);
        Case { kind, module, entry, args, wrt_bits, seed, expect_fail: None }
    }

    pub fn param_types(&self) -> Vec<Type> {
        self.module.func_by_name(&self.entry).map(|f| f.param_types()).unwrap_or_default()
    }

    /// The differentiation mask: one flag per parameter of the entry.
    pub fn wrt(&self) -> Vec<bool> {
        self.param_types()
            .iter()
            .enumerate()
            .map(|(i, t)| (*t == Type::F64 || t.is_slice()) && self.wrt_bits >> (i % 64) & 1 == 1)
            .collect()
    }

    /// The case as a regression file: a header of `;` comments (kind, mask, seed, arguments)
    /// and the module's IR text. [`Case::from_regression`] reads it back.
    pub fn to_regression(&self, title: &str) -> String {
        let mut out = format!("; harness regression: {}\n", title.lines().next().unwrap_or(""));
        out += &format!(
            "; kind: {}\n; entry: {}\n; wrt: {:#x}\n; seed: {}\n",
            self.kind.name(),
            self.entry,
            self.wrt_bits,
            self.seed
        );
        for a in &self.args {
            out += &format!("; arg: {}\n", arg_text(a));
        }
        out += &print_module(&self.module);
        out
    }

    /// Read a regression file written by [`Case::to_regression`].
    pub fn from_regression(text: &str) -> Result<Case, String> {
        let (mut kind, mut entry, mut wrt_bits, mut seed, mut args, mut expect_fail) =
            (None, None, None, 0, vec![], None);
        for line in text.lines().filter_map(|l| l.trim().strip_prefix(';')) {
            let Some((key, value)) = line.split_once(':') else { continue };
            let value = value.trim();
            match key.trim() {
                "kind" => kind = Some(Kind::parse(value).ok_or_else(|| format!("unknown kind `{value}`"))?),
                "entry" => entry = Some(value.to_string()),
                "wrt" => {
                    let hex = value.trim_start_matches("0x");
                    wrt_bits = Some(u64::from_str_radix(hex, 16).map_err(|e| format!("bad wrt `{value}`: {e}"))?);
                }
                "seed" => seed = value.parse().map_err(|e| format!("bad seed `{value}`: {e}"))?,
                "arg" => args.push(parse_arg(value)?),
                "expect-fail" => expect_fail = Some(value.to_string()),
                _ => {}
            }
        }
        let module = parse_module(text).map_err(|e| format!("the IR does not parse: {e}"))?;
        Ok(Case {
            kind: kind.ok_or("missing `; kind:` line")?,
            module,
            entry: entry.ok_or("missing `; entry:` line")?,
            args,
            wrt_bits: wrt_bits.ok_or("missing `; wrt:` line")?,
            seed,
            expect_fail,
        })
    }
}

fn floats_text(xs: &[f64]) -> String {
    xs.iter().map(|x| format!("{x:?}")).collect::<Vec<_>>().join(" ")
}

fn arg_text(a: &ArgSpec) -> String {
    match a {
        ArgSpec::F64(x) => format!("f64 {x:?}"),
        ArgSpec::I64(x) => format!("i64 {x}"),
        ArgSpec::Bool(x) => format!("bool {x}"),
        ArgSpec::Slice(xs) => format!("slice {}", floats_text(xs)).trim_end().to_string(),
        ArgSpec::SliceMut(xs) => format!("mslice {}", floats_text(xs)).trim_end().to_string(),
    }
}

fn parse_arg(text: &str) -> Result<ArgSpec, String> {
    let mut words = text.split_whitespace();
    let ty = words.next().ok_or("empty `; arg:` line")?;
    let bad = |w: &str| format!("bad {ty} argument `{w}` in `{text}`");
    let float = |w: &str| w.parse::<f64>().map_err(|_| bad(w));
    let rest: Vec<&str> = words.collect();
    let one = || rest.first().copied().ok_or_else(|| bad(""));
    Ok(match ty {
        "f64" => ArgSpec::F64(float(one()?)?),
        "i64" => ArgSpec::I64(one()?.parse().map_err(|_| bad(rest[0]))?),
        "bool" => ArgSpec::Bool(one()?.parse().map_err(|_| bad(rest[0]))?),
        "slice" => ArgSpec::Slice(rest.iter().map(|w| float(w)).collect::<Result<_, _>>()?),
        "mslice" => ArgSpec::SliceMut(rest.iter().map(|w| float(w)).collect::<Result<_, _>>()?),
        _ => return Err(format!("unknown argument type `{ty}` in `{text}`")),
    })
}
