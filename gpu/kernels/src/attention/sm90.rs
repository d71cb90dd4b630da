//! Hopper attention forward (in progress: the kernel ABI is fixed, the data path lands next).
//!
//! Kernels `attn_fwd_{bf16,f16}_d{64,128}_sm90` (and ablations of the bf16 d128 one:
//! `attn_fwd_bf16_d128_nopoly_sm90`, `attn_fwd_bf16_d128_eager_sm90`), all with the parameters
//! `(tensor_map_q: u64, tensor_map_k: u64, tensor_map_v: u64, o: *mut u16, lse: *mut f32, seq_q: u32, seq_k: u32,
//! heads_q: u32, group: u32, o_stride_seq: u32, o_stride_head: u32, o_stride_batch: u64, scale_log2: f32,
//! causal: u32, stats: *mut u32)`.
