"""`python -m tests.golden [--update]`: compare (or rewrite) every golden output."""

from __future__ import annotations

import os
import sys
import tempfile

from tests.golden import REPO, cases, model_with_taxonomy_categories, schema_with_taxonomy_enums


def main(argv: list[str]) -> int:
    update = "--update" in argv
    os.environ.setdefault("XDG_CACHE_HOME", tempfile.mkdtemp(prefix="postmortem-golden-cache-"))
    from analyzer.paths import report_schema_path

    stale = []
    schema = schema_with_taxonomy_enums()
    if report_schema_path().read_text(encoding="utf-8") != schema:
        stale.append(report_schema_path())
        if update:
            report_schema_path().write_text(schema, encoding="utf-8")
    model = REPO / "analyzer" / "model" / "__init__.py"
    text = model_with_taxonomy_categories()
    if model.read_text(encoding="utf-8") != text:
        stale.append(model)
        if update:
            model.write_text(text, encoding="utf-8")
    for _name, path, make in cases():
        text = make()
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            stale.append(path)
            if update:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
    for path in stale:
        print(("updated " if update else "differs: ") + path.relative_to(REPO).as_posix())
    return 0 if update or not stale else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
