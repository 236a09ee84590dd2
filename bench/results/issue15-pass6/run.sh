#!/bin/sh
# The sixth pass's third run: issue15-core/run.sh with more rounds (this
# machine's noise, the same binary ±30% from run to run, needs them), the
# benchmarks anchored so that rounds are not spent on BenchmarkAssignIndexed,
# and no RSS runs (rss.txt has them, anchored). Build base.test and
# final.test first (RUN.txt); results go to $R.
ROUNDS1K=20 ROUNDS10K=8 ASSIGN='^BenchmarkAssign$' FLOOR='^BenchmarkFloor$' RSS=no exec sh "$(dirname "$0")/../issue15-core/run.sh"
