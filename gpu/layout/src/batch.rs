//! The `oxtile layout --batch` contract (shared/layouts/README.md): one case `OP ARG [ARG...]`
//! per line, one result line per case in CuTe notation, `error: MESSAGE` where undefined.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt::Display;
use core::str::FromStr;

use crate::int_tuple::{Coord, IntTuple};
use crate::ops::{self, Tiler};
use crate::{Layout, LayoutError, Swizzle};

/// Every operation [`run_batch_line`] accepts, with its arguments.
pub const OPERATIONS: &[&str] = &[
    "size L",
    "cosize L",
    "rank L",
    "depth L",
    "crd2idx L COORD",
    "idx2crd L INDEX",
    "slice L COORD_WITH_",
    "coalesce L [PROFILE]",
    "filter L [PROFILE]",
    "composition A TILER",
    "complement A [COTARGET]",
    "right_inverse L",
    "left_inverse L",
    "logical_divide A TILER",
    "zipped_divide A TILER",
    "tiled_divide A TILER",
    "flat_divide A TILER",
    "logical_product A TILER",
    "zipped_product A TILER",
    "tiled_product A TILER",
    "flat_product A TILER",
    "blocked_product A B",
    "raked_product A B",
    "max_common_vector A B",
    "max_common_layout A B",
    "upcast L N",
    "downcast L N",
    "recast L OLD_BITS NEW_BITS",
    "swizzle Sw<B,M,S> OFFSET",
];

enum Failure {
    Usage(String),
    Algebra(LayoutError),
}

impl From<LayoutError> for Failure {
    fn from(e: LayoutError) -> Self {
        Self::Algebra(e)
    }
}

struct Args<'a> {
    op: &'a str,
    items: Vec<&'a str>,
}

impl<'a> Args<'a> {
    fn count(&self, min: usize, max: usize) -> Result<(), Failure> {
        let n = self.items.len();
        if n < min || n > max {
            let want = if min == max { format!("{min}") } else { format!("{min} to {max}") };
            return Err(Failure::Usage(format!("'{}' takes {want} argument(s), got {n}", self.op)));
        }
        Ok(())
    }

    fn get<T: FromStr>(&self, i: usize) -> Result<T, Failure>
    where
        T::Err: Display,
    {
        let text = self.items[i];
        text.parse::<T>().map_err(|e| Failure::Usage(format!("argument {}: {e}", i + 1)))
    }

    fn opt<T: FromStr>(&self, i: usize) -> Result<Option<T>, Failure>
    where
        T::Err: Display,
    {
        if i < self.items.len() { self.get(i).map(Some) } else { Ok(None) }
    }
}

fn run(args: &Args<'_>) -> Result<String, Failure> {
    let out = |v: &dyn Display| Ok(v.to_string());
    match args.op {
        "size" | "cosize" | "rank" | "depth" | "right_inverse" | "left_inverse" => {
            args.count(1, 1)?;
            let l: Layout = args.get(0)?;
            match args.op {
                "size" => out(&l.size()?),
                "cosize" => out(&l.cosize()?),
                "rank" => out(&l.rank()),
                "depth" => out(&l.depth()),
                "right_inverse" => out(&ops::right_inverse(&l)?),
                _ => out(&ops::left_inverse(&l)?),
            }
        }
        "crd2idx" => {
            args.count(2, 2)?;
            let l: Layout = args.get(0)?;
            out(&l.crd2idx(&args.get::<IntTuple>(1)?)?)
        }
        "idx2crd" => {
            args.count(2, 2)?;
            let l: Layout = args.get(0)?;
            out(&l.idx2crd(args.get(1)?)?)
        }
        "slice" => {
            args.count(2, 2)?;
            let l: Layout = args.get(0)?;
            let c: Coord = args.get(1)?;
            match c.to_int_tuple() {
                Some(full) => out(&l.crd2idx(&full)?),
                None => out(&l.slice(&c)?),
            }
        }
        "coalesce" | "filter" => {
            args.count(1, 2)?;
            let l: Layout = args.get(0)?;
            let profile: Option<IntTuple> = args.opt(1)?;
            let r = match (args.op, profile) {
                ("coalesce", None) => ops::coalesce(&l)?,
                ("coalesce", Some(p)) => ops::coalesce_by(&l, &p)?,
                (_, None) => ops::filter(&l)?,
                (_, Some(p)) => ops::filter_by(&l, &p)?,
            };
            out(&r)
        }
        "complement" => {
            args.count(1, 2)?;
            let l: Layout = args.get(0)?;
            let cotarget: i64 = args.opt(1)?.unwrap_or(1);
            out(&ops::complement(&l, cotarget)?)
        }
        "composition" | "logical_divide" | "zipped_divide" | "tiled_divide" | "flat_divide" | "logical_product"
        | "zipped_product" | "tiled_product" | "flat_product" => {
            args.count(2, 2)?;
            let a: Layout = args.get(0)?;
            let t: Tiler = args.get(1)?;
            let f = match args.op {
                "composition" => ops::composition_with,
                "logical_divide" => ops::logical_divide,
                "zipped_divide" => ops::zipped_divide,
                "tiled_divide" => ops::tiled_divide,
                "flat_divide" => ops::flat_divide,
                "logical_product" => ops::logical_product,
                "zipped_product" => ops::zipped_product,
                "tiled_product" => ops::tiled_product,
                _ => ops::flat_product,
            };
            out(&f(&a, &t)?)
        }
        "blocked_product" | "raked_product" | "max_common_vector" | "max_common_layout" => {
            args.count(2, 2)?;
            let a: Layout = args.get(0)?;
            let b: Layout = args.get(1)?;
            match args.op {
                "blocked_product" => out(&ops::blocked_product(&a, &b)?),
                "raked_product" => out(&ops::raked_product(&a, &b)?),
                "max_common_vector" => out(&ops::max_common_vector(&a, &b)?),
                _ => out(&ops::max_common_layout(&a, &b)?),
            }
        }
        "upcast" | "downcast" => {
            args.count(2, 2)?;
            let l: Layout = args.get(0)?;
            let n: i64 = args.get(1)?;
            out(&if args.op == "upcast" { ops::upcast(&l, n)? } else { ops::downcast(&l, n)? })
        }
        "recast" => {
            args.count(3, 3)?;
            let l: Layout = args.get(0)?;
            out(&ops::recast_layout(&l, args.get(1)?, args.get(2)?)?)
        }
        "swizzle" => {
            args.count(2, 2)?;
            let s: Swizzle = args.get(0)?;
            out(&s.apply(args.get(1)?))
        }
        op => Err(Failure::Usage(format!("unknown operation '{op}'"))),
    }
}

/// Runs one batch line: `None` for a blank or `#` comment line, otherwise the result (or
/// `error: ...`). A trailing ` => EXPECTED` is ignored. Total: any text gives one of these, with
/// no panic, and in time linear in the line's length (up to sorting and [`ops::left_inverse`]'s
/// bounded check).
pub fn run_batch_line(line: &str) -> Option<String> {
    let case = line.split("=>").next().unwrap_or("").trim();
    if case.is_empty() || case.starts_with('#') {
        return None;
    }
    let mut words = case.split_whitespace();
    let op = words.next()?;
    let args = Args { op, items: words.collect() };
    Some(match run(&args) {
        Ok(s) => s,
        Err(Failure::Usage(msg)) => format!("error: {msg}"),
        Err(Failure::Algebra(e)) => format!("error: {e}"),
    })
}

/// Runs every line of `input`, one output line per case.
pub fn run_batch(input: &str) -> String {
    let mut out = String::new();
    for line in input.lines().filter_map(run_batch_line) {
        out.push_str(&line);
        out.push('\n');
    }
    out
}
