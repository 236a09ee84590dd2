// Package franzgo benchmarks the learner assignor side by side with
// franz-go's sticky balancers on the problem both solve: spreading the
// partitions of a group's topics (every task stateless, no standbys) over its
// members. It is a module of its own so the core keeps its two dependencies;
// the package holds only tests:
//
//	cd bench/franzgo && go test -run='^$' -bench=. -count=5
package franzgo
