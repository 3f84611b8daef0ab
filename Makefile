# The two commands of the README. Both install what they need first (scripts/setup.sh).
.PHONY: setup demo test bench

setup:
	bash scripts/setup.sh

demo: setup
	.venv/bin/maskscore demo --out out/demo

test: setup
	.venv/bin/python -m pytest -q

bench: setup
	.venv/bin/python benchmarks/run_all.py
