"""python -m corpora.lab list | run SCENARIO [--variant N] | run --all"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import time
import traceback

from . import LAB_DIR, Ctx, NotReproduced, Skip, check_needs, write_case
from . import scenarios as _scen_pkg


def load_scenarios() -> dict:
    mods = {}
    for info in sorted(pkgutil.iter_modules(_scen_pkg.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{_scen_pkg.__name__}.{info.name}")
        if hasattr(mod, "VARIANTS") and hasattr(mod, "run"):
            mods[mod.NAME] = mod
    return mods


def case_id(mod, n: int) -> str:
    return f"lab-{mod.NAME.replace('_', '-')}-{n:03d}"


def case_root(mod):
    """Where a scenario's cases go: corpora/lab/, or the corpus its module names in CORPUS
    (e.g. "healthy": corpora/healthy/)."""
    corpus = getattr(mod, "CORPUS", None)
    return LAB_DIR.parent / corpus if corpus else LAB_DIR


def run_one(mod, n: int) -> str:
    variant = mod.VARIANTS[n - 1]
    cid = case_id(mod, n)
    category = variant.category or mod.CATEGORY
    t0 = time.monotonic()
    try:
        check_needs(tuple(mod.NEEDS) + tuple(variant.needs))
    except Skip as e:
        print(f"SKIP  {cid} ({variant.slug}): {e}")
        return "skip"
    ctx = Ctx(mod.NAME, variant)
    try:
        ff = mod.run(ctx, variant)
        dest = write_case(cid, category, variant, ctx, mod.NAME, ff, dest_root=case_root(mod))
        size = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
        print(
            f"OK    {cid} ({variant.slug}) -> {dest.relative_to(LAB_DIR.parent.parent)} "
            f"[{size} bytes, {time.monotonic() - t0:.0f}s]"
        )
        return "ok"
    except Skip as e:
        print(f"SKIP  {cid} ({variant.slug}): {e}")
        return "skip"
    except NotReproduced as e:
        print(f"FAIL  {cid} ({variant.slug}): not reproduced: {e}")
        return "fail"
    except Exception:  # noqa: BLE001
        print(f"ERROR {cid} ({variant.slug}):")
        traceback.print_exc()
        return "fail"
    finally:
        ctx.cleanup()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m corpora.lab", description="Reproduce training-job failures for real and save them as lab cases."
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="list scenarios and their variants")
    rp = sub.add_parser("run", help="run a scenario (all its variants, or one) or --all")
    rp.add_argument("scenario", nargs="?")
    rp.add_argument("--variant", type=int, action="append", help="1-based variant number (repeatable); default: all variants")
    rp.add_argument("--all", action="store_true", help="regenerate every case of every scenario")
    args = ap.parse_args(argv)
    mods = load_scenarios()

    if args.cmd == "list":
        for name, mod in mods.items():
            needs = ", ".join(mod.NEEDS) or "-"
            where = f"  -> corpora/{mod.CORPUS}/" if getattr(mod, "CORPUS", None) else ""
            print(f"{name}  [{mod.CATEGORY}]  needs: {needs}{where}")
            print(f"    {mod.DESCRIPTION}")
            for i, v in enumerate(mod.VARIANTS, 1):
                extra = f" (+{', '.join(v.needs)})" if v.needs else ""
                print(f"    {i:>2}  {case_id(mod, i)}  {v.subcategory or '-'}  {v.slug}{extra}")
        return 0

    if args.all:
        todo = [(m, i) for m in mods.values() for i in range(1, len(m.VARIANTS) + 1)]
    elif args.scenario:
        if args.scenario not in mods:
            ap.error(f"unknown scenario {args.scenario!r}; known: {', '.join(mods)}")
        mod = mods[args.scenario]
        nums = args.variant or list(range(1, len(mod.VARIANTS) + 1))
        for n in nums:
            if not 1 <= n <= len(mod.VARIANTS):
                ap.error(f"{args.scenario} has variants 1..{len(mod.VARIANTS)}")
        todo = [(mod, n) for n in nums]
    else:
        ap.error("run needs a SCENARIO or --all")
    counts = {"ok": 0, "skip": 0, "fail": 0}
    for mod, n in todo:
        counts[run_one(mod, n)] += 1
    print(f"done: {counts['ok']} ok, {counts['skip']} skipped, {counts['fail']} failed")
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
