#!/bin/sh
# cg10.sh BIN EVENT SIZE N: cg.sh (../issue15-pass6/cachegrind) with a last-level cache of 8 MB, as
# the 10,000 x 1,000,000 working set overflows a machine's second level (2 MB a core here), not
# cachegrind's default last level (the host's 300 MB third level). Otherwise as cg.sh:
# cachegrind of N calls of BenchmarkAssign (BenchmarkFloor
# when BIN ends in :floor) of ./BIN.test at SIZE and EVENT, one P (GOMAXPROCS=1,
# so that valgrind, which runs one thread at a time, does not spin the
# scheduler); prints BIN EVENT SIZE N instructions D1-misses LLd-misses.
# per.py takes the difference of two N (5 and 25), which leaves one call's
# cost without the setup's. Run from the directory holding the binaries:
#   for ev in stable scale-up scale-down crash promote standbys=1; do
#     for b in base final final:floor; do for n in 5 25; do echo "$b $ev $n"; done; done
#   done | xargs -P 2 -L 1 sh -c 'cachegrind/cg.sh $0 $1 "members=1000\$/tasks=100000" $2' > cg1k.txt
bin=$1; ev=$2; size=$3; n=$4; bench=Assign
case $bin in *:floor) bin=${bin%:floor}; bench=Floor;; esac
GOMAXPROCS=1 valgrind --tool=cachegrind --cache-sim=yes --LL=8388608,16,64 --cachegrind-out-file=/dev/null ./$bin.test -test.run '^$' -test.bench "^Benchmark$bench\$/$size/event=$ev\$" -test.benchtime ${n}x 2>&1 >/dev/null |
	awk -v tag="$1 $ev $size $n" '/I +refs/{gsub(",","",$4); ir=$4} /D1  misses/{gsub(",","",$4); d1=$4} /LLd misses/{gsub(",","",$4); ll=$4} END{print tag, ir, d1, ll}'
