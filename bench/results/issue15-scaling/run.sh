#!/bin/sh
# run.sh: how Assign and Floor grow from 1,000 x 100,000 to 10,000 x
# 1,000,000, with the garbage collector on (GOGC=100) and off (GOGC=off),
# ROUNDS rounds (24), each running every combination once in the same order.
# Build final.test first (RUN.txt); results go to $R (results). BENCHES
# (Assign Floor) and GCS (100 off) choose the benchmarks and collector
# settings.
R=${R:-results}
mkdir -p $R
{ date; uptime; } > $R/start.txt
for round in $(seq "${ROUNDS:-24}"); do
	for gc in ${GCS:-100 off}; do
		for b in ${BENCHES:-Assign Floor}; do
			GOGC=$gc ./final.test -test.run '^$' -test.bench "^Benchmark$b\$/members=1000\$/tasks=100000/" -test.benchtime 40x |
				sed -n "s/^Benchmark/gc=$gc round=$round Benchmark/p" >>$R/scaling.txt
			GOGC=$gc ./final.test -test.run '^$' -test.bench "^Benchmark$b\$/members=10000\$/tasks=1000000/" -test.benchtime 8x |
				sed -n "s/^Benchmark/gc=$gc round=$round Benchmark/p" >>$R/scaling.txt
		done
	done
	{ date; uptime; } >>$R/progress.txt
done
{ date; uptime; } > $R/end.txt
