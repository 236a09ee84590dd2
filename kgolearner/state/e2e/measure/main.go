// Command measure runs the end-to-end measurement of package e2e with every
// strategy and prints the table (see the README of kgolearner/state):
//
//	go run ./e2e/measure            # the size: 4 members, 48 tasks, bbolt stores
//	go run ./e2e/measure -small     # the size the tests run
//	go run ./e2e/measure -disk=     # stores in memory, not in bbolt files
//	go run ./e2e/measure -keys 200000 -values 100 -session 1s   # another size, another session timeout
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"runtime/pprof"
	"time"

	"github.com/learnerassignor/learner/kgolearner/state/e2e"
)

func main() {
	small := flag.Bool("small", false, "run the small configuration of the tests")
	keys := flag.Int("keys", 0, "ballast keys per task (0: the configuration's)")
	values := flag.Int("values", 0, "bytes of each ballast value (0: the configuration's)")
	session := flag.Duration("session", 0, "session timeout (0: the configuration's)")
	only := flag.String("strategy", "", "run only the strategy of this name")
	disk := flag.String("disk", os.TempDir(), "keep the stores in bbolt files in a fresh directory under `DIR`; empty: in memory")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	cfg := e2e.Full
	if *small {
		cfg = e2e.Small
	}
	cfg.Disk = *disk
	if *keys > 0 {
		cfg.KeysPerTask = *keys
	}
	if *values > 0 {
		cfg.ValueBytes = *values
	}
	if *session > 0 {
		cfg.Session = *session
	}
	start := time.Now()
	cfg.Log = func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "%6.1fs "+format+"\n", append([]any{time.Since(start).Seconds()}, args...)...)
	}
	stores := "in memory"
	if cfg.Disk != "" {
		stores = "in bbolt files"
	}
	fmt.Printf("members %d, tasks %d, state %d keys x %d B a task (%s), %d records/s, session %v, leave deadline %v, stalls under %v not counted\n\n",
		cfg.Members, cfg.Tasks, cfg.KeysPerTask, cfg.ValueBytes, stores, cfg.Rate, cfg.Session, cfg.Deadline, cfg.Grace)
	var results []e2e.Result
	for _, s := range e2e.Strategies {
		if *only != "" && s.Name != *only {
			continue
		}
		res, err := e2e.Run(context.Background(), cfg, s)
		if err != nil {
			pprof.StopCPUProfile() // log.Fatalf skips the deferred stop, which writes the profile out
			log.Fatalf("%s: %v", s.Name, err)
		}
		results = append(results, res)
	}
	e2e.Table(os.Stdout, results)
}
