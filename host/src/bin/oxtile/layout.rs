//! `oxtile layout`: CuTe layouts on the command line. `show` draws a layout's offsets (or a thread/value layout's
//! tile coloured by thread) as text and SVG; `--batch` runs the test-vector contract of shared/layouts/README.md.

use std::fmt::Write as _;
use std::io::{self, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use oxtile::Error;
use oxtile_layout::picture::MAX_CELLS;
use oxtile_layout::{Layout, LayoutError, picture, run_batch_line};

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true, arg_required_else_help = true)]
pub struct Args {
    /// Run the cases of FILE (`-` for stdin), one `OP ARG [ARG]` per line, printing one line per case: the result
    /// in CuTe notation, or `error: MESSAGE` where the operation is undefined (see shared/layouts/README.md).
    #[arg(long, value_name = "FILE")]
    batch: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Print a layout's grid of offsets (mode 0 down, the other modes across); with --tv or --wgmma-accumulator,
    /// a thread/value layout's tile with each cell labelled T<thread>V<value> and coloured by thread.
    Show(ShowArgs),
}

#[derive(clap::Args)]
struct ShowArgs {
    /// A layout in CuTe notation, e.g. "(4,8):(8,1)" or "((2,2),4):((1,8),2)".
    #[arg(required_unless_present = "wgmma_accumulator", conflicts_with = "wgmma_accumulator")]
    layout: Option<String>,
    /// Read LAYOUT as a TV layout: (thread, value) to the column-major index of a ROWSxCOLS tile.
    #[arg(long, value_name = "ROWSxCOLS", value_parser = parse_tile)]
    tv: Option<(i64, i64)>,
    /// Draw the f32 accumulator fragment of wgmma.m64nNk16: the TV layout of its 128 threads over the 64xN tile.
    #[arg(long, value_name = "N", conflicts_with = "tv")]
    wgmma_accumulator: Option<i64>,
    /// Also write the picture to FILE as SVG.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
}

pub fn run(args: &Args) -> oxtile::Result<ExitCode> {
    match (&args.batch, &args.command) {
        (Some(path), _) => batch(path),
        (None, Some(Command::Show(show_args))) => show(show_args),
        // clap prints the help instead (arg_required_else_help).
        (None, None) => Err(bad_argument("layout", "give --batch FILE or a subcommand (`oxtile layout --help`)")),
    }
}

fn bad_argument(op: &'static str, message: impl Into<String>) -> Error {
    Error::BadArgument { op, message: message.into() }
}

/// "64x8" (or "64X8", "64,8") as (rows, cols).
fn parse_tile(text: &str) -> Result<(i64, i64), String> {
    let parsed =
        text.split_once(['x', 'X', ',']).and_then(|(r, c)| Some((r.trim().parse().ok()?, c.trim().parse().ok()?)));
    match parsed {
        Some((rows, cols)) if rows > 0 && cols > 0 => Ok((rows, cols)),
        _ => Err(format!("expected ROWSxCOLS with positive integers, e.g. 64x8, got '{text}'")),
    }
}

fn batch(path: &Path) -> oxtile::Result<ExitCode> {
    let mut input = String::new();
    let read = if path.as_os_str() == "-" {
        io::stdin().read_to_string(&mut input)
    } else {
        std::fs::File::open(path).and_then(|mut file| file.read_to_string(&mut input))
    };
    read.map_err(|e| bad_argument("layout --batch", format!("cannot read {}: {e}", path.display())))?;
    let mut out = String::with_capacity(input.len());
    for result in input.lines().filter_map(run_batch_line) {
        out.push_str(&result);
        out.push('\n');
    }
    io::stdout().lock().write_all(out.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

fn parse_layout(text: &str) -> oxtile::Result<Layout> {
    text.parse().map_err(|e| bad_argument("layout show", format!("invalid layout \"{text}\": {e}")))
}

/// Refuses a picture of more than [`MAX_CELLS`] cells (or (thread, value) pairs) before anything is drawn or
/// allocated; `count` is an overflow where the number does not even fit in an `i64`.
fn check_size(what: &str, unit: &str, count: Result<i64, LayoutError>) -> oxtile::Result<()> {
    let message = match count {
        Ok(n) if n <= MAX_CELLS => return Ok(()),
        Ok(n) => format!("{what} has {n} {unit}, more than the {MAX_CELLS} a picture draws"),
        Err(_) => format!("{what} has more {unit} than fit in 64 bits, more than the {MAX_CELLS} a picture draws"),
    };
    Err(bad_argument("layout show", message))
}

fn picture_error(what: &str, e: LayoutError) -> Error {
    bad_argument("layout show", format!("{what}: {e}"))
}

fn show(args: &ShowArgs) -> oxtile::Result<ExitCode> {
    let (text, svg) = if let Some(n) = args.wgmma_accumulator {
        let tv = picture::wgmma_accumulator_tv(n)
            .map_err(|e| bad_argument("layout show", format!("--wgmma-accumulator {n}: {e}")))?;
        let title = format!("wgmma.m64n{n}k16 f32 accumulator, (thread, value) -> 64x{n} tile: {tv}");
        tv_pictures(&title, &tv, 64, n)?
    } else {
        let layout = parse_layout(args.layout.as_deref().expect("clap requires LAYOUT without --wgmma-accumulator"))?;
        match args.tv {
            Some((rows, cols)) => {
                let title = format!("{layout}, (thread, value) -> {rows}x{cols} tile");
                tv_pictures(&title, &layout, rows, cols)?
            }
            None => {
                let name = layout.to_string();
                check_size(&name, "cells", layout.size())?;
                let grid = picture::render_grid(&layout).map_err(|e| picture_error(&name, e))?;
                let svg = picture::render_svg(&layout).map_err(|e| picture_error(&name, e))?;
                (grid, svg)
            }
        }
    };
    print!("{text}");
    if let Some(path) = &args.svg {
        std::fs::write(path, svg)
            .map_err(|e| bad_argument("layout show", format!("cannot write {}: {e}", path.display())))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// The text grid and the SVG of a TV layout over a `rows`×`cols` tile.
fn tv_pictures(title: &str, tv: &Layout, rows: i64, cols: i64) -> oxtile::Result<(String, String)> {
    check_size(&format!("a {rows}x{cols} tile"), "cells", rows.checked_mul(cols).ok_or(LayoutError::Overflow))?;
    // A layout of another rank is refused by tv_cells with its own message.
    let pairs = if tv.rank() == 2 { tv.size() } else { Ok(0) };
    check_size(&format!("{tv} as a TV layout"), "(thread, value) pairs", pairs)?;
    let invalid = |e| bad_argument("layout show", format!("{tv} as a TV layout over {rows}x{cols}: {e}"));
    let cells = picture::tv_cells(tv, rows, cols).map_err(invalid)?;
    let svg = picture::render_tv_svg(tv, rows, cols).map_err(invalid)?;
    let colour = io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    Ok((render_tv_text(title, &cells, rows, cols, colour), svg))
}

/// Background colours by thread in a terminal (256-colour palette, the SVG's hues).
const ANSI_BACKGROUNDS: [u8; 8] = [147, 157, 229, 217, 189, 194, 230, 224];

/// The tile as text, each cell `T{thread}V{value}` (the last writer wins where cells repeat), optionally
/// coloured by thread with ANSI escapes.
fn render_tv_text(title: &str, cells: &[(i64, i64, i64, i64)], rows: i64, cols: i64, colour: bool) -> String {
    let mut grid = vec![None; (rows * cols) as usize];
    for &(t, v, r, c) in cells {
        grid[(r * cols + c) as usize] = Some((t, v));
    }
    let labels: Vec<String> =
        grid.iter().map(|cell| cell.map(|(t, v)| format!("T{t}V{v}")).unwrap_or_default()).collect();
    let width = labels.iter().map(String::len).chain([format!("{}", cols - 1).len()]).max().unwrap_or(1) + 1;
    let margin = format!("{}", rows - 1).len() + 1;
    let rule = format!("{:margin$}  +{}", "", format!("{}+", "-".repeat(width)).repeat(cols as usize));
    let mut out = format!("{title}\n{:margin$}  ", "");
    for c in 0..cols {
        let _ = write!(out, " {c:>width$}");
    }
    out.push('\n');
    for r in 0..rows {
        let _ = write!(out, "{rule}\n{r:>margin$}  |");
        for c in 0..cols {
            let i = (r * cols + c) as usize;
            match grid[i] {
                Some((t, _)) if colour => {
                    let bg = ANSI_BACKGROUNDS[(t % 8) as usize];
                    let _ = write!(out, "\x1b[30;48;5;{bg}m{:>width$}\x1b[0m|", labels[i]);
                }
                _ => {
                    let _ = write!(out, "{:>width$}|", labels[i]);
                }
            }
        }
        out.push('\n');
    }
    out + &rule + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_parse_as_rows_by_columns() {
        assert_eq!(parse_tile("64x8"), Ok((64, 8)));
        assert_eq!(parse_tile("4X2"), Ok((4, 2)));
        assert!(parse_tile("64").is_err());
        assert!(parse_tile("0x8").is_err());
        assert!(parse_tile("ax8").is_err());
    }

    #[test]
    fn tv_text_labels_each_cell_by_thread_and_value() {
        // 2 threads x 2 values over a 2x2 tile: thread t, value v at index t + 2v (row t, column v).
        let tv: Layout = "(2,2):(1,2)".parse().unwrap();
        let cells = picture::tv_cells(&tv, 2, 2).unwrap();
        let text = render_tv_text("t", &cells, 2, 2, false);
        assert!(text.contains(" 0  | T0V0| T0V1|"), "{text}");
        assert!(text.contains(" 1  | T1V0| T1V1|"), "{text}");
        let coloured = render_tv_text("t", &cells, 2, 2, true);
        assert!(coloured.contains("\x1b[30;48;5;147m T0V0\x1b[0m|"), "{coloured}");
    }
}
