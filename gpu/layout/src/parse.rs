//! CuTe notation input: int tuples, coordinates (with `_`), layouts `SHAPE:STRIDE`, tilers and
//! swizzles `Sw<B,M,S>`. Errors say where (column) and what was expected.

use alloc::vec::Vec;
use core::fmt;
use core::str::FromStr;

use crate::int_tuple::{Coord, IntTuple};
use crate::ops::Tiler;
use crate::{Layout, Swizzle};

const MAX_NESTING: usize = 64;

/// A malformed input: `column` is 1-based (in characters of the parsed text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub column: usize,
    pub expected: &'static str,
    pub found: Option<char>,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at column {}: expected {}, found ", self.column, self.expected)?;
        match self.found {
            Some(c) => write!(f, "'{c}'"),
            None => f.write_str("end of input"),
        }
    }
}

impl core::error::Error for ParseError {}

/// A tiler element while its kind is still open: `(2,4)` is a shape tuple until a `:` says so.
enum Node {
    Int(i64),
    Tuple(Vec<Node>),
    Tiler(Tiler),
}

impl Node {
    fn into_int_tuple(self) -> Option<IntTuple> {
        match self {
            Self::Int(v) => Some(IntTuple::Int(v)),
            Self::Tuple(items) => {
                items.into_iter().map(Node::into_int_tuple).collect::<Option<Vec<_>>>().map(IntTuple::Tuple)
            }
            Self::Tiler(_) => None,
        }
    }

    fn into_tiler(self) -> Tiler {
        match self {
            Self::Int(n) => Tiler::from(n),
            Self::Tuple(items) => Tiler::Modes(items.into_iter().map(Node::into_tiler).collect()),
            Self::Tiler(t) => t,
        }
    }
}

struct Parser<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Self {
        Self { text, pos: 0 }
    }

    fn skip_ws(&mut self) {
        while let Some(c) = self.rest().chars().next().filter(|c| c.is_whitespace()) {
            self.pos += c.len_utf8();
        }
    }

    fn rest(&self) -> &'a str {
        &self.text[self.pos..]
    }

    fn peek(&mut self) -> Option<char> {
        self.skip_ws();
        self.rest().chars().next()
    }

    fn error(&mut self, expected: &'static str) -> ParseError {
        let found = self.peek();
        ParseError { column: self.text[..self.pos].chars().count() + 1, expected, found }
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: char, expected: &'static str) -> Result<(), ParseError> {
        if self.eat(c) { Ok(()) } else { Err(self.error(expected)) }
    }

    fn finish(&mut self) -> Result<(), ParseError> {
        if self.peek().is_some() { Err(self.error("end of input")) } else { Ok(()) }
    }

    fn number(&mut self) -> Result<i64, ParseError> {
        self.skip_ws();
        let start = self.pos;
        let bytes = self.rest().as_bytes();
        let mut len = usize::from(bytes.first() == Some(&b'-'));
        let digits_from = len;
        while bytes.get(len).is_some_and(u8::is_ascii_digit) {
            len += 1;
        }
        if len == digits_from {
            return Err(self.error("a number"));
        }
        match self.text[start..start + len].parse::<i64>() {
            Ok(v) => {
                self.pos += len;
                Ok(v)
            }
            Err(_) => Err(self.error("a number that fits in 64 bits")),
        }
    }

    /// A number, or the error `expected` when the input does not start one.
    fn number_or<T>(&mut self, wrap: impl FnOnce(i64) -> T, expected: &'static str) -> Result<T, ParseError> {
        match self.peek() {
            Some(c) if c == '-' || c.is_ascii_digit() => self.number().map(wrap),
            _ => Err(self.error(expected)),
        }
    }

    /// `(` items `,` ... `)`, allowing Python's `(4,)`.
    fn list<T>(
        &mut self,
        close: char,
        depth: usize,
        mut item: impl FnMut(&mut Self, usize) -> Result<T, ParseError>,
    ) -> Result<Vec<T>, ParseError> {
        if depth >= MAX_NESTING {
            return Err(self.error("nesting at most 64 deep"));
        }
        let mut items = Vec::new();
        loop {
            if !items.is_empty() && self.eat(close) {
                return Ok(items);
            }
            items.push(item(self, depth + 1)?);
            if self.eat(',') {
                continue;
            }
            if self.eat(close) {
                return Ok(items);
            }
            return Err(self.error(if close == ')' { "',' or ')'" } else { "',' or ']'" }));
        }
    }

    fn int_tuple(&mut self, depth: usize) -> Result<IntTuple, ParseError> {
        if self.eat('(') {
            Ok(IntTuple::Tuple(self.list(')', depth, Self::int_tuple)?))
        } else {
            self.number_or(IntTuple::Int, "a number or '('")
        }
    }

    fn coord(&mut self, depth: usize) -> Result<Coord, ParseError> {
        if self.eat('_') {
            Ok(Coord::Wildcard)
        } else if self.eat('(') {
            Ok(Coord::Tuple(self.list(')', depth, Self::coord)?))
        } else {
            self.number_or(Coord::Int, "a number, '_' or '('")
        }
    }

    fn stride_for(&mut self, shape: IntTuple, shape_pos: usize) -> Result<Layout, ParseError> {
        self.skip_ws();
        let stride_pos = self.pos;
        let stride = self.int_tuple(0)?;
        if shape.flatten().into_iter().any(|s| s < 1) {
            self.pos = shape_pos;
            return Err(self.error("a shape with positive entries"));
        }
        Layout::new(shape, stride).map_err(|_| {
            self.pos = stride_pos;
            self.error("a stride congruent to the shape")
        })
    }

    fn layout(&mut self) -> Result<Layout, ParseError> {
        self.skip_ws();
        let shape_pos = self.pos;
        let shape = self.int_tuple(0)?;
        self.expect(':', "':' between shape and stride")?;
        self.stride_for(shape, shape_pos)
    }

    fn node(&mut self, depth: usize) -> Result<Node, ParseError> {
        self.skip_ws();
        let start = self.pos;
        if self.eat('_') {
            return Ok(Node::Tiler(Tiler::Skip));
        }
        if self.eat('[') {
            let items = self.list(']', depth, Self::node)?;
            return Ok(Node::Tiler(Tiler::Modes(items.into_iter().map(Node::into_tiler).collect())));
        }
        let node = if self.eat('(') {
            Node::Tuple(self.list(')', depth, Self::node)?)
        } else {
            let n = self.number_or(|n| n, "a number, '(', '[' or '_'")?;
            // An integer is the tile `n:1` (or a shape entry, once a ':' follows): positive.
            if n < 1 {
                self.pos = start;
                return Err(self.error("a positive tile size"));
            }
            Node::Int(n)
        };
        if self.peek() != Some(':') {
            return Ok(node);
        }
        let at_colon = self.pos;
        let Some(shape) = node.into_int_tuple() else {
            return Err(self.error("',' or ')' (a tuple of layouts has no stride)"));
        };
        self.pos = at_colon + 1;
        Ok(Node::Tiler(Tiler::Layout(self.stride_for(shape, start)?)))
    }
}

fn parse_all<T>(text: &str, f: impl FnOnce(&mut Parser<'_>) -> Result<T, ParseError>) -> Result<T, ParseError> {
    let mut p = Parser::new(text);
    let v = f(&mut p)?;
    p.finish()?;
    Ok(v)
}

impl FromStr for IntTuple {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_all(s, |p| p.int_tuple(0))
    }
}

impl FromStr for Coord {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_all(s, |p| p.coord(0))
    }
}

impl FromStr for Layout {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_all(s, |p| p.layout())
    }
}

/// A layout `S:D`, a shape (each integer `n` read as `n:1`), `_`, or `[t0,t1,...]` by mode;
/// a parenthesised list may also hold layouts, e.g. `(4:1,_,(2,2):(1,8))`.
impl FromStr for Tiler {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_all(s, |p| p.node(0)).map(Node::into_tiler)
    }
}

/// `Sw<B,M,S>`.
impl FromStr for Swizzle {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_all(s, |p| {
            for c in ['S', 'w', '<'] {
                p.expect(c, "'Sw<B,M,S>'")?;
            }
            let b = p.number()?;
            p.expect(',', "','")?;
            let m = p.number()?;
            p.expect(',', "','")?;
            let s = p.number()?;
            p.expect('>', "'>'")?;
            match (u32::try_from(b), u32::try_from(m), i32::try_from(s)) {
                (Ok(b), Ok(m), Ok(s)) => Swizzle::try_new(b, m, s).ok_or_else(|| {
                    p.pos = 0;
                    p.error("Sw<B,M,S> with |S| >= B and B+M+|S| <= 63")
                }),
                _ => {
                    p.pos = 0;
                    Err(p.error("Sw<B,M,S> with small non-negative B and M"))
                }
            }
        })
    }
}
