#!/bin/sh
# Interleaved runs of the core benchmarks of base (main) and final (this
# branch). Build the binaries first (see RUN.txt) into the current
# directory; results go to $R. ROUNDS1K and ROUNDS10K set the rounds at
# each size (6 and 3), ASSIGN and FLOOR the benchmark patterns' first parts
# (Assign, which also runs BenchmarkAssignIndexed, and Floor; anchored,
# ^BenchmarkAssign$ runs it alone), and RSS=no skips the peak-RSS runs; the
# defaults are the earlier passes'.
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
			./$bin.test -test.run '^$' -test.bench "${ASSIGN:-Assign}/$3/" -test.benchtime "$2" >>$R/core-$bin.txt
		done
		./final.test -test.run '^$' -test.bench "${FLOOR:-Floor}/$3/" -test.benchtime "$2" >>$R/core-floor.txt
		{ date; uptime; } >>$R/progress.txt
	done
}
interleave "${ROUNDS1K:-6}" 40x 'members=1000$/tasks=100000'
interleave "${ROUNDS10K:-3}" 8x 'members=10000/tasks=1000000'
[ "${RSS:-yes}" = no ] && { { date; uptime; } > $R/end.txt; exit 0; }

# The RSS runs name each benchmark exactly: peak RSS is the whole
# process's, and "Assign/..." also matches BenchmarkAssignIndexed, which
# then runs after Assign in the same process; its untimed setup (an
# ID-to-index map of every task) peaked 50 MB above Assign's call in the
# fifth pass of issue 15, so rss.txt recorded that instead of Assign.
for bin in base final; do
	/usr/bin/time -f "$bin Assign 10000x1000000 scale-up -benchtime=1x: %M KB maxrss" \
		./$bin.test -test.run '^$' -test.bench '^BenchmarkAssign$/members=10000/tasks=1000000/event=scale-up$' -test.benchtime 1x >>$R/rss.txt 2>&1
	/usr/bin/time -f "$bin Assign 10000x1000000 scale-up -benchtime=5x: %M KB maxrss" \
		./$bin.test -test.run '^$' -test.bench '^BenchmarkAssign$/members=10000/tasks=1000000/event=scale-up$' -test.benchtime 5x >>$R/rss.txt 2>&1
done
/usr/bin/time -f "final Floor 10000x1000000 scale-up -benchtime=1x (the input, built and read once): %M KB maxrss" \
	./final.test -test.run '^$' -test.bench '^BenchmarkFloor$/members=10000/tasks=1000000/event=scale-up$' -test.benchtime 1x >>$R/rss.txt 2>&1
{ date; uptime; } > $R/end.txt
