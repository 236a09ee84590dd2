#!/bin/sh
# Interleaved runs of the core benchmarks of base (main) and final (this
# branch), the order alternating each round; Floor runs after each round
# under the same load. Build the binaries first (see RUN.txt) into the
# current directory; results go to $R.
R=${R:-results}
mkdir -p $R
{ date; uptime; } > $R/start.txt
order() { if [ $(($1 % 2)) = 1 ]; then echo "base final"; else echo "final base"; fi; }
for round in 1 2 3 4 5 6; do
  for bin in $(order $round); do
    ./$bin.test -test.run '^$' -test.bench 'Assign/members=1000$/tasks=100000/' -test.benchtime 40x >> $R/core-$bin.txt
  done
  ./final.test -test.run '^$' -test.bench 'Floor/members=1000$/tasks=100000/' -test.benchtime 40x >> $R/core-floor.txt
  { date; uptime; } >> $R/progress.txt
done
for round in 1 2 3; do
  for bin in $(order $round); do
    ./$bin.test -test.run '^$' -test.bench 'Assign/members=10000/tasks=1000000/' -test.benchtime 8x >> $R/core-$bin.txt
  done
  ./final.test -test.run '^$' -test.bench 'Floor/members=10000/tasks=1000000/' -test.benchtime 8x >> $R/core-floor.txt
  { date; uptime; } >> $R/progress.txt
done
for bin in base final; do
  /usr/bin/time -f "$bin Assign 10000x1000000 scale-up -benchtime=5x: %M KB maxrss" ./$bin.test -test.run '^$' -test.bench 'Assign/members=10000/tasks=1000000/event=scale-up$' -test.benchtime 5x >> $R/rss.txt 2>&1
done
{ date; uptime; } > $R/end.txt
