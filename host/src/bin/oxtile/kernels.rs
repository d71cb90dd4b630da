//! `oxtile kernels`: what each kernel compiles to (ptxas resources, SASS opcode counts), without a GPU.

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
    if args.json {
        for kernel in &stats {
            println!("{}", serde_json::to_string(kernel).expect("kernel stats serialize to JSON"));
        }
    } else {
        print!("{}", inspect::table(&stats));
    }
    Ok(ExitCode::SUCCESS)
}
