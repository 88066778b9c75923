//! The parser, in two steps: [`Parser`] checks the grammar line by line and builds a syntax tree
//! that still refers to everything by name; [`resolve`] then collects every signature of the
//! module and every definition of a function before it looks names up, so calls may precede
//! the callee's definition and values may be used above the line that defines them.

use super::lexer::{Token, TokenKind, tokenize};
use super::{ParseError, ParseErrorKind as K};
use crate::function::{
    Block, BlockCall, BlockData, Callee, ExternDecl, ExternId, FuncId, Function, Imm, InstData, Module, Table, TableId,
    Terminator, Value, ValueData, is_anonymous_value_name,
};
use crate::opcode::{CondCode, Opcode, Shape};
use crate::spans::{FuncSpans, Pos, SourceMap};
use crate::types::Type;
use crate::{DerivativeOf, DiffMode};
use rustc_hash::FxHashMap as HashMap;
use std::collections::VecDeque;

/// Parse and resolve a whole module (see [`super::parse_module_with_spans`]).
pub(super) fn parse(text: &str) -> Result<(Module, SourceMap), ParseError> {
    let items = Parser::new(text).module()?;
    resolve(items)
}

fn err(pos: Pos, kind: K) -> ParseError {
    ParseError { pos, kind }
}

// ---- Syntax tree ----

struct Name {
    text: String,
    pos: Pos,
}

enum Item {
    Extern { pos: Pos, name: Name, params: Vec<Type>, returns: Vec<Type>, derivative: Option<DerivativeOf> },
    Table { pos: Pos, name: Name, data: Vec<f64> },
    Func(FuncAst),
}

struct FuncAst {
    pos: Pos,
    name: Name,
    params: Vec<(Name, Type)>,
    returns: Vec<Type>,
    blocks: Vec<BlockAst>,
}

struct BlockAst {
    label: Name,
    params: Vec<(Name, Type)>,
    insts: Vec<InstAst>,
    term: Option<(Pos, TermAst)>,
}

struct InstAst {
    pos: Pos,
    op: Opcode,
    results: Vec<Name>,
    args: Vec<Name>,
    imm: ImmAst,
}

/// An immediate; everything but the callee and the table is already final.
enum ImmAst {
    Final(Imm),
    Callee(Name),
    Table(Name),
}

enum TermAst {
    Jump(DestAst),
    Branch(Name, DestAst, DestAst),
    Return(Vec<Name>),
}

struct DestAst {
    label: Name,
    args: Vec<Name>,
}

// ---- Grammar ----

struct Parser {
    tokens: Vec<Token>,
    at: usize,
    /// Returned when peeking past the last token (which is `Eof` or `Error`).
    end: Token,
}

impl Parser {
    fn new(text: &str) -> Parser {
        let tokens = tokenize(text);
        let end = tokens.last().cloned().unwrap_or(Token { kind: TokenKind::Eof, pos: Pos { line: 1, col: 1 } });
        Parser { tokens, at: 0, end }
    }

    fn peek(&self) -> &Token {
        self.tokens.get(self.at).unwrap_or(&self.end)
    }

    fn peek_kind_after(&self) -> &TokenKind {
        &self.tokens.get(self.at + 1).unwrap_or(&self.end).kind
    }

    fn advance(&mut self) {
        // The last token (Eof or a lexer error) is never consumed.
        if self.at + 1 < self.tokens.len() {
            self.at += 1;
        }
    }

    /// The error for "expected X" at the current token.
    fn unexpected(&self, expected: &str) -> ParseError {
        let token = self.peek();
        let kind = match &token.kind {
            TokenKind::Error(kind) => kind.clone(),
            TokenKind::Eof => K::UnexpectedEof { expected: expected.into() },
            other => K::UnexpectedToken { expected: expected.into(), found: other.describe() },
        };
        err(token.pos, kind)
    }

    fn eat(&mut self, kind: &TokenKind) -> bool {
        let hit = &self.peek().kind == kind;
        if hit {
            self.advance();
        }
        hit
    }

    fn expect(&mut self, kind: &TokenKind, expected: &str) -> Result<Pos, ParseError> {
        let pos = self.peek().pos;
        if self.eat(kind) { Ok(pos) } else { Err(self.unexpected(expected)) }
    }

    fn at_line_end(&self) -> bool {
        matches!(self.peek().kind, TokenKind::Newline | TokenKind::Eof)
    }

    fn end_of_line(&mut self) -> Result<(), ParseError> {
        match self.peek().kind {
            TokenKind::Newline => {
                self.advance();
                Ok(())
            }
            TokenKind::Eof => Ok(()),
            _ => Err(self.unexpected("end of line")),
        }
    }

    fn name(&mut self, expected: &str) -> Result<Name, ParseError> {
        self.word(expected, false)
    }

    fn global(&mut self, expected: &str) -> Result<Name, ParseError> {
        self.word(expected, true)
    }

    /// A name (`global == false`) or an `@name` (`global == true`).
    fn word(&mut self, expected: &str, global: bool) -> Result<Name, ParseError> {
        let token = self.peek();
        match (&token.kind, global) {
            (TokenKind::Ident(text), false) | (TokenKind::Global(text), true) => {
                let name = Name { text: text.clone(), pos: token.pos };
                self.advance();
                Ok(name)
            }
            _ => Err(self.unexpected(expected)),
        }
    }

    fn ty(&mut self) -> Result<Type, ParseError> {
        let name = self.name("a type (f64, i64, bool, slice, mslice, f64xW)")?;
        Type::from_spelling(&name.text).ok_or_else(|| err(name.pos, K::UnknownType(name.text)))
    }

    /// `item {, item}` — at least one.
    fn comma_list<T>(
        &mut self,
        mut item: impl FnMut(&mut Self) -> Result<T, ParseError>,
    ) -> Result<Vec<T>, ParseError> {
        let mut items = vec![item(self)?];
        while self.eat(&TokenKind::Comma) {
            items.push(item(self)?);
        }
        Ok(items)
    }

    /// `( [item {, item}] )`
    fn paren_list<T>(&mut self, item: impl FnMut(&mut Self) -> Result<T, ParseError>) -> Result<Vec<T>, ParseError> {
        self.expect(&TokenKind::LParen, "`(`")?;
        if self.eat(&TokenKind::RParen) {
            return Ok(vec![]);
        }
        let items = self.comma_list(item)?;
        self.expect(&TokenKind::RParen, "`,` or `)`")?;
        Ok(items)
    }

    fn value(&mut self) -> Result<Name, ParseError> {
        self.name("a value name")
    }

    /// Operands up to the end of the line: `[v {, v}]`.
    fn values_to_line_end(&mut self) -> Result<Vec<Name>, ParseError> {
        if self.at_line_end() { Ok(vec![]) } else { self.comma_list(Self::value) }
    }

    fn typed_param(&mut self) -> Result<(Name, Type), ParseError> {
        let name = self.name("a parameter name")?;
        self.expect(&TokenKind::Colon, "`:` and the parameter's type")?;
        Ok((name, self.ty()?))
    }

    /// `[-> type {, type}]`
    fn returns(&mut self) -> Result<Vec<Type>, ParseError> {
        if self.eat(&TokenKind::Arrow) { self.comma_list(Self::ty) } else { Ok(vec![]) }
    }

    fn module(&mut self) -> Result<Vec<Item>, ParseError> {
        let mut items = vec![];
        loop {
            let token = self.peek();
            let pos = token.pos;
            match &token.kind {
                TokenKind::Newline => self.advance(),
                TokenKind::Eof => return Ok(items),
                TokenKind::Ident(word) if word == "extern" => {
                    self.advance();
                    let name = self.global("the extern's name, as in `extern @name(f64) -> f64`")?;
                    let params = self.paren_list(Self::ty)?;
                    let returns = self.returns()?;
                    let derivative = if self.eat(&TokenKind::Equals) { Some(self.derivative()?) } else { None };
                    self.end_of_line()?;
                    items.push(Item::Extern { pos, name, params, returns, derivative });
                }
                TokenKind::Ident(word) if word == "const" => {
                    self.advance();
                    let name = self.global("the table's name, as in `const @y = [1.0, 2.5]`")?;
                    self.expect(&TokenKind::Equals, "`=` and the table's values in brackets")?;
                    let data = self.table_values()?;
                    self.end_of_line()?;
                    items.push(Item::Table { pos, name, data });
                }
                TokenKind::Ident(word) if word == "func" => {
                    self.advance();
                    items.push(Item::Func(self.function(pos)?));
                }
                _ => return Err(self.unexpected("`extern`, `const` or `func`")),
            }
        }
    }

    /// `[ float {, float} [,] ]`, possibly empty; line breaks are allowed after `[` and `,` and
    /// before `]`, so long tables can be wrapped.
    fn table_values(&mut self) -> Result<Vec<f64>, ParseError> {
        self.expect(&TokenKind::LBracket, "`[` and the table's values")?;
        let mut data = vec![];
        loop {
            while self.eat(&TokenKind::Newline) {}
            if self.eat(&TokenKind::RBracket) {
                return Ok(data);
            }
            data.push(self.float()?);
            while self.eat(&TokenKind::Newline) {}
            if self.eat(&TokenKind::RBracket) {
                return Ok(data);
            }
            self.expect(&TokenKind::Comma, "`,` or `]`")?;
        }
    }

    fn function(&mut self, pos: Pos) -> Result<FuncAst, ParseError> {
        let name = self.global("the function's name, as in `func @name(x: f64) -> f64 {`")?;
        let params = self.paren_list(Self::typed_param)?;
        let returns = self.returns()?;
        self.expect(&TokenKind::LBrace, if returns.is_empty() { "`->` or `{`" } else { "`,` or `{`" })?;
        self.end_of_line()?;
        let mut blocks: Vec<BlockAst> = vec![];
        loop {
            let token = self.peek();
            match &token.kind {
                TokenKind::Newline => self.advance(),
                TokenKind::RBrace => {
                    self.advance();
                    self.end_of_line()?;
                    break;
                }
                TokenKind::Ident(_) if matches!(self.peek_kind_after(), TokenKind::Colon | TokenKind::LParen) => {
                    blocks.push(self.block_header()?);
                }
                TokenKind::Eof | TokenKind::Error(_) => return Err(self.unexpected("`}` to close the function")),
                _ => {
                    let line_pos = token.pos;
                    let Some(block) = blocks.last_mut() else {
                        return Err(self.unexpected("a block label such as `entry:`"));
                    };
                    if block.term.is_some() {
                        return Err(err(line_pos, K::InstructionAfterTerminator));
                    }
                    self.statement(block)?;
                }
            }
        }
        if blocks.is_empty() {
            return Err(err(pos, K::EmptyFunction(name.text)));
        }
        Ok(FuncAst { pos, name, params, returns, blocks })
    }

    /// `label[(p: type, ...)]:` and the end of the line.
    fn block_header(&mut self) -> Result<BlockAst, ParseError> {
        let label = self.name("a block label")?;
        let params = if self.peek().kind == TokenKind::LParen { self.paren_list(Self::typed_param)? } else { vec![] };
        self.expect(&TokenKind::Colon, "`:` after the block label")?;
        self.end_of_line()?;
        Ok(BlockAst { label, params, insts: vec![], term: None })
    }

    /// One instruction or terminator line, appended to `block`.
    fn statement(&mut self, block: &mut BlockAst) -> Result<(), ParseError> {
        let pos = self.peek().pos;
        let defines = matches!(self.peek().kind, TokenKind::Ident(_))
            && matches!(self.peek_kind_after(), TokenKind::Equals | TokenKind::Comma);
        let results = if defines {
            let names = self.comma_list(Self::value)?;
            self.expect(&TokenKind::Equals, "`,` or `=`")?;
            names
        } else {
            vec![]
        };
        let word = self.name(if defines { "an opcode" } else { "an opcode or a terminator (jump, br, ret)" })?;
        if matches!(word.text.as_str(), "jump" | "br" | "ret") {
            if defines {
                return Err(err(
                    word.pos,
                    K::UnexpectedToken {
                        expected: "an opcode (terminators define no values)".into(),
                        found: format!("`{}`", word.text),
                    },
                ));
            }
            let term = self.terminator(&word.text)?;
            self.end_of_line()?;
            block.term = Some((pos, term));
            return Ok(());
        }
        let op = Opcode::from_spelling(&word.text).ok_or_else(|| err(word.pos, K::UnknownOpcode(word.text.clone())))?;
        let defined = if matches!(
            op.shape(),
            Shape::Store | Shape::VectorStore | Shape::TapePush | Shape::TapeRejoin | Shape::Trap
        ) {
            0
        } else {
            1
        };
        if op != Opcode::Call && results.len() != defined {
            let kind = K::WrongResultCount { op: word.text, expected: defined, found: results.len() };
            return Err(err(pos, kind));
        }
        let (args, imm) = self.operands(op)?;
        self.end_of_line()?;
        block.insts.push(InstAst { pos, op, results, args, imm });
        Ok(())
    }

    /// The operands and immediate of `op`, in the syntax its shape has.
    fn operands(&mut self, op: Opcode) -> Result<(Vec<Name>, ImmAst), ParseError> {
        let imm = match op.shape() {
            Shape::Const => {
                let imm = match op {
                    Opcode::FConst => Imm::F64(self.float()?),
                    Opcode::IConst => Imm::I64(self.integer()?),
                    _ => Imm::Bool(self.boolean()?),
                };
                return Ok((vec![], ImmAst::Final(imm)));
            }
            Shape::FloatCompare | Shape::IntCompare => {
                let name = self.name("a condition (eq, ne, lt, le, gt, ge)")?;
                Imm::Cond(CondCode::from_spelling(&name.text).ok_or(err(name.pos, K::UnknownCondition(name.text)))?)
            }
            Shape::Splat | Shape::VectorLoad => {
                self.expect(&TokenKind::Dot, "`.` and the vector type, as in `splat.f64x4`")?;
                Imm::Type(self.ty()?)
            }
            Shape::TapePop => {
                self.expect(&TokenKind::Dot, "`.` and the type read, as in `tpop.f64`")?;
                let name = self.name("the type read: f64, i64 or bool")?;
                match Type::from_spelling(&name.text) {
                    Some(t @ (Type::F64 | Type::I64 | Type::Bool)) => Imm::Type(t),
                    _ => {
                        let found = format!("`{}`", name.text);
                        return Err(err(name.pos, K::UnexpectedToken { expected: "f64, i64 or bool".into(), found }));
                    }
                }
            }
            Shape::Extract | Shape::Insert => {
                let mut args = vec![self.value()?];
                self.expect(&TokenKind::Comma, "`,` and a lane number")?;
                let lane = self.lane()?;
                while self.eat(&TokenKind::Comma) {
                    args.push(self.value()?);
                }
                return Ok((args, ImmAst::Final(Imm::Lane(lane))));
            }
            Shape::Call => {
                let callee = self.global("the callee, as in `call @f(a, b)`")?;
                let args = self.paren_list(Self::value)?;
                return Ok((args, ImmAst::Callee(callee)));
            }
            Shape::Table => {
                let table = self.global("the table's name, as in `t = table @y`")?;
                return Ok((vec![], ImmAst::Table(table)));
            }
            _ => Imm::None,
        };
        Ok((self.values_to_line_end()?, ImmAst::Final(imm)))
    }

    /// A float literal: a number, `0x` and 16 hex digits (the exact bits), or `[-]inf` / `[-]NaN`.
    fn float(&mut self) -> Result<f64, ParseError> {
        let pos = self.peek().pos;
        let negative = self.eat(&TokenKind::Minus);
        let text = match &self.peek().kind {
            TokenKind::Number(text) if !negative => text.clone(),
            TokenKind::Ident(word) => format!("{}{word}", if negative { "-" } else { "" }),
            _ => return Err(self.unexpected("a float literal (1.5, -0.0, 1e-7, inf, -inf, NaN)")),
        };
        self.advance();
        let value = match text.strip_prefix("0x") {
            Some(hex) if hex.len() == 16 => u64::from_str_radix(hex, 16).ok().map(f64::from_bits),
            Some(_) => None,
            // Only the literal words Rust prints are accepted, not every spelling `parse` takes.
            None if text.trim_start_matches('-').starts_with(|c: char| c.is_ascii_alphabetic()) => {
                matches!(text.as_str(), "inf" | "-inf" | "NaN" | "-NaN").then(|| text.parse().ok()).flatten()
            }
            None => text.parse().ok(),
        };
        value.ok_or_else(|| err(pos, K::BadNumber(text)))
    }

    /// A number token's text and position.
    fn number(&mut self, expected: &str) -> Result<(String, Pos), ParseError> {
        let token = self.peek();
        let TokenKind::Number(text) = &token.kind else {
            return Err(self.unexpected(expected));
        };
        let found = (text.clone(), token.pos);
        self.advance();
        Ok(found)
    }

    /// `grad forward|reverse @f wrt p {, p}`, after an extern's `=`.
    fn derivative(&mut self) -> Result<DerivativeOf, ParseError> {
        let kind = self.name("`grad`, as in `= grad reverse @f wrt 0, 1`")?;
        if kind.text != "grad" {
            return Err(err(
                kind.pos,
                K::UnexpectedToken { expected: "`grad`".into(), found: format!("`{}`", kind.text) },
            ));
        }
        let mode = self.name("`forward` or `reverse`")?;
        let mode = DiffMode::from_spelling(&mode.text).ok_or_else(|| err(mode.pos, K::UnknownDiffMode(mode.text)))?;
        let of = self.global("the differentiated function, as in `@f`")?;
        let wrt = self.name("`wrt` and the differentiated parameters' positions")?;
        if wrt.text != "wrt" {
            return Err(err(
                wrt.pos,
                K::UnexpectedToken { expected: "`wrt`".into(), found: format!("`{}`", wrt.text) },
            ));
        }
        let wrt = self.comma_list(|p| {
            let (text, pos) = p.number("a parameter position (0 for the first)")?;
            text.parse::<usize>().map_err(|_| err(pos, K::BadNumber(text)))
        })?;
        Ok(DerivativeOf { of: of.text, mode, wrt })
    }

    fn integer(&mut self) -> Result<i64, ParseError> {
        let (text, pos) = self.number("an integer literal")?;
        text.parse().map_err(|_| err(pos, K::BadNumber(text)))
    }

    fn boolean(&mut self) -> Result<bool, ParseError> {
        let value = match &self.peek().kind {
            TokenKind::Ident(word) if word == "true" => true,
            TokenKind::Ident(word) if word == "false" => false,
            _ => return Err(self.unexpected("`true` or `false`")),
        };
        self.advance();
        Ok(value)
    }

    fn lane(&mut self) -> Result<u8, ParseError> {
        let (text, pos) = self.number("a lane number")?;
        text.parse().map_err(|_| err(pos, K::BadLane(text)))
    }

    fn terminator(&mut self, word: &str) -> Result<TermAst, ParseError> {
        Ok(match word {
            "jump" => TermAst::Jump(self.destination()?),
            "br" => {
                let cond = self.value()?;
                self.expect(&TokenKind::Comma, "`,` and the block taken when the condition holds")?;
                let then_dest = self.destination()?;
                self.expect(&TokenKind::Comma, "`,` and the block taken when the condition fails")?;
                TermAst::Branch(cond, then_dest, self.destination()?)
            }
            _ => TermAst::Return(self.values_to_line_end()?),
        })
    }

    /// `label[(args)]`
    fn destination(&mut self) -> Result<DestAst, ParseError> {
        let label = self.name("a block label")?;
        let args = if self.peek().kind == TokenKind::LParen { self.paren_list(Self::value)? } else { vec![] };
        Ok(DestAst { label, args })
    }
}

// ---- Name resolution and result typing ----

/// What a global name (`@name`) stands for: a callee with its result types, or a table.
enum Global {
    Callee(Callee, Vec<Type>),
    Table(TableId),
}

/// The module's global names: functions, externs and tables share one namespace.
type Globals = HashMap<String, Global>;

fn resolve(items: Vec<Item>) -> Result<(Module, SourceMap), ParseError> {
    let mut module = Module::new();
    let mut spans = SourceMap::default();
    let mut globals = Globals::default();
    let mut bodies = vec![];
    for item in items {
        let (name, global) = match item {
            Item::Extern { pos, name, params, returns, derivative } => {
                let id = ExternId(module.externs.len() as u32);
                module.externs.push(ExternDecl {
                    name: name.text.clone(),
                    params,
                    returns: returns.clone(),
                    derivative,
                });
                spans.externs.push(pos);
                (name, Global::Callee(Callee::Extern(id), returns))
            }
            Item::Table { pos, name, data } => {
                let id = module.push_table(Table::new(name.text.clone(), data));
                spans.tables.push(pos);
                (name, Global::Table(id))
            }
            Item::Func(func) => {
                let signature = (Name { text: func.name.text.clone(), pos: func.name.pos }, func.returns.clone());
                bodies.push(func);
                (signature.0, Global::Callee(Callee::Func(FuncId(bodies.len() as u32 - 1)), signature.1))
            }
        };
        if globals.insert(name.text.clone(), global).is_some() {
            return Err(err(name.pos, K::DuplicateFunction(name.text)));
        }
    }
    for body in bodies {
        let (func, func_spans) = resolve_function(body, &globals)?;
        module.functions.push(func);
        spans.funcs.push(func_spans);
    }
    module.canonicalize();
    Ok((module, spans))
}

/// Definitions of one function: values and labels by name.
struct Scope {
    values: HashMap<String, Value>,
    blocks: HashMap<String, Block>,
}

impl Scope {
    fn define(&mut self, func: &mut Function, name: &Name, ty: Type) -> Result<Value, ParseError> {
        if self.values.contains_key(&name.text) {
            return Err(err(name.pos, K::DuplicateValue(name.text.clone())));
        }
        let stored = (!is_anonymous_value_name(&name.text)).then(|| name.text.clone());
        func.values.push(ValueData { ty, name: stored });
        let value = Value(func.values.len() as u32 - 1);
        self.values.insert(name.text.clone(), value);
        Ok(value)
    }

    fn value(&self, name: &Name) -> Result<Value, ParseError> {
        self.values.get(&name.text).copied().ok_or_else(|| err(name.pos, K::UnknownValue(name.text.clone())))
    }

    fn values(&self, names: &[Name]) -> Result<Vec<Value>, ParseError> {
        names.iter().map(|n| self.value(n)).collect()
    }

    fn dest(&self, dest: &DestAst) -> Result<BlockCall, ParseError> {
        let label = &dest.label;
        let block = self.blocks.get(&label.text).copied();
        let block = block.ok_or_else(|| err(label.pos, K::UnknownBlock(label.text.clone())))?;
        Ok(BlockCall { block, args: (self.values(&dest.args)?).into() })
    }
}

fn resolve_function(ast: FuncAst, globals: &Globals) -> Result<(Function, FuncSpans), ParseError> {
    let mut func = Function::new(ast.name.text, ast.returns);
    let mut scope = Scope { values: HashMap::default(), blocks: HashMap::default() };
    let mut spans = FuncSpans { func: ast.pos, ..FuncSpans::default() };
    for (name, ty) in &ast.params {
        let value = scope.define(&mut func, name, *ty)?;
        func.params.push(value);
    }
    // Definitions first: labels, block parameters, results (in textual order, so the numbering is
    // already canonical). Results of calls get the callee's types now; the others are inferred.
    let mut untyped: Vec<(usize, usize)> = vec![];
    for (b, block) in ast.blocks.iter().enumerate() {
        if scope.blocks.insert(block.label.text.clone(), Block(b as u32)).is_some() {
            return Err(err(block.label.pos, K::DuplicateBlock(block.label.text.clone())));
        }
        let mut data = BlockData { name: block.label.text.clone(), params: vec![], insts: vec![], term: None };
        for (name, ty) in &block.params {
            data.params.push(scope.define(&mut func, name, *ty)?);
        }
        for (i, inst) in block.insts.iter().enumerate() {
            let (imm, types) = match &inst.imm {
                ImmAst::Callee(name) => {
                    let Some(Global::Callee(callee, returns)) = globals.get(&name.text) else {
                        return Err(err(name.pos, K::UnknownCallee(name.text.clone())));
                    };
                    if returns.len() != inst.results.len() {
                        let op = format!("call @{}", name.text);
                        let kind = K::WrongResultCount { op, expected: returns.len(), found: inst.results.len() };
                        return Err(err(inst.pos, kind));
                    }
                    (Imm::Callee(*callee), returns.clone())
                }
                ImmAst::Table(name) => {
                    let Some(&Global::Table(id)) = globals.get(&name.text) else {
                        return Err(err(name.pos, K::UnknownTable(name.text.clone())));
                    };
                    (Imm::Table(id), vec![Type::Slice; inst.results.len()])
                }
                ImmAst::Final(imm) => {
                    untyped.push((b, i));
                    (*imm, vec![Type::F64; inst.results.len()])
                }
            };
            let results = inst.results.iter().zip(types).map(|(n, ty)| scope.define(&mut func, n, ty));
            let results = results.collect::<Result<Vec<_>, _>>()?;
            data.insts.push(InstData { op: inst.op, args: smallvec::smallvec![], imm, results: results.into() });
        }
        func.blocks.push(data);
        spans.blocks.push(block.label.pos);
        spans.insts.push(block.insts.iter().map(|i| i.pos).collect());
        spans.terms.push(block.term.as_ref().map(|(pos, _)| *pos));
    }
    // Then uses.
    for (block, data) in ast.blocks.iter().zip(func.blocks.iter_mut()) {
        for (inst, inst_data) in block.insts.iter().zip(data.insts.iter_mut()) {
            inst_data.args = (scope.values(&inst.args)?).into();
        }
        data.term = match &block.term {
            None => None,
            Some((_, TermAst::Jump(dest))) => Some(Terminator::Jump(scope.dest(dest)?)),
            Some((_, TermAst::Branch(cond, then_dest, else_dest))) => Some(Terminator::Branch {
                cond: scope.value(cond)?,
                then_dest: scope.dest(then_dest)?,
                else_dest: scope.dest(else_dest)?,
            }),
            Some((_, TermAst::Return(values))) => Some(Terminator::Return(scope.values(values)?)),
        };
    }
    infer_result_types(&mut func, &untyped);
    Ok((func, spans))
}

/// Give the results of the non-call instructions `insts` (block, index) their types.
///
/// An operand may be defined on a later line, so instructions are typed in dependency order: each
/// one as soon as all its operands have types. Operands that can never get a type first (only in
/// cyclic, hence unverifiable, IR) are settled by typing the earliest waiting instruction as `f64`.
/// Ill-typed instructions also get `f64` results; the verifier reports them.
fn infer_result_types(func: &mut Function, insts: &[(usize, usize)]) {
    let mut typed = vec![true; func.values.len()];
    for &(b, i) in insts {
        for r in &func.blocks[b].insts[i].results {
            typed[r.index()] = false;
        }
    }
    // For each value without a type: the instructions waiting for it, once per use.
    let mut waiters: Vec<Vec<usize>> = vec![vec![]; func.values.len()];
    let mut missing = vec![0usize; insts.len()];
    let mut ready = VecDeque::new();
    for (k, &(b, i)) in insts.iter().enumerate() {
        for a in &func.blocks[b].insts[i].args {
            if !typed[a.index()] {
                waiters[a.index()].push(k);
                missing[k] += 1;
            }
        }
        if missing[k] == 0 {
            ready.push_back(k);
        }
    }
    let mut done = vec![false; insts.len()];
    let mut next_stuck = 0;
    loop {
        let k = match ready.pop_front() {
            Some(k) => k,
            None => {
                while next_stuck < insts.len() && done[next_stuck] {
                    next_stuck += 1;
                }
                if next_stuck == insts.len() {
                    return;
                }
                next_stuck
            }
        };
        if done[k] {
            continue;
        }
        done[k] = true;
        let (b, i) = insts[k];
        let inst = &func.blocks[b].insts[i];
        let arg_types: Option<Vec<Type>> =
            inst.args.iter().map(|a| typed[a.index()].then(|| func.values[a.index()].ty)).collect();
        let ty = match arg_types.and_then(|types| inst.op.result_type(&types, &inst.imm)) {
            Some(Some(ty)) => ty,
            _ => Type::F64,
        };
        let results = inst.results.clone();
        for r in results {
            func.values[r.index()].ty = ty;
            typed[r.index()] = true;
            for &w in &waiters[r.index()] {
                missing[w] -= 1;
                if missing[w] == 0 {
                    ready.push_back(w);
                }
            }
        }
    }
}
