"""Triage: many run dirs at once. A parallel map of `analyze()` (local pool or Dask), stable
fingerprints and groups (mined templates for `unknown` jobs), a history database, tickets."""
