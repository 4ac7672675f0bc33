"""The fields each kind of event carries (`Event.fields`), declared once.

Parsers fill them when they make an event; signatures select on them, and `postmortem
signatures check` reports a selection on a field that no kind it can match declares. A parser
that starts to emit a new field declares it here (tests/parse/test_fields.py holds every parser
to these lists).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from analyzer.model import EventKind

# on any kind: the kind of file the event came from, a parser's note, and what the events and
# correlate stages add (time anchored to another clock, a rank found through a pid or bus id)
COMMON: frozenset[str] = frozenset(
    {
        "source_kind",
        "note",
        "unparsed",
        "time_from",
        "rank_from",
        "clock_corrected_s",
        # what the line's place tells (events/ingest.py): torchrun's local rank, PyTorch's rank
        # prefix stacked after it, the line a block's event cites, a traceback its process survived
        "tee_rank",
        "prefix_rank",
        "quote",
        "caught",
    }
)

# the attributes every event has, which a signature may select on like fields
ATTRIBUTES: frozenset[str] = frozenset({"message", "text", "kind", "rank", "host", "pid", "file"})

_KERNEL_BASE = ("record", "process", "pid", "time_format", "uptime")
# what the NCCL parser reads from the `host:pid:tid [dev] NCCL LEVEL` prefix of its lines
_NCCL_PREFIX = ("nccl_host", "nccl_pid", "nccl_tid", "nccl_level", "nccl_version", "cuda_dev")
_FAULT = (
    "signal",
    "fault_address",
    "fault_mapping",
    "fault_in_dev_shm",
    "fault_in_regular_file",
    "crash_function",
    "crash_library",
    "frame_families",
    "signature",
    "fingerprint",
    "quality",
    "threads",
    "executable",
)

FIELDS: Mapping[EventKind, frozenset[str]] = {
    EventKind.LINE: frozenset(
        {
            "generic",
            # an error record that ends its log (classify/abstain.py mark_last_error_records)
            "last_error_record",
            # an exception's own line that no signature's pattern names, outside any parsed
            # traceback (`RuntimeError: ...`, its header not kept): its type and message (events/ingest.py)
            "exception_type",
            "exception_message",
            # a launcher's word that the job finished, an environment dump's ranks, an
            # environment report's versions (events/ingest.py)
            "outcome",
            "bookkeeping",
            "env_rank",
            "env_local_rank",
            "env_group_rank",
            "env_world_size",
            "env_local_world_size",
            "driver_cuda",
            "driver_release",
            "torch_build",
            "torch_cuda",
            # a flight-recorder dump's last collective on one process group (events/ingest.py)
            "fr_group",
            "fr_last_seq",
            "fr_op",
            "fr_state",
        }
    ),
    EventKind.UNPARSED: frozenset({"cut_traceback"}),  # a traceback the log ends in, before its exception line
    EventKind.TRACEBACK: frozenset(
        {
            "chained",
            "cut_traceback",  # the log ends in a later link of the chain, before its exception line
            "error_json",
            "exception_message",
            "exception_type",
            "frame_files",
            "frame_functions",
            "frames",
            "py_callstack",
            "raising_file",
            "start_line",
            "timestamp",
            "traceback",
        }
    ),
    EventKind.ELASTIC_FAILURE: frozenset(
        {
            "error_file",
            "exitcode",
            "host",
            "local_rank",
            "pid",
            "rank",
            "root_cause",
            "signal",
            "time",
            "traceback",
            "launcher_host",
        }
    ),
    EventKind.LAUNCHER_EXIT: frozenset({"exitcode", "local_rank", "pid", "record", "signal"}),
    EventKind.SIGNAL: frozenset({"exitcode", "local_rank", "pid", "process", "record", "signal", "signal_number", "teardown"}),
    EventKind.FAULTHANDLER: frozenset(
        {"fatal_error", "frame_files", "frame_functions", "frames", "signal", "threads", "timeout"}
    ),
    EventKind.NCCL: frozenset(
        {
            *_NCCL_PREFIX,
            "bus_id",
            "direction",
            "channel",
            # collectives that differ across the ranks of one communicator (correlate/collectives.py)
            "collective_mismatch",
            "op_count",
            "operations",
            "odd_operation",
            "comm",
            "comm_id",
            "cuda_dev",
            "cuda_error",
            "cuda_error_number",
            "error_code",
            "ib_peer",
            "ib_status",
            "ib_vendor_err",
            "init",
            "last_error",
            "local_rank",
            "nccl_error",
            "nccl_host",
            "nccl_level",
            "nccl_pid",
            "nccl_tid",
            "nccl_version",
            "net_devices",
            "network",
            "nnodes",
            "nranks",
            "nvml_dev",
            "peer_from",
            "peer_to",
            "rank",
            "result",
            "ring",
            "shm_op",
            "shm_path",
            "shm_size",
            "src_file",
            "src_line",
            "transport",
            # the first (deepest) line of a chain of error returns (classify/abstain.py)
            "error_chain_origin",
            "error_chain_length",
            # an INFO line of a file that never said `Init COMPLETE` (classify/abstain.py)
            "init_incomplete",
        }
    ),
    EventKind.WATCHDOG: frozenset(
        {
            "last_completed",
            "last_enqueued",
            "numel_in",
            "numel_out",
            "op_type",
            "pg_id",
            "pg_name",
            "ran_for_ms",
            "rank",
            "seq_num",
            "timeout_ms",
            "watchdog",
            "watchdog_thread_terminated",
            "stuck_s",
            "error_code",
            *_NCCL_PREFIX,
        }
    ),
    EventKind.KERNEL: frozenset(
        {
            *_KERNEL_BASE,
            "aer_bit",
            "aer_device_id",
            "aer_driver",
            "aer_error",
            "aer_event",
            "aer_mask",
            "aer_reporter",
            "aer_severity",
            "aer_source",
            "aer_status",
            "aer_text",
            "aer_type",
            "detail",
            "error_code",
            "fault_address",
            "gpu_message",
            "gpu_uuid",
            "ip",
            "pci",
            "segfault_library",
            "signal",
            "sp",
            "trap",
        }
    ),
    EventKind.XID: frozenset({*_KERNEL_BASE, "channel", "pci", "xid", "xid_message"}),
    EventKind.OOM_KILL: frozenset(
        {
            *_KERNEL_BASE,
            "anon_rss_kb",
            "constraint",
            "file_rss_kb",
            "invoked_by",
            "kill_verb",
            "killed_line",
            "killed_pid",
            "memcg_limit_kb",
            "memcg_usage_kb",
            "oom_gfp_mask",
            "oom_memcg",
            "oom_oom_score_adj",
            "oom_order",
            "oom_score",
            "shmem_rss_kb",
            "task",
            "task_memcg",
            "total_vm_kb",
            "uid",
        }
    ),
    EventKind.OOPS: frozenset(
        {*_KERNEL_BASE, "frame_offsets", "frames", "kernel_version", "modules", "oops", "oops_kind", "tainted", "title"}
    ),
    EventKind.BACKTRACE: frozenset({*_FAULT, "frames"}),
    EventKind.CORE: frozenset({*_FAULT, "si_code"}),
    # parse/cuda_p2p.py: one run of p2pBandwidthLatencyTest (its matrices compared pair by pair) or
    # of simpleP2P (its check of the data a P2P copy carried)
    EventKind.P2P_TEST: frozenset(
        {
            "p2p_sample",
            "p2p_gpus",
            "p2p_matrices",
            "p2p_no_access",
            "p2p_complete",
            "p2p_pairs_checked",
            "p2p_slow_pairs",
            "p2p_pairs",
            "p2p_dev_a",
            "p2p_dev_b",
            "p2p_matrix",
            "p2p_enabled_gbps",
            "p2p_disabled_gbps",
            "p2p_ratio",
            "p2p_cuda_failure",
            "p2p_verification_errors",
            "p2p_result",
        }
    ),
    EventKind.VERSION: frozenset(
        {
            "cuda_dev",
            "cuda_driver_version",
            "cuda_version",
            "driver_version",
            "torch_version",
            *_NCCL_PREFIX,
            "skew",
            "component",
            "versions",
            "minority",
            # correlate/versions.py: torch built for a newer CUDA than the driver supports
            "cuda_gap",
            "crashed",
            "torch_cuda",
            "driver_cuda",
        }
    ),
}


def declared(kinds: Iterable[EventKind] | None = None) -> frozenset[str]:
    """The names a signature may select on for events of these kinds (all kinds when None)."""
    chosen = list(FIELDS) if kinds is None else list(kinds)
    out: set[str] = set(COMMON | ATTRIBUTES)
    for k in chosen:
        out |= FIELDS[k]
    return frozenset(out)


def undeclared(kind: EventKind, fields: Iterable[str]) -> list[str]:
    """The fields of an event of this kind that its declaration lacks."""
    allowed = FIELDS[kind] | COMMON
    return sorted(f for f in fields if f not in allowed)
