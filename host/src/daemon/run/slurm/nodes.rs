//! The cluster's nodes as `sinfo` tells them: its totals (what placement
//! counts against) and each node's GPUs (for `nightjar gpus`), and which
//! node a job runs on.

/// The sinfo format [`parse_nodes`] reads.
pub const SINFO_GPUS: &str = "NodeList:|,Gres:|,GresUsed:|,StateLong:|,Reason:";

/// The cluster's totals from `sinfo -h -N -o '%N|%c|%G'`: cores and GPUs,
/// each node counted once (a node in two partitions is listed twice).
pub fn parse_totals(out: &str) -> (u32, u32) {
    let mut seen = std::collections::BTreeSet::new();
    let (mut cpus, mut gpus) = (0u32, 0u32);
    for line in out.lines() {
        let mut f = line.split('|');
        let (Some(node), Some(c), Some(gres)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        if !seen.insert(node.trim().to_string()) {
            continue;
        }
        cpus += c.trim().parse::<u32>().unwrap_or(0);
        gpus += gres.split(',').map(gpu_count).sum::<u32>();
    }
    (cpus, gpus)
}

/// GPUs in one GRES entry: `gpu:2`, `gpu:a100:4`, `gpu:4(S:0-1)`; 0 for
/// anything else (`(null)`, `mps:100`).
fn gpu_count(gres: &str) -> u32 {
    let gres = gres.trim();
    let gres = gres.split('(').next().unwrap_or(gres);
    let mut parts = gres.split(':');
    if parts.next() != Some("gpu") {
        return 0;
    }
    parts.next_back().and_then(|n| n.parse().ok()).unwrap_or(0)
}

/// One GPU of a node, as `sinfo` tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeGpu {
    /// The node.
    pub node: String,
    /// The GPU's index on the node.
    pub index: u32,
    /// Its GRES type (`a100`), or `gpu` when it has none.
    pub model: String,
    /// Whether SLURM has it allocated.
    pub allocated: bool,
    /// The node's state (`idle`, `mixed`, `drained`, `down`, ...).
    pub state: String,
    /// Why the node is down or drained, as its administrator said.
    pub reason: Option<String>,
}

impl NodeGpu {
    /// Whether SLURM may give it out (its node is not down, drained or failing).
    pub fn usable(&self) -> bool {
        ![
            "down", "drain", "fail", "maint", "reserved", "inval", "future", "unknown",
        ]
        .iter()
        .any(|s| self.state.contains(s))
    }
}

/// Every GPU of every node in `sinfo -h -N -O` [`SINFO_GPUS`] output, node
/// by node (each once), in the order sinfo lists them.
pub fn parse_nodes(out: &str) -> Vec<NodeGpu> {
    let mut seen = std::collections::BTreeSet::new();
    let mut gpus = Vec::new();
    for line in out.lines() {
        let f: Vec<&str> = line.splitn(5, '|').map(str::trim).collect();
        let [node, gres, used, state, reason] = f[..] else {
            continue;
        };
        if !seen.insert(node.to_string()) {
            continue;
        }
        let allocated = used_indices(used);
        for entry in gres.split(',') {
            let n = gpu_count(entry);
            let model = entry
                .split('(')
                .next()
                .unwrap_or(entry)
                .split(':')
                .collect::<Vec<_>>();
            let model = if model.len() == 3 { model[1] } else { "gpu" };
            for index in 0..n {
                gpus.push(NodeGpu {
                    node: node.to_string(),
                    index,
                    model: model.to_string(),
                    allocated: allocated.contains(&index),
                    state: state.to_string(),
                    reason: (!reason.is_empty() && reason != "none").then(|| reason.to_string()),
                });
            }
        }
    }
    gpus
}

/// The GPU indices of a `GresUsed` value: `gpu:2(IDX:0-1)`, `gpu:a100:1(IDX:3)`,
/// `gpu:3(IDX:0,2-3)`; none for `gpu:0`.
fn used_indices(used: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in used.split("IDX:").skip(1) {
        let list = part.split(')').next().unwrap_or("");
        for range in list.split(',') {
            let mut ends = range.splitn(2, '-').map(|n| n.trim().parse::<u32>());
            match (ends.next(), ends.next()) {
                (Some(Ok(a)), Some(Ok(b))) if b >= a && b - a < 4096 => out.extend(a..=b),
                (Some(Ok(a)), None) => out.push(a),
                _ => {}
            }
        }
    }
    out
}

/// Whether `node` is one of `nodes` (`n1`, `n1,n2`, `n[1-3]` as squeue
/// gives them; a bracketed range is matched by its prefix).
pub fn on_node(nodes: &str, node: &str) -> bool {
    nodes.split(',').any(|n| {
        n == node
            || n.split_once('[')
                .is_some_and(|(prefix, _)| node.starts_with(prefix) && !prefix.is_empty())
    })
}
