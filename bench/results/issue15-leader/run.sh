#!/bin/sh
# Interleaved runs of the base (main) and final (perfleader) binaries of the
# Kafka leader's benchmarks, the order alternating each round; CPU time per
# op is what the tables use. Build the binaries first (see RUN.txt) into the
# current directory; results go to $R.
R=${R:-results}
mkdir -p $R
{ date; uptime; } > $R/start.txt
order() { if [ $(($1 % 2)) = 1 ]; then echo "base final"; else echo "final base"; fi; }
for round in 1 2 3 4 5; do
  for bin in $(order $round); do
    ./kgo_$bin.test -test.run '^$' -test.bench 'LeaderRebalance' -test.benchtime 5x >> $R/leader-$bin.txt
    ./wire_$bin.test -test.run '^$' -test.bench 'WireDecodeMember' -test.benchtime 20x >> $R/wire-$bin.txt
  done
  { date; uptime; } >> $R/progress.txt
done
for round in 1 2 3 4 5; do
  for bin in $(order $round); do
    ./fg_$bin.test -test.run '^$' -test.bench 'Balance' -test.benchtime 5x >> $R/franzgo-$bin.txt
  done
  { date; uptime; } >> $R/progress.txt
done
{ date; uptime; } > $R/end.txt
