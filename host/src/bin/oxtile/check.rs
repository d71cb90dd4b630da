//! `oxtile check`: every kernel against its reference on fresh random inputs, as a table.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use oxtile::Gpu;
use oxtile::verify::{self, CheckReport, Sweep};

#[derive(clap::Args, Default)]
pub struct Args {
    /// Seed for the random inputs (default: fresh from the clock).
    #[arg(long)]
    seed: Option<u64>,
    /// One problem per kernel (seconds) instead of every checked size.
    #[arg(long)]
    quick: bool,
}

pub fn run(args: &Args) -> oxtile::Result<ExitCode> {
    let gpu = match Gpu::new(0) {
        Ok(gpu) => gpu,
        // What the README promises without a GPU: the static table, then a non-zero exit saying why. The reason
        // comes first too, since assembling every kernel takes a while, and last, where the exit is.
        Err(error @ (oxtile::Error::NoDriver(_) | oxtile::Error::NoGpu(_))) => {
            eprintln!("error: {error}");
            eprintln!(
                "No GPU here, so no kernel can run. Instead, what the kernels compile to (as `oxtile kernels`), \
                 read from the cubins the build made (a build without the pinned ptxas has ptxas assemble every \
                 kernel now, which takes a minute or more; Ctrl-C stops it)."
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
    println!("{}", CheckReport::header());
    let sweep = if args.quick { Sweep::Quick } else { Sweep::Full };
    let start = Instant::now();
    let (passed, failed) = run_sweep(&gpu, sweep, seed)?;
    let replay = if failed == 0 { String::new() } else { format!(" (replay with --seed {seed})") };
    println!("{passed} passed, {failed} failed in {:.1} s{replay}", start.elapsed().as_secs_f64());
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// Runs the checks of `sweep` in order and prints each row as its check ends (a row that never comes says which
/// check hung), under a progress bar on stderr, drawn only where stderr is a terminal: which check runs and the
/// time left, estimated from the work done so far. Returns the rows that passed and failed.
fn run_sweep(gpu: &Gpu, sweep: Sweep, seed: u64) -> oxtile::Result<(usize, usize)> {
    let plan = verify::plan(sweep, seed);
    let total = plan.len();
    let work = plan.iter().map(|check| check.cost).sum();
    let bar = ProgressBar::with_draw_target(Some(work), ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template("{elapsed:>4} [{bar:30}] {percent:>3}%, about {eta} left: {msg}")
        .expect("a valid template");
    bar.set_style(style.progress_chars("=> "));
    // The clock moves while a long check runs; hidden bars draw nothing either way.
    bar.enable_steady_tick(Duration::from_millis(250));
    let (mut passed, mut failed) = (0, 0);
    for (n, check) in plan.into_iter().enumerate() {
        bar.set_message(format!("{}/{total} {}", n + 1, check.what));
        let cost = check.cost;
        let reports = check.run(gpu).inspect_err(|_| bar.abandon())?;
        for report in reports {
            if report.passed() {
                passed += 1;
            } else {
                failed += 1;
            }
            bar.suspend(|| println!("{}", report.row()));
        }
        bar.inc(cost);
    }
    bar.finish_and_clear();
    Ok((passed, failed))
}
