"""scaling.py cg.txt: per event, one call's instructions and last-level
data misses (cachegrind, last level 8 MB, collector off) at 1,000 x 100,000
and 10,000 x 1,000,000, for Assign and Floor, and their growth. One call is
the difference of two runs of cg10.sh over the difference of their call
counts (25 less 5 at the small size, 5 less 1 at the big), which leaves out
the setup's cost."""
import sys

d = {}
for line in open(sys.argv[1]):
    b, ev, size, n, ir, d1, ll = line.split()
    d[(b, ev, size.split('$')[0], int(n))] = (int(ir), int(ll))


def per(b, ev, size, lo, hi):
    a, c = d[(b, ev, size, hi)], d[(b, ev, size, lo)]
    return [(x - y) / (hi - lo) for x, y in zip(a, c)]


print('| event | Assign instructions 1k | 10k | growth | Floor growth | Assign LL misses 1k | 10k | Floor LL misses 1k | 10k |')
print('|---|---:|---:|---:|---:|---:|---:|---:|---:|')
for ev in ['stable', 'scale-up', 'scale-down', 'crash', 'promote', 'standbys=1']:
    a1, a10 = per('final', ev, 'members=1000', 5, 25), per('final', ev, 'members=10000', 1, 5)
    f1, f10 = per('final:floor', ev, 'members=1000', 5, 25), per('final:floor', ev, 'members=10000', 1, 5)
    print(f'| {ev} | {a1[0] / 1e6:.1f} M | {a10[0] / 1e6:.1f} M | {a10[0] / a1[0]:.2f}x | {f10[0] / f1[0]:.2f}x '
          f'| {a1[1] / 1e3:.1f} k | {a10[1] / 1e3:.0f} k | {f1[1] / 1e3:.1f} k | {f10[1] / 1e3:.0f} k |')
