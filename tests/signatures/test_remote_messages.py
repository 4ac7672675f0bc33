"""What a job's downloads, remote calls and CUDA math libraries print, through the whole analysis.

The lines are in the formats of the emitters' own sources (urllib3/requests, huggingface_hub and
transformers' hub module, botocore, gRPC statuses as TensorFlow and jaxlib raise them, PyTorch's
cuSOLVER check); hosts, ids and addresses are placeholders.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.pipeline import analyze

from ..conftest import traceback_of, write_run

HUB_RETRY = (
    "'(MaxRetryError(\"HTTPSConnectionPool(host='huggingface.co', port=443): Max retries exceeded with url: "
    "/gpt2/resolve/main/config.json (Caused by NewConnectionError('<urllib3.connection.HTTPSConnection object at "
    "0x7f5e4d3c2b10>: Failed to establish a new connection: [Errno 101] Network is unreachable'))\"), "
    "'(Request ID: 3f6c1a2b)')' thrown while requesting HEAD https://huggingface.co/gpt2/resolve/main/config.json\n"
    "Retrying in 1s [Retry 1/5].\n"
)


CASES = {
    "hub_unreachable": (
        "huggingface_hub.errors.LocalEntryNotFoundError: An error happened while trying to locate the file on the "
        "Hub and we cannot find the requested files in the local cache. Please check your connection and try again "
        "or make sure your Internet connection is on.",
        "network",
        "network.model_hub_unreachable",
    ),
    "requests_connect_timeout": (
        "requests.exceptions.ConnectTimeout: HTTPSConnectionPool(host='huggingface.co', port=443): Max retries "
        "exceeded with url: /api/models/gpt2 (Caused by ConnectTimeoutError(<urllib3.connection.HTTPSConnection "
        "object at 0x7f0a1b2c3d40>, 'Connection to huggingface.co timed out. (connect timeout=10)'))",
        "network",
        "network.http_connection_failed",
    ),
    "s3_endpoint": (
        'botocore.exceptions.EndpointConnectionError: Could not connect to the endpoint URL: "https://my-bucket.s3.'
        'us-west-2.amazonaws.com/ckpt/step_1000/model.safetensors"',
        "network",
        "network.object_store_unreachable",
    ),
    "grpc_unreachable": (
        "jaxlib.xla_extension.XlaRuntimeError: UNAVAILABLE: failed to connect to all addresses; last error: UNKNOWN: "
        "ipv4:10.128.0.5:8476: Failed to connect to remote host: Connection refused",
        "network",
        "network.grpc_connect_failed",
    ),
    "offline_cache_miss": (
        "huggingface_hub.errors.LocalEntryNotFoundError: Cannot find the requested files in the disk cache and "
        "outgoing traffic has been disabled. To enable hf.co look-ups and downloads online, set 'local_files_only' "
        "to False.",
        "user_code",
        "user_code.hub_files_unavailable",
    ),
    "jax_cuda_too_old": (
        "RuntimeError: Found cuSOLVER version 11405, but JAX was built against version 11502, which is newer. The "
        "copy of cuSOLVER that is installed must be at least as new as the version against which JAX was built.",
        "version_mismatch",
        "version_mismatch.jax_cuda_component_mismatch",
    ),
    "cusparse_arch": (
        "RuntimeError: CUDA error: architecture mismatch when calling `cusparseCreate(handle)`",
        "version_mismatch",
        "version_mismatch.cuda_library_arch_mismatch",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_remote_or_library_failure_names_its_cause(tmp_path: Path, name: str) -> None:
    exc_line, category, signature = CASES[name]
    report = analyze(write_run(tmp_path, {"train.log": HUB_RETRY + traceback_of(exc_line)}))
    assert report.verdict.category.value == category
    assert signature in report.verdict.signatures
    roots = [e for e in report.evidence if e.role.value == "root_cause"]
    assert roots and roots[0].text == exc_line


def test_retries_that_succeeded_are_no_failure(tmp_path: Path) -> None:
    log = (
        HUB_RETRY + "WARNING:urllib3.connectionpool:Retrying (Retry(total=4, connect=None, read=None, redirect=None, "
        "status=None)) after connection broken by 'NewConnectionError('<urllib3.connection.HTTPSConnection object at "
        "0x7f1c2d3e4f50>: Failed to establish a new connection: [Errno 111] Connection refused')': /simple/torch/\n"
        "epoch 1 loss 2.31\nepoch 2 loss 1.98\ntraining finished\n"
    )
    report = analyze(write_run(tmp_path, {"train.log": log}))
    assert report.verdict.category.value == "none"
    assert not report.evidence or all(e.role.value != "root_cause" for e in report.evidence)


@pytest.mark.parametrize(
    "exc_line",
    [
        "RuntimeError: cusolver error: CUSOLVER_STATUS_INTERNAL_ERROR, when calling `cusolverDnCreate(handle)`. If "
        "you keep seeing this error, you may use `torch.backends.cuda.preferred_linalg_library()` to try linear "
        "algebra operators with other supported backends.",
        "RuntimeError: CUDA NVRTC error: NVRTC_ERROR_COMPILATION",
    ],
)
def test_a_library_status_that_names_no_cause_is_not_a_program_bug(tmp_path: Path, exc_line: str) -> None:
    report = analyze(write_run(tmp_path, {"train.log": traceback_of(exc_line)}))
    assert report.verdict.category.value == "unknown"
    assert "user_code.python_exception" not in report.verdict.signatures


def test_a_server_error_of_the_hub_is_the_remote_service_not_the_program(tmp_path: Path) -> None:
    # the request reached the service and the service failed it (HTTP 5xx): the job's remote
    # dependency failed, network.remote_service, not a bug of the program that made the request
    exc_line = (
        "huggingface_hub.errors.HfHubHTTPError: 500 Server Error: Internal Server Error for url: "
        "https://huggingface.co/api/datasets/c4/paths-info/main (Request ID: Root=1-65a1b2c3)"
    )
    report = analyze(write_run(tmp_path, {"train.log": traceback_of(exc_line)}))
    assert report.verdict.category.value == "network"
    assert "network.http_server_error" in report.verdict.signatures
    assert "user_code.python_exception" not in report.verdict.signatures
