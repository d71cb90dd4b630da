//! `oxtile check`: every kernel against its reference on fresh random inputs, as a table.

use std::process::ExitCode;

use oxtile::Gpu;
use oxtile::verify::{self, CheckReport};

#[derive(clap::Args, Default)]
pub struct Args {
    /// Seed for the random inputs (default: fresh from the clock).
    #[arg(long)]
    seed: Option<u64>,
}

pub fn run(args: &Args) -> oxtile::Result<ExitCode> {
    let gpu = match Gpu::new(0) {
        Ok(gpu) => gpu,
        // What the README promises without a GPU: the static table, then a non-zero exit saying why. The reason
        // comes first too, since assembling every kernel takes a while, and last, where the exit is.
        Err(error @ (oxtile::Error::NoDriver(_) | oxtile::Error::NoGpu(_))) => {
            eprintln!("error: {error}");
            eprintln!(
                "No GPU here, so no kernel can run. Instead, what the kernels compile to (as `oxtile kernels`): \
                 ptxas assembles every kernel first, which takes a minute or more (Ctrl-C stops it)."
            );
            match oxtile::inspect::inspect_all() {
                Ok(stats) => print!("{}", oxtile::inspect::table(&stats)),
                Err(error) => eprintln!("static inspection failed too: {error}"),
            }
            eprintln!("error: nothing was checked: {error}");
            return Ok(ExitCode::FAILURE);
        }
        Err(error) => return Err(error),
    };
    let seed = args.seed.unwrap_or_else(oxtile::reference::fresh_seed);
    println!(
        "{} (compute capability {}.{}, {} SMs), seed {seed}",
        gpu.name(),
        gpu.compute_capability().0,
        gpu.compute_capability().1,
        gpu.sm_count()
    );
    // Row by row as each check ends: the whole run takes minutes, and a row that never comes says which check hung.
    println!("{}", CheckReport::header());
    let reports = verify::all(&gpu, seed, |report| println!("{}", report.row()))?;
    let failed = reports.iter().filter(|r| !r.passed()).count();
    println!("{} passed, {failed} failed", reports.len() - failed);
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
