#!/bin/sh
# Interleaved runs of the base (main) and final (perf) binaries, the order
# alternating each round; CPU time per op is what the tables use. Build the
# binaries first (see RUN.txt) into the current directory; results go to $R.
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
    ./$bin.test -test.run '^$' -test.bench 'Assign/members=10000/tasks=1000000/' -test.benchtime 3x >> $R/core-$bin.txt
  done
  ./final.test -test.run '^$' -test.bench 'Floor/members=10000/tasks=1000000/' -test.benchtime 3x >> $R/core-floor.txt
  { date; uptime; } >> $R/progress.txt
done
for round in 1 2 3; do
  for bin in $(order $round); do
    ./kgo_$bin.test -test.run '^$' -test.bench 'LeaderRebalance' -test.benchtime 5x >> $R/leader-$bin.txt
  done
  { date; uptime; } >> $R/progress.txt
done
for round in 1 2 3; do
  for bin in $(order $round); do
    ./fg_$bin.test -test.run '^$' -test.bench 'Balance' -test.benchtime 5x >> $R/franzgo-$bin.txt
  done
  { date; uptime; } >> $R/progress.txt
done
for bin in base final; do
  /usr/bin/time -f "$bin Assign 10000x1000000 scale-up -benchtime=5x: %M KB maxrss" ./$bin.test -test.run '^$' -test.bench 'Assign/members=10000/tasks=1000000/event=scale-up$' -test.benchtime 5x >> $R/rss.txt 2>&1
  /usr/bin/time -f "$bin Assign 10000x1000000 scale-up -benchtime=1x: %M KB maxrss" ./$bin.test -test.run '^$' -test.bench 'Assign/members=10000/tasks=1000000/event=scale-up$' -test.benchtime 1x >> $R/rss.txt 2>&1
done
/usr/bin/time -f "final Floor 10000x1000000 scale-up -benchtime=1x (the input, built and read once): %M KB maxrss" ./final.test -test.run '^$' -test.bench 'Floor/members=10000/tasks=1000000/event=scale-up$' -test.benchtime 1x >> $R/rss.txt 2>&1
{ date; uptime; } > $R/end.txt
