//! Splits IR text into tokens with their line:column. Newlines are tokens because they end
//! statements; spaces, tabs, carriage returns and comments (`;` or `#` to end of line) are skipped.

use super::ParseErrorKind;
use crate::spans::Pos;

/// One kind of token.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum TokenKind {
    /// A name, keyword, opcode, type or condition: `[A-Za-z_][A-Za-z0-9_]*`.
    Ident(String),
    /// `@name`: a function or extern (the text after `@`).
    Global(String),
    /// A numeric literal, kept as text so the parser can read it as the type it wants. Includes a
    /// leading `-` when one is glued to a digit, and any letters glued after it (`0x7ff8...`, or
    /// a typo the parser then reports as a bad number).
    Number(String),
    Comma,
    Colon,
    Equals,
    LParen,
    RParen,
    LBrace,
    RBrace,
    LBracket,
    RBracket,
    Arrow,
    Dot,
    /// A `-` not followed by a digit (as in `-inf`).
    Minus,
    Newline,
    Eof,
    /// The text cannot be tokenized past this point. Always the last token: the parser can never
    /// consume it, so it reports this error when its first rule reaches here.
    Error(ParseErrorKind),
}

impl TokenKind {
    /// How an error message names this token.
    pub(super) fn describe(&self) -> String {
        match self {
            TokenKind::Ident(s) => format!("`{s}`"),
            TokenKind::Global(s) => format!("`@{s}`"),
            TokenKind::Number(s) => format!("number `{s}`"),
            TokenKind::Comma => "`,`".into(),
            TokenKind::Colon => "`:`".into(),
            TokenKind::Equals => "`=`".into(),
            TokenKind::LParen => "`(`".into(),
            TokenKind::RParen => "`)`".into(),
            TokenKind::LBrace => "`{`".into(),
            TokenKind::RBrace => "`}`".into(),
            TokenKind::LBracket => "`[`".into(),
            TokenKind::RBracket => "`]`".into(),
            TokenKind::Arrow => "`->`".into(),
            TokenKind::Dot => "`.`".into(),
            TokenKind::Minus => "`-`".into(),
            TokenKind::Newline => "end of line".into(),
            TokenKind::Eof => "end of input".into(),
            TokenKind::Error(kind) => kind.to_string(),
        }
    }
}

/// A token and where it starts.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Token {
    pub kind: TokenKind,
    pub pos: Pos,
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Tokenize `text`. The result is never empty and ends with [`TokenKind::Eof`], or with
/// [`TokenKind::Error`] at the first character that starts no token.
pub(super) fn tokenize(text: &str) -> Vec<Token> {
    let mut lexer = Lexer { chars: text.chars().collect(), at: 0, line: 1, col: 1 };
    let mut tokens = Vec::new();
    loop {
        let token = lexer.next_token();
        let last = matches!(token.kind, TokenKind::Eof | TokenKind::Error(_));
        tokens.push(token);
        if last {
            return tokens;
        }
    }
}

struct Lexer {
    chars: Vec<char>,
    at: usize,
    line: u32,
    col: u32,
}

impl Lexer {
    fn peek_at(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.at + ahead).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek_at(0)?;
        self.at += 1;
        if c == '\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(c)
    }

    fn take_while(&mut self, out: &mut String, keep: impl Fn(char) -> bool) {
        while let Some(c) = self.peek_at(0).filter(|&c| keep(c)) {
            out.push(c);
            self.bump();
        }
    }

    fn next_token(&mut self) -> Token {
        loop {
            match self.peek_at(0) {
                Some(' ' | '\t' | '\r') => {
                    self.bump();
                }
                Some(';' | '#') => {
                    while self.peek_at(0).is_some_and(|c| c != '\n') {
                        self.bump();
                    }
                }
                _ => break,
            }
        }
        let pos = Pos { line: self.line, col: self.col };
        let token = |kind| Token { kind, pos };
        let Some(c) = self.peek_at(0) else {
            return token(TokenKind::Eof);
        };
        let single = match c {
            '\n' => Some(TokenKind::Newline),
            ',' => Some(TokenKind::Comma),
            ':' => Some(TokenKind::Colon),
            '=' => Some(TokenKind::Equals),
            '(' => Some(TokenKind::LParen),
            ')' => Some(TokenKind::RParen),
            '{' => Some(TokenKind::LBrace),
            '}' => Some(TokenKind::RBrace),
            '[' => Some(TokenKind::LBracket),
            ']' => Some(TokenKind::RBracket),
            '.' => Some(TokenKind::Dot),
            _ => None,
        };
        if let Some(kind) = single {
            self.bump();
            return token(kind);
        }
        match c {
            '-' if self.peek_at(1) == Some('>') => {
                self.bump();
                self.bump();
                token(TokenKind::Arrow)
            }
            '-' if self.peek_at(1).is_some_and(|d| d.is_ascii_digit()) => token(self.number()),
            '-' => {
                self.bump();
                token(TokenKind::Minus)
            }
            '@' => {
                self.bump();
                match self.peek_at(0) {
                    Some(c) if is_ident_start(c) => {
                        let mut name = String::new();
                        self.take_while(&mut name, is_ident_char);
                        token(TokenKind::Global(name))
                    }
                    found => token(TokenKind::Error(ParseErrorKind::UnexpectedToken {
                        expected: "a function name right after `@`".into(),
                        found: match found {
                            Some('\n') | None => "end of line".into(),
                            Some(c) => format!("{c:?}"),
                        },
                    })),
                }
            }
            c if c.is_ascii_digit() => token(self.number()),
            c if is_ident_start(c) => {
                let mut name = String::new();
                self.take_while(&mut name, is_ident_char);
                token(TokenKind::Ident(name))
            }
            other => token(TokenKind::Error(ParseErrorKind::UnexpectedChar(other))),
        }
    }

    /// `-?digits(.digits)?([eE][+-]?digits)?` followed by any glued letters and digits.
    fn number(&mut self) -> TokenKind {
        let mut text = String::new();
        if self.peek_at(0) == Some('-') {
            text.push('-');
            self.bump();
        }
        self.take_while(&mut text, |c| c.is_ascii_digit());
        if self.peek_at(0) == Some('.') && self.peek_at(1).is_some_and(|c| c.is_ascii_digit()) {
            text.push('.');
            self.bump();
            self.take_while(&mut text, |c| c.is_ascii_digit());
        }
        if matches!(self.peek_at(0), Some('e' | 'E')) {
            let sign = usize::from(matches!(self.peek_at(1), Some('+' | '-')));
            if self.peek_at(1 + sign).is_some_and(|c| c.is_ascii_digit()) {
                for _ in 0..=sign {
                    text.extend(self.bump());
                }
                self.take_while(&mut text, |c| c.is_ascii_digit());
            }
        }
        self.take_while(&mut text, is_ident_char);
        TokenKind::Number(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<TokenKind> {
        tokenize(text).into_iter().map(|t| t.kind).collect()
    }

    fn num(s: &str) -> TokenKind {
        TokenKind::Number(s.into())
    }

    #[test]
    fn numbers_keep_sign_fraction_exponent_and_hex() {
        use TokenKind::*;
        assert_eq!(
            kinds("1.5 -0.0 1e-7 2E+3 -3 0x7ff8000000000001 -inf"),
            [
                num("1.5"),
                num("-0.0"),
                num("1e-7"),
                num("2E+3"),
                num("-3"),
                num("0x7ff8000000000001"),
                Minus,
                Ident("inf".into()),
                Eof
            ]
        );
        // A dot not followed by a digit is not part of the number.
        assert_eq!(kinds("1.x"), [num("1"), Dot, Ident("x".into()), Eof]);
        // An `e` without exponent digits stays glued on, for the parser to reject.
        assert_eq!(kinds("1e"), [num("1e"), Eof]);
    }

    #[test]
    fn punctuation_globals_and_arrow() {
        use TokenKind::*;
        assert_eq!(
            kinds("func @f_1(x: slice) -> f64, i64 {\n}"),
            [
                Ident("func".into()),
                Global("f_1".into()),
                LParen,
                Ident("x".into()),
                Colon,
                Ident("slice".into()),
                RParen,
                Arrow,
                Ident("f64".into()),
                Comma,
                Ident("i64".into()),
                LBrace,
                Newline,
                RBrace,
                Eof
            ]
        );
        assert_eq!(
            kinds("splat.f64x4 a = b"),
            [Ident("splat".into()), Dot, Ident("f64x4".into()), Ident("a".into()), Equals, Ident("b".into()), Eof]
        );
    }

    #[test]
    fn comments_run_to_end_of_line_and_positions_count_characters() {
        let tokens = tokenize("; comment\n  x # another\n\tλ");
        let got: Vec<_> = tokens.iter().map(|t| (t.pos.line, t.pos.col)).collect();
        // Newline at 1:10, `x` at 2:3, Newline at 2:14, error at 3:2 (a tab is one column).
        assert_eq!(got, [(1, 10), (2, 3), (2, 14), (3, 2)]);
        assert_eq!(tokens.last().map(|t| &t.kind), Some(&TokenKind::Error(ParseErrorKind::UnexpectedChar('λ'))));
    }

    #[test]
    fn lexing_stops_at_the_first_bad_character() {
        let tokens = tokenize("a $ b");
        assert_eq!(tokens.len(), 2);
        assert_eq!(tokens[1].kind, TokenKind::Error(ParseErrorKind::UnexpectedChar('$')));
        assert_eq!(tokens[1].pos, Pos { line: 1, col: 3 });
        let at = tokenize("call @ f");
        assert!(matches!(&at[1].kind, TokenKind::Error(ParseErrorKind::UnexpectedToken { .. })));
        assert_eq!(at[1].pos, Pos { line: 1, col: 6 });
    }
}
