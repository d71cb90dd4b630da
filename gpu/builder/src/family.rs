/// A family of device kernels: one crate below gpu/kernels (`oxtile-kernels-<name>`), compiled to a PTX module (and
/// cubin) of its own, so that an edit to one family rebuilds and reassembles that family alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// The GEMM data path in every configuration of oxtile-abi's GEMM tables, general and symmetric, for the layouts
    /// whose A is row-major (tn, tt), and the skinny GEMM.
    Gemm,
    /// The same GEMM source (gpu/kernels/gemm) for the layouts whose A is column-major (nt, nn): a crate of its own so
    /// that the GEMM's two halves compile at the same time (`oxtile_abi::gemm_sm90_module!`).
    GemmColumnA,
    /// The attention forward's production kernels (those `AttnVariant::Auto` runs) and its plain GPU reference.
    Attention,
    /// The attention forward's ablations: the same source (gpu/kernels/attention's `sm90`) in a crate of its own, so
    /// that the forward's two halves compile at the same time.
    AttentionAblations,
    /// The attention backward (preprocessing, main and dQ conversion kernels) and its plain GPU reference.
    AttentionBackward,
    /// Small kernels beside the others: elementwise ops, the exp2 microbenchmark, Newton-Schulz's helpers, the
    /// layout demo, the benchmark harness's stream hold.
    Support,
}

impl Family {
    pub const ALL: [Family; 6] = [
        Family::Gemm,
        Family::GemmColumnA,
        Family::Attention,
        Family::AttentionAblations,
        Family::AttentionBackward,
        Family::Support,
    ];

    /// Its folder below gpu/kernels, and its name in the module files (`kernels_<name>_<cpu>.ptx`).
    pub const fn name(self) -> &'static str {
        match self {
            Family::Gemm => "gemm",
            Family::GemmColumnA => "gemm_column_a",
            Family::Attention => "attention",
            Family::AttentionAblations => "attention_ablations",
            Family::AttentionBackward => "attention_backward",
            Family::Support => "support",
        }
    }

    /// The crate's library name, which names the PTX file rustc links: `oxtile_kernels_<name>`.
    pub fn lib_name(self) -> String {
        format!("oxtile_kernels_{}", self.name())
    }

    pub fn from_name(name: &str) -> Option<Family> {
        Family::ALL.into_iter().find(|f| f.name() == name)
    }
}
