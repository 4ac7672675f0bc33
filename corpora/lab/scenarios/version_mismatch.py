"""version_mismatch: native code built against one version of a library and loaded with another.

- undefined symbol: a C extension (compiled with gcc at run time) is linked against a build of
  a library that has `fastops_fused_adam_v2`; the library the job loads is the older build
  without it -> the real `ImportError: ...: undefined symbol: fastops_fused_adam_v2`.
- torch extension: a C++ extension linked against a libc10.so that had a function torch's own
  libc10.so lacks (an extension built for another torch) -> undefined symbol: _ZN3c10...
- GLIBCXX: an extension linked against a libstdc++ that carries a newer symbol version than the
  system's libstdc++.so.6 -> the loader's "version `GLIBCXX_3.4.99' not found".
All under torchrun (every rank fails at import) or plain python.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig

from .. import NotReproduced, Variant, need_in, require_root_cause

NAME = "version_mismatch"
CATEGORY = "version_mismatch"
DESCRIPTION = "extensions with an undefined symbol / a missing GLIBCXX version, built with gcc at run time"
NEEDS = ("root", "unshare", "torch", "gcc")

LIB_OLD = "int fastops_version(void) { return 1; }\n"
LIB_NEW = LIB_OLD + "int fastops_fused_adam_v2(float *p, int n) { return n; }\n"
EXT_C = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
int fastops_fused_adam_v2(float *p, int n);
static PyObject *fused(PyObject *self, PyObject *args) { return PyLong_FromLong(fastops_fused_adam_v2(0, 0)); }
static PyMethodDef M[] = {{"fused_adam", fused, METH_NOARGS, ""}, {0}};
static struct PyModuleDef D = {PyModuleDef_HEAD_INIT, "_fastops", 0, -1, M};
PyMODINIT_FUNC PyInit__fastops(void) { return PyModule_Create(&D); }
"""
STUB_C10 = "namespace c10 { void warn_deprecated_fused_kernel(const char *) {} }\n"
EXT_TORCH = r"""
#include <Python.h>
namespace c10 { void warn_deprecated_fused_kernel(const char *); }
static PyObject *f(PyObject *, PyObject *) { c10::warn_deprecated_fused_kernel("x"); Py_RETURN_NONE; }
static PyMethodDef M[] = {{"fused_rmsnorm", f, METH_NOARGS, ""}, {nullptr}};
static struct PyModuleDef D = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, M};
PyMODINIT_FUNC PyInit__C(void) { return PyModule_Create(&D); }
"""
STUB_STDCXX = 'extern "C" void __lab_new_stdcxx_feature(void) {}\n'
STUB_STDCXX_MAP = "GLIBCXX_3.4.99 { global: __lab_new_stdcxx_feature; };\n"
EXT_GLIBCXX = r"""
#include <Python.h>
extern "C" void __lab_new_stdcxx_feature(void);
static PyObject *f(PyObject *, PyObject *) { __lab_new_stdcxx_feature(); Py_RETURN_NONE; }
static PyMethodDef M[] = {{"tokenize", f, METH_NOARGS, ""}, {nullptr}};
static struct PyModuleDef D = {PyModuleDef_HEAD_INIT, "_tok", nullptr, -1, M};
PyMODINIT_FUNC PyInit__tok(void) { return PyModule_Create(&D); }
"""

TRAIN = r"""
import os, sys, datetime
import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "ext"))


@record
def main():
    if "WORLD_SIZE" in os.environ:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
        print(f"rank {dist.get_rank()}: process group ready", flush=True)
    kind = os.environ.get("LAB_EXT", "fastops")
    if kind == "fastops":
        import _fastops
        _fastops.fused_adam()
    elif kind == "torchext":
        import fused_rmsnorm._C as C
        C.fused_rmsnorm()
    else:
        import _tok
        _tok.tokenize()
    print("extension loaded", flush=True)


if __name__ == "__main__":
    main()
"""

V = Variant
U = "version_mismatch.undefined_symbol"
A = "version_mismatch.abi_mismatch"
VARIANTS = [
    V("undefined-symbol-c-ext-python", U, dict(launcher="python", ext="fastops")),
    V(
        "undefined-symbol-c-ext-torchrun-3r-tee",
        U,
        dict(launcher="torchrun", nproc=3, logging="tee", ext="fastops"),
        first_rank=None,
    ),
    V(
        "undefined-symbol-torch-ext-torchrun-2r-redirects",
        U,
        dict(launcher="torchrun", nproc=2, logging="redirects", ext="torchext", rdzv="c10d"),
        first_rank=None,
        needs=("g++",),
    ),
    V("undefined-symbol-torch-ext-python", U, dict(launcher="python", ext="torchext"), needs=("g++",)),
    V(
        "glibcxx-version-torchrun-4r-console",
        A,
        dict(launcher="torchrun", nproc=4, logging="console", ext="glibcxx"),
        first_rank=None,
        needs=("g++",),
    ),
    V("glibcxx-version-python", A, dict(launcher="python", ext="glibcxx"), needs=("g++",)),
]


def _cc(ctx, args: list[str]) -> None:
    r = subprocess.run(args, cwd=ctx.tmp, capture_output=True, timeout=120)
    if r.returncode != 0:
        raise NotReproduced("build failed: " + " ".join(args) + "\n" + r.stderr.decode(errors="replace"))


def build(ctx, kind: str) -> dict:
    """Build the extension in ctx.tmp/build and install what the job loads into ctx.tmp/ext."""
    inc = sysconfig.get_paths()["include"]
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    b, e = ctx.tmp / "build", ctx.tmp / "ext"
    (b / "new").mkdir(parents=True)
    e.mkdir()
    env = {}
    if kind == "fastops":
        (b / "new" / "fastops.c").write_text(LIB_NEW)
        (b / "old.c").write_text(LIB_OLD)
        (b / "_fastops.c").write_text(EXT_C)
        _cc(ctx, ["gcc", "-shared", "-fPIC", "-o", "build/new/libfastops.so", "build/new/fastops.c"])
        _cc(ctx, ["gcc", "-shared", "-fPIC", "-o", "ext/libfastops.so", "build/old.c"])  # the one deployed
        _cc(
            ctx,
            [
                "gcc",
                "-shared",
                "-fPIC",
                f"-I{inc}",
                "-o",
                f"ext/_fastops{suffix}",
                "build/_fastops.c",
                "-Lbuild/new",
                "-lfastops",
                "-Wl,-rpath,$ORIGIN",
            ],
        )
    elif kind == "torchext":
        import torch

        tlib = os.path.join(os.path.dirname(torch.__file__), "lib")
        (b / "c10.cpp").write_text(STUB_C10)
        (b / "ext.cpp").write_text(EXT_TORCH)
        (e / "fused_rmsnorm").mkdir()
        (e / "fused_rmsnorm" / "__init__.py").write_text("")
        _cc(ctx, ["g++", "-shared", "-fPIC", "-Wl,-soname,libc10.so", "-o", "build/new/libc10.so", "build/c10.cpp"])
        _cc(
            ctx,
            [
                "g++",
                "-shared",
                "-fPIC",
                f"-I{inc}",
                "-o",
                f"ext/fused_rmsnorm/_C{suffix}",
                "build/ext.cpp",
                "-Lbuild/new",
                "-lc10",
                f"-Wl,-rpath,{tlib}",
            ],
        )
    else:
        (b / "stdcxx.cpp").write_text(STUB_STDCXX)
        (b / "stdcxx.map").write_text(STUB_STDCXX_MAP)
        (b / "tok.cpp").write_text(EXT_GLIBCXX)
        _cc(
            ctx,
            [
                "g++",
                "-shared",
                "-fPIC",
                "-Wl,-soname,libstdc++.so.6",
                "-Wl,--version-script=build/stdcxx.map",
                "-o",
                "build/new/libstdc++.so.6",
                "build/stdcxx.cpp",
            ],
        )
        os.symlink("libstdc++.so.6", b / "new" / "libstdc++.so")
        _cc(ctx, ["g++", "-shared", "-fPIC", f"-I{inc}", "-o", f"ext/_tok{suffix}", "build/tok.cpp", "-Lbuild/new", "-lstdc++"])
    return env


def run(ctx, v: Variant):
    p = v.params
    build(ctx, p["ext"])
    ctx.write("train.py", TRAIN)
    env = ctx.env(LAB_EXT=p["ext"])
    if p["launcher"] == "torchrun":
        cmd = [*ctx.launch(p["nproc"], p.get("logging", "console"), p.get("rdzv", "standalone")), "train.py"]
    else:
        cmd = [sys.executable, "train.py"]
    res = ctx.run(ctx.ns(cmd), timeout=120, env=env)
    if res.timed_out:
        raise NotReproduced("timed out")
    ctx.save_text("console.log", res.output)
    ctx.save_tree("logs", ctx.tmp / "logs")
    alltext = "\n".join(b.decode(errors="replace") for b in ctx.saved.values())
    need_in(alltext, r"undefined symbol|version `GLIBCXX_[\d.]+' not found")
    ctx.notes.append(
        {
            "fastops": "extension linked against libfastops.so with fastops_fused_adam_v2; "
            "the deployed libfastops.so is the older build without it",
            "torchext": "C++ extension linked against another libc10.so than the loaded torch's",
            "glibcxx": "extension linked against a libstdc++.so.6 with GLIBCXX_3.4.99; the system libstdc++.so.6 is loaded",
        }[p["ext"]]
    )
    if p["launcher"] == "torchrun":
        return require_root_cause(res.output)
    return {"rank": v.first_rank, "host": v.first_host}
