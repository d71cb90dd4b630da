//! Pictures of layouts: a text grid like CuTe's `print_layout`, an SVG of the same grid, and an
//! SVG of a thread/value layout (each cell coloured by thread, labelled `T{t}V{v}`) like CuTe's
//! `print_latex` of a TV layout.
//!
//! Every picture is bounded before anything is allocated: at most [`MAX_CELLS`] cells drawn and,
//! for a TV layout, at most [`MAX_CELLS`] (thread, value) pairs evaluated. Larger ones are an
//! [`LayoutError::InvalidArgument`] (or [`LayoutError::Overflow`] where a size does not even fit
//! in an `i64`).

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt::Write;

use crate::{Layout, LayoutError, StaticLayout};

/// The most cells a picture draws (and the most (thread, value) pairs a TV picture evaluates).
pub const MAX_CELLS: i64 = 1 << 16;

const TOO_MANY_CELLS: LayoutError = LayoutError::InvalidArgument("a picture has at most 65536 cells");
const TOO_MANY_PAIRS: LayoutError =
    LayoutError::InvalidArgument("a TV picture evaluates at most 65536 (thread, value) pairs");

/// Rows and columns of the grid picture: rank 1 is one row; otherwise mode 0 gives the rows and
/// the remaining modes, flattened, the columns. The layout's size is at most [`MAX_CELLS`].
pub fn grid_dims(layout: &Layout) -> Result<(i64, i64), LayoutError> {
    let size = layout.size()?;
    if size > MAX_CELLS {
        return Err(TOO_MANY_CELLS);
    }
    if layout.rank() == 1 {
        Ok((1, size))
    } else {
        let rows = match layout.mode(0) {
            Some(m) => m.size()?,
            None => 1,
        };
        Ok((rows, size / rows.max(1)))
    }
}

/// The offset at grid cell `(row, col)`: the 1-D index `row + col * rows` (below the size, which
/// [`grid_dims`] bounded).
fn grid_value(layout: &Layout, rows: i64, row: i64, col: i64) -> Result<i64, LayoutError> {
    layout.call(row + col * rows)
}

/// The 2-D grid of offsets, with row and column indices, like CuTe's `print_layout`.
pub fn render_grid(layout: &Layout) -> Result<String, LayoutError> {
    let (rows, cols) = grid_dims(layout)?;
    let values: Vec<i64> = (0..rows)
        .flat_map(|r| (0..cols).map(move |c| (r, c)))
        .map(|(r, c)| grid_value(layout, rows, r, c))
        .collect::<Result<_, _>>()?;
    let digits = |v: i64| format!("{v}").len();
    let width = values.iter().map(|&v| digits(v)).chain([digits(cols - 1)]).max().unwrap_or(1) + 1;
    let label = digits(rows - 1) + 1;
    let mut out = String::new();
    let _ = writeln!(out, "{layout}");
    let _ = write!(out, "{:label$}  ", "");
    for c in 0..cols {
        let _ = write!(out, " {c:>width$}");
    }
    out.push('\n');
    let rule = {
        let mut s = format!("{:label$}  +", "");
        for _ in 0..cols {
            s.push_str(&"-".repeat(width));
            s.push('+');
        }
        s
    };
    for r in 0..rows {
        let _ = writeln!(out, "{rule}");
        let _ = write!(out, "{r:>label$}  |");
        for c in 0..cols {
            let _ = write!(out, "{:>w$}|", values[(r * cols + c) as usize], w = width);
        }
        out.push('\n');
    }
    let _ = writeln!(out, "{rule}");
    Ok(out)
}

const CELL: i64 = 40;
const MARGIN: i64 = 30;

/// Fill colours by thread (or by offset), in CuTe's `print_latex` spirit.
const PALETTE: [&str; 8] = ["#AFAFFF", "#AFFFAF", "#FFFFAF", "#FFAFAF", "#D2D2FF", "#D2FFD2", "#FFFFD2", "#FFD2D2"];

fn svg_open(out: &mut String, rows: i64, cols: i64, cell_w: i64) {
    let (w, h) = (2 * MARGIN + cols * cell_w, 2 * MARGIN + rows * CELL);
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="monospace" font-size="12">"#
    );
    for c in 0..cols {
        let x = MARGIN + c * cell_w + cell_w / 2;
        let _ = writeln!(out, r#"<text x="{x}" y="{}" text-anchor="middle">{c}</text>"#, MARGIN - 8);
    }
    for r in 0..rows {
        let y = MARGIN + r * CELL + CELL / 2 + 4;
        let _ = writeln!(out, r#"<text x="{}" y="{y}" text-anchor="end">{r}</text>"#, MARGIN - 6);
    }
}

fn svg_cell(out: &mut String, row: i64, col: i64, cell_w: i64, fill: &str, text: &str) {
    let (x, y) = (MARGIN + col * cell_w, MARGIN + row * CELL);
    let _ = writeln!(
        out,
        r#"<rect x="{x}" y="{y}" width="{cell_w}" height="{CELL}" fill="{fill}" stroke="black"/><text x="{}" y="{}" text-anchor="middle">{text}</text>"#,
        x + cell_w / 2,
        y + CELL / 2 + 4
    );
}

/// An SVG of [`render_grid`]'s grid, each cell showing its offset.
pub fn render_svg(layout: &Layout) -> Result<String, LayoutError> {
    let (rows, cols) = grid_dims(layout)?;
    let mut out = String::new();
    svg_open(&mut out, rows, cols, CELL);
    for r in 0..rows {
        for c in 0..cols {
            let v = grid_value(layout, rows, r, c)?;
            svg_cell(&mut out, r, c, CELL, PALETTE[v.rem_euclid(8) as usize], &format!("{v}"));
        }
    }
    out.push_str("</svg>\n");
    Ok(out)
}

/// `rows * cols` for a tile that a picture can draw: both positive, at most [`MAX_CELLS`] cells.
pub fn tile_cells(rows: i64, cols: i64) -> Result<i64, LayoutError> {
    if rows < 1 || cols < 1 {
        return Err(LayoutError::InvalidArgument("a tile has positive rows and columns"));
    }
    match rows.checked_mul(cols) {
        Some(cells) if cells <= MAX_CELLS => Ok(cells),
        _ => Err(TOO_MANY_CELLS),
    }
}

/// For each `(thread, value)` of a TV layout (mode 0 threads, mode 1 values, mapping to the
/// column-major index of an `rows x cols` tile), the tile cell `(row, col)` it lands on. The
/// tile and the number of pairs are each at most [`MAX_CELLS`].
pub fn tv_cells(tv: &Layout, rows: i64, cols: i64) -> Result<Vec<(i64, i64, i64, i64)>, LayoutError> {
    let tile = tile_cells(rows, cols)?;
    let (threads, values) = match (tv.mode(0), tv.mode(1)) {
        (Some(t), Some(v)) if tv.rank() == 2 => (t.size()?, v.size()?),
        _ => return Err(LayoutError::InvalidArgument("a TV layout has rank 2 (thread, value)")),
    };
    let pairs = match threads.checked_mul(values) {
        Some(p) if p <= MAX_CELLS => p,
        _ => return Err(TOO_MANY_PAIRS),
    };
    let mut cells = Vec::with_capacity(pairs as usize);
    for v in 0..values {
        for t in 0..threads {
            let idx = tv.call(t + v * threads)?;
            if idx < 0 || idx >= tile {
                return Err(LayoutError::InvalidArgument("TV layout maps outside the tile"));
            }
            cells.push((t, v, idx % rows, idx / rows));
        }
    }
    Ok(cells)
}

/// An SVG of the `rows x cols` tile with each cell coloured by its thread and labelled
/// `T{t}V{v}` (the last writer wins where a TV layout repeats a cell).
pub fn render_tv_svg(tv: &Layout, rows: i64, cols: i64) -> Result<String, LayoutError> {
    let cells = tv_cells(tv, rows, cols)?;
    let mut grid = vec![None; (rows * cols) as usize];
    for (t, v, r, c) in cells {
        grid[(r + c * rows) as usize] = Some((t, v));
    }
    let cell_w = 56;
    let mut out = String::new();
    svg_open(&mut out, rows, cols, cell_w);
    for r in 0..rows {
        for c in 0..cols {
            match grid[(r + c * rows) as usize] {
                Some((t, v)) => svg_cell(&mut out, r, c, cell_w, PALETTE[(t % 8) as usize], &format!("T{t}V{v}")),
                None => svg_cell(&mut out, r, c, cell_w, "white", ""),
            }
        }
    }
    out.push_str("</svg>\n");
    Ok(out)
}

/// The `wgmma.m64nNk16` f32 accumulator fragment as a TV layout over the column-major 64xN
/// tile: thread `t`, value `v` hold row `(t%32)/4 + 8*((v/2)%2) + 16*(t/32)`, column
/// `2*(t%4) + (v%2) + 8*(v/4)`. `n` is a multiple of 8 in `8..=256`.
pub fn wgmma_accumulator_tv(n: i64) -> Result<Layout, LayoutError> {
    StaticLayout::<6>::wgmma_accumulator_tv(n).map(|l| Layout::from_static(&l))
}
