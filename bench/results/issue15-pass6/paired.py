"""paired.py DIR...: for each benchmark in core-base.txt / core-final.txt of
the runs in DIR..., the median and minimum cpu-ns/op of each binary, and the
median of the per-round ratios final/base (round i of one file against round i
of the other: the two ran back to back, so a ratio cancels most of the load
that drifts between rounds)."""
import collections, statistics, sys

def rounds(path):
    d = collections.defaultdict(list)
    for line in open(path):
        p = line.split()
        if p and p[0].startswith('BenchmarkAssign/') and 'cpu-ns/op' in p:
            d[p[0]].append(float(p[p.index('cpu-ns/op') - 1]))
    return d

base, final = collections.defaultdict(list), collections.defaultdict(list)
ratios = collections.defaultdict(list)
for run in sys.argv[1:]:
    b, f = rounds(run + '/core-base.txt'), rounds(run + '/core-final.txt')
    for name in b:
        base[name] += b[name]
        final[name] += f[name]
        ratios[name] += [y / x for x, y in zip(b[name], f[name])]
print('| benchmark | base median | final median | final/base (medians) | median of paired final/base | base min | final min | n |')
print('|---|---:|---:|---:|---:|---:|---:|---:|')
for name in base:
    mb, mf = statistics.median(base[name]), statistics.median(final[name])
    print(f'| {name.removeprefix("BenchmarkAssign/").removesuffix("-2")} | {mb/1e6:.2f} | {mf/1e6:.2f} | {mf/mb:.2f} | '
          f'{statistics.median(ratios[name]):.2f} | {min(base[name])/1e6:.2f} | {min(final[name])/1e6:.2f} | {len(ratios[name])} |')
