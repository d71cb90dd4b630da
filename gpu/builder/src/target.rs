/// A GPU architecture the device crates are compiled for; each gets its own PTX module.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// Hopper with its architecture-specific features (wgmma, setmaxnreg): H100, H200.
    Sm90a,
    /// Blackwell datacenter with tcgen05 and tensor memory: B200.
    Sm100a,
}

impl Target {
    pub const ALL: [Target; 2] = [Target::Sm90a, Target::Sm100a];

    /// The name ptxas and llc use for it, e.g. `sm_90a`.
    pub const fn cpu(self) -> &'static str {
        match self {
            Target::Sm90a => "sm_90a",
            Target::Sm100a => "sm_100a",
        }
    }

    /// The PTX ISA version the module declares: the oldest one that has every instruction we use there.
    pub const fn ptx_feature(self) -> &'static str {
        match self {
            Target::Sm90a => "+ptx81",
            Target::Sm100a => "+ptx86",
        }
    }

    /// The compute capability a device needs to load this module.
    pub const fn compute_capability(self) -> (u32, u32) {
        match self {
            Target::Sm90a => (9, 0),
            Target::Sm100a => (10, 0),
        }
    }

    pub fn from_cpu(cpu: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.cpu() == cpu)
    }
}
