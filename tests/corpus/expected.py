"""Corpus programs that do not yet run and match on gradviz, each with the first reason (usually the
first torch API gradviz lacks). tests/test_corpus.py marks them xfail(strict=True): when one starts
passing, the test fails until its line here is removed. Regenerate with:

    .venv/bin/python tests/corpus/status.py --write

(the status of every program against current gradviz; rewrites this file).
"""

XFAIL: dict[str, str] = {}
