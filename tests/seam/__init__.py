"""tests/seam: the record of every command's public behaviour, and its replay (issue 35).

Every subcommand runs in-process (typer's CliRunner, streams kept apart) on the examples, the
convert goldens, generated fleets and the fake API server's clusters; each run's argv, exit code,
stdout, stderr and every file it wrote are stored in tests/seam/record/ and compared on replay
(tests/seam/test_seam.py). Volatile values are masked by the short list in masks.py, nothing else.

    python -m tests.seam record   # re-record after an intended change (say why in the commit)
    python -m tests.seam tree     # the 10,000-file tree: audit/convert hashes vs record/tree.json
"""
