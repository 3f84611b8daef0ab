# The two commands of the README. Both install what they need first (scripts/setup.sh).
.PHONY: setup demo test bench

setup:
	bash scripts/setup.sh

demo: setup
	.venv/bin/maskscore demo --out out/demo

# Two test processes, a whole file each (--dist loadfile keeps a file's module fixtures in one):
# the suite takes about half the time of one process on two cores, and memory stays near 6 GB.
test: setup
	.venv/bin/python -m pytest -q -n 2 --dist loadfile

bench: setup
	.venv/bin/python benchmarks/run_all.py
