//! Runs the batch contract over a file (or stdin): `cargo run -p oxtile-layout --example layout_batch -- FILE`.

use std::io::Read;

fn main() -> std::io::Result<()> {
    let mut input = String::new();
    match std::env::args().nth(1) {
        Some(path) => input = std::fs::read_to_string(path)?,
        None => {
            std::io::stdin().read_to_string(&mut input)?;
        }
    }
    print!("{}", oxtile_layout::batch::run_batch(&input));
    Ok(())
}
