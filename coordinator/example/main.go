// Command example serves a coordinator.Coordinator over HTTP with JSON on
// loopback and runs worker goroutines that heartbeat it and run tasks, through
// a short group history: workers join, learn tasks and take them over, one
// leaves with a deadline, one crashes, and the coordinator fails over. It
// prints what happens and checks, as it goes, that no task ever runs on two
// workers at once.
//
//	go run ./coordinator/example            # about 30 s
//	go run ./coordinator/example -scale 0.3 # the same history, faster
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/coordinator"
)

func main() {
	scale := flag.Float64("scale", 1, "time scale of the history (0.3 runs it in about 10 s)")
	flag.Parse()
	if *scale < 0.05 || *scale > 10 {
		log.Fatalf("example: -scale %v out of range [0.05, 10]", *scale)
	}
	if err := run(os.Stdout, *scale); err != nil {
		log.Fatal(err)
	}
}

// timing of the history at scale 1.
type timing struct {
	scale                       float64
	session, interval, fence    time.Duration
	restoreBase, restorePerTask time.Duration
}

func (t timing) d(d time.Duration) time.Duration { return time.Duration(float64(d) * t.scale) }

func run(out io.Writer, scale float64) error {
	tm := timing{scale: scale, session: 2 * time.Second, interval: 250 * time.Millisecond, fence: 1500 * time.Millisecond,
		restoreBase: time.Second, restorePerTask: 750 * time.Millisecond}
	var tasks []learner.Task
	for i := 1; i <= 12; i++ {
		tasks = append(tasks, learner.Task{ID: fmt.Sprintf("T%d", i), Stateful: i <= 10})
	}
	start := time.Now()
	lg := &logger{out: out, start: start, scale: scale}
	cfg := coordinator.Config{SessionTimeout: tm.d(tm.session), HeartbeatInterval: tm.d(tm.interval), FreshGroup: true}
	srv, err := newServer(tasks, cfg, lg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("example: %w", err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: time.Second}
	go hs.Serve(ln)
	defer hs.Close()
	url := "http://" + ln.Addr().String() + "/heartbeat"
	lg.printf("coordinator listens on %s: %d tasks (T11, T12 stateless), session timeout %v, heartbeat every %v",
		url, len(tasks), cfg.SessionTimeout, cfg.HeartbeatInterval)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go srv.tickEvery(ctx, tm.d(100*time.Millisecond))

	w := &world{lg: lg, owner: map[string]string{}, downSince: map[string]time.Time{}}
	var wg sync.WaitGroup
	workers := map[string]*worker{}
	spawn := func(id string) {
		m, err := coordinator.NewMember(id)
		if err != nil {
			panic(err) // W1 to W6 are valid IDs
		}
		wk := &worker{m: m, url: url, tm: tm, w: w, lg: lg, tasks: tasks,
			client: &http.Client{Timeout: tm.d(tm.interval)}, crash: make(chan struct{}), leave: make(chan time.Time, 1)}
		workers[id] = wk
		wg.Add(1)
		go func() { defer wg.Done(); wk.run(ctx) }()
	}
	at := func(d time.Duration, what string, f func()) {
		time.Sleep(time.Until(start.Add(tm.d(d))))
		lg.printf("=== %s", what)
		f()
	}
	at(0, "W1, W2, W3 start", func() { spawn("W1"); spawn("W2"); spawn("W3") })
	at(4*time.Second, "W4 and W5 join", func() { spawn("W4"); spawn("W5") })
	at(12*time.Second, "W2 leaves, deadline 8s", func() { workers["W2"].leave <- time.Now().Add(tm.d(8 * time.Second)) })
	at(18*time.Second, "W3 crashes", func() { close(workers["W3"].crash) })
	at(22*time.Second, "the coordinator fails over: a new one, with no state, listens for a session timeout", func() {
		srv.failover(coordinator.Config{SessionTimeout: cfg.SessionTimeout, HeartbeatInterval: cfg.HeartbeatInterval})
	})
	at(23*time.Second, "W6 joins while the new coordinator listens: it gets tasks when the window closes", func() { spawn("W6") })
	at(32*time.Second, "end", func() {})
	cancel()
	wg.Wait()
	return w.summary(srv, len(tasks))
}

// logger prints timestamped lines, in history time (scale 1).
type logger struct {
	mu    sync.Mutex
	out   io.Writer
	start time.Time
	scale float64
}

func (l *logger) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.out, "%6.2fs  %s\n", time.Since(l.start).Seconds()/l.scale, fmt.Sprintf(format, args...))
}

// server serves one Coordinator: every call under one lock, time from the
// wall clock.
type server struct {
	mu         sync.Mutex
	c          *coordinator.Coordinator
	tasks      []learner.Task
	lg         *logger
	heartbeats int
	recovering bool // a failover's recovery window is not yet reported over
}

// noteRecovered reports the end of a recovery window; s.mu is held.
func (s *server) noteRecovered() {
	if s.recovering && !s.c.Recovering() {
		s.recovering = false
		s.lg.printf("coordinator: recovery window over; members %v rebuilt from their heartbeats", s.c.Members())
	}
}

func newServer(tasks []learner.Task, cfg coordinator.Config, lg *logger) (*server, error) {
	c, err := coordinator.New(tasks, cfg)
	if err != nil {
		return nil, err
	}
	return &server{c: c, tasks: tasks, lg: lg}, nil
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/heartbeat" {
		http.Error(w, "POST /heartbeat", http.StatusNotFound)
		return
	}
	var hb coordinator.Heartbeat
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&hb); err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody{Error: err.Error()})
		return
	}
	s.mu.Lock()
	s.heartbeats++
	resp, err := s.c.Heartbeat(time.Now(), hb)
	s.noteRecovered()
	s.mu.Unlock()
	switch {
	case errors.Is(err, coordinator.ErrFenced):
		writeJSON(w, http.StatusConflict, errorBody{Error: err.Error(), Fenced: true})
	case err != nil:
		writeJSON(w, http.StatusBadRequest, errorBody{Error: err.Error()})
	default:
		writeJSON(w, http.StatusOK, resp)
	}
}

type errorBody struct {
	Error  string `json:"error"`
	Fenced bool   `json:"fenced,omitempty"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func (s *server) tickEvery(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s.mu.Lock()
			gone := s.c.Tick(now)
			s.noteRecovered()
			s.mu.Unlock()
			if len(gone) > 0 {
				s.lg.printf("coordinator: session of %s expired; its tasks are ownerless", strings.Join(gone, ", "))
			}
		}
	}
}

func (s *server) failover(cfg coordinator.Config) {
	c, err := coordinator.New(s.tasks, cfg)
	if err != nil {
		panic(err) // the same tasks and timing New accepted at start
	}
	s.mu.Lock()
	s.c, s.recovering = c, true
	s.mu.Unlock()
}

// world is what actually runs: the example's check that no task is ever
// active on two workers, and how long each task was down once it had run.
type world struct {
	mu         sync.Mutex
	lg         *logger
	owner      map[string]string
	downSince  map[string]time.Time
	violations int
	moves      int
	down       time.Duration // summed over tasks, after the start
	longest    time.Duration
	longestOf  string
}

func (w *world) stop(id, task, why string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.owner[task] == id {
		delete(w.owner, task)
		w.downSince[task] = time.Now()
	}
}

func (w *world) start(id, task string) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if o, ok := w.owner[task]; ok {
		w.violations++
		w.lg.printf("VIOLATION: %s starts %s while %s runs it", id, task, o)
	}
	w.owner[task] = id
	since, wasDown := w.downSince[task]
	delete(w.downSince, task)
	if !wasDown {
		return 0
	}
	d := time.Since(since)
	w.down += d
	if d > w.longest {
		w.longest, w.longestOf = d, task
	}
	return d
}

func (w *world) summary(s *server, nTasks int) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	w.lg.printf("the coordinator's target, and what runs:")
	for _, a := range s.c.Target() {
		var runs []string
		for _, t := range s.tasks {
			if w.owner[t.ID] == a.MemberID {
				runs = append(runs, t.ID)
			}
		}
		w.lg.printf("  %s active %v learning %v standby %v; runs %v", a.MemberID, a.Assigned, a.Learning, a.Standby, runs)
	}
	running := len(w.owner)
	w.lg.printf("%d/%d tasks running at the end; %d task moves; %d heartbeats", running, nTasks, w.moves, s.heartbeats)
	w.lg.printf("downtime after start: %.2f task-s in all, longest %.2f s (%s)",
		w.down.Seconds()/w.lg.scale, w.longest.Seconds()/w.lg.scale, w.longestOf)
	if w.violations > 0 {
		return fmt.Errorf("example: %d times a task ran on two workers", w.violations)
	}
	w.lg.printf("no task was ever active on two workers")
	if running != nTasks {
		return fmt.Errorf("example: %d of %d tasks running at the end", running, nTasks)
	}
	return nil
}

// worker is one group member: its protocol state (coordinator.Member) and
// a simulated application that runs tasks and replays learners' state.
type worker struct {
	m      *coordinator.Member
	url    string
	client *http.Client
	tm     timing
	w      *world
	lg     *logger
	tasks  []learner.Task
	crash  chan struct{}
	leave  chan time.Time

	readyAt map[string]time.Time // learners still replaying
}

// restore is how long a learner replays task i's state.
func (wk *worker) restore(task string) time.Duration {
	var i int
	fmt.Sscanf(task, "T%d", &i)
	return wk.tm.d(wk.tm.restoreBase + time.Duration(i%4)*wk.tm.restorePerTask)
}

func (wk *worker) run(ctx context.Context) {
	wk.readyAt = map[string]time.Time{}
	id := wk.m.ID()
	lastOK := time.Now()
	next := time.Now()
	for {
		timer := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-wk.crash:
			timer.Stop()
			for _, t := range wk.m.Active() {
				wk.w.stop(id, t, "crash")
			}
			wk.lg.printf("%s: crashed (its tasks are down until the coordinator notices)", id)
			return
		case d := <-wk.leave:
			timer.Stop()
			wk.m.Leave(d)
			wk.lg.printf("%s: leaving, hands its tasks over through learners", id)
		case <-timer.C:
		}
		now := time.Now()
		for t, at := range wk.readyAt {
			if !now.Before(at) {
				wk.m.Restored(t)
				delete(wk.readyAt, t)
				wk.lg.printf("%s: learner %s has replayed its state: ready", id, t)
			}
		}
		if wk.m.ShouldShutdown(now) {
			wk.shutdown("its leave deadline passed")
			return
		}
		if now.Sub(lastOK) >= wk.tm.d(wk.tm.fence) {
			wk.shutdown("no response for its fence timeout: it fences itself")
			return
		}
		next = now.Add(wk.tm.d(wk.tm.interval))
		resp, err := wk.post(ctx, wk.m.Heartbeat())
		if errors.Is(err, coordinator.ErrFenced) {
			wk.shutdown("fenced by the coordinator")
			return
		}
		if err != nil {
			continue // retried at the next interval
		}
		lastOK = now
		ch, err := wk.m.Apply(resp)
		if err != nil {
			wk.lg.printf("%s: %v", id, err)
			continue
		}
		wk.apply(ch)
		if ch.Shutdown {
			wk.shutdown("has handed everything over")
			return
		}
		next = now.Add(resp.HeartbeatInterval)
		if len(ch.StopActive) > 0 {
			next = now // acknowledge at once: the next owner waits for it
		}
		if len(wk.readyAt) > 0 {
			for _, at := range wk.readyAt {
				if at.Before(next) {
					next = at
				}
			}
		}
	}
}

// apply makes the application's changes: stops before starts.
func (wk *worker) apply(ch learner.Changes) {
	id := wk.m.ID()
	for _, t := range ch.StopActive {
		wk.w.stop(id, t, "revoked")
		wk.lg.printf("%s: stops %s", id, t)
	}
	for _, t := range ch.StopLearning {
		delete(wk.readyAt, t)
	}
	for _, t := range ch.StartActive {
		d := wk.w.start(id, t)
		promoted := false
		for _, l := range ch.StopLearning {
			promoted = promoted || l == t
		}
		switch {
		case promoted:
			wk.w.mu.Lock()
			wk.w.moves++
			wk.w.mu.Unlock()
			wk.lg.printf("%s: runs %s from its replayed state (down %.0f ms)", id, t, d.Seconds()*1000/wk.tm.scale)
		case d > 0:
			wk.lg.printf("%s: runs %s (down %.0f ms)", id, t, d.Seconds()*1000/wk.tm.scale)
		default:
			wk.lg.printf("%s: runs %s", id, t)
		}
	}
	for _, t := range ch.StartLearning {
		wk.readyAt[t] = time.Now().Add(wk.restore(t))
		wk.lg.printf("%s: learns %s (replays its state while the owner runs it)", id, t)
	}
	if len(ch.StartStandby) > 0 {
		wk.lg.printf("%s: keeps standbys of %v", id, ch.StartStandby)
	}
}

func (wk *worker) shutdown(why string) {
	id := wk.m.ID()
	for _, t := range wk.m.Active() {
		wk.w.stop(id, t, why)
	}
	wk.m.Stop()
	wk.lg.printf("%s: stops everything and leaves: %s", id, why)
	ctx, cancel := context.WithTimeout(context.Background(), wk.tm.d(wk.tm.interval))
	defer cancel()
	wk.post(ctx, wk.m.LeaveHeartbeat())
}

// post sends one heartbeat and decodes the response; a fenced member gets
// an error wrapping coordinator.ErrFenced.
func (wk *worker) post(ctx context.Context, hb coordinator.Heartbeat) (coordinator.Response, error) {
	body, err := json.Marshal(hb)
	if err != nil {
		return coordinator.Response{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, wk.url, bytes.NewReader(body))
	if err != nil {
		return coordinator.Response{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := wk.client.Do(req)
	if err != nil {
		return coordinator.Response{}, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		var eb errorBody
		json.NewDecoder(res.Body).Decode(&eb)
		if eb.Fenced {
			return coordinator.Response{}, fmt.Errorf("%s: %w", eb.Error, coordinator.ErrFenced)
		}
		return coordinator.Response{}, fmt.Errorf("example: heartbeat: %s: %s", res.Status, eb.Error)
	}
	var r coordinator.Response
	if err := json.NewDecoder(res.Body).Decode(&r); err != nil {
		return coordinator.Response{}, fmt.Errorf("example: heartbeat response: %w", err)
	}
	return r, nil
}
