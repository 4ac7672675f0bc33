"""network: a rank that cannot reach MASTER_ADDR:MASTER_PORT (wrong port, unknown host), so
rendezvous fails with a real connection error while the others wait for it."""

from __future__ import annotations

from .. import NotReproduced, Variant, free_port, need_in
from ._dist import dist_args, run_python_ranks
from ._train_common import DIST

NAME = "network"
CATEGORY = "network"
DESCRIPTION = "wrong MASTER_PORT / rendezvous endpoint on one rank or node"
NEEDS = ("root", "unshare", "torch")

V = Variant
R = "network.rendezvous"
VARIANTS = [
    V(
        "wrong-master-port-rank1-of-2-python-ts",
        R,
        dict(launcher="python", nproc=2, bad_rank=1, bad="port", timeout=20, ts=True),
        first_rank=1,
    ),
    V(
        "unknown-master-host-rank2-of-3-python",
        R,
        dict(launcher="python", nproc=3, bad_rank=2, bad="host", timeout=20),
        first_rank=2,
    ),
    V(
        "wrong-rdzv-port-node2-torchrun-2x2-tee",
        R,
        dict(launcher="torchrun", nnodes=2, nproc=2, bad_node=1, timeout=20, logging="tee"),
        first_rank=None,
        first_host="labnode2",
    ),
]


def run(ctx, v: Variant):
    p = v.params
    if p["launcher"] == "python":
        wrong = free_port()

        def per_rank(r, port):
            if r != p["bad_rank"]:
                return {}
            return {"MASTER_PORT": wrong} if p["bad"] == "port" else {"MASTER_ADDR": "labnode-master"}

        results = run_python_ranks(ctx, p, timeout=120, env_per_rank=per_rank)
        need_in(
            "\n".join(r.output for r in results),
            r"DistNetworkError|DistStoreError|Connection refused|timed out|gai error|Name or service not known",
        )
        return {"rank": v.first_rank, "host": v.first_host}
    # two torchrun agents, the second pointing at the wrong rendezvous port
    port, wrong = free_port(), free_port()
    procs = []
    for node in range(p["nnodes"]):
        host = f"labnode{node + 1}"
        (ctx.tmp / host).mkdir()
        (ctx.tmp / host / "train.py").write_text(DIST)
        ctx.port = wrong if node == p["bad_node"] else port
        cmd = [
            *ctx.launch(
                p["nproc"],
                p["logging"],
                "c10d",
                nnodes=p["nnodes"],
                node_rank=node,
                port=ctx.port,
                extra=("--rdzv-conf", f"join_timeout={p['timeout']}"),
            ),
            "train.py",
            *dist_args(p),
        ]
        procs.append((host, ctx.start(ctx.ns(cmd, hostname=host), env=ctx.env(LAB_TS="0"), cwd=ctx.tmp / host)))
    texts = []
    for host, proc in procs:
        r = ctx.finish(proc, timeout=150)
        if r.timed_out:
            raise NotReproduced(f"{host} timed out:\n" + r.output[-2000:])
        ctx.save_text(f"{host}/console.log", r.output)
        ctx.save_tree(f"{host}/logs", ctx.tmp / host / "logs")
        texts.append(r.output)
    need_in("\n".join(texts), r"Rendezvous|DistNetworkError|Connection refused|timed out")
    return {"rank": v.first_rank, "host": v.first_host}
