//! `oxtile kernels`: what each kernel compiles to (ptxas resources, SASS opcode counts), without a GPU.

use std::io::{ErrorKind, Write};
use std::process::ExitCode;

use oxtile::inspect;

#[derive(clap::Args, Default)]
pub struct Args {
    /// One JSON record per kernel, one per line, instead of the table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &Args) -> oxtile::Result<ExitCode> {
    let stats = inspect::inspect_all()?;
    let mut out = std::io::stdout().lock();
    let written = if args.json {
        stats.iter().try_for_each(|kernel| {
            writeln!(out, "{}", serde_json::to_string(kernel).expect("kernel stats serialize to JSON"))
        })
    } else {
        write!(out, "{}", inspect::table(&stats))
    };
    match written.and_then(|()| out.flush()) {
        // `oxtile kernels --json | head -1` is fine.
        Err(error) if error.kind() != ErrorKind::BrokenPipe => Err(error.into()),
        _ => Ok(ExitCode::SUCCESS),
    }
}
