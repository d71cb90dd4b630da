pub const PTX_SM90A: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels_sm_90a.ptx"));
