"""`python -m tests.golden`: rewrite the golden reports from the current code."""

from tests.golden import regenerate

for path in regenerate():
    print(path.relative_to(path.parents[2]))
