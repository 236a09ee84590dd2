"""summarize.py FILE: per event and collector setting, the time at 10,000 x
1,000,000 over the time at 1,000 x 100,000 (CPU time) for Assign and the
other benchmarks in FILE (Floor, FloorRead), with the collector settings in it:
the ratio of the medians, and the median, lowest and highest of each
round's own ratio (the two sizes run minutes apart within a round)."""
import collections, re, statistics, sys

runs = collections.defaultdict(dict)  # (gc, bench, size, event) -> {round: cpu-ns/op}
for line in open(sys.argv[1]):
    p = line.split()
    m = re.match(r'Benchmark(\w+)/members=(\d+)/tasks=\d+/event=(\S+?)-\d+$', p[2])
    runs[(p[0], m.group(1), m.group(2), m.group(3))][p[1]] = float(p[p.index('cpu-ns/op') - 1])

benches = sorted({k[1] for k in runs}, key=['Assign', 'Floor', 'FloorRead'].index)
print('| collector | event | Assign 1k ms | Assign 10k ms | ' + ' | '.join(f'{b} 10k/1k | paired (low-high)' for b in benches) + ' |')
print('|---|---|' + '---:|' * (2 + 2 * len(benches)))
events = sorted({k[3] for k in runs}, key=['stable', 'scale-up', 'scale-down', 'crash', 'promote', 'standbys=1'].index)
for gc in sorted({k[0] for k in runs}, key=['gc=100', 'gc=off'].index):
    for ev in events:
        row = [gc.replace('gc=', 'GOGC='), ev]
        for b in benches:
            small, big = runs[(gc, b, '1000', ev)], runs[(gc, b, '10000', ev)]
            paired = [big[r] / small[r] for r in small if r in big]
            if b == 'Assign':
                row += [f'{statistics.median(small.values()) / 1e6:.1f}', f'{statistics.median(big.values()) / 1e6:.0f}']
            row += [f'{statistics.median(big.values()) / statistics.median(small.values()):.1f}x',
                    f'{statistics.median(paired):.1f}x ({min(paired):.1f}-{max(paired):.1f})']
        print('| ' + ' | '.join(row) + ' |')
