//! Where the block scheduler puts the blocks of a one-block-per-SM grid, launched plainly and in clusters: the SM
//! (`%smid`) of each block, and which SMs share a GPC (the blocks of one cluster always do). A persistent GEMM's tile
//! order decides which tiles run side by side in time; this says where they run, which decides what the L2 request
//! coalescer of a GPC can merge.
//!
//! `cargo run --release --example placement`

use oxtile::Gpu;
use oxtile::bench::device::block_placement;
use oxtile::runtime::ClusterShape;

fn print_rows(label: &str, values: &[u32]) {
    println!("{label}");
    for (row, chunk) in values.chunks(22).enumerate() {
        let cells: Vec<String> = chunk.iter().map(|v| format!("{v:3}")).collect();
        println!("  {:4}: {}", row * 22, cells.join(" "));
    }
}

fn main() -> Result<(), oxtile::Error> {
    let gpu = Gpu::new(0)?;
    let plain = block_placement(&gpu, 1, ClusterShape::Plain)?;
    print_rows(&format!("plain launch, {} blocks: the SM of block b (rows start at b)", plain.len()), &plain);
    // The same grid through the cluster launch path (cluster dimension 1): the GEMM's `single_block_launch` ablation.
    let as_clusters_of_one = block_placement(&gpu, 1, ClusterShape::Clusters)?;
    print_rows("clusters of one (the cluster launch path): the SM of block b", &as_clusters_of_one);

    // GPC groups: the blocks of one cluster share a GPC. The largest clusters that launch name the most SMs.
    let sms = plain.iter().chain(&as_clusters_of_one).copied().max().unwrap_or(0) as usize + 1;
    let mut gpc_of: Vec<Option<usize>> = vec![None; sms];
    for cluster in [16u32, 8, 2] {
        match block_placement(&gpu, cluster, ClusterShape::Clusters) {
            Ok(map) => {
                println!("clusters of {cluster}: {} resident; SMs of each", map.len() / cluster as usize);
                for (index, members) in map.chunks(cluster as usize).enumerate() {
                    let mut members = members.to_vec();
                    members.sort_unstable();
                    println!("  cluster {index:2}: {members:?}");
                    if cluster == 16 {
                        for &sm in &members {
                            gpc_of[sm as usize] = Some(index);
                        }
                    }
                }
                print_rows(&format!("clusters of {cluster}: the SM of block b"), &map);
            }
            Err(error) => println!("clusters of {cluster}: {error}"),
        }
    }
    let label = |sm: u32| gpc_of.get(sm as usize).copied().flatten().map_or("  ?".to_string(), |g| format!("{g:3}"));
    println!("GPC (cluster-of-16 index, ? = in none) of each block of the plain launch:");
    for (row, chunk) in plain.chunks(22).enumerate() {
        let cells: Vec<String> = chunk.iter().map(|&sm| label(sm)).collect();
        println!("  {:4}: {}", row * 22, cells.join(" "));
    }
    Ok(())
}
