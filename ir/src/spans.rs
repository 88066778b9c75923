//! Source positions of parsed text, kept beside (not inside) a [`Module`](crate::Module) so that
//! modules built in Rust and modules parsed from text compare equal.

use std::fmt;

/// A 1-based line and column in IR text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Pos {
    /// 1-based line.
    pub line: u32,
    /// 1-based column (in characters).
    pub col: u32,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

/// Positions of one function's parts, indexed like the function itself.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FuncSpans {
    /// Where `func @name` starts.
    pub func: Pos,
    /// Per block: where its label starts.
    pub blocks: Vec<Pos>,
    /// Per block, per instruction: where the instruction starts.
    pub insts: Vec<Vec<Pos>>,
    /// Per block: where its terminator starts (`None` if it has none).
    pub terms: Vec<Option<Pos>>,
}

/// Positions of a parsed module: per extern declaration, per table and per function.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SourceMap {
    /// Per extern: where `extern @name` starts.
    pub externs: Vec<Pos>,
    /// Per table: where `const @name` starts.
    pub tables: Vec<Pos>,
    /// Per function.
    pub funcs: Vec<FuncSpans>,
}

impl SourceMap {
    /// The position of instruction `inst` of block `block` of function `func`, if known.
    pub fn inst(&self, func: usize, block: usize, inst: usize) -> Option<Pos> {
        self.funcs.get(func)?.insts.get(block)?.get(inst).copied()
    }
    /// The position of the terminator of a block, if known.
    pub fn term(&self, func: usize, block: usize) -> Option<Pos> {
        self.funcs.get(func)?.terms.get(block).copied().flatten()
    }
    /// The position of a block label, if known.
    pub fn block(&self, func: usize, block: usize) -> Option<Pos> {
        self.funcs.get(func)?.blocks.get(block).copied()
    }
    /// The position of a function header, if known.
    pub fn func(&self, func: usize) -> Option<Pos> {
        self.funcs.get(func).map(|f| f.func)
    }
    /// The position of a fault's `site` in `module` (the module these spans describe): its
    /// instruction, or its block's terminator.
    ///
    /// ```
    /// use jitdiff_ir::{Pos, Site, parse_module_with_spans};
    /// let (m, spans) = parse_module_with_spans("func @f(x: slice) -> f64 {\nentry:\n    i = iconst 5\n    v = load x, i\n    ret v\n}\n").unwrap();
    /// let site = Site { func: "f".into(), block: "entry".into(), inst: 1 };
    /// assert_eq!(spans.site(&m, &site), Some(Pos { line: 4, col: 5 }));
    /// ```
    pub fn site(&self, module: &crate::Module, site: &crate::Site) -> Option<Pos> {
        let func_id = module.func_id(&site.func)?;
        let block = module.func(func_id).block_by_name(&site.block)?;
        self.inst(func_id.index(), block.index(), site.inst).or_else(|| self.term(func_id.index(), block.index()))
    }
}
