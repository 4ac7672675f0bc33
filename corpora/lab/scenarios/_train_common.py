"""Pieces of training-script text shared by scenarios (the scripts are written into the job
dir at run time, so tracebacks show /job/train.py, as a job's would)."""

LOGGING = r"""
import logging, os, sys, time
TS = os.environ.get("LAB_TS", "0") == "1"
RANK = int(os.environ.get("RANK", "0"))
if TS:
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format="%(asctime)s %(levelname)s [rank" + str(RANK) + "] %(name)s: %(message)s")
else:
    logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="[rank" + str(RANK) + "] %(message)s")
log = logging.getLogger("train")
"""

#: a small DDP training loop on gloo with one injected fault (--fault) on one rank
DIST = (
    LOGGING
    + r'''
import argparse, datetime, signal
import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record

ap = argparse.ArgumentParser()
ap.add_argument("--fault", default="none")
ap.add_argument("--fault-rank", type=int, default=1)
ap.add_argument("--at-step", type=int, default=3)
ap.add_argument("--timeout", type=int, default=20)
ap.add_argument("--steps", type=int, default=40)
ap.add_argument("--step-time", type=float, default=0.0)
ap.add_argument("--width", type=int, default=32)
ap.add_argument("--no-record", action="store_true")
ap.add_argument("--no-ddp", action="store_true")   # average gradients with explicit all_reduce
args = ap.parse_args()


class Labels:
    """label lookup for the synthetic dataset"""
    names = {i: f"class{i}" for i in range(8)}


def batch(step, rank, n=16):
    g = torch.Generator().manual_seed(step * 100 + rank)
    x = torch.randn(n, args.width, generator=g)
    y = torch.randint(0, 8, (n,), generator=g)
    return x, y


def load_shard(step, rank):
    """the next shard of this rank's data (here: the storage behind it stops answering)"""
    log.info("rank %d: loading shard %d ...", rank, step)
    time.sleep(args.timeout * 4)
    return batch(step, rank)


def train():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    log.info("process group ready: rank %d/%d backend gloo timeout %ds", rank, world, args.timeout)
    model = torch.nn.Sequential(torch.nn.Linear(args.width, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    if not args.no_ddp:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    faulty = rank == args.fault_rank
    for step in range(args.steps):
        x, y = batch(step, rank)
        if faulty and step == args.at_step:
            f = args.fault
            if f == "dataload":                   # this rank stalls in data loading
                x, y = load_shard(step, rank)
            if f == "valueerror":
                raise ValueError(f"loss scale must be positive, got {-1.0 * step}")
            if f == "indexerror":
                y = y + 8
                loss = torch.nn.functional.cross_entropy(model(x), y)
            if f == "keyerror":
                log.info("label of first sample: %s", Labels.names[int(y[0]) + 100])
            if f == "shape":
                x = torch.randn(16, args.width + 3)
            if f == "zerodiv":
                log.info("tokens/s %.1f", 16 / (step - step))
            if f == "skip":                       # this rank skips the gradient all-reduce
                log.info("rank %d: skipping a step (empty shard)", rank)
                time.sleep(args.timeout * 3)
                continue
            if f == "extra":                      # this rank issues an extra collective
                t = torch.ones(4)
                dist.broadcast(t, src=rank)
            if f == "size":                       # an all-reduce of another size
                t = torch.ones(7)
                dist.all_reduce(t)
            if f == "gather":                     # all_gather where the others all_reduce
                out = [torch.empty(8) for _ in range(world)]
                dist.all_gather(out, torch.ones(8))
            if f == "stuck":                      # the rank stops making progress
                log.info("rank %d: waiting for data ...", rank)
                time.sleep(args.timeout * 3)
        if args.fault in ("size", "gather") and step == args.at_step and not faulty:
            t = torch.ones(8)
            dist.all_reduce(t)
        out = model(x)
        loss = torch.nn.functional.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        if args.no_ddp:
            for prm in model.parameters():
                dist.all_reduce(prm.grad)
                prm.grad /= world
        opt.step()
        log.info("step %d loss %.4f", step, loss.item())
        if args.step_time:
            time.sleep(args.step_time)
    dist.barrier()
    log.info("training done")
    dist.destroy_process_group()


main = train if args.no_record else record(train)

if __name__ == "__main__":
    main()
'''
)
