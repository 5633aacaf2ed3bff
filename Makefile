# The two commands of the README, and a few parts of them.
.PHONY: demo test check setup install start stop regress bench

## make demo [CORPUS=file]: throwaway cluster, real corpus, near-duplicates.
demo:
	bash scripts/demo.sh $(CORPUS)

## make test: every test (what CI runs).
test:
	bash scripts/test.sh

## make check [SIMHASH_PG=16]: lint, core tests, install and the SQL
## regression files on one PostgreSQL version (the fast tier of make test).
check:
	bash scripts/check.sh

setup:
	bash scripts/setup.sh
install:
	bash scripts/install.sh
start:
	bash scripts/cluster.sh start
stop:
	bash scripts/cluster.sh stop
regress:
	bash scripts/regress.sh
bench:
	bash bench/throughput.sh
