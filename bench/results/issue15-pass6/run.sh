#!/bin/sh
# The sixth pass's measurement: the core run of issue15-core/run.sh with
# more rounds (this machine's noise, the same binary ±30% from run to run,
# needs them) and with BenchmarkAssign anchored, so that rounds are not
# spent on BenchmarkAssignIndexed. Build base.test and final.test first
# (RUN.txt) into the current directory; results go to $R.
R=${R:-results}
mkdir -p $R
{ date; uptime; } > $R/start.txt

# interleave ROUNDS BENCHTIME SIZE: Assign from both binaries, the one that
# goes first alternating each round, then Floor under the same load.
interleave() {
	for round in $(seq "$1"); do
		pair="base final"
		[ $((round % 2)) = 0 ] && pair="final base"
		for bin in $pair; do
			./$bin.test -test.run '^$' -test.bench "^BenchmarkAssign\$/$3/" -test.benchtime "$2" >>$R/core-$bin.txt
		done
		./final.test -test.run '^$' -test.bench "^BenchmarkFloor\$/$3/" -test.benchtime "$2" >>$R/core-floor.txt
		{ date; uptime; } >>$R/progress.txt
	done
}
interleave 20 40x 'members=1000$/tasks=100000'
interleave 8 8x 'members=10000$/tasks=1000000'
{ date; uptime; } > $R/end.txt
