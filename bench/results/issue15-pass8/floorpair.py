"""floorpair.py DIR...: per benchmark of BenchmarkAssign in DIR/core-final.txt,
the median over rounds of Assign/Floor, each round's Assign against the
BenchmarkFloor run right after it (issue15-core/run.sh runs them back to
back, so a ratio cancels most of the load that drifts between rounds), with
the lowest and highest round and the ratio of the medians."""
import collections, re, statistics, sys

def rounds(path, bench):
    d = collections.defaultdict(list)
    for line in open(path):
        p = line.split()
        if p and p[0].startswith(bench + '/') and 'cpu-ns/op' in p:
            d[re.sub(r'^Benchmark\w+/|-\d+$', '', p[0])].append(float(p[p.index('cpu-ns/op') - 1]))
    return d

assign, floor = collections.defaultdict(list), collections.defaultdict(list)
for run in sys.argv[1:]:
    for name, xs in rounds(run + '/core-final.txt', 'BenchmarkAssign').items():
        assign[name] += xs
    for name, xs in rounds(run + '/core-floor.txt', 'BenchmarkFloor').items():
        floor[name] += xs
print('| benchmark | median of paired Assign/Floor | lowest | highest | Assign/Floor (medians) | n |')
print('|---|---:|---:|---:|---:|---:|')
for name in assign:
    r = [a / f for a, f in zip(assign[name], floor[name])]
    print(f'| {name} | {statistics.median(r):.2f} | {min(r):.2f} | {max(r):.2f} | '
          f'{statistics.median(assign[name]) / statistics.median(floor[name]):.2f} | {len(r)} |')
