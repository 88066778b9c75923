//! The IR text format: a parser that reports errors at line:column and a printer whose output
//! parses back to the same module. The grammar is documented in `docs/ir.md`.
//!
//! ```
//! use jitdiff_ir::{parse_module, print_module};
//! let text = "func @square(x: f64) -> f64 {\nentry:\n    y = fmul x, x\n    ret y\n}\n";
//! let module = parse_module(text).unwrap();
//! assert_eq!(print_module(&module), text);
//! ```

mod lexer;
mod parser;
mod printer;

use crate::function::Module;
use crate::spans::{Pos, SourceMap};

pub use printer::{print_function, print_module};

/// Parse IR text into a canonical [`Module`].
///
/// Calls may name functions defined later in the text, and values may be used before the line
/// that defines them (dominance is the verifier's concern, not the parser's).
///
/// ```
/// use jitdiff_ir::parse_module;
/// let m = parse_module("func @one() -> f64 {\nentry:\n    x = fconst 1.0\n    ret x\n}\n").unwrap();
/// assert_eq!(m.functions[0].name, "one");
/// let err = parse_module("func @f() {\nentry:\n    ret y\n}\n").unwrap_err();
/// assert_eq!((err.pos.line, err.pos.col, err.kind.kind_name()), (3, 9, "UnknownValue"));
/// ```
pub fn parse_module(text: &str) -> Result<Module, ParseError> {
    parse_module_with_spans(text).map(|(module, _)| module)
}

/// Parse IR text into a canonical [`Module`] and the [`SourceMap`] of where each function,
/// block, instruction, terminator and extern starts (indexed like the module).
///
/// ```
/// use jitdiff_ir::{parse_module_with_spans, Pos};
/// let (_, spans) = parse_module_with_spans("func @f() {\nentry:\n    ret\n}\n").unwrap();
/// assert_eq!(spans.term(0, 0), Some(Pos { line: 3, col: 5 }));
/// ```
pub fn parse_module_with_spans(text: &str) -> Result<(Module, SourceMap), ParseError> {
    parser::parse(text)
}

impl std::fmt::Display for Module {
    /// The module's text, as [`print_module`] gives it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&print_module(self))
    }
}

/// An error in IR text: where it is and what is wrong.
///
/// ```
/// use jitdiff_ir::{parse_module, ParseErrorKind};
/// let err = parse_module("func @f() {\nentry:\n    x = fconst 1.0\n    y = foo x\n    ret\n}\n").unwrap_err();
/// assert_eq!(err.kind, ParseErrorKind::UnknownOpcode("foo".into()));
/// assert_eq!(err.to_string().split(':').take(2).collect::<Vec<_>>(), ["4", "9"]);
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{pos}: {kind}")]
pub struct ParseError {
    /// 1-based line and column of the offending token.
    pub pos: Pos,
    /// What is wrong.
    pub kind: ParseErrorKind,
}

/// What is wrong with a piece of IR text. [`ParseErrorKind::kind_name`] gives a stable name.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParseErrorKind {
    /// A character that starts no token.
    #[error(
        "unexpected character {0:?}: names are letters, digits and '_' (not starting with a digit), \
         comments start with ';' or '#'"
    )]
    UnexpectedChar(char),
    /// A token that does not fit the grammar here.
    #[error("expected {expected}, found {found}")]
    UnexpectedToken {
        /// What the grammar allows here.
        expected: String,
        /// What the text has.
        found: String,
    },
    /// The text ended too early.
    #[error("unexpected end of input: expected {expected}")]
    UnexpectedEof {
        /// What the grammar needs next.
        expected: String,
    },
    /// A type spelling that does not exist.
    #[error("unknown type `{0}`: use one of f64, i64, bool, slice, mslice, f64x2, f64x4, f64x8, f64x16")]
    UnknownType(String),
    /// An opcode spelling that does not exist.
    #[error("unknown opcode `{0}`: see docs/ir.md for the opcodes (terminators are jump, br, ret)")]
    UnknownOpcode(String),
    /// A derivative declaration's mode that does not exist.
    #[error("unknown mode `{0}`: a declared derivative is `= grad forward @f wrt ...` or `= grad reverse @f wrt ...`")]
    UnknownDiffMode(String),
    /// A comparison condition that does not exist.
    #[error("unknown condition `{0}`: use one of eq, ne, lt, le, gt, ge")]
    UnknownCondition(String),
    /// A use of a value that no parameter, block parameter or instruction of the function defines.
    #[error("unknown value `{0}`: define it as a function parameter, block parameter or instruction result")]
    UnknownValue(String),
    /// A jump to a label the function does not have.
    #[error("unknown block `{0}`: jump only to labels defined in the same function")]
    UnknownBlock(String),
    /// A call to a name that is neither a function nor an extern of the module.
    #[error("unknown callee `@{0}`: define it with `func @{0}(...)` or declare it with `extern @{0}(...)`")]
    UnknownCallee(String),
    /// A `table` instruction naming no table of the module.
    #[error("unknown table `@{0}`: define it at module level with `const @{0} = [1.0, 2.0, ...]`")]
    UnknownTable(String),
    /// Two definitions of one value name in a function.
    #[error("value `{0}` is defined twice in this function: rename one of the definitions")]
    DuplicateValue(String),
    /// Two blocks with one label in a function.
    #[error("block label `{0}` is used twice in this function: rename one of the blocks")]
    DuplicateBlock(String),
    /// Two functions, externs or tables with one name (they share one namespace).
    #[error("`@{0}` is defined twice: functions, externs and tables share one namespace, rename one")]
    DuplicateFunction(String),
    /// A line after the block's terminator, before the next label.
    #[error(
        "instruction after the block's terminator: a block ends at its jump/br/ret, \
         start a new block with a label first"
    )]
    InstructionAfterTerminator,
    /// A number that cannot be read as the literal wanted here.
    #[error(
        "bad number `{0}`: fconst takes a float such as 1.5, -0.0, 1e-7, inf, -inf, NaN or a 0x bit pattern; \
         iconst takes a 64-bit integer"
    )]
    BadNumber(String),
    /// A lane index that is not a small non-negative integer.
    #[error("bad lane `{0}`: a lane is an integer from 0 to one less than the vector width")]
    BadLane(String),
    /// An instruction with a different number of result names than it defines.
    #[error("`{op}` defines {expected} result(s) but {found} name(s) are given before `=`")]
    WrongResultCount {
        /// The opcode (and callee, for calls).
        op: String,
        /// How many results it defines.
        expected: usize,
        /// How many names the text gives.
        found: usize,
    },
    /// A function without blocks.
    #[error("function `@{0}` has no blocks: give it at least an entry block, e.g. `entry:` then `ret`")]
    EmptyFunction(String),
}

impl ParseErrorKind {
    /// The variant's name as a stable string (`"UnknownValue"`, ...), for test corpora.
    ///
    /// ```
    /// use jitdiff_ir::ParseErrorKind;
    /// assert_eq!(ParseErrorKind::InstructionAfterTerminator.kind_name(), "InstructionAfterTerminator");
    /// ```
    pub fn kind_name(&self) -> &'static str {
        match self {
            ParseErrorKind::UnexpectedChar(_) => "UnexpectedChar",
            ParseErrorKind::UnexpectedToken { .. } => "UnexpectedToken",
            ParseErrorKind::UnexpectedEof { .. } => "UnexpectedEof",
            ParseErrorKind::UnknownType(_) => "UnknownType",
            ParseErrorKind::UnknownOpcode(_) => "UnknownOpcode",
            ParseErrorKind::UnknownCondition(_) => "UnknownCondition",
            ParseErrorKind::UnknownDiffMode(_) => "UnknownDiffMode",
            ParseErrorKind::UnknownValue(_) => "UnknownValue",
            ParseErrorKind::UnknownBlock(_) => "UnknownBlock",
            ParseErrorKind::UnknownCallee(_) => "UnknownCallee",
            ParseErrorKind::UnknownTable(_) => "UnknownTable",
            ParseErrorKind::DuplicateValue(_) => "DuplicateValue",
            ParseErrorKind::DuplicateBlock(_) => "DuplicateBlock",
            ParseErrorKind::DuplicateFunction(_) => "DuplicateFunction",
            ParseErrorKind::InstructionAfterTerminator => "InstructionAfterTerminator",
            ParseErrorKind::BadNumber(_) => "BadNumber",
            ParseErrorKind::BadLane(_) => "BadLane",
            ParseErrorKind::WrongResultCount { .. } => "WrongResultCount",
            ParseErrorKind::EmptyFunction(_) => "EmptyFunction",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parse `text`, expecting an error; return (line, col, kind name).
    fn error_at(text: &str) -> (u32, u32, &'static str) {
        match parse_module(text) {
            Ok(m) => panic!("expected an error, parsed:\n{m}"),
            Err(e) => (e.pos.line, e.pos.col, e.kind.kind_name()),
        }
    }

    fn body(lines: &str) -> String {
        format!("func @f(x: f64, s: slice) -> f64 {{\nentry:\n{lines}}}\n")
    }

    #[test]
    fn lexical_and_syntax_errors_point_at_the_offending_token() {
        assert_eq!(error_at(&body("    y = fadd x, $x\n    ret y\n")), (3, 17, "UnexpectedChar"));
        assert_eq!(error_at(&body("    y = fadd x x\n    ret y\n")), (3, 16, "UnexpectedToken"));
        assert_eq!(error_at("func @f() {\nentry:\n    ret\n"), (4, 1, "UnexpectedEof"));
        assert_eq!(error_at("fn @f() {\n}\n"), (1, 1, "UnexpectedToken"));
        assert_eq!(error_at("func @f(x: f32) {\nentry:\n    ret\n}\n"), (1, 12, "UnknownType"));
        assert_eq!(error_at(&body("    y = fadd x, 1.0\n    ret y\n")), (3, 17, "UnexpectedToken"));
        assert_eq!(error_at("func @f() {\n    ret\n}\n"), (2, 5, "UnexpectedToken"));
        assert_eq!(error_at("func @f() {\nentry: ret\n}\n"), (2, 8, "UnexpectedToken"));
        assert_eq!(error_at(&body("    y = ret x\n")), (3, 9, "UnexpectedToken"));
    }

    #[test]
    fn bad_words_and_literals_are_reported_where_they_stand() {
        assert_eq!(error_at(&body("    y = fmadd x, x\n    ret y\n")), (3, 9, "UnknownOpcode"));
        assert_eq!(error_at(&body("    c = fcmp lte x, x\n    ret x\n")), (3, 14, "UnknownCondition"));
        assert_eq!(error_at(&body("    k = iconst 1.5\n    ret x\n")), (3, 16, "BadNumber"));
        assert_eq!(error_at(&body("    k = iconst 99999999999999999999\n    ret x\n")), (3, 16, "BadNumber"));
        assert_eq!(error_at(&body("    k = fconst 1e\n    ret x\n")), (3, 16, "BadNumber"));
        assert_eq!(error_at(&body("    k = fconst infinity\n    ret x\n")), (3, 16, "BadNumber"));
        assert_eq!(error_at(&body("    k = fconst 0x7ff8\n    ret x\n")), (3, 16, "BadNumber"));
        assert_eq!(error_at(&body("    t = splat.f64x3 x\n    ret x\n")), (3, 15, "UnknownType"));
        assert_eq!(error_at(&body("    t = splat.f64x4 x\n    e = extract t, -1\n    ret e\n")), (4, 20, "BadLane"));
        assert_eq!(error_at(&body("    t = splat.f64x4 x\n    e = extract t, 256\n    ret e\n")), (4, 20, "BadLane"));
    }

    #[test]
    fn name_errors_point_at_the_name() {
        assert_eq!(error_at(&body("    y = fadd x, z\n    ret y\n")), (3, 17, "UnknownValue"));
        assert_eq!(error_at(&body("    jump nowhere\n")), (3, 10, "UnknownBlock"));
        assert_eq!(error_at(&body("    y = call @g(x)\n    ret y\n")), (3, 14, "UnknownCallee"));
        assert_eq!(error_at(&body("    x = fneg x\n    ret x\n")), (3, 5, "DuplicateValue"));
        assert_eq!(error_at(&body("    v1 = fneg x\n    v1 = fneg x\n    ret x\n")), (4, 5, "DuplicateValue"));
        assert_eq!(error_at(&body("    jump entry\nentry:\n    ret x\n")), (4, 1, "DuplicateBlock"));
        let clash = "extern @g(f64) -> f64\nfunc @g(x: f64) -> f64 {\nentry:\n    ret x\n}\n";
        assert_eq!(error_at(clash), (2, 6, "DuplicateFunction"));
        assert_eq!(
            error_at("func @f() {\nentry:\n    ret\n}\nfunc @f() {\nentry:\n    ret\n}\n"),
            (5, 6, "DuplicateFunction")
        );
    }

    #[test]
    fn structural_errors() {
        assert_eq!(error_at(&body("    ret x\n    y = fneg x\n")), (4, 5, "InstructionAfterTerminator"));
        assert_eq!(error_at(&body("    ret x\n    ret x\n")), (4, 5, "InstructionAfterTerminator"));
        assert_eq!(error_at(&body("    a, b = fadd x, x\n    ret a\n")), (3, 5, "WrongResultCount"));
        assert_eq!(error_at(&body("    fadd x, x\n    ret x\n")), (3, 5, "WrongResultCount"));
        assert_eq!(error_at(&body("    y = len s\n    z = store s, y, x\n    ret x\n")), (4, 5, "WrongResultCount"));
        let call = "func @g() -> f64, f64 {\nentry:\n    a = fconst 1.0\n    ret a, a\n}\n";
        assert_eq!(error_at(&format!("{}{call}", body("    y = call @g()\n    ret y\n"))), (3, 5, "WrongResultCount"));
        assert_eq!(error_at("\nfunc @empty() {\n}\n"), (2, 1, "EmptyFunction"));
    }

    #[test]
    fn the_first_error_in_the_text_wins_within_the_grammar() {
        // A syntax error on line 3 is reported before a bad character on line 4.
        assert_eq!(error_at(&body("    y = fadd x x\n    $\n")), (3, 16, "UnexpectedToken"));
    }

    #[test]
    fn kind_names_are_the_variant_names() {
        let s = || String::from("x");
        let kinds = [
            ParseErrorKind::UnexpectedChar('$'),
            ParseErrorKind::UnexpectedToken { expected: s(), found: s() },
            ParseErrorKind::UnexpectedEof { expected: s() },
            ParseErrorKind::UnknownType(s()),
            ParseErrorKind::UnknownOpcode(s()),
            ParseErrorKind::UnknownCondition(s()),
            ParseErrorKind::UnknownValue(s()),
            ParseErrorKind::UnknownBlock(s()),
            ParseErrorKind::UnknownCallee(s()),
            ParseErrorKind::UnknownTable(s()),
            ParseErrorKind::DuplicateValue(s()),
            ParseErrorKind::DuplicateBlock(s()),
            ParseErrorKind::DuplicateFunction(s()),
            ParseErrorKind::InstructionAfterTerminator,
            ParseErrorKind::BadNumber(s()),
            ParseErrorKind::BadLane(s()),
            ParseErrorKind::WrongResultCount { op: s(), expected: 1, found: 2 },
            ParseErrorKind::EmptyFunction(s()),
        ];
        for kind in kinds {
            let debug = format!("{kind:?}");
            let variant = debug.split(['(', ' ']).next().unwrap_or_default();
            assert_eq!(kind.kind_name(), variant);
        }
    }

    #[test]
    fn messages_name_the_position_and_say_what_to_fix() {
        let e = parse_module(&body("    y = fadd x, z\n    ret y\n")).unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("3:17: "), "{msg}");
        assert!(msg.contains("`z`") && msg.contains("define it"), "{msg}");
        let e = parse_module(&body("    a, b = fadd x, x\n    ret a\n")).unwrap_err();
        assert_eq!(e.kind, ParseErrorKind::WrongResultCount { op: "fadd".into(), expected: 1, found: 2 });
    }
}

#[cfg(test)]
/// Typing, spans and robustness of the parser.
mod parser_tests {
    use super::*;
    use crate::types::Type;
    use std::collections::HashMap;

    fn parse(text: &str) -> Result<(Module, SourceMap), ParseError> {
        parse_module_with_spans(text)
    }

    fn types_of(text: &str) -> Vec<(String, Type)> {
        let (m, _) = parse(text).unwrap_or_else(|e| panic!("{e}"));
        let f = &m.functions[0];
        f.values.iter().map(|d| (d.name.clone().unwrap_or_default(), d.ty)).collect()
    }

    #[test]
    fn result_types_flow_backwards_through_the_text() {
        // Each line uses the next one's result: typing must follow dependencies, not lines.
        let text = "func @f(n: i64) {\nentry:\n    d = select c, b, b\n    c = icmp lt a, a\n    \
                    b = itof a\n    a = iadd n, n\n    ret\n}\n";
        let types: HashMap<String, Type> = types_of(text).into_iter().collect();
        assert_eq!(types["a"], Type::I64);
        assert_eq!(types["b"], Type::F64);
        assert_eq!(types["c"], Type::Bool);
        assert_eq!(types["d"], Type::F64);
    }

    #[test]
    fn cyclic_definitions_settle_on_f64_without_looping() {
        let text = "func @f(n: i64) {\nentry:\n    a = iadd b, n\n    b = iadd a, n\n    c = ftoi a\n    ret\n}\n";
        let types = types_of(text);
        // The cycle gets f64 (ill-typed for iadd, which the verifier reports); `c` is then typed
        // from its operand as usual.
        assert_eq!(types[1], ("a".into(), Type::F64));
        assert_eq!(types[2], ("b".into(), Type::F64));
        assert_eq!(types[3], ("c".into(), Type::I64));
    }

    #[test]
    fn source_map_positions_are_those_of_the_text() {
        let text = "extern @e(f64)\n\n  func @f(x: f64) {\nentry:\n    call @e(x)\n  next(y: f64):\n\tret\n}\n";
        let (_, spans) = parse(text).unwrap();
        assert_eq!(spans.externs, [Pos { line: 1, col: 1 }]);
        assert_eq!(spans.func(0), Some(Pos { line: 3, col: 3 }));
        assert_eq!(spans.funcs[0].blocks, [Pos { line: 4, col: 1 }, Pos { line: 6, col: 3 }]);
        assert_eq!(spans.inst(0, 0, 0), Some(Pos { line: 5, col: 5 }));
        assert_eq!(spans.term(0, 0), None);
        assert_eq!(spans.term(0, 1), Some(Pos { line: 7, col: 2 }));
    }

    #[test]
    fn no_input_makes_the_parser_panic() {
        let text = "extern @e(f64) -> f64, i64\nfunc @f(x: f64, s: mslice) -> f64 {\nentry:\n    \
                    a, k = call @e(x)\n    t = splat.f64x2 a\n    u = insert t, 1, a\n    c = fcmp lt a, x\n    \
                    store s, k, a\n    br c, l(a), l(x)\nl(r: f64):\n    ret r\n}\n";
        assert!(parse(text).is_ok());
        let chars: Vec<char> = text.chars().collect();
        for cut in 0..chars.len() {
            let prefix: String = chars[..cut].iter().collect();
            let _ = parse(&prefix);
            for replacement in ['@', '(', ')', ',', ':', '=', '-', '.', '\n', 'x', '1', '{', '}', ' '] {
                let mut mutated = chars.clone();
                mutated[cut] = replacement;
                let _ = parse(&mutated.iter().collect::<String>());
            }
        }
    }
}
